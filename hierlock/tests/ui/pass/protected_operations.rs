//! Every write of a `#[protected]` entity beyond one plain row compiles with
//! a covering proof: upserts (`on_conflict_update`, `on_conflict_do_nothing`),
//! the `exec_with_returning` / `exec_without_returning` variants of insert,
//! insert_many, update and delete, and `update_many` / `delete_many` with
//! `filter`, `col_expr` and `set`, from a `#[hierlocked]` method and from
//! helpers taking a proof of the entity's level or a covering one.
#![deny(warnings)]
#![allow(dead_code)]

use hierlock::proof::{AccountLevel, ResourceLevel, UserLevel};
use hierlock::sea_orm::sea_query::Expr;
use hierlock::sea_orm::{ActiveValue::Set, ColumnTrait, DatabaseTransaction, ExprTrait};
use hierlock::{
    HasLocker, Locked, Locker, ProtectedDeleteMany, ProtectedUpdateMany, ProtectedUpsert,
    hierlocked,
};

#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
pub mod resource {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "resources")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: String,
        pub account_id: i64,
        pub balance: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

struct Repo {
    locker: Locker,
}

impl HasLocker for Repo {
    fn locker(&self) -> &Locker {
        &self.locker
    }
}

fn row(user: &str, account: i64, id: i64, balance: i64) -> resource::ActiveModel {
    resource::ActiveModel {
        id: Set(id),
        user_id: Set(user.to_owned()),
        account_id: Set(account),
        balance: Set(balance),
    }
}

/// The protected `ActiveModel` is built as SeaORM's is, with SeaORM's traits
/// in scope (hierlock implements them for it only under a bound that refuses
/// SeaORM's writes, so that the refusal is in hierlock's words): `new()`,
/// `default()`, the struct update syntax.
#[allow(unused_imports)]
fn built_with_seaorm_traits_in_scope() -> Vec<resource::ActiveModel> {
    use hierlock::sea_orm::entity::prelude::*;
    use hierlock::sea_orm::{ActiveModelBehavior, ActiveModelTrait};
    vec![
        resource::ActiveModel::new(),
        resource::ActiveModel::default(),
        resource::ActiveModel {
            balance: Set(1),
            ..Default::default()
        },
    ]
}

impl Repo {
    /// An account proof: every new operation on the account's resources.
    #[hierlocked(user = user, account = account)]
    async fn everything(
        &self,
        txn: &DatabaseTransaction,
        user: &str,
        account: i64,
    ) -> hierlock::Result<u64> {
        // Upserts on the primary key.
        let upserted: resource::Model = resource::Entity::insert(row(user, account, 1, 10))
            .on_conflict_update([resource::Column::Balance])
            .exec(&lock)
            .await?;
        let _: resource::Model = resource::Entity::insert(row(user, account, 2, 20))
            .on_conflict_update([resource::Column::Balance, resource::Column::AccountId])
            .exec_with_returning(&lock)
            .await?;
        let _: u64 = resource::Entity::insert(row(user, account, 3, 30))
            .on_conflict_do_nothing()
            .exec_without_returning(&lock)
            .await?;
        let upsert: ProtectedUpsert<resource::Table> =
            resource::Entity::insert(upserted.clone()).on_conflict_do_nothing();
        let _: resource::Model = upsert.exec(&lock).await?;

        // Returning variants.
        let _: resource::Model = resource::Entity::insert(row(user, account, 4, 40))
            .exec_with_returning(&lock)
            .await?;
        let _: u64 = resource::Entity::insert(row(user, account, 5, 50))
            .exec_without_returning(&lock)
            .await?;
        let _: Vec<resource::Model> =
            resource::Entity::insert_many([row(user, account, 6, 0), row(user, account, 7, 0)])
                .exec_with_returning(&lock)
                .await?;
        let _: u64 = resource::Entity::insert_many(vec![row(user, account, 8, 0)])
            .exec_without_returning(&lock)
            .await?;
        let mut am: resource::ActiveModel = upserted.into();
        am.balance = Set(11);
        let updated: resource::Model = resource::Entity::update(am.clone())
            .exec_with_returning(&lock)
            .await?;
        let _: u64 = resource::Entity::update(am)
            .exec_without_returning(&lock)
            .await?;
        let _: Option<resource::Model> = resource::Entity::delete(updated)
            .exec_with_returning(&lock)
            .await?;
        let _: Option<resource::Model> = resource::Entity::delete_by_id(2)
            .exec_with_returning(&lock)
            .await?;
        let _: u64 = resource::Entity::delete_by_id(3)
            .exec_without_returning(&lock)
            .await?;

        // Filtered writes, scoped to the proof.
        let update: ProtectedUpdateMany<resource::Table> = resource::Entity::update_many()
            .filter(resource::Column::AccountId.eq(account))
            .filter(resource::Column::Balance.lt(0))
            .col_expr(resource::Column::Balance, Expr::value(0))
            .col_expr(
                resource::Column::Balance,
                Expr::col(resource::Column::Balance).add(1),
            );
        let mut changed = update.exec(&lock).await?;
        changed += resource::Entity::update_many()
            .filter(resource::Column::Id.is_in([6, 7]))
            .set(resource::ActiveModel {
                balance: Set(70),
                ..Default::default()
            })
            .exec(&lock)
            .await?;
        let delete: ProtectedDeleteMany<resource::Table> =
            resource::Entity::delete_many().filter(resource::Column::Balance.eq(0));
        changed += delete.exec(&lock).await?;
        changed += resource::Entity::delete_many().exec(&lock).await?;
        Ok(changed)
    }
}

/// A helper taking a proof of the entity's own level.
async fn at_resource(lock: &Locked<'_, ResourceLevel>, user: &str) -> hierlock::Result<u64> {
    resource::Entity::update_many()
        .filter(resource::Column::UserId.eq(user))
        .col_expr(resource::Column::Balance, Expr::value(1))
        .exec(lock)
        .await
}

/// Helpers taking covering proofs.
async fn at_account(lock: &Locked<'_, AccountLevel>, user: &str) -> hierlock::Result<u64> {
    resource::Entity::insert(row(user, 1, 9, 0))
        .on_conflict_do_nothing()
        .exec_without_returning(lock)
        .await
}

async fn at_user(lock: &Locked<'_, UserLevel>) -> hierlock::Result<u64> {
    resource::Entity::delete_many()
        .filter(resource::Column::AccountId.eq(1))
        .exec(lock)
        .await
}

fn main() {}
