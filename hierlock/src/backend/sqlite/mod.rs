//! SQLite: one database-wide write lock per transaction, waited for in the
//! connection's busy handler.
//!
//! On a connection with hierlock's busy handler (`hierlock::sqlite`), the lock
//! statement carries its acquisition's token, and the handler waits as that
//! acquisition allows ([`waits`]); every other statement waits as the
//! connection's busy timeout. Elsewhere the busy timeout is the lock wait,
//! set for the attempt and restored after.

#[cfg(feature = "sqlite")]
#[allow(unsafe_code)]
pub(crate) mod busy_handler;
pub(crate) mod lock;
pub(crate) mod waits;

use sea_orm::{DbBackend, DbErr, Statement};

/// The SQL function that hierlock's busy handler registers with itself: the
/// lock statement calls it, so that on a connection without the handler it
/// fails to prepare, before it takes or waits for anything.
pub(crate) const LOCK_WAIT_FUNCTION: &str = "hierlock_lock_wait";

/// How the lock statement's text ends: how the busy handler tells it from
/// the connection's other statements.
const WATCHED_SUFFIX: &str = " SET id = id WHERE hierlock_lock_wait(?)";

/// A write to the metadata table (`meta`, quoted) takes the database's write
/// (RESERVED) lock even though it changes no row.
pub(super) fn write_lock(meta: &str) -> Statement {
    Statement::from_string(
        DbBackend::Sqlite,
        format!("UPDATE {meta} SET id = id WHERE 0"),
    )
}

/// [`write_lock`] for a connection with hierlock's busy handler: `token`
/// (bound, so the text stays one cached statement) names the acquisition
/// whose wait the handler follows. The function returns 0: no row changes.
pub(super) fn watched_write_lock(meta: &str, token: i64) -> Statement {
    Statement::from_sql_and_values(
        DbBackend::Sqlite,
        format!("UPDATE {meta}{WATCHED_SUFFIX}"),
        [token.into()],
    )
}

/// Whether `sql`, a prepared statement's text, is [`watched_write_lock`].
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) fn is_watched(sql: &[u8]) -> bool {
    sql.starts_with(b"UPDATE ") && sql.ends_with(WATCHED_SUFFIX.as_bytes())
}

/// The token in the text of a [`watched_write_lock`] with its parameter
/// bound (`sqlite3_expanded_sql`): `… WHERE hierlock_lock_wait(42)`.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) fn token_in(expanded_sql: &str) -> Option<i64> {
    let (_, token) = expanded_sql.strip_suffix(')')?.rsplit_once('(')?;
    token.parse().ok()
}

/// Whether `err` says that the connection has no [`LOCK_WAIT_FUNCTION`]:
/// it has no hierlock busy handler.
pub(crate) fn is_missing_lock_wait_function(err: &DbErr) -> bool {
    err.to_string()
        .contains(&format!("no such function: {LOCK_WAIT_FUNCTION}"))
}

/// The busy timeout is the lock wait; `None` reads it.
pub(super) fn busy_timeout(millis: Option<u128>) -> Statement {
    let sql = match millis {
        Some(ms) => format!("PRAGMA busy_timeout = {ms}"),
        None => "PRAGMA busy_timeout".to_owned(),
    };
    Statement::from_string(DbBackend::Sqlite, sql)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watched_statement_is_recognized_and_its_token_read() {
        let stmt = watched_write_lock("\"hl_meta\"", 42);
        assert_eq!(
            stmt.sql,
            "UPDATE \"hl_meta\" SET id = id WHERE hierlock_lock_wait(?)"
        );
        assert!(is_watched(stmt.sql.as_bytes()));
        assert!(!is_watched(write_lock("\"hl_meta\"").sql.as_bytes()));
        assert!(!is_watched(b"SELECT hierlock_lock_wait(?)"));
        // What sqlite3_expanded_sql makes of it, with a table name that
        // itself has parentheses.
        let expanded = "UPDATE \"t(1)_meta\" SET id = id WHERE hierlock_lock_wait(42)";
        assert_eq!(token_in(expanded), Some(42));
        assert_eq!(token_in("UPDATE x SET id = id WHERE hierlock_lock_wait(NULL)"), None);
    }
}
