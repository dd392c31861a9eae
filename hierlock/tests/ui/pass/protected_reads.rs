//! Every read shape of a `#[protected]` entity compiles as in plain SeaORM:
//! `find`, `find_by_id`, filters, relations in both directions between a
//! protected and a plain entity (through `Table`), loaders, `paginate`,
//! `select_only` + `into_model`, and partial models on `Table`. The entities
//! are laid out as `sea-orm-cli` generates them: one module per entity and a
//! `prelude`.
#![deny(warnings)]
#![allow(dead_code)]

use hierlock::sea_orm::{
    ColumnTrait, DatabaseTransaction, DbErr, DerivePartialModel, EntityTrait, FromQueryResult,
    LoaderTrait, ModelTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Related, Select,
};

pub mod entities {
    pub mod prelude {
        pub use super::account::Entity as Account;
        pub use super::note::Entity as Note;
    }

    /// A protected entity with a plain entity below it.
    #[hierlock::protected(level = account, user = user_id, account = id)]
    pub mod account {
        use hierlock::sea_orm::entity::prelude::*;

        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "accounts")]
        pub struct Model {
            #[sea_orm(primary_key, auto_increment = false)]
            pub id: i64,
            pub user_id: i64,
            pub balance: i64,
        }

        #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
        pub enum Relation {
            #[sea_orm(has_many = "super::note::Entity")]
            Note,
        }

        impl Related<super::note::Entity> for Entity {
            fn to() -> RelationDef {
                Relation::Note.def()
            }
        }
    }

    /// A plain SeaORM entity that relates to the protected one through its
    /// `Table`.
    pub mod note {
        use hierlock::sea_orm::entity::prelude::*;

        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "notes")]
        pub struct Model {
            #[sea_orm(primary_key)]
            pub id: i64,
            pub account_id: i64,
            pub text: String,
        }

        #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
        pub enum Relation {
            #[sea_orm(
                belongs_to = "super::account::Table",
                from = "Column::AccountId",
                to = "super::account::Column::Id"
            )]
            Account,
        }

        impl Related<super::account::Table> for Entity {
            fn to() -> RelationDef {
                Relation::Account.def()
            }
        }

        impl ActiveModelBehavior for ActiveModel {}
    }
}

use entities::prelude::{Account, Note};
use entities::{account, note};

/// `find`, filters, order, `find_by_id`, `lock_exclusive`, `count`.
async fn find(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let rich: Vec<account::Model> = account::Entity::find()
        .filter(account::Column::Balance.gt(100))
        .filter(account::Column::UserId.eq(1))
        .order_by_asc(account::Column::Id)
        .limit(10)
        .all(txn)
        .await?;
    let one: Option<account::Model> = Account::find_by_id(7).one(txn).await?;
    let locked = account::Entity::find_by_id(7)
        .lock_exclusive()
        .one(txn)
        .await?;
    let count: u64 = account::Entity::find().count(txn).await?;
    let _ = (rich, one, locked, count);
    Ok(())
}

/// A signature naming the query type: `Select<account::Table>`.
fn rich_accounts() -> Select<account::Table> {
    account::Entity::find().filter(account::Column::Balance.gt(100))
}

/// Protected → plain: `find_related`, `find_also_related`,
/// `find_with_related`, `Model::find_related`, loaders.
async fn protected_to_plain(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let notes: Vec<note::Model> = account::Entity::find_related::<note::Entity>()
        .filter(account::Column::Id.eq(7))
        .all(txn)
        .await?;
    let pairs: Vec<(account::Model, Option<note::Model>)> = account::Entity::find()
        .find_also_related(note::Entity)
        .all(txn)
        .await?;
    let grouped: Vec<(account::Model, Vec<note::Model>)> =
        Account::find().find_with_related(Note).all(txn).await?;
    let accounts = rich_accounts().all(txn).await?;
    let loaded: Vec<Vec<note::Model>> = accounts.load_many(note::Entity, txn).await?;
    if let Some(row) = accounts.first() {
        let _: Vec<note::Model> = row.find_related(note::Entity).all(txn).await?;
    }
    let _ = (notes, pairs, grouped, loaded);
    Ok(())
}

/// Plain → protected, naming `account::Table`.
async fn plain_to_protected(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let owners: Vec<account::Model> = note::Entity::find_related()
        .filter(note::Column::Id.eq(1))
        .all(txn)
        .await?;
    let pairs: Vec<(note::Model, Option<account::Model>)> = note::Entity::find()
        .find_also_related(account::Table)
        .all(txn)
        .await?;
    let grouped: Vec<(note::Model, Vec<account::Model>)> = note::Entity::find()
        .find_with_related(account::Table)
        .all(txn)
        .await?;
    let notes = note::Entity::find().all(txn).await?;
    let loaded: Vec<Option<account::Model>> = notes.load_one(account::Table, txn).await?;
    if let Some(row) = notes.first() {
        let _: Option<account::Model> = row.find_related(account::Table).one(txn).await?;
    }
    let _ = (owners, pairs, grouped, loaded);
    Ok(())
}

/// `paginate`.
async fn pages(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let pages = account::Entity::find()
        .order_by_asc(account::Column::Id)
        .paginate(txn, 50);
    let total = pages.num_pages().await?;
    let first: Vec<account::Model> = pages.fetch_page(0).await?;
    let _ = (total, first);
    Ok(())
}

#[derive(Debug, FromQueryResult)]
struct Balance {
    id: i64,
    balance: i64,
}

/// `select_only` + `into_model`, and a tuple.
async fn columns(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let balances: Vec<Balance> = account::Entity::find()
        .select_only()
        .column(account::Column::Id)
        .column(account::Column::Balance)
        .into_model::<Balance>()
        .all(txn)
        .await?;
    let ids: Vec<i64> = account::Entity::find()
        .select_only()
        .column(account::Column::Id)
        .into_tuple()
        .all(txn)
        .await?;
    let _ = (balances, ids);
    Ok(())
}

/// A partial model of the protected entity: `entity = "..::Table"`.
#[derive(Debug, DerivePartialModel)]
#[sea_orm(entity = "account::Table")]
struct AccountBalance {
    id: i64,
    balance: i64,
}

async fn partial(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let rows: Vec<AccountBalance> = account::Entity::find()
        .into_partial_model::<AccountBalance>()
        .all(txn)
        .await?;
    let one: Option<AccountBalance> = account::Table::find_by_id(1)
        .into_partial_model()
        .one(txn)
        .await?;
    let _ = (rows, one);
    Ok(())
}

/// The same reads, through `EntityTrait` on the plain entity and on
/// `Table` (reads of `Table` are SeaORM's).
async fn through_the_trait(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let _: Vec<account::Model> = <account::Table as EntityTrait>::find().all(txn).await?;
    let _: Vec<note::Model> = <note::Entity as EntityTrait>::find().all(txn).await?;
    Ok(())
}

fn main() {}
