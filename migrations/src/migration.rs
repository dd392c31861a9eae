//! The same provisioning as a sea-orm-migration migration.

use hierlock::{Config, Dialect};
use sea_orm::{ConnectionTrait, DbErr};
use sea_orm_migration::{MigrationName, MigrationTrait, MigratorTrait, SchemaManager, async_trait};

use crate::error_chain;
use crate::provision::Provision;
use crate::sql;

/// A migrator with one migration, [`CreateHierLockBuckets`] for the default
/// [`Config`] (table `hier_lock_buckets`, the seed's 10,000,000 buckets per level).
///
/// To provision another table or bucket space, list
/// `CreateHierLockBuckets::new(config)` in your own migrator instead.
///
/// ```no_run
/// # async fn migrate(db: &sea_orm::DatabaseConnection) -> Result<(), sea_orm::DbErr> {
/// use hierlock_migration::Migrator;
/// use sea_orm_migration::MigratorTrait;
///
/// Migrator::up(db, None).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![Box::new(CreateHierLockBuckets::default())]
    }
}

/// Creates and fills the bucket table of a [`Config`] (`up`, a
/// [`Provision`] run) and drops it with its metadata table (`down`).
///
/// It runs outside any migration transaction, so that every chunk of rows
/// commits on its own: an interrupted `up` resumes where it stopped when run
/// again.
///
/// ```
/// use hierlock::Config;
/// use hierlock_migration::CreateHierLockBuckets;
/// use sea_orm_migration::{MigrationTrait, MigratorTrait};
///
/// struct Migrator;
///
/// impl MigratorTrait for Migrator {
///     fn migrations() -> Vec<Box<dyn MigrationTrait>> {
///         let config = Config::default()
///             .with_table("my_locks")
///             .and_then(|config| config.with_bucket_space(1_000_000))
///             .expect("a valid configuration");
///         vec![Box::new(CreateHierLockBuckets::new(config))]
///     }
/// }
/// ```
#[derive(Clone, Debug)]
pub struct CreateHierLockBuckets {
    provision: Provision,
}

impl CreateHierLockBuckets {
    /// The migration for `config`'s table, key scheme and bucket space.
    pub fn new(config: Config) -> Self {
        CreateHierLockBuckets {
            provision: Provision::new(config),
        }
    }

    /// Insert `rows` rows per statement (see [`Provision::chunk_rows`]).
    pub fn chunk_rows(self, rows: u32) -> Self {
        CreateHierLockBuckets {
            provision: self.provision.chunk_rows(rows),
        }
    }
}

/// The migration for [`Config::default()`].
impl Default for CreateHierLockBuckets {
    fn default() -> Self {
        CreateHierLockBuckets::new(Config::default())
    }
}

impl MigrationName for CreateHierLockBuckets {
    fn name(&self) -> &str {
        "m20251122_000001_create_hier_lock_buckets"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for CreateHierLockBuckets {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let report = self
            .provision
            .run(db)
            .await
            .map_err(|e| DbErr::Migration(error_chain(&e)))?;
        tracing::info!(?report, "hierlock bucket table provisioned");
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let dialect = Dialect::detect(db)
            .await
            .map_err(|e| DbErr::Migration(error_chain(&e)))?;
        for stmt in sql::drop_tables(dialect, self.provision.config().table()) {
            db.execute_raw(stmt).await?;
        }
        Ok(())
    }

    /// Never in one transaction: each chunk commits on its own (resumable,
    /// and no 30-million-row transaction on PostgreSQL).
    fn use_transaction(&self) -> Option<bool> {
        Some(false)
    }
}
