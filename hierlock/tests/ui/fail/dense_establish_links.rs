//! `establish_links` (SeaORM's junction inserts of a many-to-many relation)
//! on a protected dense entity's `ActiveModelEx`: does not compile.
//! (With a connection. On a SeaORM transaction it compiles and is refused
//! when it runs, before it writes: the conformance suite's dense tests.)

#[path = "../support/dense.rs"]
mod dense;

use dense::{resource, resource_tag, tag};
use hierlock::sea_orm::{DatabaseConnection, DbErr, EntityTrait};

/// SeaORM's `ActiveModelEx` of the entity, reached through its `Table`.
type ActiveModelEx = <resource::Table as EntityTrait>::ActiveModelEx;

async fn write(db: &DatabaseConnection) -> Result<(), DbErr> {
    if let Some(row) = resource::Entity::load().one(db).await? {
        let tags: Vec<<tag::Table as EntityTrait>::ActiveModelEx> = Vec::new();
        ActiveModelEx::from(row)
            .establish_links(resource_tag::Table, &tags, true, db)
            .await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
