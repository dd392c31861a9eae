//! Which server errors are lock conflicts: a pure mapping of error codes.

use sea_orm::{DbErr, RuntimeErr};

/// A lock failure reported by the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Conflict {
    /// The wait ran out, or a no-wait lock found a conflict; which of the two
    /// depends on what was asked (MariaDB reports both as 1205).
    Busy,
    /// A no-wait lock found a conflict (MySQL's own code for it).
    NoWait,
    /// The server broke a deadlock by failing this transaction, or a
    /// cluster's certification rolled it back at COMMIT (Galera, Group
    /// Replication): the whole transaction is gone, and running it again
    /// may succeed.
    Deadlock,
}

/// The code a server attached to an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
// Each variant is built only with its backend's feature.
#[cfg_attr(
    not(all(feature = "mysql", feature = "postgres", feature = "sqlite")),
    allow(dead_code)
)]
pub(crate) enum ServerCode<'a> {
    /// A MySQL or MariaDB error number.
    MySql(u16),
    /// MySQL's ER_ERROR_DURING_COMMIT (1180, "Got error N … during COMMIT")
    /// with the storage engine's error number N.
    MySqlCommit(u16),
    /// A PostgreSQL SQLSTATE.
    Postgres(&'a str),
    /// An SQLite (extended) result code, as text.
    Sqlite(&'a str),
}

/// Classify one server code.
pub(crate) fn classify_code(code: ServerCode<'_>) -> Option<Conflict> {
    match code {
        // ER_LOCK_WAIT_TIMEOUT: wait timeout, and MariaDB's answer to NOWAIT / WAIT n.
        ServerCode::MySql(1205) => Some(Conflict::Busy),
        // ER_LOCK_NOWAIT: MySQL 8+'s answer to NOWAIT.
        ServerCode::MySql(3572) => Some(Conflict::NoWait),
        // ER_LOCK_DEADLOCK: InnoDB rolled the whole transaction back (also
        // Galera's certification failure).
        ServerCode::MySql(1213) => Some(Conflict::Deadlock),
        // ER_TRANSACTION_ROLLBACK_DURING_COMMIT: a plugin (Group Replication's
        // certification, a multi-primary write conflict) rolled the
        // transaction back at COMMIT.
        ServerCode::MySql(3101) => Some(Conflict::Deadlock),
        // ER_ERROR_DURING_COMMIT with HA_ERR_LOCK_DEADLOCK (149): InnoDB
        // rolled the transaction back at COMMIT (Group Replication: a
        // conflicting transaction of another member was applied first).
        // Other engine errors at COMMIT (disk full…) are not conflicts.
        ServerCode::MySqlCommit(149) => Some(Conflict::Deadlock),
        // lock_not_available: lock_timeout ran out, or NOWAIT found a conflict.
        ServerCode::Postgres("55P03") => Some(Conflict::Busy),
        // deadlock_detected: this transaction was the victim.
        ServerCode::Postgres("40P01") => Some(Conflict::Deadlock),
        // SQLITE_BUSY, SQLITE_LOCKED, SQLITE_BUSY_RECOVERY, SQLITE_LOCKED_SHAREDCACHE:
        // the busy timeout ran out.
        ServerCode::Sqlite("5" | "6" | "261" | "262") => Some(Conflict::Busy),
        // SQLITE_BUSY_SNAPSHOT: a WAL snapshot is stale; only a restart helps.
        ServerCode::Sqlite("517") => Some(Conflict::Deadlock),
        _ => None,
    }
}

/// Classify a SeaORM error by the code its server attached.
pub(crate) fn classify(err: &DbErr) -> Option<Conflict> {
    let db = database_error(err)?;
    if let Some(code) = server_code(db) {
        return classify_code(code);
    }
    #[cfg(feature = "sqlite")]
    if db
        .try_downcast_ref::<sea_orm::sqlx::sqlite::SqliteError>()
        .is_some()
    {
        return classify_code(ServerCode::Sqlite(db.code()?.as_ref()));
    }
    None
}

/// Whether the pool had no connection to hand out within its acquire timeout.
pub(crate) fn is_pool_timeout(err: &DbErr) -> bool {
    matches!(
        err,
        DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::Timeout)
    ) || matches!(
        err,
        DbErr::Conn(RuntimeErr::SqlxError(e)) if matches!(**e, sea_orm::sqlx::Error::PoolTimedOut)
    )
}

/// Whether `err` is MySQL's ER_NOT_SUPPORTED_YET (1235): a feature the
/// server refuses in its configuration (MariaDB's `GET_LOCK` with Galera).
pub(crate) fn is_not_supported(err: &DbErr) -> bool {
    let (DbErr::Exec(RuntimeErr::SqlxError(e)) | DbErr::Query(RuntimeErr::SqlxError(e))) = err
    else {
        return false;
    };
    match &**e {
        sea_orm::sqlx::Error::Database(db) => {
            server_code(&**db).is_some_and(|code| code == ServerCode::MySql(1235))
        }
        _ => false,
    }
}

/// Whether `err` says the server is read-only now: MySQL's 1290
/// (ER_OPTION_PREVENTS_STATEMENT: `--read-only`, `--super-read-only`) and
/// 1836 (ER_READ_ONLY_MODE), PostgreSQL's 25006 (read_only_sql_transaction).
/// On a lock statement this is a replica, or a primary demoted since the
/// pool connected to it (a Group Replication primary switch, a failover
/// behind a router): its locks would not exclude the new primary's.
pub(crate) fn is_read_only(err: &DbErr) -> bool {
    database_error(err).and_then(server_code).is_some_and(|code| {
        matches!(
            code,
            ServerCode::MySql(1290 | 1836) | ServerCode::Postgres("25006")
        )
    })
}

/// Whether `err` says the connection is gone (and its transaction with it):
/// the server went away, closed or killed the connection, or shut down.
pub(crate) fn is_connection_lost(err: &DbErr) -> bool {
    use sea_orm::ConnAcquireErr;
    let e = match err {
        DbErr::ConnectionAcquire(ConnAcquireErr::ConnectionClosed) => return true,
        DbErr::Conn(RuntimeErr::SqlxError(e))
        | DbErr::Exec(RuntimeErr::SqlxError(e))
        | DbErr::Query(RuntimeErr::SqlxError(e)) => e,
        _ => return false,
    };
    match &**e {
        sea_orm::sqlx::Error::Io(_)
        | sea_orm::sqlx::Error::Tls(_)
        | sea_orm::sqlx::Error::PoolClosed
        | sea_orm::sqlx::Error::WorkerCrashed => true,
        // A new connection whose handshake broke off: a proxy with no server
        // behind it during a failover (HAProxy in front of Patroni: sqlx saw
        // its SSLRequest answered by a closed stream). As transient as an
        // I/O error; only while connecting, never mid-session.
        sea_orm::sqlx::Error::Protocol(_) => matches!(err, DbErr::Conn(_)),
        sea_orm::sqlx::Error::Database(db) => server_code(&**db).is_some_and(is_lost_code),
        _ => false,
    }
}

/// A MySQL-family or PostgreSQL error's code (SQLite's codes are owned
/// strings: see [`classify`]).
fn server_code(db: &dyn sea_orm::sqlx::error::DatabaseError) -> Option<ServerCode<'_>> {
    #[cfg(feature = "mysql")]
    if let Some(mysql) = db.try_downcast_ref::<sea_orm::sqlx::mysql::MySqlDatabaseError>() {
        return Some(match mysql.number() {
            1180 => commit_engine_error(mysql.message()).map_or(ServerCode::MySql(1180), ServerCode::MySqlCommit),
            number => ServerCode::MySql(number),
        });
    }
    #[cfg(feature = "postgres")]
    if let Some(pg) = db.try_downcast_ref::<sea_orm::sqlx::postgres::PgDatabaseError>() {
        return Some(ServerCode::Postgres(pg.code()));
    }
    let _ = db;
    None
}

/// The storage engine's error number in MySQL's ER_ERROR_DURING_COMMIT
/// message, `Got error 149 - 'Lock deadlock; Retry transaction' during COMMIT`.
#[cfg(any(feature = "mysql", test))]
fn commit_engine_error(message: &str) -> Option<u16> {
    let rest = message.strip_prefix("Got error ")?;
    let digits = rest.split(|c: char| !c.is_ascii_digit()).next()?;
    digits.parse().ok()
}

/// The server codes of a connection that is gone.
fn is_lost_code(code: ServerCode<'_>) -> bool {
    match code {
        // ER_SERVER_SHUTDOWN, MariaDB's ER_CONNECTION_KILLED, the client's
        // CR_SERVER_GONE_ERROR and CR_SERVER_LOST (as some proxies relay
        // them), MySQL's ER_CLIENT_INTERACTION_TIMEOUT.
        ServerCode::MySql(code) => matches!(code, 1053 | 1927 | 2006 | 2013 | 4031),
        ServerCode::MySqlCommit(_) => false,
        // Class 08 (connection exception); admin_shutdown (57P01, also
        // `pg_terminate_backend`), crash_shutdown, cannot_connect_now; the
        // session ended by a timeout: idle_in_transaction_session_timeout
        // (25P03, the lease), transaction_timeout (25P04, PostgreSQL 17),
        // idle_session_timeout (57P05). Each FATAL: the connection is closed.
        ServerCode::Postgres(code) => {
            code.starts_with("08")
                || matches!(code, "57P01" | "57P02" | "57P03" | "57P05" | "25P03" | "25P04")
        }
        ServerCode::Sqlite(_) => false,
    }
}

/// Which server family reported `err`, if a server did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    MySql,
    Postgres,
    Sqlite,
}

/// The family of the server that reported `err` for a statement (`None`
/// for client-side failures).
pub(crate) fn server_family(err: &DbErr) -> Option<Family> {
    // `server_code` knows the MySQL family and PostgreSQL: any other
    // server error is SQLite's.
    Some(match server_code(database_error(err)?) {
        Some(ServerCode::MySql(_) | ServerCode::MySqlCommit(_)) => Family::MySql,
        Some(ServerCode::Postgres(_)) => Family::Postgres,
        Some(ServerCode::Sqlite(_)) | None => Family::Sqlite,
    })
}

/// The error a server reported for a statement, if `err` is one.
fn database_error(err: &DbErr) -> Option<&dyn sea_orm::sqlx::error::DatabaseError> {
    let (DbErr::Query(RuntimeErr::SqlxError(e)) | DbErr::Exec(RuntimeErr::SqlxError(e))) = err
    else {
        return None;
    };
    match &**e {
        sea_orm::sqlx::Error::Database(db) => Some(&**db),
        _ => None,
    }
}

/// What to do when the server's memory for locks ran out (`err` says so):
/// PostgreSQL's shared lock table (53200, its advisory locks count there),
/// InnoDB's lock memory (1206, taken from the buffer pool). `None` for any
/// other error.
pub(crate) fn lock_memory_full_hint(err: &DbErr) -> Option<&'static str> {
    match server_code(database_error(err)?)? {
        ServerCode::Postgres("53200") => Some(
            "PostgreSQL's shared lock table is full (53200): all sessions together hold at \
             most max_locks_per_transaction × (max_connections + max_prepared_transactions) \
             locks, and each planned lock is one; raise max_locks_per_transaction (a \
             restart), or lock a common ancestor instead of many targets (README, Sizing)",
        ),
        ServerCode::MySql(1206) => Some(
            "InnoDB's lock memory is full (1206): it is taken from the buffer pool; raise \
             innodb_buffer_pool_size, or lock a common ancestor instead of many targets \
             (README, Sizing)",
        ),
        _ => None,
    }
}

/// Whether `err` says a table does not exist.
pub(crate) fn is_missing_table(err: &DbErr) -> bool {
    let Some(db) = database_error(err) else {
        return false;
    };
    // MySQL/MariaDB ER_NO_SUCH_TABLE is SQLSTATE 42S02; PostgreSQL undefined_table is 42P01.
    matches!(db.code().as_deref(), Some("42S02" | "42P01"))
        || db.message().contains("no such table")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_server_code_we_rely_on_is_classified() {
        use Conflict::*;
        use ServerCode::*;
        let table = [
            (MySql(1205), Some(Busy)),
            (MySql(3572), Some(NoWait)),
            (MySql(1213), Some(Deadlock)),
            (MySql(3101), Some(Deadlock)),
            (MySqlCommit(149), Some(Deadlock)),
            (MySqlCommit(28), None),
            (MySql(1180), None),
            (MySql(1062), None),
            (Postgres("55P03"), Some(Busy)),
            (Postgres("40P01"), Some(Deadlock)),
            (Postgres("40001"), None),
            (Sqlite("5"), Some(Busy)),
            (Sqlite("517"), Some(Deadlock)),
            (Sqlite("19"), None),
        ];
        for (code, expected) in table {
            assert_eq!(classify_code(code), expected, "{code:?}");
        }
    }

    #[test]
    fn the_engine_error_of_a_failed_commit_is_read_from_its_message() {
        // As MySQL 9.7's Group Replication reports a local transaction that a
        // remote one won against.
        let message = "Got error 149 - 'Lock deadlock; Retry transaction' during COMMIT";
        assert_eq!(commit_engine_error(message), Some(149));
        assert_eq!(
            commit_engine_error("Got error 28 from storage engine during COMMIT"),
            Some(28)
        );
        assert_eq!(commit_engine_error("Got error during COMMIT"), None);
        assert_eq!(commit_engine_error("something else"), None);
    }

    #[test]
    fn lost_connection_codes_are_not_conflicts() {
        use ServerCode::*;
        for code in [
            MySql(1927),
            MySql(2013),
            MySql(1053),
            Postgres("57P01"),
            Postgres("08006"),
            Postgres("25P03"),
        ] {
            assert!(is_lost_code(code), "{code:?}");
            assert_eq!(classify_code(code), None, "{code:?}");
        }
        for code in [
            MySql(1205),
            MySql(1317),
            Postgres("57014"),
            Postgres("40P01"),
        ] {
            assert!(!is_lost_code(code), "{code:?}");
        }
    }

    #[test]
    fn a_closed_pool_connection_is_lost() {
        let closed = DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::ConnectionClosed);
        assert!(is_connection_lost(&closed));
        let busy = DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::Timeout);
        assert!(!is_connection_lost(&busy));
        let io = DbErr::Query(RuntimeErr::SqlxError(std::sync::Arc::new(
            sea_orm::sqlx::Error::Io(std::io::ErrorKind::UnexpectedEof.into()),
        )));
        assert!(is_connection_lost(&io));
        let protocol = |e: fn(RuntimeErr) -> DbErr| {
            e(RuntimeErr::SqlxError(std::sync::Arc::new(
                sea_orm::sqlx::Error::Protocol("unexpected response from SSLRequest: 0x00".into()),
            )))
        };
        assert!(is_connection_lost(&protocol(DbErr::Conn)));
        assert!(!is_connection_lost(&protocol(DbErr::Query)));
    }
}
