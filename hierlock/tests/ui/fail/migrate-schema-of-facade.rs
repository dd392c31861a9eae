//! A migration creates a protected entity's table from its `Entity` (or the
//! prelude's name for it), the facade: the error names `account::Table`.
#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{DbBackend, Schema};

fn main() {
    let schema = Schema::new(DbBackend::Sqlite);
    let _ = schema.create_table_from_entity(account::Entity);
}
