//! A repository of users, accounts and resources with balances, written with
//! `#[hierlocked]` methods and `#[protected]` entities: hierlock's main recipe.
//!
//! What it shows:
//! - three SeaORM entities protected at their level (`user`, `account`,
//!   `resource`): outside their modules they read as usual and write only
//!   with a lock proof;
//! - repository methods that lock before their body runs, on the caller's
//!   transaction, and write with the proof (`.exec(&lock)`);
//! - several resources locked at once (`resources = ..`), a read lock
//!   (`read`), no-wait (`nowait`), and two calls composed in one transaction
//!   (`within = ..`);
//! - what a proof for one account does when asked to write another's row: a
//!   typed error, nothing written.
//!
//! Run it (SQLite in a temporary directory, no setup; or set `DATABASE_URL`
//! to a MySQL, MariaDB or PostgreSQL database where the hierlock migration
//! has run):
//!
//! ```text
//! cargo run -p hierlock --example repository
//! ```
//!
//! You will see each step and the balances, ending with `total: 1000`.

use hierlock::sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, Database, DatabaseConnection,
    DatabaseTransaction, DbErr, QueryFilter, Schema, TransactionTrait,
};
use hierlock::{HasLocker, Locked, Locker, hierlocked, proof::AccountLevel};

/// The entities: each row names the user (and account, and resource) it
/// belongs to, so that a write can be checked against the lock proof.
mod entities {
    #[hierlock::protected(level = user, user = id)]
    pub mod user {
        use hierlock::sea_orm::entity::prelude::*;

        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "users")]
        pub struct Model {
            #[sea_orm(primary_key, auto_increment = false)]
            pub id: i64,
            pub name: String,
        }

        #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
        pub enum Relation {
            #[sea_orm(has_many = "super::account::Entity")]
            Account,
        }

        // `super::account::Entity` is protected, and SeaORM's entity as any.
        impl Related<super::account::Entity> for Entity {
            fn to() -> RelationDef {
                Relation::Account.def()
            }
        }
    }

    #[hierlock::protected(level = account, user = user_id, account = id)]
    pub mod account {
        use hierlock::sea_orm::entity::prelude::*;

        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "accounts")]
        pub struct Model {
            #[sea_orm(primary_key, auto_increment = false)]
            pub id: i64,
            pub user_id: i64,
            pub name: String,
        }

        #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
        pub enum Relation {
            #[sea_orm(
                belongs_to = "super::user::Entity",
                from = "Column::UserId",
                to = "super::user::Column::Id"
            )]
            User,
            #[sea_orm(has_many = "super::resource::Entity")]
            Resource,
        }

        impl Related<super::user::Entity> for Entity {
            fn to() -> RelationDef {
                Relation::User.def()
            }
        }

        impl Related<super::resource::Entity> for Entity {
            fn to() -> RelationDef {
                Relation::Resource.def()
            }
        }
    }

    #[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
    pub mod resource {
        use hierlock::sea_orm::entity::prelude::*;

        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "resources")]
        pub struct Model {
            #[sea_orm(primary_key, auto_increment = false)]
            pub id: i64,
            pub user_id: i64,
            pub account_id: i64,
            pub balance: i64,
        }

        #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
        pub enum Relation {
            #[sea_orm(
                belongs_to = "super::account::Entity",
                from = "Column::AccountId",
                to = "super::account::Column::Id"
            )]
            Account,
        }

        impl Related<super::account::Entity> for Entity {
            fn to() -> RelationDef {
                Relation::Account.def()
            }
        }
    }
}

use entities::{account, resource, user};

/// The application's error: a lock failure is one of its cases.
#[derive(Debug, thiserror::Error)]
enum BankError {
    #[error(transparent)]
    Lock(#[from] hierlock::Error),
    #[error(transparent)]
    Db(#[from] DbErr),
    #[error("resource {0} not found")]
    NoSuchResource(i64),
    #[error("resource {id} has {balance}, cannot take {amount}")]
    Insufficient { id: i64, balance: i64, amount: i64 },
}

/// The repository: its methods lock on the transaction they are given.
struct Bank {
    locker: Locker,
}

impl HasLocker for Bank {
    fn locker(&self) -> &Locker {
        &self.locker
    }
}

impl Bank {
    /// A new user: a write lock on the user.
    #[hierlocked(user = id)]
    async fn open_user(
        &self,
        txn: &DatabaseTransaction,
        id: i64,
        name: &str,
    ) -> Result<user::Model, BankError> {
        let row = user::ActiveModel {
            id: Set(id),
            name: Set(name.to_owned()),
        };
        Ok(user::Entity::insert(row).exec(&lock).await?)
    }

    /// A new account with its resources, all created under one account lock.
    #[hierlocked(user = user_id, account = account_id)]
    async fn open_account(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        account_id: i64,
        resources: &[(i64, i64)],
    ) -> Result<account::Model, BankError> {
        let account = account::ActiveModel {
            id: Set(account_id),
            user_id: Set(user_id),
            name: Set(format!("account {account_id}")),
        };
        let account = account::Entity::insert(account).exec(&lock).await?;
        for &(id, balance) in resources {
            let row = resource::ActiveModel {
                id: Set(id),
                user_id: Set(user_id),
                account_id: Set(account_id),
                balance: Set(balance),
            };
            // An account proof covers every resource of the account.
            resource::Entity::insert(row).exec(&lock).await?;
        }
        Ok(account)
    }

    /// Move `amount` between two resources of one account: both resources
    /// are locked in one acquisition, in the global order.
    #[hierlocked(user = user_id, account = account_id, resources = [from, to])]
    async fn transfer(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        account_id: i64,
        from: i64,
        to: i64,
        amount: i64,
    ) -> Result<(), BankError> {
        self.add(&lock, from, -amount).await?;
        self.add(&lock, to, amount).await?;
        Ok(())
    }

    /// The total of an account, under a read lock: writers of the account
    /// row wait, other readers do not. Writers of its resources are not
    /// excluded by a read lock on the account (see the README's FAQ); lock
    /// the account for writing to freeze them.
    #[hierlocked(user = user_id, account = account_id, read)]
    async fn total(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        account_id: i64,
    ) -> Result<i64, BankError> {
        let rows = resource::Entity::find()
            .filter(resource::Column::AccountId.eq(account_id))
            .all(txn)
            .await?;
        Ok(rows.iter().map(|r| r.balance).sum())
    }

    /// Empty an account into one of its resources, resource by resource:
    /// each step is a `#[hierlocked]` call of its own, taken `within` this
    /// one's proof on the same transaction.
    #[hierlocked(user = user_id, account = account_id, nowait)]
    async fn consolidate(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        account_id: i64,
        into: i64,
    ) -> Result<(), BankError> {
        let others = resource::Entity::find()
            .filter(resource::Column::AccountId.eq(account_id))
            .filter(resource::Column::Id.ne(into))
            .all(txn)
            .await?;
        for other in others {
            let amount = other.balance;
            self.transfer_within(
                txn,
                Some(&lock),
                user_id,
                account_id,
                other.id,
                into,
                amount,
            )
            .await?;
        }
        Ok(())
    }

    /// [`Bank::transfer`], callable on its own or within an account lock.
    #[allow(clippy::too_many_arguments)]
    #[hierlocked(user = user_id, account = account_id, resources = [from, to], within = outer)]
    async fn transfer_within(
        &self,
        txn: &DatabaseTransaction,
        outer: Option<&Locked<'_, AccountLevel>>,
        user_id: i64,
        account_id: i64,
        from: i64,
        to: i64,
        amount: i64,
    ) -> Result<(), BankError> {
        self.add(&lock, from, -amount).await?;
        self.add(&lock, to, amount).await?;
        Ok(())
    }

    /// Add to a resource's balance, with a proof that covers it.
    async fn add(
        &self,
        lock: &Locked<'_, hierlock::proof::ResourceLevel>,
        id: i64,
        amount: i64,
    ) -> Result<(), BankError> {
        let row = resource::Entity::find_by_id(id)
            .one(lock.txn())
            .await?
            .ok_or(BankError::NoSuchResource(id))?;
        if row.balance + amount < 0 {
            return Err(BankError::Insufficient {
                id,
                balance: row.balance,
                amount: -amount,
            });
        }
        let mut row: resource::ActiveModel = row.into();
        row.balance = Set(row.balance.as_ref() + amount);
        resource::Entity::update(row).exec(lock).await?;
        Ok(())
    }

    /// Try to write another user's resource with this account's proof.
    #[hierlocked(user = user_id, account = account_id)]
    async fn steal(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        account_id: i64,
        victim: resource::Model,
    ) -> Result<(), BankError> {
        let mut row: resource::ActiveModel = victim.into();
        row.balance = Set(0);
        resource::Entity::update(row).exec(&lock).await?;
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = connect().await?;
    create_tables(&db).await?;
    let bank = Bank {
        locker: Locker::connect(&db, hierlock::Config::default()).await?,
    };

    // Every call gets the caller's transaction; the locks and the writes
    // commit (or roll back) together.
    let txn = db.begin().await?;
    bank.open_user(&txn, 1, "ada").await?;
    bank.open_user(&txn, 2, "bob").await?;
    txn.commit().await?;

    let txn = db.begin().await?;
    bank.open_account(&txn, 1, 10, &[(100, 600), (101, 400), (102, 0)])
        .await?;
    bank.open_account(&txn, 2, 20, &[(200, 50)]).await?;
    txn.commit().await?;
    println!("opened: users 1 and 2, accounts 10 and 20");

    let txn = db.begin().await?;
    bank.transfer(&txn, 1, 10, 100, 102, 250).await?;
    txn.commit().await?;
    println!("transfer 100 -> 102: 250");

    // A failing body rolls back with its locks: nothing of it stays.
    let txn = db.begin().await?;
    let err = bank.transfer(&txn, 1, 10, 101, 102, 10_000).await;
    println!("transfer 101 -> 102: 10000: {}", err.unwrap_err());
    txn.rollback().await?;

    // A proof for user 1 / account 10 cannot write user 2's resource.
    let victim = resource::Entity::find_by_id(200).one(&db).await?;
    let txn = db.begin().await?;
    let err = bank
        .steal(&txn, 1, 10, victim.ok_or(BankError::NoSuchResource(200))?)
        .await;
    println!(
        "steal resource 200 with a proof for 1/10: {}",
        err.unwrap_err()
    );
    txn.rollback().await?;

    let txn = db.begin().await?;
    bank.consolidate(&txn, 1, 10, 100).await?;
    txn.commit().await?;
    println!("consolidated account 10 into resource 100");

    let txn = db.begin().await?;
    for row in resource::Entity::find().all(&txn).await? {
        println!(
            "  resource {} (user {}, account {}): {}",
            row.id, row.user_id, row.account_id, row.balance
        );
    }
    let total = bank.total(&txn, 1, 10).await?;
    txn.commit().await?;
    println!("total: {total}");
    Ok(())
}

/// `DATABASE_URL`, or a fresh SQLite file in the temporary directory.
async fn connect() -> Result<DatabaseConnection, DbErr> {
    let url = match std::env::var("DATABASE_URL") {
        Ok(url) => url,
        Err(_) => {
            let path = std::env::temp_dir()
                .join(format!("hierlock-repository-{}.sqlite", std::process::id()));
            format!("sqlite://{}?mode=rwc", path.display())
        }
    };
    // On SQLite, hierlock's busy handler makes lock waits cancel-safe.
    if url.starts_with("sqlite:") {
        hierlock::sqlite::connect(url.as_str()).await
    } else {
        Database::connect(url).await
    }
}

async fn create_tables(db: &DatabaseConnection) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let schema = Schema::new(backend);
    // As a value, `user::Entity` is SeaORM's unit struct (only the type is
    // replaced by `#[protected]`), so schema helpers take it as usual.
    for mut table in [
        schema.create_table_from_entity(user::Entity),
        schema.create_table_from_entity(account::Entity),
        schema.create_table_from_entity(resource::Entity),
    ] {
        table.if_not_exists();
        db.execute(&table).await?;
    }
    Ok(())
}
