//! One call per path of `docs/clippy.recommended.toml`, each on the
//! protected `account` entity where the path can reach it: every one of these
//! compiles and writes without a lock proof.

use hierlock::sea_orm::sea_query::{
    DeleteStatement, Expr, InsertStatement, Query, UpdateStatement,
};
use hierlock::sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseTransaction, DbErr,
    Delete, Deleter, EntityTrait, Insert, InsertMany, Inserter, QueryFilter, RelatedSelfVia,
    RelationDef, RelationTrait, TryInsert, Update,
};

use crate::{account, membership};

/// The raw SeaORM active model, reached through `Table`.
type RawActiveModel = <account::Table as EntityTrait>::ActiveModel;

fn raw() -> RawActiveModel {
    let mut am = <RawActiveModel as ActiveModelTrait>::default();
    am.id = Set(1);
    am.user_id = Set(1);
    am.balance = Set(0);
    am
}

/// Bulk statements on the protected `Entity` (SeaORM's entity; `Table` is
/// another name of it).
pub async fn bulk(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    Update::many(account::Entity)
        .col_expr(account::Column::Balance, Expr::value(0))
        .exec(txn)
        .await?;
    Delete::many(account::Entity).exec(txn).await?;
    Update::many(account::Table)
        .col_expr(account::Column::Balance, Expr::value(0))
        .exec(txn)
        .await?;
    Delete::many(account::Table).exec(txn).await?;
    wipe::<account::Entity>(txn).await?;
    Ok(())
}

/// A helper written for any SeaORM entity, called above with
/// `account::Entity`.
async fn wipe<E: EntityTrait>(txn: &DatabaseTransaction) -> Result<u64, DbErr> {
    Ok(E::delete_many().exec(txn).await?.rows_affected)
}

/// `EntityTrait`'s writes on `Table`.
pub async fn entity_trait(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    <account::Table as EntityTrait>::update_many()
        .col_expr(account::Column::Balance, Expr::value(0))
        .exec(txn)
        .await?;
    <account::Table as EntityTrait>::delete_many()
        .exec(txn)
        .await?;
    <account::Entity as EntityTrait>::delete_many()
        .exec(txn)
        .await?;
    <account::Table as EntityTrait>::delete_by_id(1)
        .exec(txn)
        .await?;
    <account::Table as EntityTrait>::delete(raw())
        .exec(txn)
        .await?;
    <account::Table as EntityTrait>::insert(raw())
        .exec(txn)
        .await?;
    <account::Table as EntityTrait>::insert_many([raw()])
        .exec(txn)
        .await?;
    Ok(())
}

/// Statement constructors and active-model writes on the raw active model.
pub async fn raw_active_model(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    Insert::one(raw()).exec(txn).await?;
    Insert::many([raw()]).exec(txn).await?;
    InsertMany::many([raw()]).exec(txn).await?;
    TryInsert::one(raw()).exec(txn).await?;
    TryInsert::many([raw()]).exec(txn).await?;
    Delete::one(raw()).exec(txn).await?;
    // In method syntax these do not compile (hierlock's inherent refusals
    // win); the trait's own functions stay open.
    ActiveModelTrait::delete(raw(), txn).await?;
    ActiveModelTrait::update_without_returning(raw(), txn).await?;
    Ok(())
}

/// A struct of the user's that converts into the raw active model
/// (`DeriveIntoActiveModel`), given to `Insert::one`.
#[derive(hierlock::sea_orm::DeriveIntoActiveModel)]
#[sea_orm(active_model = "RawActiveModel")]
pub struct NewAccount {
    pub id: i64,
    pub user_id: i64,
    pub balance: i64,
}

pub async fn into_active_model_struct(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let row = NewAccount {
        id: 1,
        user_id: 1,
        balance: 0,
    };
    Insert::one(row).exec(txn).await?;
    Ok(())
}

/// Updates without `RETURNING` on the raw active model: `exec` needs the
/// model's (diverted) `IntoActiveModel`, `exec_without_returning` does not.
pub async fn update_without_returning(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    Update::one(raw()).exec_without_returning(txn).await?;
    <account::Table as EntityTrait>::update(raw())
        .exec_without_returning(txn)
        .await?;
    Update::one(raw())
        .validate()?
        .exec_without_returning(txn)
        .await?;
    store::<account::Table>(raw(), txn).await?;
    Ok(())
}

/// A generic helper, called above with `account::Table`.
async fn store<E: EntityTrait>(am: E::ActiveModel, txn: &DatabaseTransaction) -> Result<(), DbErr> {
    E::update(am).exec_without_returning(txn).await?;
    Ok(())
}

/// A self-referencing many-to-many relation of accounts through the
/// protected junction, for `delete_links_self` (its definitions do not
/// matter: only the call is checked).
impl RelatedSelfVia<membership::Table> for account::Table {
    fn to() -> RelationDef {
        membership::Relation::Account.def()
    }

    fn via() -> RelationDef {
        membership::Relation::Account.def().rev()
    }
}

/// SeaORM's hidden helpers behind the dense format's generated functions:
/// they write a protected table they are given as a raw `Table`.
pub async fn model_ex_helpers(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    // `delete_by_<unique key>`'s statement; with no filter, the whole table.
    Delete::_one_only_for_use_by_model_ex(account::Table)
        .filter(account::Column::UserId.eq(1))
        .exec(txn)
        .await?;
    // Many-to-many links: `DELETE FROM memberships WHERE account_id IN (..)`.
    raw().delete_links(membership::Table, txn).await?;
    raw().delete_links_self(membership::Table, txn).await?;
    Ok(())
}

/// Raw SQL and sea-query statements.
pub async fn raw_sql(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    txn.execute_unprepared("DELETE FROM accounts").await?;
    txn.execute_raw(backend.build(&Query::delete().from_table(account::Table).to_owned()))
        .await?;
    txn.execute(
        &Query::update()
            .table(account::Table)
            .value(account::Column::Balance, 0)
            .to_owned(),
    )
    .await?;
    txn.execute(
        &Query::insert()
            .into_table(account::Table)
            .columns([account::Column::Id])
            .values_panic([1.into()])
            .to_owned(),
    )
    .await?;
    Inserter::<RawActiveModel>::new(
        None,
        Query::insert()
            .into_table(account::Table)
            .columns([account::Column::Id])
            .values_panic([1.into()])
            .to_owned(),
    )
    .exec_without_returning(txn)
    .await?;
    Deleter::new(Query::delete().from_table(account::Table).to_owned())
        .exec(txn)
        .await?;
    let _ = (
        InsertStatement::new(),
        UpdateStatement::new(),
        DeleteStatement::new(),
    );
    Ok(())
}
