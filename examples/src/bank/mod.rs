//! The `bank` example's logic: concurrent tasks move money between users'
//! accounts and the items they sell, with or without hierlock, and then the
//! bank checks that no money, stock or purchase went astray.
//!
//! - [`entity`]: the tables (SeaORM entities), their creation and seeding.
//! - [`ops`]: the operations, what they lock, and how one transaction runs.
//! - [`invariants`]: what must hold at the end.
//! - [`compare`]: the workload without locks and with hierlock, side by side.
//! - [`hierarchy`]: resources of one account in parallel, the account
//!   excluding them, measured.
//!
//! [`run`] runs the workload once; [`compare::compare`] is what
//! `examples/bank.rs` prints by default.

pub mod compare;
pub mod entity;
pub mod hierarchy;
pub mod invariants;
pub mod ops;

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::fmt;
use std::time::{Duration, Instant};

use hierlock::{Config, Dialect, Keyspace, Locker, Wait};
use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbBackend, DbErr, Statement,
};

use self::invariants::Check;
use self::ops::{Decline, Kind, Op, Teller};

/// Errors that stop a run before it can report (connection, schema, setup).
pub type BoxError = Box<dyn StdError + Send + Sync>;

/// The bucket table of the example on MySQL and MariaDB, apart from the
/// default one so that the example never touches an application's.
pub const BUCKET_TABLE: &str = "bank_lock_buckets";

/// Buckets per level on MySQL and MariaDB: 300,000 rows, provisioned in a
/// few seconds on the first run. Plenty for a few dozen users.
pub const BUCKET_SPACE: u32 = 100_000;

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Concurrent tasks.
    pub tasks: usize,
    /// Operations in all (a double-submitted purchase is one operation of two
    /// transactions).
    pub ops: usize,
    /// Users (at least 2: transfers go between different users).
    pub users: i32,
    /// Accounts per user.
    pub accounts: i32,
    /// Items on sale per account.
    pub resources: i32,
    /// Seed of the pseudo-random choice of operations.
    pub seed: u64,
    /// Time the application spends between its checks and its writes.
    pub think: Duration,
}

impl Default for Options {
    /// A run of a few seconds at most: 8 tasks, 400 operations, 8 users with 2
    /// accounts of 2 items each.
    fn default() -> Self {
        Options {
            tasks: 8,
            ops: 400,
            users: 8,
            accounts: 2,
            resources: 2,
            seed: 4,
            think: Duration::from_millis(1),
        }
    }
}

impl Options {
    fn validate(&self) -> Result<(), BoxError> {
        if self.tasks == 0 || self.users < 2 || self.accounts < 1 || self.resources < 1 {
            return Err(format!(
                "need at least 1 task, 2 users, 1 account and 1 resource, got {} tasks, {} users, \
                 {} accounts, {} resources",
                self.tasks, self.users, self.accounts, self.resources
            )
            .into());
        }
        Ok(())
    }
}

/// Connect to `url` with a pool big enough for `options.tasks`: two
/// connections per task (a double-submitted purchase uses two at once) and
/// one for the checks.
///
/// SQLite files get the usual settings of an SQLite service: write-ahead
/// logging, and no sync to disk at every commit.
///
/// # Errors
/// The connection failed.
pub async fn connect(url: &str, options: &Options) -> Result<DatabaseConnection, DbErr> {
    let connections = u32::try_from(options.tasks * 2 + 1).unwrap_or(u32::MAX);
    let mut connect = ConnectOptions::new(url);
    connect
        .max_connections(connections)
        .sqlx_logging(false)
        .map_sqlx_sqlite_opts(|sqlite| {
            sqlite
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
        });
    // On SQLite, hierlock's busy handler makes lock waits cancel-safe.
    if url.starts_with("sqlite:") {
        hierlock::sqlite::connect(connect).await
    } else {
        Database::connect(connect).await
    }
}

/// The configuration the example's locker uses: its own bucket table and a
/// small bucket space, and a 5 s lock wait so that a bug fails instead of hanging.
///
/// # Errors
/// None with these constants; the builder checks its arguments.
pub fn config() -> hierlock::Result<Config> {
    Config::default()
        .with_table(BUCKET_TABLE)?
        .with_bucket_space(BUCKET_SPACE)?
        .with_wait(Wait::Timeout(Duration::from_secs(5)))
}

/// Make a locker for `db` with [`config`]: see [`locker_with`].
///
/// # Errors
/// As [`locker_with`].
pub async fn locker(db: &DatabaseConnection) -> hierlock::Result<Locker> {
    locker_with(db, config()?).await
}

/// Make a locker for `db`: on MySQL and MariaDB, first provision `config`'s
/// bucket table (quick when it is already complete). PostgreSQL uses
/// advisory locks and SQLite its database write lock: neither needs a table.
///
/// # Errors
/// Provisioning or [`Locker::connect`] failed.
pub async fn locker_with(db: &DatabaseConnection, config: Config) -> hierlock::Result<Locker> {
    if db.get_database_backend() == DbBackend::MySql {
        hierlock_migration::Provision::new(config.clone())
            .chunk_rows(20_000)
            .run(db)
            .await?;
    }
    Locker::connect(db, config).await
}

/// Create and seed the tables, run `options.ops` operations from
/// `options.tasks` tasks (with `locker`'s locks, or with none), and check the
/// invariants.
///
/// # Errors
/// Invalid options, or a failure to create, seed or check the tables. Failed
/// operations are counted in the report, not returned.
pub async fn run(
    db: &DatabaseConnection,
    locker: Option<Locker>,
    options: &Options,
) -> Result<Report, BoxError> {
    options.validate()?;
    let dialect = Dialect::detect(db).await?;
    let server = server_version(db).await?;
    let mut rng = Rng::new(options.seed);
    entity::create_tables(db).await?;
    let opening = entity::seed(db, options, &mut rng).await?;

    // Deal the operations to the tasks up front: the same seed gives the
    // same work, whatever the interleaving does with it.
    let mut work: Vec<Vec<Op>> = vec![Vec::new(); options.tasks];
    for i in 0..options.ops {
        let request_id = i64::try_from(i)? + 1;
        work[i % options.tasks].push(Op::random(&mut rng, options, request_id));
    }

    let locking = locker.as_ref().map(describe_locking);
    let teller = Teller {
        db: db.clone(),
        locker,
        think: options.think,
    };
    let started = Instant::now();
    let mut tasks = Vec::new();
    for ops in work {
        let teller = teller.clone();
        let mut rng = rng.split();
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            for op in ops {
                teller.perform(op, &mut rng, &mut tally).await;
            }
            tally
        }));
    }
    let mut tally = Tally::default();
    for task in tasks {
        tally.add(&task.await?);
    }
    let elapsed = started.elapsed();

    let checks = invariants::check(db, opening, &tally).await?;
    Ok(Report {
        dialect,
        server,
        locking,
        options: options.clone(),
        elapsed,
        tally,
        checks,
    })
}

fn describe_locking(locker: &Locker) -> String {
    match locker.keyspace() {
        Keyspace::Advisory { .. } => "advisory locks".into(),
        _ if !locker.is_exact() => "one database-wide write lock per transaction".into(),
        _ => format!("row locks on `{}`", locker.config().table()),
    }
}

async fn server_version(db: &DatabaseConnection) -> Result<String, BoxError> {
    let sql = match db.get_database_backend() {
        DbBackend::Sqlite => "SELECT sqlite_version() AS v",
        DbBackend::Postgres => "SELECT current_setting('server_version') AS v",
        _ => "SELECT VERSION() AS v",
    };
    let row = db
        .query_one_raw(Statement::from_string(db.get_database_backend(), sql))
        .await?;
    Ok(match row {
        Some(row) => row.try_get("", "v")?,
        None => String::new(),
    })
}

/// What the tasks did, added up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Operations by kind.
    pub ops: BTreeMap<Kind, u64>,
    /// Transactions started (a double-submitted purchase runs two).
    pub transactions: u64,
    /// Transactions committed.
    pub committed: u64,
    /// Transactions refused by a check, by reason.
    pub declined: BTreeMap<Decline, u64>,
    /// Transactions that failed for good (not retryable, or out of attempts).
    pub failed: u64,
    /// Attempts made again after a retryable failure.
    pub retries: u64,
    /// Acquisitions that took longer than [`ops::LOCK_WAIT`].
    pub lock_waits: u64,
    /// Deadlocks reported by the server (while locking or afterwards).
    pub deadlocks: u64,
    /// Every failed attempt, by a short description.
    pub errors: BTreeMap<String, u64>,
    /// Money deposited by committed deposits.
    pub deposited: i64,
    /// Amounts of the deposits whose `COMMIT` got no answer (the
    /// connection or the server went away): each may or may not have
    /// committed.
    pub in_doubt: Vec<i64>,
    /// Purchases submitted twice at once.
    pub double_submits: u64,
}

impl Tally {
    /// Add `other`'s counts to these.
    pub fn add(&mut self, other: &Tally) {
        for (kind, n) in &other.ops {
            *self.ops.entry(*kind).or_default() += n;
        }
        for (why, n) in &other.declined {
            *self.declined.entry(*why).or_default() += n;
        }
        for (label, n) in &other.errors {
            *self.errors.entry(label.clone()).or_default() += n;
        }
        self.transactions += other.transactions;
        self.committed += other.committed;
        self.failed += other.failed;
        self.retries += other.retries;
        self.lock_waits += other.lock_waits;
        self.deadlocks += other.deadlocks;
        self.deposited += other.deposited;
        self.in_doubt.extend_from_slice(&other.in_doubt);
        self.double_submits += other.double_submits;
    }
}

/// The outcome of a [`run`]; its `Display` is the example's output.
#[derive(Clone, Debug)]
pub struct Report {
    /// The server.
    pub dialect: Dialect,
    /// Its version.
    pub server: String,
    /// How hierlock locked, or `None` without locks.
    pub locking: Option<String>,
    /// What was run.
    pub options: Options,
    /// How long the operations took.
    pub elapsed: Duration,
    /// What happened.
    pub tally: Tally,
    /// The invariants, checked after the run.
    pub checks: Vec<Check>,
}

impl Report {
    /// Whether every invariant held.
    pub fn invariants_held(&self) -> bool {
        self.checks.iter().all(|c| c.held)
    }

    /// `400 ops (180 transfers, …) by 8 tasks on 8 users x 2 accounts x 2 items, …`.
    pub fn describe_work(&self) -> String {
        let o = &self.options;
        let ops: Vec<String> = self
            .tally
            .ops
            .iter()
            .map(|(kind, n)| format!("{n} {}", kind.as_str()))
            .collect();
        format!(
            "{} ops ({}) by {} tasks on {} users x {} accounts x {} items, seed {}, \
             each reading, thinking {} ms, then writing",
            o.ops,
            ops.join(", "),
            o.tasks,
            o.users,
            o.accounts,
            o.resources,
            o.seed,
            o.think.as_millis()
        )
    }
}

/// The server's name, for reports.
pub fn backend_name(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::MySql => "MySQL",
        Dialect::MariaDb => "MariaDB",
        Dialect::Postgres => "PostgreSQL",
        Dialect::Sqlite => "SQLite",
        _ => "an unknown server",
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.tally;
        let locking = match &self.locking {
            Some(how) => format!("hierlock with {how}"),
            None => "WITHOUT locks".into(),
        };
        writeln!(
            f,
            "backend: {} {}, {locking}",
            backend_name(self.dialect),
            self.server
        )?;
        writeln!(f, "work: {}", self.describe_work())?;
        let declined: u64 = t.declined.values().sum();
        let reasons: Vec<String> = t
            .declined
            .iter()
            .map(|(why, n)| format!("{n} {}", why.as_str()))
            .collect();
        writeln!(
            f,
            "transactions: {} in {:.2} s: {} committed, {declined} declined ({}), {} failed",
            t.transactions,
            self.elapsed.as_secs_f64(),
            t.committed,
            reasons.join(", "),
            t.failed
        )?;
        let waits = match self.locking {
            Some(_) => t.lock_waits.to_string(),
            None => "n/a".into(),
        };
        writeln!(
            f,
            "retries: {}, lock waits > {} ms: {waits}, deadlocks seen: {}",
            t.retries,
            ops::LOCK_WAIT.as_millis(),
            t.deadlocks
        )?;
        if !t.errors.is_empty() {
            let errors: Vec<String> = t.errors.iter().map(|(e, n)| format!("{e} x{n}")).collect();
            writeln!(f, "errors: {}", errors.join(", "))?;
        }
        for check in &self.checks {
            writeln!(f, "{check}")?;
        }
        let broken = self.checks.iter().filter(|c| !c.held).count();
        match (broken, &self.locking) {
            (0, Some(_)) => write!(f, "=> all invariants held"),
            (0, None) if self.dialect == Dialect::Sqlite => write!(
                f,
                "=> all invariants held: SQLite let one writer in at a time and failed the \
                 others with `database is locked` (the busy errors above), which were retried; \
                 run on PostgreSQL or MariaDB (DATABASE_URL) to see the lost updates"
            ),
            (0, None) => write!(
                f,
                "=> all invariants held this time, by luck: try more --ops or fewer --users"
            ),
            (n, None) if self.dialect == Dialect::Sqlite => write!(
                f,
                "=> INVARIANT BROKEN ({n} of {}): SQLite lets one writer in at a time and fails \
                 the others with `database is locked`, so requests fail instead of losing \
                 updates; on PostgreSQL or MariaDB (DATABASE_URL) the same code loses updates",
                self.checks.len()
            ),
            (n, None) => write!(
                f,
                "=> INVARIANT BROKEN ({n} of {}): the same code loses updates without locks; \
                 run without --only to compare",
                self.checks.len()
            ),
            (n, Some(_)) => write!(
                f,
                "=> INVARIANT BROKEN ({n} of {}) WITH locks: this is a bug",
                self.checks.len()
            ),
        }
    }
}

/// A small deterministic pseudo-random generator (SplitMix64): the same seed
/// gives the same operations, with no dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A uniform float in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// An ID in `1..=n` (`n > 0`).
    pub fn pick(&mut self, n: i32) -> i32 {
        let n = u64::try_from(n).unwrap_or(1).max(1);
        // Below n ≤ i32::MAX, so the cast is lossless.
        1 + self.below(n) as i32
    }

    /// A new generator, independent of this one from now on.
    pub fn split(&mut self) -> Rng {
        Rng(self.next_u64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_operations() {
        let options = Options::default();
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..50)
                .map(|i| Op::random(&mut rng, &options, i))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(4), draw(4));
        assert_ne!(draw(4), draw(5));
    }

    #[test]
    fn transfers_go_between_different_users() {
        let options = Options {
            users: 2,
            ..Options::default()
        };
        let mut rng = Rng::new(1);
        let mut transfers = 0;
        for i in 0..1000 {
            if let Op::Transfer { from, to, .. } = Op::random(&mut rng, &options, i) {
                assert_ne!(from.user, to.user);
                assert!((1..=2).contains(&from.user) && (1..=2).contains(&to.user));
                transfers += 1;
            }
        }
        assert!(transfers > 400, "{transfers}");
    }

    #[test]
    fn a_transfer_locks_both_accounts_in_one_request_list() {
        let from = ops::AccountKey {
            user: 2,
            account: 1,
        };
        let to = ops::AccountKey {
            user: 1,
            account: 2,
        };
        let op = Op::Transfer {
            from,
            to,
            amount: 5,
        };
        assert_eq!(
            op.locks(),
            vec![
                hierlock::Target::account(2, 1).write(),
                hierlock::Target::account(1, 2).write()
            ]
        );
    }
}
