//! How the server names a lock statement that may wait, so that a
//! cancellation sent from another connection finds it (see
//! [`cancel`](super::cancel)): the connection's id, and on PostgreSQL the
//! statement's transaction.

use sea_orm::QueryResult;

/// The connection an acquisition waits on, as the server names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Waiter {
    /// The server's id of the connection (MySQL family) or backend
    /// (PostgreSQL).
    pub(crate) connection: i64,
    /// PostgreSQL: the id of the acquisition's transaction
    /// (`pg_current_xact_id()`, shown as `pg_stat_activity.backend_xid`;
    /// -1 on a hot standby, which assigns none). Unused on the MySQL family,
    /// where the fence's name tells the statement.
    pub(crate) transaction: i64,
}

impl Waiter {
    /// The waiter named by a row with the columns `id` and `xact`
    /// ([`MYSQL`], [`POSTGRES_COLUMNS`]).
    pub(crate) fn from_row(row: &QueryResult) -> Result<Waiter, sea_orm::DbErr> {
        Ok(Waiter {
            connection: row.try_get("", "id")?,
            transaction: row.try_get("", "xact")?,
        })
    }
}

/// What names a waiting statement's connection on the MySQL family.
#[cfg(feature = "mysql")]
pub(crate) const MYSQL: &str =
    "SELECT CAST(CONNECTION_ID() AS SIGNED) AS id, CAST(0 AS SIGNED) AS xact";

/// PostgreSQL: the id of the transaction, assigned now if it has none. A hot
/// standby assigns none (-1: the lock statement then reports the standby).
pub(crate) const POSTGRES_TRANSACTION: &str =
    "CASE WHEN pg_is_in_recovery() THEN -1 ELSE pg_current_xact_id()::text::int8 END";

/// The columns that name a waiting statement's backend and transaction on
/// PostgreSQL (`id`, `xact`), as a statement of their own or after another
/// statement's columns. With `unless`, a condition on that statement's
/// columns under which nothing will wait, the transaction gets no id then
/// (`xact` is -1).
pub(crate) fn postgres_columns(unless: Option<&str>) -> String {
    let transaction = match unless {
        None => POSTGRES_TRANSACTION.to_owned(),
        Some(condition) => format!("CASE WHEN {condition} THEN -1 ELSE {POSTGRES_TRANSACTION} END"),
    };
    format!("pg_backend_pid()::int8 AS id, {transaction} AS xact")
}
