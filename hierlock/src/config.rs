//! How a [`Locker`](crate::Locker) is set up: table, bucket space, key scheme, waiting.

use std::fmt;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::key::{DEFAULT_ADVISORY_NAMESPACE, KeyScheme, SEED_BUCKET_SPACE};
use crate::model::stripe::SubtreeReads;

/// The seed's table name.
pub const DEFAULT_TABLE: &str = "hier_lock_buckets";

/// Longest accepted table name: 64 (MySQL) or 63 (PostgreSQL) characters,
/// less the `_meta` suffix of the metadata table.
pub const MAX_TABLE_NAME_LEN: usize = 58;

/// A validated SQL identifier for the bucket table.
///
/// Only ASCII letters, digits and `_`, not starting with a digit, at most
/// [`MAX_TABLE_NAME_LEN`] characters: the name is interpolated into SQL, so
/// anything else is refused rather than escaped.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TableName(String);

impl TableName {
    /// Validate `name`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the rule `name` breaks.
    pub fn new(name: &str) -> Result<Self> {
        let invalid = |why: &str| Err(Error::InvalidConfig(format!("table name {name:?} {why}")));
        let Some(first) = name.chars().next() else {
            return invalid("is empty");
        };
        if name.len() > MAX_TABLE_NAME_LEN {
            return invalid(&format!("is longer than {MAX_TABLE_NAME_LEN} characters"));
        }
        if first.is_ascii_digit() {
            return invalid("starts with a digit");
        }
        if let Some(bad) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
        {
            return invalid(&format!(
                "contains {bad:?}: only ASCII letters, digits and '_' are allowed"
            ));
        }
        Ok(TableName(name.to_owned()))
    }

    /// The bucket table's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The metadata table's name: the bucket table's with `_meta` appended.
    pub fn meta(&self) -> String {
        format!("{}_meta", self.0)
    }
}

impl Default for TableName {
    fn default() -> Self {
        TableName(DEFAULT_TABLE.to_owned())
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What to do when a lock is held by another transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Wait {
    /// Wait until it is released (the default). The server's own lock-wait
    /// timeout still applies: `innodb_lock_wait_timeout` (50 s by default) on
    /// MySQL and MariaDB, `lock_timeout` on PostgreSQL, the busy timeout on
    /// SQLite. Running out of it is [`Error::LockTimeout`].
    ///
    /// Dropping the acquisition's future while it waits (a cancelled
    /// request, `tokio::time::timeout`, `select!`) ends the wait on the
    /// server too (MySQL, MariaDB, PostgreSQL): hierlock interrupts the lock
    /// statement from a side connection, so it never takes its locks later.
    /// The transaction's next statement then fails with the interrupted
    /// statement's error; roll it back (dropping it does). On SQLite,
    /// hierlock's busy handler ends the wait within about 5 ms, and the
    /// transaction stays usable; a pool without the handler goes on waiting
    /// until the busy timeout (see `hierlock::sqlite`).
    #[default]
    Block,
    /// Fail at once with [`Error::WouldBlock`].
    NoWait,
    /// Give up after this long, for the whole acquisition however many
    /// statements it takes, and fail with [`Error::LockTimeout`]. hierlock
    /// keeps the deadline to the millisecond and interrupts the waiting
    /// statement on the server (MySQL, MariaDB, PostgreSQL; MariaDB's
    /// `WAIT n` bounds it on the server too); on SQLite hierlock's busy
    /// handler keeps it, or without the handler the busy timeout, set to the
    /// time left and restored after. No session setting is changed on MySQL,
    /// MariaDB or PostgreSQL, nor on SQLite with the handler. Must be
    /// non-zero (use [`Wait::NoWait`]) and at most [`MAX_TIMEOUT`].
    ///
    /// On a network that has gone silent (nothing answers, nothing is
    /// closed) the acquisition still returns by the deadline plus
    /// [`DEADLINE_MARGIN`], with
    /// [`ErrorKind::ConnectionLost`](crate::ErrorKind::ConnectionLost): the
    /// connection is given up, and the server frees what it held within the
    /// lease (see [`Config::with_lease`]).
    Timeout(Duration),
}

impl Wait {
    pub(crate) fn validate(self) -> Result<Self> {
        match self {
            Wait::Timeout(d) if d.is_zero() => Err(Error::Misuse(
                "a lock timeout must be non-zero: use Wait::NoWait to fail at once".into(),
            )),
            Wait::Timeout(d) if d > MAX_TIMEOUT => Err(Error::Misuse(format!(
                "a lock timeout must be at most {MAX_TIMEOUT:?}, got {d:?}"
            ))),
            wait => Ok(wait),
        }
    }
}

/// The longest [`Wait::Timeout`]: InnoDB's own maximum for `innodb_lock_wait_timeout`.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(1_073_741_824);

/// How locks are represented on PostgreSQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PostgresLocks {
    /// Transaction-scoped advisory locks (the default): no table, no
    /// provisioning, 2^46 keys per level, under a 16-bit namespace that keeps
    /// them apart from the application's own advisory locks.
    Advisory {
        /// The top 16 bits of every key.
        namespace: u16,
    },
    /// Row locks on the provisioned bucket table, as on MySQL (for sharing
    /// one table with other services or for testing).
    BucketTable,
}

impl Default for PostgresLocks {
    fn default() -> Self {
        PostgresLocks::Advisory {
            namespace: DEFAULT_ADVISORY_NAMESPACE,
        }
    }
}

/// Configuration of a [`Locker`](crate::Locker).
///
/// The defaults are the seed's: table `hier_lock_buckets`, 10,000,000 buckets
/// per level, the seed's FNV-1a scheme, blocking waits.
///
/// ```
/// use std::time::Duration;
/// use hierlock::{Config, Wait};
///
/// let config = Config::default()
///     .with_table("my_locks")?
///     .with_bucket_space(1_000_000)?
///     .with_wait(Wait::Timeout(Duration::from_secs(5)))?;
/// assert_eq!(config.table().meta(), "my_locks_meta");
/// # Ok::<(), hierlock::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    table: TableName,
    bucket_space: u32,
    key_scheme: KeyScheme,
    wait: Wait,
    postgres: PostgresLocks,
    galera_single_writer: bool,
    group_replication_single_writer: bool,
    subtree_reads: SubtreeReads,
    lease: Option<Duration>,
    answer_timeout: Duration,
}

/// The default [`Config::lease`]: a lock-holding transaction whose client
/// has sent nothing for a minute is ended by the server.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// The longest [`Config::with_lease`]: PostgreSQL's
/// `idle_in_transaction_session_timeout` is an `int` of milliseconds
/// (2,147,483,647 ms, about 24.9 days); the MySQL family's settings go
/// further.
pub const MAX_LEASE: Duration = Duration::from_millis(i32::MAX as u64);

/// `timeout` if it can be an answer timeout (of [`Config`] or of
/// [`RetryPolicy`](crate::RetryPolicy)): non-zero, at most [`MAX_TIMEOUT`].
pub(crate) fn valid_answer_timeout(timeout: Duration) -> Result<Duration> {
    if timeout.is_zero() || timeout > MAX_TIMEOUT {
        return Err(Error::InvalidConfig(format!(
            "an answer timeout must be non-zero and at most {MAX_TIMEOUT:?}, got {timeout:?}"
        )));
    }
    Ok(timeout)
}

/// The default [`Config::answer_timeout`].
pub const DEFAULT_ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// How long after a [`Wait::Timeout`] deadline an acquisition may take to
/// return: the time to interrupt the waiting statement on the server and
/// read its answer. Past it, the connection is declared lost.
pub const DEADLINE_MARGIN: Duration = Duration::from_millis(500);

impl Default for Config {
    fn default() -> Self {
        Config {
            table: TableName::default(),
            bucket_space: SEED_BUCKET_SPACE,
            key_scheme: KeyScheme::default(),
            wait: Wait::default(),
            postgres: PostgresLocks::default(),
            galera_single_writer: false,
            group_replication_single_writer: false,
            subtree_reads: SubtreeReads::Off,
            lease: Some(DEFAULT_LEASE),
            answer_timeout: DEFAULT_ANSWER_TIMEOUT,
        }
    }
}

/// The largest bucket space: the `bucket` column is a signed 32-bit `INT`.
pub const MAX_BUCKET_SPACE: u32 = i32::MAX as u32;

impl Config {
    /// Use the bucket table `name` (and `name_meta` for its metadata).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] if `name` is not a plain identifier (see [`TableName`]).
    pub fn with_table(mut self, name: &str) -> Result<Self> {
        self.table = TableName::new(name)?;
        Ok(self)
    }

    /// Use `space` buckets per level (`1..=`[`MAX_BUCKET_SPACE`]). Must match
    /// what the table was provisioned with.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] if `space` is zero or too large.
    pub fn with_bucket_space(mut self, space: u32) -> Result<Self> {
        if space == 0 || space > MAX_BUCKET_SPACE {
            return Err(Error::InvalidConfig(format!(
                "bucket space must be in 1..={MAX_BUCKET_SPACE}, got {space}"
            )));
        }
        self.bucket_space = space;
        Ok(self)
    }

    /// Use `scheme` to map IDs to buckets.
    pub fn with_key_scheme(mut self, scheme: KeyScheme) -> Self {
        self.key_scheme = scheme;
        self
    }

    /// Wait this way unless a call says otherwise.
    ///
    /// # Errors
    /// [`Error::Misuse`] for a zero or too long timeout (as a call given one).
    pub fn with_wait(mut self, wait: Wait) -> Result<Self> {
        self.wait = wait.validate()?;
        Ok(self)
    }

    /// Accept a Galera cluster node: **every lock-taking transaction must run
    /// on one node** (a proxy routing all writes to one primary, such as
    /// MaxScale's readwritesplit or ProxySQL with a single writer hostgroup).
    /// Galera does not replicate row locks: without that routing two nodes
    /// grant the same lock, and [`Locker::connect`](crate::Locker::connect)
    /// refuses a Galera node unless this is set.
    ///
    /// What to expect on failover: the writer node dies, its clients get a
    /// lost connection (an I/O error through sqlx; 2013 for a waiter, 2006 for
    /// a holder in libmysqlclient's terms:
    /// [`ErrorKind::ConnectionLost`](crate::ErrorKind::ConnectionLost),
    /// retryable, tested on a 3-node cluster); a COMMIT in flight has an unknown outcome (make the work
    /// idempotent, or check before retrying); writes on the survivors stall
    /// for about 5–6 s while the cluster re-forms. Galera's certification
    /// aborts of conflicting writes arrive as 1213 and are
    /// [`ErrorKind::Deadlock`](crate::ErrorKind::Deadlock), retryable.
    pub fn with_galera_single_writer(mut self) -> Self {
        self.galera_single_writer = true;
        self
    }

    /// Whether a Galera node is accepted (see [`Config::with_galera_single_writer`]).
    pub fn galera_single_writer(&self) -> bool {
        self.galera_single_writer
    }

    /// Accept a member of a **multi-primary** MySQL Group Replication group
    /// (InnoDB Cluster): **every lock-taking transaction must run on one
    /// member** (a router or proxy configured with one writer). Row locks are
    /// not replicated between members: without
    /// that routing two members grant the same lock (measured on MySQL 9.7),
    /// so [`Locker::connect`](crate::Locker::connect) refuses a multi-primary
    /// member unless this is set. Single-primary groups need no opt-in: the
    /// primary is accepted (MySQL Router's read-write port leads there) and
    /// the secondaries (read-only) refused.
    ///
    /// What to expect on failover (single-primary, 3 members on loopback,
    /// MySQL 9.7, default `group_replication_member_expel_timeout`): the
    /// primary is killed; a transaction waiting for a lock on it gets
    /// [`ErrorKind::ConnectionLost`](crate::ErrorKind::ConnectionLost) within
    /// ~140 ms (retryable); a holder's COMMIT gets it too, through
    /// [`Error::from_commit`](crate::Error::from_commit) with the outcome
    /// unknown ([`TxnState::CommitUnknown`](crate::TxnState::CommitUnknown),
    /// not retryable); the survivors stay read-only, and are refused, until
    /// they expel the dead member and elect a new primary, ~22 s after the
    /// kill.
    /// Conflicting writes on two members of a multi-primary group fail
    /// certification at COMMIT (3101, or 1180 with engine error 149):
    /// [`ErrorKind::Deadlock`](crate::ErrorKind::Deadlock), retryable.
    pub fn with_group_replication_single_writer(mut self) -> Self {
        self.group_replication_single_writer = true;
        self
    }

    /// Whether a multi-primary Group Replication member is accepted (see
    /// [`Config::with_group_replication_single_writer`]).
    pub fn group_replication_single_writer(&self) -> bool {
        self.group_replication_single_writer
    }

    /// Bound how long the **server** keeps the locks of a transaction whose
    /// client has gone silent (a network partition, a frozen process): once
    /// a lock-holding transaction has sent nothing for `lease`, the server
    /// ends its session, which rolls it back and frees its locks. Default
    /// [`DEFAULT_LEASE`] (60 s): only idle time between statements counts,
    /// which in a healthy service is milliseconds, and a transaction idle
    /// for that long while holding locks already stalls every waiter; a
    /// bound in minutes, not the hours of TCP's own timeouts, is what the
    /// other transactions wait for at worst.
    ///
    /// Per server:
    /// - **PostgreSQL**: hierlock sets `idle_in_transaction_session_timeout`
    ///   for the transaction (`set_config(.., true)`, inside its first lock
    ///   statement: no extra round trip), so it reverts at COMMIT or
    ///   ROLLBACK and no pooled connection keeps it.
    /// - **MySQL, MariaDB**: the bound is a session setting that no statement
    ///   can scope to a transaction (MariaDB's `idle_transaction_timeout`,
    ///   MySQL's `wait_timeout`), so it belongs to the pool: set it on every
    ///   connection with [`crate::lease::mysql_pool`].
    ///   [`Locker::connect`](crate::Locker::connect) reads what the server
    ///   applies ([`Locker::lease`](crate::Locker::lease)) and warns when it
    ///   is longer than this.
    /// - **SQLite** runs in-process: nothing to bound.
    ///
    /// A transaction ended by its lease fails its next statement with
    /// [`ErrorKind::ConnectionLost`](crate::ErrorKind::ConnectionLost)
    /// (retryable): nothing it wrote is committed. Locks of a
    /// [`LockHandle`](crate::LockHandle), whose transaction stays idle by
    /// design while the work runs elsewhere, are not leased on PostgreSQL;
    /// under a pool-wide MySQL-family setting, watch a handle with
    /// [`LockHandle::lost`](crate::LockHandle::lost) more often than the
    /// lease (each check is a statement, so it keeps the session alive).
    ///
    /// A tighter timeout already in force is kept: PostgreSQL's setting as
    /// the application, a role or the database set it (`0`, off, is
    /// replaced by the lease), and on the MySQL family the server's global
    /// default when [`crate::lease::mysql_pool`] sets the pool's.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] if `lease` is under one second (the MySQL
    /// family's unit) or over [`MAX_LEASE`] (PostgreSQL's largest).
    pub fn with_lease(mut self, lease: Duration) -> Result<Self> {
        if lease < Duration::from_secs(1) || lease > MAX_LEASE {
            return Err(Error::InvalidConfig(format!(
                "a lease must be between 1 s and {MAX_LEASE:?} (PostgreSQL's largest \
                 idle_in_transaction_session_timeout), got {lease:?}; \
                 for no lease at all use Config::without_lease"
            )));
        }
        self.lease = Some(lease);
        Ok(self)
    }

    /// No lease: a silent client's locks stay until the server notices the
    /// connection is gone (TCP keepalive or the server's idle timeouts:
    /// hours by default). See [`Config::with_lease`].
    pub fn without_lease(mut self) -> Self {
        self.lease = None;
        self
    }

    /// The lease (see [`Config::with_lease`]), if any.
    pub fn lease(&self) -> Option<Duration> {
        self.lease
    }

    /// How long a statement that does not wait for a lock may go unanswered
    /// before hierlock gives up on its connection: the whole of a
    /// [`Wait::NoWait`] acquisition, and each lock check of
    /// [`LockHandle::is_held`](crate::LockHandle::is_held). Past it the call
    /// returns [`ErrorKind::ConnectionLost`](crate::ErrorKind::ConnectionLost)
    /// ([`TxnState::Lost`](crate::TxnState::Lost), retryable) and the
    /// connection is abandoned, whatever the socket does (a dead network
    /// never answers). Default [`DEFAULT_ANSWER_TIMEOUT`] (30 s). A
    /// [`Wait::Timeout`] acquisition is bounded by its own deadline plus
    /// [`DEADLINE_MARGIN`]; a [`Wait::Block`] one only by the server's lock
    /// wait timeout (bound it with `Wait::Timeout`).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] if `timeout` is zero or over [`MAX_TIMEOUT`].
    pub fn with_answer_timeout(mut self, timeout: Duration) -> Result<Self> {
        self.answer_timeout = valid_answer_timeout(timeout)?;
        Ok(self)
    }

    /// See [`Config::with_answer_timeout`].
    pub fn answer_timeout(&self) -> Duration {
        self.answer_timeout
    }

    /// Use the lock layout `subtree_reads`: with
    /// [`SubtreeReads::Striped`], [`Target::read_subtree`](crate::Target::read_subtree)
    /// is available and every write takes one stripe lock per ancestor. The
    /// bucket table must be provisioned for it (its stripe levels 3 and 4),
    /// and every service sharing the lock store must use the same layout.
    pub fn with_subtree_reads(mut self, subtree_reads: SubtreeReads) -> Self {
        self.subtree_reads = subtree_reads;
        self
    }

    /// The lock layout (see [`Config::with_subtree_reads`]).
    pub fn subtree_reads(&self) -> SubtreeReads {
        self.subtree_reads
    }

    /// The bucket table levels this layout uses: 0–2 for the nodes, and 3–4
    /// for the users' and accounts' stripes when subtree reads are on.
    pub fn table_levels(&self) -> std::ops::Range<u8> {
        match self.subtree_reads {
            SubtreeReads::Off => 0..3,
            SubtreeReads::Striped { .. } => 0..5,
        }
    }

    /// The layout's name as the metadata row records it: the key scheme's
    /// name, followed by `+stripes-K` with subtree reads.
    pub fn layout_name(&self) -> String {
        format!(
            "{}{}",
            self.key_scheme.name(),
            self.subtree_reads.layout_suffix()
        )
    }

    /// Represent locks on PostgreSQL this way.
    pub fn with_postgres_locks(mut self, locks: PostgresLocks) -> Self {
        self.postgres = locks;
        self
    }

    /// The bucket table.
    pub fn table(&self) -> &TableName {
        &self.table
    }

    /// Buckets per level.
    pub fn bucket_space(&self) -> u32 {
        self.bucket_space
    }

    /// How IDs map to buckets.
    pub fn key_scheme(&self) -> KeyScheme {
        self.key_scheme
    }

    /// The default wait.
    pub fn wait(&self) -> Wait {
        self.wait
    }

    /// How locks are represented on PostgreSQL.
    pub fn postgres_locks(&self) -> PostgresLocks {
        self.postgres
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn table_names_are_plain_identifiers() {
        for ok in ["hier_lock_buckets", "_x", "T1"] {
            assert!(TableName::new(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "1abc",
            "a-b",
            "a b",
            "x;drop table y",
            "`x`",
            "\"x\"",
            "é",
        ] {
            let err = TableName::new(bad).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidConfig, "{bad}");
        }
        let longest = "a".repeat(MAX_TABLE_NAME_LEN);
        assert!(TableName::new(&longest).is_ok());
        assert!(TableName::new(&format!("{longest}a")).is_err());
    }

    #[test]
    fn bucket_space_and_timeouts_are_bounded() {
        assert!(Config::default().with_bucket_space(0).is_err());
        assert!(
            Config::default()
                .with_bucket_space(MAX_BUCKET_SPACE + 1)
                .is_err()
        );
        assert!(
            Config::default()
                .with_bucket_space(MAX_BUCKET_SPACE)
                .is_ok()
        );
        assert!(
            Config::default()
                .with_wait(Wait::Timeout(Duration::ZERO))
                .is_err()
        );
        assert!(
            Config::default()
                .with_wait(Wait::Timeout(MAX_TIMEOUT + Duration::from_secs(1)))
                .is_err()
        );
        assert!(
            Config::default()
                .with_wait(Wait::Timeout(Duration::from_millis(1)))
                .is_ok()
        );
        let thirty_days = Duration::from_secs(30 * 24 * 3600);
        for bad in [
            Duration::ZERO,
            Duration::from_millis(999),
            MAX_LEASE + Duration::from_millis(1),
            thirty_days,
            MAX_TIMEOUT,
        ] {
            let err = Config::default().with_lease(bad).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidConfig, "{bad:?}");
        }
        let longest = Config::default().with_lease(MAX_LEASE).expect("the longest lease");
        assert_eq!(longest.lease(), Some(MAX_LEASE));
        assert_eq!(Config::default().lease(), Some(DEFAULT_LEASE));
        assert_eq!(Config::default().without_lease().lease(), None);
        assert!(Config::default().with_answer_timeout(Duration::ZERO).is_err());
    }
}
