//! The `axum_service` example's logic: an HTTP service whose handlers each
//! run one request-scoped transaction through [`hierlock::retry`], calling
//! `#[hierlocked]` repository methods on a `#[protected]` entity, and map
//! every failure to an HTTP status.
//!
//! - [`entity`]: the protected table.
//! - [`repo`]: the `#[hierlocked]` repository.
//! - [`error`]: the failures and their statuses (503 + `Retry-After` for a
//!   lock not taken in time, and why not 409).
//! - [`routes`]: the handlers.
//!
//! `examples/axum_service.rs` is its command line; `tests/axum_service.rs`
//! sends it concurrent requests over HTTP.

pub mod entity;
pub mod error;
pub mod repo;
pub mod routes;

use std::time::Duration;

use hierlock::sea_orm::{ConnectOptions, Database, DatabaseConnection, DbBackend, DbErr};
use hierlock::{Config, Locker, RetryPolicy, Wait};
use tokio::net::TcpListener;

use self::repo::Repo;

/// The service's bucket table on MySQL and MariaDB, apart from the default
/// one and from the other examples'.
pub const BUCKET_TABLE: &str = "svc_lock_buckets";

/// Buckets per level on MySQL and MariaDB: small, provisioned in seconds.
pub const BUCKET_SPACE: u32 = 100_000;

/// What every handler shares: the pool, the repository, the retry policy.
#[derive(Clone, Debug)]
pub struct App {
    /// The pool; each request's transaction takes one connection.
    pub db: DatabaseConnection,
    /// The repository.
    pub repo: Repo,
    /// How `hierlock::retry` retries a request's transaction.
    pub policy: RetryPolicy,
}

/// Connect to `url` with a pool of `connections`, SQLite in WAL mode.
///
/// # Errors
/// The connection failed.
pub async fn connect(url: &str, connections: u32) -> Result<DatabaseConnection, DbErr> {
    let mut options = ConnectOptions::new(url);
    options
        .max_connections(connections)
        .sqlx_logging(false)
        .map_sqlx_sqlite_opts(|sqlite| {
            sqlite.journal_mode(hierlock::sea_orm::sqlx::sqlite::SqliteJournalMode::Wal)
        });
    // On SQLite, hierlock's busy handler ends a lock wait when its request
    // is dropped (a client that hung up).
    if url.starts_with("sqlite:") {
        hierlock::sqlite::connect(options).await
    } else {
        Database::connect(options).await
    }
}

/// The locker's configuration: the service's own bucket table, and
/// `lock_wait` at most per acquisition (past it: `LockTimeout`, 503).
///
/// # Errors
/// None with these constants; the builder checks its arguments.
pub fn config(lock_wait: Duration) -> hierlock::Result<Config> {
    Config::default()
        .with_table(BUCKET_TABLE)?
        .with_bucket_space(BUCKET_SPACE)?
        .with_wait(Wait::Timeout(lock_wait))
}

/// Create the table and make the locker (on MySQL and MariaDB, first
/// provisioning the bucket table: quick once it is complete).
///
/// # Errors
/// Creating the table, provisioning or [`Locker::connect`] failed.
pub async fn prepare(db: &DatabaseConnection, config: Config) -> hierlock::Result<Locker> {
    entity::create_tables(db).await?;
    if db.get_database_backend() == DbBackend::MySql {
        hierlock_migration::Provision::new(config.clone())
            .chunk_rows(20_000)
            .run(db)
            .await?;
    }
    Locker::connect(db, config).await
}

impl App {
    /// The state of a service on `db` locking through `locker`.
    pub fn new(db: DatabaseConnection, locker: Locker, policy: RetryPolicy) -> Self {
        App {
            db,
            repo: Repo::new(locker),
            policy,
        }
    }
}

/// Serve `app` on `listener` until the task is dropped or the server fails.
///
/// # Errors
/// Accepting connections failed.
pub async fn serve(listener: TcpListener, app: App) -> std::io::Result<()> {
    axum::serve(listener, routes::router(app)).await
}
