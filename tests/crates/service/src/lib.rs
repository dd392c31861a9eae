//! A service crate over the entities of another crate
//! (`hierlock-layout-entities`): it defines entities of its own, plain and
//! protected, and a repository whose `#[hierlocked]` methods write the
//! upstream protected entities.
//!
//! That this crate builds is the test that a crate with `#[protected]`
//! entities can be depended on by a crate defining entities of its own
//! (with the former expansion, every entity of this crate failed with E0119).

use hierlock::sea_orm::{ActiveValue::Set, DatabaseTransaction, DbErr, EntityTrait};
use hierlock::{HasLocker, Locker, hierlocked};
use hierlock_layout_entities::{account, audit, resource, user};

/// A plain entity with SeaORM's derived behavior.
pub mod note {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "service_notes")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        pub text: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    #[derive(Clone, Debug, DeriveActiveModelBehavior)]
    pub struct Behavior;
}

/// A plain entity with a hand-written `ActiveModelBehavior`, related to an
/// upstream protected entity.
pub mod tag {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "service_tags")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        pub resource_id: i64,
        pub label: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(
            belongs_to = "hierlock_layout_entities::resource::Table",
            from = "Column::ResourceId",
            to = "hierlock_layout_entities::resource::Column::Id"
        )]
        Resource,
    }

    impl Related<hierlock_layout_entities::resource::Table> for Entity {
        fn to() -> RelationDef {
            Relation::Resource.def()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// A protected entity of this crate, under the upstream accounts.
#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
pub mod limit {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "service_limits")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub account_id: i64,
        pub daily: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(
            belongs_to = "hierlock_layout_entities::account::Table",
            from = "Column::AccountId",
            to = "hierlock_layout_entities::account::Column::Id"
        )]
        Account,
    }

    impl Related<hierlock_layout_entities::account::Table> for Entity {
        fn to() -> RelationDef {
            Relation::Account.def()
        }
    }
}

/// The service's error.
#[derive(Debug)]
pub enum ServiceError {
    /// Locking, or a protected write, failed.
    Lock(hierlock::Error),
    /// A plain SeaORM statement failed.
    Db(DbErr),
}

impl From<hierlock::Error> for ServiceError {
    fn from(e: hierlock::Error) -> Self {
        ServiceError::Lock(e)
    }
}

impl From<DbErr> for ServiceError {
    fn from(e: DbErr) -> Self {
        ServiceError::Db(e)
    }
}

impl std::fmt::Display for ServiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServiceError::Lock(e) => e.fmt(f),
            ServiceError::Db(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ServiceError {}

/// The repository.
pub struct Accounts {
    /// The locker of the service's database.
    pub locker: Locker,
}

impl HasLocker for Accounts {
    fn locker(&self) -> &Locker {
        &self.locker
    }
}

impl Accounts {
    /// A user with one account, one resource, a limit, a tag, a note and
    /// an audit row: upstream protected entities, this crate's protected
    /// entity, and plain entities of both crates, in one transaction.
    #[hierlocked(user = user_id)]
    pub async fn open(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        account_id: i64,
        resource_id: i64,
    ) -> Result<(), ServiceError> {
        user::Entity::insert(user::ActiveModel {
            id: Set(user_id),
            name: Set(format!("user {user_id}")),
        })
        .exec(&lock)
        .await?;
        account::Entity::insert(account::ActiveModel {
            id: Set(account_id),
            user_id: Set(user_id),
            name: Set(format!("account {account_id}")),
        })
        .exec(&lock)
        .await?;
        resource::Entity::insert(resource::ActiveModel {
            id: Set(resource_id),
            user_id: Set(user_id),
            account_id: Set(account_id),
            balance: Set(100),
        })
        .exec(&lock)
        .await?;
        limit::Entity::insert(limit::ActiveModel {
            id: Set(resource_id),
            user_id: Set(user_id),
            account_id: Set(account_id),
            daily: Set(10),
        })
        .exec(&lock)
        .await?;
        // Plain entities: SeaORM's own writes, no proof needed.
        audit::Entity::insert(audit::ActiveModel {
            account_id: Set(account_id),
            note: Set("opened".to_owned()),
            ..Default::default()
        })
        .exec(txn)
        .await?;
        tag::Entity::insert(tag::ActiveModel {
            resource_id: Set(resource_id),
            label: Set("new".to_owned()),
            ..Default::default()
        })
        .exec(txn)
        .await?;
        note::Entity::insert(note::ActiveModel {
            text: Set(format!("opened {user_id}")),
            ..Default::default()
        })
        .exec(txn)
        .await?;
        Ok(())
    }

    /// Lock a session's user, named by a UUID (feature `uuid`): the proof
    /// covers the user named by the UUID's hyphenated lowercase text.
    #[hierlocked(user = session, read)]
    pub async fn session_covers(
        &self,
        txn: &DatabaseTransaction,
        session: uuid::Uuid,
        text: &str,
    ) -> Result<bool, ServiceError> {
        Ok(lock.covers(&hierlock::Target::user(text), hierlock::Access::Read))
    }

    /// Set a resource's balance with the lock on its account.
    #[hierlocked(user = user_id, account = account_id)]
    pub async fn set_balance(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        account_id: i64,
        resource: resource::Model,
        balance: i64,
    ) -> Result<resource::Model, ServiceError> {
        let mut row: resource::ActiveModel = resource.into();
        row.balance = Set(balance);
        Ok(resource::Entity::update(row).exec(&lock).await?)
    }

    /// Add `amount` to a resource's balance, its row read with its lock.
    #[hierlocked(
        user = user_id,
        account = account_id,
        resource = resource_id,
        rows = resource::Entity::find_by_id(resource_id)
    )]
    pub async fn deposit(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        account_id: i64,
        resource_id: i64,
        amount: i64,
    ) -> Result<resource::Model, ServiceError> {
        let Some(row) = rows.into_iter().next() else {
            return Err(DbErr::RecordNotFound(format!("resource {resource_id}")).into());
        };
        let balance = row.balance + amount;
        let mut row: resource::ActiveModel = row.into();
        row.balance = Set(balance);
        Ok(resource::Entity::update(row).exec(&lock).await?)
    }
}
