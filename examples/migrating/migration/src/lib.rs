//! # The migrations of the migration guide's entities
//!
//! A `sea-orm-cli migrate init` crate: the tables come from the entities,
//! protected or not (`Schema::create_table_from_entity(account::Entity)`),
//! and hierlock's bucket table from
//! `hierlock_migration::CreateHierLockBuckets`, the one addition the
//! protected entities ask of it.
//!
//! ```text
//! cargo test -p hierlock-migrating-migration
//! ```
//!
//! runs the migrations on a SQLite file, a `#[hierlocked]` write of the
//! protected entities, reads through their relations, and the migrations
//! down again (`tests/migrate.rs`).

pub use sea_orm_migration::prelude::*;

mod m20250101_000001_create_tables;

/// The application's migrator: hierlock's bucket table, then the entities'.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(hierlock_migration::CreateHierLockBuckets::default()),
            Box::new(m20250101_000001_create_tables::Migration),
        ]
    }
}
