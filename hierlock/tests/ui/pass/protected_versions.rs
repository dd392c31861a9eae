//! A versioned protected entity: written with a proof (`.exec(&lock)`,
//! checked against the version too) and without one (`exec_versioned`).

use hierlock::proof::AccountLevel;
use hierlock::sea_orm::{ActiveValue::Set, DatabaseTransaction};
use hierlock::{Locked, Versioned};

#[hierlock::protected(level = account, user = user_id, account = id, version = version)]
pub mod account {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "accounts")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub name: String,
        pub version: i32,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

fn is_versioned<E: Versioned>() {}

async fn locked(lock: &Locked<'_, AccountLevel>, edited: account::Model) -> hierlock::Result<i32> {
    let mut am = edited.into_active_model();
    am.name = Set("renamed".to_owned());
    let row = account::Entity::update(am).exec(lock).await?;
    account::Entity::delete(row.clone()).exec(lock).await?;
    Ok(row.version)
}

async fn unlocked(txn: &DatabaseTransaction, edited: account::Model) -> hierlock::Result<()> {
    let mut am = edited.clone().into_active_model();
    am.name = Set("renamed".to_owned());
    let row = account::Entity::update(am).exec_versioned(txn).await?;
    let _: u64 = account::Entity::delete(row).exec_versioned(txn).await?;
    Ok(())
}

fn main() {
    is_versioned::<account::Table>();
    let _ = (locked, unlocked);
}
