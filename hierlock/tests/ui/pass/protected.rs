//! `#[protected]` entities at each level, related to each other, read as
//! plain SeaORM and written with covering proofs; and `crate = path` for a
//! crate that re-exports hierlock.
#![deny(warnings)]
#![allow(dead_code)]

use hierlock::proof::{AccountLevel, ResourceLevel, UserLevel};
use hierlock::sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseTransaction, DbErr, ModelTrait, QueryFilter,
};
use hierlock::{HasLocker, Locked, Locker, hierlocked};

mod entities {
    #[hierlock::protected(level = user, user = id)]
    pub mod user {
        use hierlock::sea_orm::entity::prelude::*;

        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "users")]
        pub struct Model {
            #[sea_orm(primary_key, auto_increment = false)]
            pub id: String,
        }

        #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
        pub enum Relation {
            #[sea_orm(has_many = "super::account::Table")]
            Account,
        }

        impl Related<super::account::Table> for Entity {
            fn to() -> RelationDef {
                Relation::Account.def()
            }
        }
    }

    /// An account: named by its user and its own ID.
    #[hierlock::protected(level = account, user = owner, account = id)]
    pub mod account {
        use hierlock::sea_orm::entity::prelude::*;

        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "accounts")]
        pub struct Model {
            #[sea_orm(primary_key)]
            pub id: i64,
            pub owner: String,
            pub balance: i64,
        }

        #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
        pub enum Relation {
            #[sea_orm(
                belongs_to = "super::user::Table",
                from = "Column::Owner",
                to = "super::user::Column::Id"
            )]
            User,
            #[sea_orm(has_many = "super::resource::Table")]
            Resource,
        }

        impl Related<super::user::Table> for Entity {
            fn to() -> RelationDef {
                Relation::User.def()
            }
        }

        impl Related<super::resource::Table> for Entity {
            fn to() -> RelationDef {
                Relation::Resource.def()
            }
        }

        /// Code inside the module can still have helpers of its own.
        impl Model {
            pub fn is_empty(&self) -> bool {
                self.balance == 0
            }
        }
    }

    #[hierlock::protected(level = resource, user = owner, account = account_id, resource = id)]
    pub mod resource {
        use hierlock::sea_orm::entity::prelude::*;

        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "resources")]
        pub struct Model {
            #[sea_orm(primary_key, auto_increment = false)]
            pub id: i32,
            pub owner: String,
            pub account_id: i64,
            pub balance: i64,
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
    }
}

use entities::{account, resource, user};

struct Repo {
    locker: Locker,
}

impl HasLocker for Repo {
    fn locker(&self) -> &Locker {
        &self.locker
    }
}

impl Repo {
    /// A user proof writes rows of every level under the user.
    #[hierlocked(user = user)]
    async fn open(&self, txn: &DatabaseTransaction, user: &str) -> hierlock::Result<i64> {
        user::Entity::insert(user::ActiveModel {
            id: Set(user.to_owned()),
        })
        .exec(&lock)
        .await?;
        let account = account::Entity::insert(account::ActiveModel {
            owner: Set(user.to_owned()),
            balance: Set(0),
            ..Default::default()
        })
        .exec(&lock)
        .await?;
        resource::Entity::insert_many([resource::ActiveModel {
            id: Set(1),
            owner: Set(user.to_owned()),
            account_id: Set(account.id),
            balance: Set(0),
        }])
        .exec(&lock)
        .await?;
        Ok(account.id)
    }

    /// An account proof writes the account and its resources.
    #[hierlocked(user = user, account = account)]
    async fn close(
        &self,
        txn: &DatabaseTransaction,
        user: &str,
        account: i64,
    ) -> Result<(), DbOrLock> {
        // Reads are SeaORM's: find, filters, relations.
        let Some(row) = account::Entity::find_by_id(account).one(txn).await? else {
            return Ok(());
        };
        let owner = row.find_related(user::Table).one(txn).await?;
        let resources = row.find_related(resource::Table).all(txn).await?;
        let _ = (owner, row.is_empty());
        for r in resources {
            resource::Entity::delete(r).exec(&lock).await?;
        }
        resource::Entity::delete_by_id(99).exec(&lock).await?;
        let mut am: account::ActiveModel = row.into();
        am.balance = Set(0);
        let row = account::Entity::update(am).exec(&lock).await?;
        account::Entity::delete(row).exec(&lock).await?;
        Ok(())
    }

    /// A resource proof writes its resources.
    #[hierlocked(user = user, account = account, resource = id)]
    async fn touch(
        &self,
        txn: &DatabaseTransaction,
        user: &str,
        account: i64,
        id: i32,
    ) -> hierlock::Result<()> {
        let rows = resource::Entity::find()
            .filter(resource::Column::AccountId.eq(account))
            .all(txn)
            .await
            .map_err(|e| hierlock::Error::Misuse(e.to_string()))?;
        for row in rows {
            resource::Entity::update(row).exec(&lock).await?;
        }
        Ok(())
    }
}

/// Helpers take proofs of the level they need (or a covering one).
async fn helper_user(lock: &Locked<'_, UserLevel>, id: &str) -> hierlock::Result<u64> {
    user::Entity::delete_by_id(id.to_owned()).exec(lock).await
}

async fn helper_account(
    lock: &Locked<'_, AccountLevel>,
    row: account::Model,
) -> hierlock::Result<u64> {
    account::Entity::delete(row).exec(lock).await
}

async fn helper_resource(
    lock: &Locked<'_, ResourceLevel>,
    row: resource::Model,
) -> hierlock::Result<u64> {
    resource::Entity::delete(row).exec(lock).await
}

#[derive(Debug)]
enum DbOrLock {
    Db(DbErr),
    Lock(hierlock::Error),
}

impl From<DbErr> for DbOrLock {
    fn from(e: DbErr) -> Self {
        DbOrLock::Db(e)
    }
}

impl From<hierlock::Error> for DbOrLock {
    fn from(e: hierlock::Error) -> Self {
        DbOrLock::Lock(e)
    }
}

/// A crate that re-exports hierlock names it with `crate = ..`.
mod reexport {
    pub mod hl {
        pub use hierlock::*;
    }

    use hierlock::sea_orm::DatabaseTransaction;

    #[hierlock::protected(level = user, user = id, crate = crate::reexport::hl)]
    pub mod note {
        use hierlock::sea_orm::entity::prelude::*;

        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "notes")]
        pub struct Model {
            #[sea_orm(primary_key, auto_increment = false)]
            pub id: i64,
        }

        #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
        pub enum Relation {}
    }

    #[hl::hierlocked(user = 1, locker = locker, crate = crate::reexport::hl)]
    pub async fn write(locker: &hl::Locker, txn: &DatabaseTransaction) -> hl::Result<()> {
        note::Entity::delete_by_id(1).exec(&lock).await?;
        Ok(())
    }
}

fn main() {}
