//! Ending a lock statement's server-side wait from another connection.
//!
//! A lock statement that waits holds its connection until the server answers.
//! When the acquisition gives up (its deadline passed) or its future is
//! dropped (a cancelled request, `tokio::time::timeout`, `select!`), the wait
//! must end on the server too, or the statement still takes its locks later
//! and the pooled connection stays busy until the server's own timeout.
//!
//! The [`Canceller`] asks the server to interrupt the statement, from a side
//! connection of its own (one, opened on first use with the options of the
//! user's pool, so that a pool exhausted by waiters can still cancel them):
//!
//! - MariaDB: `KILL QUERY ID <query id>`, the query id read from
//!   `information_schema.PROCESSLIST` for that connection while it runs a
//!   hierlock lock statement: a statement that already finished is not hit.
//! - MySQL: `KILL QUERY <connection>` if the connection runs a hierlock lock
//!   statement. Between that check and the kill the statement may finish:
//!   a `KILL QUERY` on an idle connection does nothing (measured on MySQL 9
//!   and MariaDB 10.11), so only a statement started in that window could be
//!   hit.
//! - PostgreSQL: `pg_cancel_backend(pid)` in the same statement as the check
//!   that the backend runs a hierlock lock statement; a cancel that reaches
//!   an idle backend is ignored.
//!
//! The interrupted statement fails (MySQL 1317, PostgreSQL 57014); the
//! transaction is left as after a lock timeout.
//!
//! A *dropped* acquisition ends its whole session instead (`KILL
//! CONNECTION`, `pg_terminate_backend`), with the same check that it still
//! runs a lock statement: the driver's connection was left mid-statement by
//! the dropped future, and sqlx could not always bring such a connection
//! back to its pool after the statement was interrupted (measured: the pool
//! of one connection stuck past its acquire timeout on MySQL 9 and
//! PostgreSQL). A closed connection is dropped by the pool at once, which
//! then opens a new one; the transaction it held is rolled back by the
//! server.

use std::time::Duration;

use sea_orm::{DatabaseConnection, Statement};

use crate::backend::dialect::Dialect;

/// How long a cancellation may take before it is given up (it runs on a
/// side connection; a server that does not answer within this has other
/// problems, and the statement then ends with the server's own timeout).
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// Interrupts lock statements of one database from a side connection.
#[derive(Clone, Debug)]
pub(crate) enum Canceller {
    /// The server cannot be asked (SQLite runs in-process).
    None,
    #[cfg(feature = "mysql")]
    MySql {
        pool: sea_orm::sqlx::MySqlPool,
        mariadb: bool,
    },
    #[cfg(feature = "postgres")]
    Postgres(sea_orm::sqlx::PgPool),
}

impl Canceller {
    /// A canceller for `db`, whose side connection is opened on first use.
    pub(crate) fn new(db: &DatabaseConnection, dialect: Dialect) -> Canceller {
        // Only SQLx pools have connect options to open a side connection
        // with (a mock or proxy connection has none: nothing to cancel).
        #[cfg(any(feature = "mysql", feature = "postgres"))]
        use sea_orm::DatabaseConnectionType as Pool;
        let _ = dialect;
        match &db.inner {
            #[cfg(feature = "mysql")]
            Pool::SqlxMySqlPoolConnection(_) => {
                let options = db.get_mysql_connection_pool().connect_options();
                Canceller::MySql {
                    pool: side_pool::<sea_orm::sqlx::MySql>().connect_lazy_with((*options).clone()),
                    mariadb: dialect == Dialect::MariaDb,
                }
            }
            #[cfg(feature = "postgres")]
            Pool::SqlxPostgresPoolConnection(_) => {
                let options = db.get_postgres_connection_pool().connect_options();
                Canceller::Postgres(
                    side_pool::<sea_orm::sqlx::Postgres>().connect_lazy_with((*options).clone()),
                )
            }
            _ => Canceller::None,
        }
    }

    /// Open the side connection, in the background, if it is not open: an
    /// acquisition is about to wait, and a cancellation should not have to
    /// connect first (a new connection costs 50–100 ms with TLS).
    pub(crate) fn warm(&self) {
        match self {
            Canceller::None => {}
            #[cfg(feature = "mysql")]
            Canceller::MySql { pool, .. } => warm(pool),
            #[cfg(feature = "postgres")]
            Canceller::Postgres(pool) => warm(pool),
        }
    }

    /// The statement that reads the server-side id of the connection it runs on.
    pub(crate) fn connection_id_statement(&self) -> Option<Statement> {
        match self {
            Canceller::None => None,
            #[cfg(feature = "mysql")]
            Canceller::MySql { .. } => Some(Statement::from_string(
                sea_orm::DbBackend::MySql,
                "SELECT CAST(CONNECTION_ID() AS SIGNED) AS id",
            )),
            #[cfg(feature = "postgres")]
            Canceller::Postgres(_) => Some(Statement::from_string(
                sea_orm::DbBackend::Postgres,
                "SELECT pg_backend_pid()::int8 AS id",
            )),
        }
    }

    /// Interrupt the hierlock lock statement connection `id` is running, if
    /// any (`End::Statement`), or end the connection (`End::Session`).
    /// Failures are logged: the statement then ends with the server's own
    /// lock-wait timeout.
    pub(crate) async fn cancel(&self, id: i64, end: End) {
        let outcome = tokio::time::timeout(CANCEL_TIMEOUT, self.try_cancel(id, end)).await;
        match outcome {
            Ok(Ok(())) => tracing::debug!(connection = id, "hierlock cancelled a lock wait"),
            Ok(Err(error)) => {
                tracing::warn!(connection = id, %error, "hierlock could not cancel a lock wait");
            }
            Err(_) => tracing::warn!(
                connection = id,
                "hierlock's lock-wait cancellation timed out"
            ),
        }
    }

    async fn try_cancel(&self, id: i64, end: End) -> Result<(), sea_orm::sqlx::Error> {
        #[cfg(any(feature = "mysql", feature = "postgres"))]
        use sea_orm::sqlx;
        let _ = (id, end);
        match self {
            Canceller::None => Ok(()),
            #[cfg(feature = "mysql")]
            Canceller::MySql { pool, mariadb } => {
                // MariaDB kills a query by its own id, so a statement that has
                // already ended is not hit; MySQL kills what the connection
                // runs, if it still runs a hierlock lock statement.
                let column = if *mariadb { "QUERY_ID" } else { "ID" };
                let running: Option<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                    "SELECT CAST({column} AS SIGNED) FROM information_schema.PROCESSLIST \
                     WHERE ID = ? AND INFO LIKE '%locked_bucket%'"
                )))
                .bind(id)
                .fetch_optional(pool)
                .await?;
                if let Some(running) = running {
                    let kill = match (end, *mariadb) {
                        (End::Session, _) => format!("KILL CONNECTION {id}"),
                        (End::Statement, true) => format!("KILL QUERY ID {running}"),
                        (End::Statement, false) => format!("KILL QUERY {id}"),
                    };
                    sqlx::raw_sql(sqlx::AssertSqlSafe(kill))
                        .execute(pool)
                        .await?;
                }
                Ok(())
            }
            #[cfg(feature = "postgres")]
            Canceller::Postgres(pool) => {
                // A simple query (no prepared statement), so that it also
                // runs through pgbouncer's transaction pooling; `id` is the
                // integer the server gave.
                let function = match end {
                    End::Statement => "pg_cancel_backend",
                    End::Session => "pg_terminate_backend",
                };
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "SELECT {function}(pid) FROM pg_stat_activity \
                     WHERE pid = {id} AND state = 'active' \
                     AND (query LIKE '%pg_advisory_xact_lock%' OR query LIKE '%locked_bucket%')"
                )))
                .execute(pool)
                .await?;
                Ok(())
            }
        }
    }

    /// End connection `id` if it still runs its lock statement, from a task
    /// of its own: for a wait that was given up (its future dropped, or its
    /// answer not come by the deadline) by code that cannot await.
    pub(crate) fn end_session_in_background(&self, id: i64) {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let canceller = self.clone();
                runtime.spawn(async move { canceller.cancel(id, End::Session).await });
            }
            Err(_) => tracing::warn!(
                connection = id,
                "hierlock could not end a given-up lock wait: no Tokio runtime"
            ),
        }
    }

    /// End connection `id`, if it still runs its lock statement, when the
    /// guard is dropped before [`CancelOnDrop::disarm`].
    pub(crate) fn arm(&self, id: i64) -> CancelOnDrop {
        CancelOnDrop {
            canceller: Some(self.clone()),
            id,
        }
    }
}

/// Open one connection of `pool` in the background unless it has one.
#[cfg(any(feature = "mysql", feature = "postgres"))]
fn warm<DB: sea_orm::sqlx::Database>(pool: &sea_orm::sqlx::Pool<DB>) {
    if pool.size() > 0 {
        return;
    }
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let pool = pool.clone();
        // Dropping the connection puts it in the pool, idle.
        runtime.spawn(async move { drop(pool.acquire().await) });
    }
}

/// What a cancellation ends.
#[derive(Clone, Copy, Debug)]
pub(crate) enum End {
    /// The lock statement: the acquisition gave up at its deadline and
    /// reads the statement's answer itself; the transaction stays usable.
    Statement,
    /// The connection: the acquisition's future was dropped mid-statement.
    Session,
}

/// One side connection, opened when the locker is made and kept: a
/// cancellation at a deadline must not wait for a new connection.
#[cfg(any(feature = "mysql", feature = "postgres"))]
fn side_pool<DB: sea_orm::sqlx::Database>() -> sea_orm::sqlx::pool::PoolOptions<DB> {
    sea_orm::sqlx::pool::PoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .acquire_timeout(CANCEL_TIMEOUT)
        .idle_timeout(None)
}

/// Interrupts a lock statement whose future is dropped while it waits.
#[must_use]
pub(crate) struct CancelOnDrop {
    canceller: Option<Canceller>,
    id: i64,
}

impl CancelOnDrop {
    /// The statement finished: nothing to cancel.
    pub(crate) fn disarm(mut self) {
        self.canceller = None;
    }

    /// Cancel the statement now, and wait until the server was asked.
    pub(crate) async fn cancel_now(mut self) {
        if let Some(canceller) = self.canceller.take() {
            canceller.cancel(self.id, End::Statement).await;
        }
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(canceller) = self.canceller.take() {
            canceller.end_session_in_background(self.id);
        }
    }
}
