//! The lease: how long the server keeps the locks of a client that has gone
//! silent (see [`Config::with_lease`](crate::Config::with_lease)).
//!
//! On PostgreSQL hierlock sets it for each lock-taking transaction. On MySQL
//! and MariaDB it can only be a session setting, so it is the pool's: set it
//! on every connection the pool opens with [`mysql_pool`] (or, from a
//! connect hook of your own, [`set_mysql_session_lease`]):
//!
//! ```no_run
//! # #[cfg(feature = "mysql")]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use hierlock::sea_orm::{ConnectOptions, Database};
//!
//! let mut options = ConnectOptions::new("mysql://app@db.internal/app");
//! options.map_sqlx_mysql_pool_opts(|pool| hierlock::lease::mysql_pool(pool, Duration::from_secs(60)));
//! let db = Database::connect(options).await?;
//! let locker = hierlock::Locker::connect(&db, hierlock::Config::default()).await?;
//! assert_eq!(locker.lease(), Some(Duration::from_secs(60)));
//! # Ok(()) }
//! ```

use std::time::Duration;

use sea_orm::{ConnectionTrait, DatabaseTransaction, Statement};

use crate::backend::dialect::Dialect;
use crate::error::{Error, Result};

/// `pool` with the lease set on every connection it opens (MySQL's
/// `wait_timeout`, MariaDB's `idle_transaction_timeout`, in whole seconds
/// rounded up), and its idle connections closed after half the lease if it
/// did not close them sooner (MySQL's `wait_timeout` also ends idle sessions
/// outside a transaction: the pool closes them first).
///
/// This replaces the pool's `after_connect` hook; if you have your own, call
/// [`set_mysql_session_lease`] from it instead.
#[cfg(feature = "mysql")]
pub fn mysql_pool(
    pool: sea_orm::sqlx::pool::PoolOptions<sea_orm::sqlx::MySql>,
    lease: Duration,
) -> sea_orm::sqlx::pool::PoolOptions<sea_orm::sqlx::MySql> {
    let half = lease / 2;
    let idle = pool.get_idle_timeout().map_or(half, |idle| idle.min(half));
    pool.idle_timeout(Some(idle))
        .after_connect(move |conn, _meta| Box::pin(set_mysql_session_lease(conn, lease)))
}

/// Set the lease on one MySQL or MariaDB connection: MariaDB's
/// `idle_transaction_timeout` (a session idle *inside a transaction* for
/// that long is ended), or, on MySQL, which has no such setting,
/// `wait_timeout` (any idle session). A tighter value already in force (the
/// server's global default) is kept; `0` (off) is replaced.
///
/// # Errors
/// The server's error if neither setting can be changed.
#[cfg(feature = "mysql")]
pub async fn set_mysql_session_lease(
    conn: &mut sea_orm::sqlx::MySqlConnection,
    lease: Duration,
) -> std::result::Result<(), sea_orm::sqlx::Error> {
    use sea_orm::sqlx::{AssertSqlSafe, Executor};

    let seconds = crate::backend::mysql::whole_seconds(lease);
    // A tighter timeout already in force (the server's default) is kept.
    let keep_tighter = |name: &str| {
        format!(
            "SET SESSION {name} = CAST(IF(@@session.{name} BETWEEN 1 AND {seconds}, \
             @@session.{name}, {seconds}) AS UNSIGNED)"
        )
    };
    let mariadb = keep_tighter("idle_transaction_timeout");
    match conn.execute(AssertSqlSafe(mariadb)).await {
        Ok(_) => Ok(()),
        // 1193: unknown system variable (MySQL).
        Err(sea_orm::sqlx::Error::Database(e))
            if e.try_downcast_ref::<sea_orm::sqlx::mysql::MySqlDatabaseError>()
                .is_some_and(|e| e.number() == 1193) =>
        {
            let mysql = keep_tighter("wait_timeout");
            conn.execute(AssertSqlSafe(mysql)).await.map(drop)
        }
        Err(e) => Err(e),
    }
}


/// The lease the server applies to this connection's session: how long it
/// keeps an idle lock-holding transaction. MySQL and MariaDB only
/// (PostgreSQL's is set per transaction; SQLite has none).
pub(crate) async fn session_lease(
    txn: &DatabaseTransaction,
    dialect: Dialect,
) -> Result<Option<Duration>> {
    let sql = match dialect {
        Dialect::MariaDb => {
            "SELECT CAST(@@session.wait_timeout AS SIGNED) AS wait, \
             CAST(@@session.idle_transaction_timeout AS SIGNED) AS idle"
        }
        Dialect::MySql => "SELECT CAST(@@session.wait_timeout AS SIGNED) AS wait, 0 AS idle",
        Dialect::Postgres | Dialect::Sqlite => return Ok(None),
    };
    let doing = "reading the session's idle timeouts";
    let row = txn
        .query_one_raw(Statement::from_string(dialect.backend(), sql))
        .await
        .map_err(|e| Error::database(doing, e))?;
    let Some(row) = row else { return Ok(None) };
    let seconds = |column: &str| -> Result<u64> {
        let value: i64 = row
            .try_get("", column)
            .map_err(|e| Error::database(doing, e))?;
        Ok(u64::try_from(value).unwrap_or(0))
    };
    // The shorter of the two that are set (0 is off).
    let bound = [seconds("wait")?, seconds("idle")?]
        .into_iter()
        .filter(|&s| s > 0)
        .min();
    Ok(bound.map(Duration::from_secs))
}
