//! `delete_links` (SeaORM's junction deletes) on a protected dense entity's
//! `ActiveModelEx`: does not compile.

#[path = "../support/dense.rs"]
mod dense;

use dense::{resource, resource_tag};
use hierlock::sea_orm::{DatabaseTransaction, DbErr, EntityTrait};

/// SeaORM's `ActiveModelEx` of the entity, reached through its `Table`.
type ActiveModelEx = <resource::Table as EntityTrait>::ActiveModelEx;

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if let Some(row) = resource::Entity::load().one(txn).await? {
        ActiveModelEx::from(row)
            .delete_links(resource_tag::Table, txn)
            .await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
