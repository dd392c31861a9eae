//! The one error type, its kinds, and what a failure leaves behind.

use std::time::Duration;

use sea_orm::DbErr;

use crate::backend::classify::{
    Conflict, Family, classify, is_connection_lost, is_pool_timeout, server_family,
};
use crate::model::level::Level;

/// Shorthand for `Result<T, hierlock::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while configuring, planning or acquiring locks.
///
/// Match on [`Error::kind`] rather than on the text; [`Error::is_retryable`]
/// says whether running the whole transaction again may succeed, and
/// [`Error::txn_state`] what the failure did to the caller's transaction.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A target had an empty ID. Nothing was sent to the server.
    #[error("empty {level} id in {target}")]
    EmptyId {
        /// The level whose ID is empty.
        level: Level,
        /// The target, in the seed's notation.
        target: String,
    },

    /// The configuration is invalid (table name, bucket space, timeout…).
    #[error("invalid hierlock configuration: {0}")]
    InvalidConfig(String),

    /// The bucket table, its metadata, or a bucket row is missing.
    #[error(
        "{what} is not provisioned: provision it with hierlock-migration (the `hierlock provision` command, or `Provision` / `Migrator` from code)"
    )]
    NotProvisioned {
        /// What is missing, e.g. ``bucket row (level 2, bucket 42) of `hier_lock_buckets` ``.
        what: String,
        /// The missing row, when a single row is missing.
        row: Option<(Level, u32)>,
        /// What the failure left in the caller's transaction.
        txn_state: TxnState,
    },

    /// The bucket table was provisioned for another key scheme or bucket
    /// space. Two services hashing differently would silently not exclude
    /// each other, so hierlock refuses to use it.
    #[error(
        "bucket table `{table}` was provisioned with {found}, but this locker is configured with {expected}"
    )]
    ConfigMismatch {
        /// The bucket table.
        table: String,
        /// What the table's metadata records.
        found: String,
        /// What this locker was configured with.
        expected: String,
    },

    /// A no-wait acquisition found a conflicting lock.
    #[error("{what} is locked by another transaction (no-wait){}", server_text(source.as_ref()))]
    WouldBlock {
        /// The locks that were being taken.
        what: String,
        /// What the failure left in the caller's transaction.
        txn_state: TxnState,
        /// The server's error (none when a try-lock function said no).
        #[source]
        source: Option<DbErr>,
    },

    /// The wait for a conflicting lock ran out (the given timeout, or the
    /// server's own lock-wait timeout when blocking).
    #[error(
        "timed out{} waiting for {what}{}",
        .waited.map(|d| format!(" after {d:?}")).unwrap_or_default(),
        server_text(source.as_ref())
    )]
    LockTimeout {
        /// The locks that were being taken.
        what: String,
        /// The timeout that was asked for, if any.
        waited: Option<Duration>,
        /// What the failure left in the caller's transaction.
        txn_state: TxnState,
        /// The server's error.
        #[source]
        source: Option<DbErr>,
    },

    /// The server chose this transaction as a deadlock victim. Between
    /// hierlock users this cannot happen with one `acquire` per transaction;
    /// it can when locks are taken in several calls or mixed with other
    /// row locks. A cluster's certification rolling a transaction back at
    /// COMMIT is reported the same way (Galera's 1213; Group Replication's
    /// 3101, and 1180 with engine error 149): the transaction is gone, and
    /// running it again may succeed.
    #[error("deadlock while acquiring {what}{}", server_text(Some(source)))]
    Deadlock {
        /// The locks that were being taken.
        what: String,
        /// What the failure left in the caller's transaction.
        txn_state: TxnState,
        /// The server's error.
        #[source]
        source: DbErr,
    },

    /// A protected write was attempted with a lock proof that does not cover
    /// the row it writes. Nothing was written.
    #[error("{action} of {row} is not covered by the locks held ({held})")]
    NotCovered {
        /// What was attempted (`insert`, `update`, `delete`).
        action: &'static str,
        /// The row's target, in the seed's notation.
        row: String,
        /// The locks the proof holds.
        held: String,
    },

    /// A versioned write (an entity declared with `#[protected(.., version
    /// = <field>)]`) found the stored row at another version than the one
    /// the write was based on: another transaction changed it since it was
    /// read. Nothing was written. Reload the row, redo the change on the
    /// current values (or show them to the user) and write again.
    #[error(
        "{action} of {row} expected version {expected}, but the stored row is at version {current}: it changed since it was read"
    )]
    Conflict {
        /// What was attempted (`update`, `delete`).
        action: &'static str,
        /// The row, in the seed's notation.
        row: String,
        /// The version the write was based on (the one in the active model).
        expected: i64,
        /// The version of the stored row.
        current: i64,
    },

    /// The call cannot be carried out as asked: a transaction of another
    /// database than the locker's, a proof of another transaction, a lock
    /// out of the global order (`within`), or more than
    /// [`MAX_LOCKS_PER_CALL`](crate::MAX_LOCKS_PER_CALL) locks in one call.
    /// Nothing was sent to the server. Also a dense entity's nested write
    /// that reaches a protected row with no proof, or a row above its
    /// proof's level: refused before that row's statement, and the nested
    /// save's transaction rolls back, so nothing of the save remains.
    #[error("{0}")]
    Misuse(String),

    /// The server is one on which locks would not exclude each other: a
    /// Galera node (unless [`Config::with_galera_single_writer`] says every
    /// lock-taking transaction runs on one node), a member of a
    /// multi-primary MySQL Group Replication group (unless
    /// [`Config::with_group_replication_single_writer`]), a secondary or a
    /// member that is not ONLINE, a read-only server, a replica or a hot
    /// standby. Refused at [`Locker::connect`](crate::Locker::connect),
    /// before any lock; not retryable as it is (a Group Replication
    /// secondary refused during a failover is the primary a moment later:
    /// connect again to the new primary).
    ///
    /// [`Config::with_galera_single_writer`]: crate::Config::with_galera_single_writer
    /// [`Config::with_group_replication_single_writer`]: crate::Config::with_group_replication_single_writer
    #[error("{reason}")]
    UnsafeTopology {
        /// What the server is, and why locks there would not work.
        reason: String,
    },

    /// The connection to the server is gone: the server shut down or
    /// restarted, the connection was killed (`KILL`, `pg_terminate_backend`),
    /// the network failed, or a failover moved the primary. The transaction
    /// went with it ([`TxnState::Lost`]): retry on a new transaction. When
    /// the connection ended during COMMIT ([`Error::from_commit`]) the
    /// outcome is unknown ([`TxnState::CommitUnknown`]) and the error is not
    /// retryable.
    #[error("lost the connection to the database while {doing}{}", server_text(Some(source)))]
    ConnectionLost {
        /// What hierlock was doing.
        doing: String,
        /// [`TxnState::Lost`], or [`TxnState::CommitUnknown`] during COMMIT.
        txn_state: TxnState,
        /// The driver's error.
        #[source]
        source: DbErr,
    },

    /// The connection pool could not hand out a connection within its
    /// acquire timeout: every connection was in use (or a new one could not
    /// be opened in time). Nothing was sent to the server and no transaction
    /// was changed; retryable after a backoff. A pool that is always
    /// exhausted needs more connections or shorter transactions.
    #[error(
        "no connection from the pool within its acquire timeout while {doing}{}",
        server_text(Some(source))
    )]
    PoolTimeout {
        /// What hierlock was doing.
        doing: String,
        /// The pool's error.
        #[source]
        source: DbErr,
    },

    /// Any other database error.
    #[error("database error while {doing}{}", server_text(Some(source)))]
    Database {
        /// What hierlock was doing.
        doing: String,
        /// What the failure left in the caller's transaction.
        txn_state: TxnState,
        /// The server's error.
        #[source]
        source: DbErr,
    },
}

/// A small, stable classification of [`Error`], for matching.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// See [`Error::EmptyId`].
    EmptyId,
    /// See [`Error::InvalidConfig`].
    InvalidConfig,
    /// See [`Error::NotProvisioned`].
    NotProvisioned,
    /// See [`Error::ConfigMismatch`].
    ConfigMismatch,
    /// See [`Error::WouldBlock`].
    WouldBlock,
    /// See [`Error::LockTimeout`].
    LockTimeout,
    /// See [`Error::Deadlock`].
    Deadlock,
    /// See [`Error::NotCovered`].
    NotCovered,
    /// See [`Error::Conflict`].
    Conflict,
    /// See [`Error::Misuse`].
    Misuse,
    /// See [`Error::UnsafeTopology`].
    UnsafeTopology,
    /// See [`Error::ConnectionLost`].
    ConnectionLost,
    /// See [`Error::PoolTimeout`].
    PoolTimeout,
    /// See [`Error::Database`].
    Database,
}

/// What a failed acquisition left in the caller's transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TxnState {
    /// The transaction holds exactly what it held before the call and can go
    /// on (PostgreSQL: the attempt ran in a savepoint that was rolled back;
    /// or the failure happened before any lock statement).
    Unchanged,
    /// Some of the requested locks may be held and others not (MySQL and
    /// MariaDB keep the locks of a statement that timed out). The transaction
    /// is open, but the caller must not act as if locked: roll it back.
    PartiallyLocked,
    /// The server rolled the whole transaction back (an InnoDB deadlock
    /// victim). Every lock and write of the transaction is gone, and on
    /// MySQL-family servers later statements would run outside any
    /// transaction: roll back (a no-op) and retry from the start.
    RolledBack,
    /// The server aborted the transaction; every further statement fails
    /// until it is rolled back (PostgreSQL outside a savepoint).
    Aborted,
    /// The connection is gone, and the transaction with it: the server rolled
    /// it back, so no lock and no uncommitted write of it remains. Drop it
    /// (its rollback fails harmlessly) and retry on a new transaction.
    Lost,
    /// The connection ended during COMMIT: the server may have committed the
    /// transaction before it went, or not, and nothing on this side can tell
    /// which. Not retryable as it is: check whether the work took effect (or
    /// make it idempotent) before running it again.
    CommitUnknown,
}

impl Error {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::EmptyId { .. } => ErrorKind::EmptyId,
            Error::InvalidConfig(_) => ErrorKind::InvalidConfig,
            Error::NotProvisioned { .. } => ErrorKind::NotProvisioned,
            Error::ConfigMismatch { .. } => ErrorKind::ConfigMismatch,
            Error::WouldBlock { .. } => ErrorKind::WouldBlock,
            Error::LockTimeout { .. } => ErrorKind::LockTimeout,
            Error::Deadlock { .. } => ErrorKind::Deadlock,
            Error::NotCovered { .. } => ErrorKind::NotCovered,
            Error::Conflict { .. } => ErrorKind::Conflict,
            Error::Misuse(_) => ErrorKind::Misuse,
            Error::UnsafeTopology { .. } => ErrorKind::UnsafeTopology,
            Error::ConnectionLost { .. } => ErrorKind::ConnectionLost,
            Error::PoolTimeout { .. } => ErrorKind::PoolTimeout,
            Error::Database { .. } => ErrorKind::Database,
        }
    }

    /// Whether rolling back and running the whole transaction again, on a
    /// new transaction, may succeed: true for lock conflicts (no-wait,
    /// timeout, deadlock), a lost connection (unless it was lost during
    /// COMMIT: [`TxnState::CommitUnknown`]), a pool that had no connection
    /// to hand out in time, and a version
    /// [`Conflict`](Error::Conflict) (when the retry reloads the row: a
    /// retry that writes the same stale version fails the same way).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::WouldBlock
                | ErrorKind::LockTimeout
                | ErrorKind::Deadlock
                | ErrorKind::ConnectionLost
                | ErrorKind::PoolTimeout
                | ErrorKind::Conflict
        ) && self.txn_state() != TxnState::CommitUnknown
    }

    /// What the failure left in the caller's transaction.
    ///
    /// Errors raised before any SQL ran (empty IDs, configuration, coverage)
    /// are [`TxnState::Unchanged`], and so is a version
    /// [`Conflict`](Error::Conflict): its statement wrote nothing.
    pub fn txn_state(&self) -> TxnState {
        match self {
            Error::NotProvisioned { txn_state, .. }
            | Error::WouldBlock { txn_state, .. }
            | Error::LockTimeout { txn_state, .. }
            | Error::Deadlock { txn_state, .. }
            | Error::ConnectionLost { txn_state, .. }
            | Error::Database { txn_state, .. } => *txn_state,
            // A pool timeout sent nothing: the transaction is as it was.
            _ => TxnState::Unchanged,
        }
    }

    /// A SeaORM error of a statement that took no lock, while `doing`:
    /// [`Error::ConnectionLost`] if the connection is gone, else
    /// [`Error::Database`] in the state such a failure leaves (PostgreSQL
    /// aborts the transaction; the MySQL family and SQLite fail only the
    /// statement). For crates built on hierlock (its migration crate).
    pub fn database(doing: impl Into<String>, source: DbErr) -> Self {
        let state = failed_statement_state(&source);
        Error::database_in(doing, source, state)
    }

    /// A failed statement of the caller's own (not a lock statement),
    /// classified with hierlock's code table: lock conflicts are typed like
    /// hierlock's own, with the state the server leaves.
    pub(crate) fn from_statement(doing: &str, source: DbErr) -> Self {
        let what = "a row lock of one of the transaction's statements".to_owned();
        // InnoDB rolls a deadlock victim back, and only the statement
        // otherwise.
        let conflict_state = failed_statement_state(&source);
        match classify(&source) {
            Some(Conflict::Deadlock) => Error::Deadlock {
                what,
                txn_state: match server_family(&source) {
                    Some(Family::MySql) => TxnState::RolledBack,
                    _ => TxnState::Aborted,
                },
                source,
            },
            Some(Conflict::Busy) => Error::LockTimeout {
                what,
                waited: None,
                txn_state: conflict_state,
                source: Some(source),
            },
            Some(Conflict::NoWait) => Error::WouldBlock {
                what,
                txn_state: conflict_state,
                source: Some(source),
            },
            None => Error::database(doing, source),
        }
    }

    /// A failed COMMIT (`txn.commit().await.map_err(Error::from_commit)`),
    /// classified for what it means to the work:
    ///
    /// - the connection ended during it (the server crashed or was killed, a
    ///   failover, the network; through TLS or not):
    ///   [`Error::ConnectionLost`] with [`TxnState::CommitUnknown`], not
    ///   retryable, as the commit may have taken effect;
    /// - a cluster's certification rolled the transaction back (Group
    ///   Replication's 3101, or 1180 with engine error 149; Galera's 1213):
    ///   [`Error::Deadlock`] with [`TxnState::RolledBack`], retryable;
    /// - anything else as `Error::from(DbErr)` types it.
    ///
    /// [`retry`](crate::retry) classifies a connection lost during its
    /// commits this way.
    pub fn from_commit(source: DbErr) -> Self {
        if is_connection_lost(&source) {
            return Error::ConnectionLost {
                doing: "committing the transaction (whether it committed is unknown)".to_owned(),
                txn_state: TxnState::CommitUnknown,
                source,
            };
        }
        match classify(&source) {
            Some(Conflict::Deadlock) => Error::Deadlock {
                what: "the transaction's commit".to_owned(),
                txn_state: match server_family(&source) {
                    Some(Family::MySql) => TxnState::RolledBack,
                    _ => TxnState::Aborted,
                },
                source,
            },
            _ => Error::from_statement("committing the transaction", source),
        }
    }

    /// A statement hierlock gave up on: no answer came from the server
    /// within `within` (a dead network, a hung server, or a statement still
    /// running at the caller's deadline). The connection is abandoned with
    /// the statement still on it, so the transaction is lost: the server
    /// rolls it back when the session ends (hierlock ends it where it can;
    /// on a silent network the lease does, see
    /// [`Config::with_lease`](crate::Config::with_lease)).
    pub(crate) fn no_answer(
        doing: impl std::fmt::Display,
        within: Duration,
        txn_state: TxnState,
    ) -> Self {
        Error::ConnectionLost {
            doing: format!("{doing} (the connection is abandoned)"),
            txn_state,
            source: no_answer_source(format_args!("no answer from the server within {within:?}")),
        }
    }

    /// `step`'s output, or [`Error::no_answer`] (the transaction lost) if
    /// the server does not answer it within `within`: one exchange on a
    /// network that may have gone silent.
    pub(crate) async fn answered_within<T>(
        doing: &str,
        within: Duration,
        step: impl std::future::Future<Output = T>,
    ) -> Result<T> {
        tokio::time::timeout(within, step)
            .await
            .map_err(|_elapsed| Error::no_answer(doing, within, TxnState::Lost))
    }

    /// A failed statement that leaves the transaction in `state` (unless the
    /// connection is gone, or the pool had none to give).
    pub(crate) fn database_in(doing: impl Into<String>, source: DbErr, state: TxnState) -> Self {
        if is_pool_timeout(&source) {
            return Error::PoolTimeout {
                doing: doing.into(),
                source,
            };
        }
        if is_connection_lost(&source) {
            return Error::ConnectionLost {
                doing: doing.into(),
                txn_state: TxnState::Lost,
                source,
            };
        }
        Error::Database {
            doing: doing.into(),
            txn_state: state,
            source,
        }
    }
}

/// What a server error on *any* statement of a transaction means for a retry
/// loop: the kind of lock conflict it reports, if it is one.
///
/// hierlock classifies its own lock statements; use this for the caller's
/// statements after the locks (a write that met a lock of a non-hierlock
/// transaction, a deadlock with code that takes other row locks). A server
/// busy error is [`ErrorKind::LockTimeout`] (MariaDB reports no-wait failures
/// with the same code), MySQL's no-wait error [`ErrorKind::WouldBlock`].
/// Other errors, PostgreSQL's serialization failure (40001) included, are
/// `None`.
///
/// ```
/// use hierlock::{ErrorKind, conflict_kind};
/// use hierlock::sea_orm::DbErr;
///
/// let err = DbErr::Custom("not from a server".into());
/// assert_eq!(conflict_kind(&err), None);
/// ```
pub fn conflict_kind(err: &DbErr) -> Option<ErrorKind> {
    classify(err).map(|conflict| match conflict {
        Conflict::Busy => ErrorKind::LockTimeout,
        Conflict::NoWait => ErrorKind::WouldBlock,
        Conflict::Deadlock => ErrorKind::Deadlock,
    })
}

/// `: <the server's own words>` (the innermost cause of `source`, e.g.
/// `1205 (HY000): Lock wait timeout exceeded; try restarting transaction`),
/// for the messages of errors a server reported: as sqlx does, the text is
/// in the message, so that a log line of `{err}` alone says what the
/// server said; the whole chain stays in `source()`.
fn server_text(source: Option<&DbErr>) -> String {
    let Some(source) = source else {
        return String::new();
    };
    let mut innermost: &dyn std::error::Error = source;
    while let Some(next) = innermost.source() {
        innermost = next;
    }
    format!(": {innermost}")
}

/// The driver-level error of a statement hierlock stopped waiting for: an
/// I/O timeout, so that it reads as a lost connection wherever it goes
/// (`DbErr`, [`conflict_kind`], [`Error::from`]).
pub(crate) fn no_answer_source(what: impl std::fmt::Display) -> DbErr {
    let io = std::io::Error::new(std::io::ErrorKind::TimedOut, what.to_string());
    DbErr::Conn(sea_orm::RuntimeErr::SqlxError(std::sync::Arc::new(
        sea_orm::sqlx::Error::Io(io),
    )))
}

/// What a failed statement leaves: PostgreSQL aborts the transaction; the
/// MySQL family and SQLite fail only the statement.
fn failed_statement_state(source: &DbErr) -> TxnState {
    match server_family(source) {
        Some(Family::Postgres) => TxnState::Aborted,
        _ => TxnState::Unchanged,
    }
}

impl Error {
    /// The same error, recording a different transaction state.
    pub(crate) fn with_txn_state(mut self, state: TxnState) -> Self {
        match &mut self {
            Error::NotProvisioned { txn_state, .. }
            | Error::WouldBlock { txn_state, .. }
            | Error::LockTimeout { txn_state, .. }
            | Error::Deadlock { txn_state, .. }
            | Error::Database { txn_state, .. } => *txn_state = state,
            _ => {}
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sea_orm::RuntimeErr;

    use super::*;

    fn driver(err: sea_orm::sqlx::Error) -> DbErr {
        DbErr::Query(RuntimeErr::SqlxError(Arc::new(err)))
    }

    #[test]
    fn a_connection_lost_during_commit_has_an_unknown_outcome_and_is_not_retried() {
        // Plain EOF, and the end of a TLS stream (as sqlx reports a killed
        // MySQL server under a TLS connection).
        let eof = || std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        for lost in [
            driver(sea_orm::sqlx::Error::Io(eof())),
            driver(sea_orm::sqlx::Error::Tls(Box::new(eof()))),
            DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::ConnectionClosed),
        ] {
            let err = Error::from_commit(lost);
            assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
            assert_eq!(err.txn_state(), TxnState::CommitUnknown, "{err}");
            assert!(!err.is_retryable(), "{err}");
            assert!(err.to_string().contains("committing"), "{err}");
            // The same failure on any other statement: rolled back, retryable.
            let err = Error::from(DbErr::from(err));
            assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
            assert_eq!(err.txn_state(), TxnState::Lost, "{err}");
            assert!(err.is_retryable(), "{err}");
        }
        let other = Error::from_commit(DbErr::Custom("no server".to_owned()));
        assert_eq!(other.kind(), ErrorKind::Database, "{other}");
    }

    #[test]
    fn messages_carry_the_servers_own_words() {
        let eof = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "server closed the socket");
        let lost = Error::database("reading a row", driver(sea_orm::sqlx::Error::Io(eof)));
        assert_eq!(lost.kind(), ErrorKind::ConnectionLost);
        let message = lost.to_string();
        assert!(message.starts_with("lost the connection to the database while reading a row: "), "{message}");
        assert!(message.ends_with("server closed the socket"), "{message}");
        let other = Error::database("reading a row", DbErr::Custom("no such table".to_owned()));
        assert!(other.to_string().contains("no such table"), "{other}");
        let no_wait = Error::WouldBlock {
            what: "write User(u1)".to_owned(),
            txn_state: TxnState::Unchanged,
            source: None,
        };
        assert!(no_wait.to_string().ends_with("(no-wait)"), "{no_wait}");
    }
}
