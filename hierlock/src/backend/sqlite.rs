//! SQLite: one database-wide write lock per transaction, waited for through
//! the connection's busy timeout.

use sea_orm::{DbBackend, Statement};

/// A write to the metadata table (`meta`, quoted) takes the database's write
/// (RESERVED) lock even though it changes no row.
pub(super) fn write_lock(meta: &str) -> Statement {
    Statement::from_string(
        DbBackend::Sqlite,
        format!("UPDATE {meta} SET id = id WHERE 0"),
    )
}

/// The busy timeout is the lock wait; `None` reads it.
pub(super) fn busy_timeout(millis: Option<u128>) -> Statement {
    let sql = match millis {
        Some(ms) => format!("PRAGMA busy_timeout = {ms}"),
        None => "PRAGMA busy_timeout".to_owned(),
    };
    Statement::from_string(DbBackend::Sqlite, sql)
}
