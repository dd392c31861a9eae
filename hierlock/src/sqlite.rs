//! SQLite pools whose lock waits end when the acquisition does: hierlock's
//! busy handler.
//!
//! On SQLite an acquisition takes the database's write lock, and waits for it
//! in SQLite's busy handler, inside sqlx's worker thread for the connection.
//! SeaORM keeps that connection private, so hierlock cannot interrupt the
//! wait from outside. Instead it installs a busy handler of its own on each
//! connection of the pool; then:
//!
//! - hierlock's lock statement waits exactly as the acquisition allows
//!   ([`Wait::Timeout`](crate::Wait::Timeout) is one deadline, kept to a few
//!   milliseconds; [`Wait::NoWait`](crate::Wait::NoWait) does not wait;
//!   [`Wait::Block`](crate::Wait::Block) waits as the busy timeout), and stops
//!   within about 5 ms when the acquisition's future is dropped (a cancelled
//!   request, `tokio::time::timeout`, `select!`): from then on it cannot take
//!   the lock, and the transaction's next statement runs at once;
//! - every other statement on the connection waits as the connection's busy
//!   timeout, as before (sqlx's
//!   [`SqliteConnectOptions::busy_timeout`](sea_orm::sqlx::sqlite::SqliteConnectOptions::busy_timeout),
//!   5 s by default, read when the handler is installed);
//! - an acquisition changes no setting of the connection.
//!
//! Without the handler, an acquisition sets `PRAGMA busy_timeout` to the time
//! it may wait and restores it after. That is not cancel-safe: if its future
//! is dropped mid-wait, sqlx's worker goes on waiting until that busy timeout
//! (the connection serves nothing meanwhile, and the statement may still take
//! the lock), and if it is dropped between the set and the restore, the
//! connection keeps the changed busy timeout.
//!
//! Get the handler with [`connect`], or with [`with_busy_handler`] or
//! [`install_busy_handler`] where you build the pool yourself:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use hierlock::{Config, Locker};
//! use sea_orm::ConnectOptions;
//!
//! let mut options = ConnectOptions::new("sqlite://app.db?mode=rwc");
//! options.max_connections(8);
//! let db = hierlock::sqlite::connect(options).await?;
//! let locker = Locker::connect(&db, Config::default()).await?;
//! # Ok(()) }
//! ```
//!
//! Once installed, do not run `PRAGMA busy_timeout = …` on the connection:
//! SQLite then replaces the handler with its own, and the lock waits of that
//! connection are no longer cancel-safe.

use std::time::Duration;

use sea_orm::sqlx::pool::PoolOptions;
use sea_orm::sqlx::sqlite::{Sqlite, SqliteConnection};
use sea_orm::sqlx;
use sea_orm::{ConnectOptions, Database, DatabaseConnection, DbErr};

use crate::backend::sqlite::{LOCK_WAIT_FUNCTION, busy_handler};

/// Connect to a SQLite database, with hierlock's busy handler on every
/// connection of the pool.
///
/// `options` is a URL or SeaORM's [`ConnectOptions`], used as
/// [`Database::connect`] uses them, with the pool's `after_connect` set by
/// [`with_busy_handler`] (so it replaces any
/// [`ConnectOptions::map_sqlx_sqlite_pool_opts`] of `options`: to keep one,
/// call [`with_busy_handler`] in it instead). A URL of another database
/// connects as [`Database::connect`] does, without the handler.
///
/// # Errors
/// Those of [`Database::connect`], and a connection error if the handler
/// cannot be installed.
pub async fn connect(options: impl Into<ConnectOptions>) -> Result<DatabaseConnection, DbErr> {
    let mut options = options.into();
    options.map_sqlx_sqlite_pool_opts(with_busy_handler);
    Database::connect(options).await
}

/// `options` with an `after_connect` that installs hierlock's busy handler
/// on each new connection: for [`ConnectOptions::map_sqlx_sqlite_pool_opts`],
/// or a pool built with sqlx and given to SeaORM by
/// [`SqlxSqliteConnector::from_sqlx_sqlite_pool`](sea_orm::SqlxSqliteConnector::from_sqlx_sqlite_pool).
///
/// It replaces an `after_connect` set before; to run your own as well, call
/// [`install_busy_handler`] in it.
pub fn with_busy_handler(options: PoolOptions<Sqlite>) -> PoolOptions<Sqlite> {
    options.after_connect(|conn, _meta| Box::pin(install_busy_handler(conn)))
}

/// Install hierlock's busy handler on `conn`, in place of its busy timeout,
/// which it keeps for statements other than hierlock's lock statement (read
/// with `PRAGMA busy_timeout`; after this, that reads 0). Doing it again on
/// the same connection does nothing.
///
/// # Errors
/// The error of a statement on `conn`, or [`sqlx::Error::Configuration`] if
/// SQLite refused the handler (the connection then keeps its busy timeout).
pub async fn install_busy_handler(conn: &mut SqliteConnection) -> Result<(), sqlx::Error> {
    if has_busy_handler(conn).await {
        return Ok(());
    }
    let millis: i64 = sqlx::query_scalar("PRAGMA busy_timeout")
        .fetch_one(&mut *conn)
        .await?;
    let busy_timeout = Duration::from_millis(u64::try_from(millis).unwrap_or(0));
    let mut handle = conn.lock_handle().await?;
    busy_handler::install(&mut handle, busy_timeout).map_err(|e| {
        sqlx::Error::Configuration(
            format!("hierlock could not install its SQLite busy handler (SQLite error {})", e.0)
                .into(),
        )
    })
}

/// Whether hierlock's handler is on `conn` (its SQL function exists).
async fn has_busy_handler(conn: &mut SqliteConnection) -> bool {
    let probe = format!("SELECT {LOCK_WAIT_FUNCTION}(0)");
    // Not a cached statement: it runs once per connection, and fails on a
    // new one.
    sqlx::raw_sql(sqlx::AssertSqlSafe(probe))
        .execute(conn)
        .await
        .is_ok()
}
