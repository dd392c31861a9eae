//! The bank's tables as SeaORM entities, and how they are created and filled.
//!
//! ```text
//! bank_accounts  (user_id, account_id, balance)                             -- money of a user
//! bank_resources (user_id, account_id, resource_id, price, stock, balance)  -- an item on sale, and its till
//! bank_purchases (id, request_id, buyer…, seller…, price)                   -- one row per purchase
//! ```
//!
//! `bank_purchases.request_id` is deliberately *not* unique: like the seed's
//! application, the code checks "not already purchased" with a `SELECT`, and
//! it is the lock that makes that check hold.

use sea_orm::{ConnectionTrait, DbErr, EntityTrait, Schema, Set};

use super::{Options, Rng};

/// Money held by one account of a user.
pub mod account {
    use sea_orm::entity::prelude::*;

    /// A row of `bank_accounts`.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "bank_accounts")]
    pub struct Model {
        /// The owner.
        #[sea_orm(primary_key, auto_increment = false)]
        pub user_id: i32,
        /// The account, numbered per user.
        #[sea_orm(primary_key, auto_increment = false)]
        pub account_id: i32,
        /// Money in the account; never negative.
        pub balance: i64,
    }

    /// No relations: the example reads rows by primary key.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// An item sold by an account: its price, the units left, and the money it
/// has taken in.
pub mod resource {
    use sea_orm::entity::prelude::*;

    /// A row of `bank_resources`.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "bank_resources")]
    pub struct Model {
        /// The user who owns the account selling the item.
        #[sea_orm(primary_key, auto_increment = false)]
        pub user_id: i32,
        /// The account selling the item.
        #[sea_orm(primary_key, auto_increment = false)]
        pub account_id: i32,
        /// The item, numbered per account.
        #[sea_orm(primary_key, auto_increment = false)]
        pub resource_id: i32,
        /// What one unit costs.
        pub price: i64,
        /// Units left; never negative.
        pub stock: i64,
        /// Money taken in: sales and deposits.
        pub balance: i64,
    }

    /// No relations: the example reads rows by primary key.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// One purchase: who paid whom for what, under which request.
pub mod purchase {
    use sea_orm::entity::prelude::*;

    /// A row of `bank_purchases`.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "bank_purchases")]
    pub struct Model {
        /// Row ID.
        #[sea_orm(primary_key)]
        pub id: i32,
        /// The client's request; a double-clicked "buy" sends the same one twice.
        pub request_id: i64,
        /// The buyer.
        pub buyer_user_id: i32,
        /// The account that paid.
        pub buyer_account_id: i32,
        /// The seller.
        pub seller_user_id: i32,
        /// The account selling the item.
        pub seller_account_id: i32,
        /// The item.
        pub resource_id: i32,
        /// What was paid.
        pub price: i64,
    }

    /// No relations: the example reads rows by request ID.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Money every account starts with.
pub const OPENING_BALANCE: i64 = 10_000;
/// Units of every item at the start.
pub const OPENING_STOCK: i64 = 100;

/// What the bank held right after seeding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opening {
    /// Money in all accounts and tills.
    pub money: i64,
    /// Units of all items.
    pub stock: i64,
}

/// Create the three tables if they do not exist (idempotent).
///
/// # Errors
/// Any database error.
pub async fn create_tables(db: &impl ConnectionTrait) -> Result<(), DbErr> {
    let schema = Schema::new(db.get_database_backend());
    let mut tables = [
        schema.create_table_from_entity(account::Entity),
        schema.create_table_from_entity(resource::Entity),
        schema.create_table_from_entity(purchase::Entity),
    ];
    for table in &mut tables {
        db.execute(table.if_not_exists()).await?;
    }
    Ok(())
}

/// Empty the tables and open `users × accounts` accounts, each selling
/// `resources` items at prices drawn from `rng`.
///
/// # Errors
/// Any database error.
pub async fn seed(
    db: &impl ConnectionTrait,
    options: &Options,
    rng: &mut Rng,
) -> Result<Opening, DbErr> {
    purchase::Entity::delete_many().exec(db).await?;
    resource::Entity::delete_many().exec(db).await?;
    account::Entity::delete_many().exec(db).await?;

    let mut accounts = Vec::new();
    let mut resources = Vec::new();
    for user_id in 1..=options.users {
        for account_id in 1..=options.accounts {
            accounts.push(account::ActiveModel {
                user_id: Set(user_id),
                account_id: Set(account_id),
                balance: Set(OPENING_BALANCE),
            });
            for resource_id in 1..=options.resources {
                resources.push(resource::ActiveModel {
                    user_id: Set(user_id),
                    account_id: Set(account_id),
                    resource_id: Set(resource_id),
                    price: Set(10 + rng.below(90) as i64),
                    stock: Set(OPENING_STOCK),
                    balance: Set(0),
                });
            }
        }
    }
    let opening = Opening {
        money: OPENING_BALANCE * accounts.len() as i64,
        stock: OPENING_STOCK * resources.len() as i64,
    };
    // A few hundred rows per statement stays under every server's limit on
    // bound parameters.
    for chunk in accounts.chunks(500) {
        account::Entity::insert_many(chunk.to_vec())
            .exec(db)
            .await?;
    }
    for chunk in resources.chunks(300) {
        resource::Entity::insert_many(chunk.to_vec())
            .exec(db)
            .await?;
    }
    Ok(opening)
}
