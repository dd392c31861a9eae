//! A nested save under a read proof: SeaORM's nested writes of a protected
//! dense entity run only with a write proof, so this does not compile.

#[path = "../support/dense.rs"]
mod dense;

use dense::{account, resource};
use hierlock::proof::{Read, UserLevel};
use hierlock::sea_orm::ActiveValue::{NotSet, Set};
use hierlock::{Locked, sea_orm::DbErr};

async fn write(lock: &Locked<'_, UserLevel, Read>) -> Result<(), DbErr> {
    account::NestedActiveModel::from(account::ActiveModel {
        id: Set(10),
        user_id: Set(1),
        name: Set("main".to_owned()),
    })
    .add_resource(resource::ActiveModel {
        id: Set(100),
        user_id: Set(1),
        account_id: NotSet,
    })
    .insert(lock)
    .await?;
    Ok(())
}

fn main() {
    let _ = write;
}
