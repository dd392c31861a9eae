//! The one error type, its kinds, and what a failure leaves behind.

use std::time::Duration;

use sea_orm::DbErr;

use crate::level::Level;

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
    #[error("{what} is not provisioned: run the hierlock migration first")]
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
    #[error("{what} is locked by another transaction (no-wait)")]
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
    #[error("timed out{} waiting for {what}", .waited.map(|d| format!(" after {d:?}")).unwrap_or_default())]
    LockTimeout {
        /// The locks that were being taken.
        what: String,
        /// The timeout that was asked for, if any.
        waited: Option<Duration>,
        /// What the failure left in the caller's transaction.
        txn_state: TxnState,
        /// The server's error.
        #[source]
        source: DbErr,
    },

    /// The server chose this transaction as a deadlock victim. Between
    /// hierlock users this cannot happen with one `acquire` per transaction;
    /// it can when locks are taken in several calls or mixed with other
    /// row locks.
    #[error("deadlock while acquiring {what}")]
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

    /// The call cannot be carried out as asked: a transaction of another
    /// database than the locker's, a proof of another transaction, a lock
    /// out of the global order (`within`), or more than
    /// [`MAX_LOCKS_PER_CALL`](crate::MAX_LOCKS_PER_CALL) locks in one call.
    /// Nothing was sent to the server.
    #[error("{0}")]
    Misuse(String),

    /// Any other database error.
    #[error("database error while {doing}")]
    Database {
        /// What hierlock was doing.
        doing: String,
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
    /// See [`Error::Misuse`].
    Misuse,
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
            Error::Misuse(_) => ErrorKind::Misuse,
            Error::Database { .. } => ErrorKind::Database,
        }
    }

    /// Whether rolling back and running the whole transaction again may
    /// succeed: true for lock conflicts (no-wait, timeout, deadlock).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::WouldBlock | ErrorKind::LockTimeout | ErrorKind::Deadlock
        )
    }

    /// What the failure left in the caller's transaction.
    ///
    /// Errors raised before any SQL ran (empty IDs, configuration, coverage)
    /// are [`TxnState::Unchanged`].
    pub fn txn_state(&self) -> TxnState {
        match self {
            Error::NotProvisioned { txn_state, .. }
            | Error::WouldBlock { txn_state, .. }
            | Error::LockTimeout { txn_state, .. }
            | Error::Deadlock { txn_state, .. } => *txn_state,
            // An unknown server error may have done anything: assume the worst
            // that still leaves the transaction usable for a rollback.
            Error::Database { .. } => TxnState::PartiallyLocked,
            _ => TxnState::Unchanged,
        }
    }

    pub(crate) fn database(doing: impl Into<String>, source: DbErr) -> Self {
        Error::Database {
            doing: doing.into(),
            source,
        }
    }
}

impl Error {
    /// The same error, recording a different transaction state.
    pub(crate) fn with_txn_state(mut self, state: TxnState) -> Self {
        match &mut self {
            Error::NotProvisioned { txn_state, .. }
            | Error::WouldBlock { txn_state, .. }
            | Error::LockTimeout { txn_state, .. }
            | Error::Deadlock { txn_state, .. } => *txn_state = state,
            _ => {}
        }
        self
    }
}
