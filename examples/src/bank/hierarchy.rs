//! Why the hierarchy matters, measured: writers of different resources of
//! one account hold their locks at the same time, while writers of the
//! account itself exclude them and each other.
//!
//! Every task begins a transaction, takes its lock, counts itself as a
//! holder for [`Options::hold`] and commits. The counters say how many held
//! at once; a holder leaves the count *before* its commit releases the
//! lock, so an overlap is never over-reported.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hierlock::{Locker, Target};
use sea_orm::{DatabaseConnection, TransactionTrait};

use super::BoxError;

/// The user and account whose subtree the measurement locks.
const USER: i32 = 1;
const ACCOUNT: i32 = 1;

/// How the measurement runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Tasks per phase.
    pub tasks: usize,
    /// How long each task holds its lock.
    pub hold: Duration,
}

impl Default for Options {
    /// 8 tasks, each holding its lock 50 ms.
    fn default() -> Self {
        Options {
            tasks: 8,
            hold: Duration::from_millis(50),
        }
    }
}

/// One phase: how many held their locks at once, and how long it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phase {
    /// The most holders at one moment.
    pub max_at_once: usize,
    /// From the first `begin` to the last commit.
    pub elapsed: Duration,
}

/// The three phases' results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    /// What was run.
    pub options: Options,
    /// Whether the locker can hold non-conflicting locks at once (false on
    /// SQLite: one database-wide write lock).
    pub exact: bool,
    /// Each task writes a resource of its own, all in one account.
    pub resources: Phase,
    /// Each task writes the account itself.
    pub account: Phase,
    /// Half the tasks write resources, half the account, all at once: how
    /// often an account writer and a resource writer held at the same time.
    pub mixed_overlaps: usize,
}

/// Holders of each kind right now, and the most seen.
#[derive(Debug, Default)]
struct Gauge {
    resources: AtomicUsize,
    accounts: AtomicUsize,
    max_resources: AtomicUsize,
    max_accounts: AtomicUsize,
    overlaps: AtomicUsize,
}

impl Gauge {
    /// Count a holder in; note when the other kind is holding too.
    fn enter(&self, account: bool) {
        let (mine, max, other) = self.counters(account);
        let now = mine.fetch_add(1, Ordering::SeqCst) + 1;
        max.fetch_max(now, Ordering::SeqCst);
        if other.load(Ordering::SeqCst) > 0 {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn leave(&self, account: bool) {
        self.counters(account).0.fetch_sub(1, Ordering::SeqCst);
    }

    fn counters(&self, account: bool) -> (&AtomicUsize, &AtomicUsize, &AtomicUsize) {
        if account {
            (&self.accounts, &self.max_accounts, &self.resources)
        } else {
            (&self.resources, &self.max_resources, &self.accounts)
        }
    }
}

/// Run the three phases on `db` with `locker`.
///
/// # Errors
/// A transaction or an acquisition failed (the locker's wait is bounded,
/// so a bug fails rather than hangs).
pub async fn measure(
    db: &DatabaseConnection,
    locker: &Locker,
    options: Options,
) -> Result<Hierarchy, BoxError> {
    let all_resources = vec![false; options.tasks];
    let all_account = vec![true; options.tasks];
    let mixed: Vec<bool> = (0..options.tasks).map(|i| i % 2 == 1).collect();

    let (resources, gauge) = phase(db, locker, options.hold, &all_resources).await?;
    let resources = Phase {
        max_at_once: gauge.max_resources.load(Ordering::SeqCst),
        elapsed: resources,
    };
    let (account, gauge) = phase(db, locker, options.hold, &all_account).await?;
    let account = Phase {
        max_at_once: gauge.max_accounts.load(Ordering::SeqCst),
        elapsed: account,
    };
    let (_, gauge) = phase(db, locker, options.hold, &mixed).await?;
    Ok(Hierarchy {
        options,
        exact: locker.is_exact(),
        resources,
        account,
        mixed_overlaps: gauge.overlaps.load(Ordering::SeqCst),
    })
}

/// Start one task per entry of `writers_of_account` (true: it writes the
/// account, false: resource `i` of it) and wait for all of them.
async fn phase(
    db: &DatabaseConnection,
    locker: &Locker,
    hold: Duration,
    writers_of_account: &[bool],
) -> Result<(Duration, Arc<Gauge>), BoxError> {
    let gauge = Arc::new(Gauge::default());
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (i, &account) in writers_of_account.iter().enumerate() {
        let (db, locker, gauge) = (db.clone(), locker.clone(), gauge.clone());
        let resource = i32::try_from(i)? + 1;
        tasks.push(tokio::spawn(async move {
            let target = if account {
                Target::account(USER, ACCOUNT)
            } else {
                Target::resource(USER, ACCOUNT, resource)
            };
            let txn = db.begin().await?;
            locker.acquire(&txn, [target.write()]).await?;
            gauge.enter(account);
            tokio::time::sleep(hold).await;
            gauge.leave(account);
            txn.commit().await?;
            Ok::<_, BoxError>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok((started.elapsed(), gauge))
}

impl fmt::Display for Hierarchy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (n, hold) = (self.options.tasks, self.options.hold.as_millis());
        writeln!(
            f,
            "the hierarchy: {n} tasks per line, each holding its write lock {hold} ms"
        )?;
        let line = |f: &mut fmt::Formatter<'_>, label: String, phase: Phase| {
            writeln!(
                f,
                "  {label:<30}{:>2} at once, {:.2} s",
                phase.max_at_once,
                phase.elapsed.as_secs_f64()
            )
        };
        line(
            f,
            format!("{n} resources of account {USER}/{ACCOUNT}:"),
            self.resources,
        )?;
        line(f, format!("account {USER}/{ACCOUNT} itself:"), self.account)?;
        writeln!(
            f,
            "  {:<30}an account writer alongside a resource writer {} times",
            "half of each, all at once:", self.mixed_overlaps
        )?;
        if self.exact {
            write!(
                f,
                "=> resources of one account progress in parallel; a lock on the account \
                 excludes them all"
            )
        } else {
            write!(
                f,
                "=> SQLite has one database-wide write lock, so everything runs one at a time; \
                 set DATABASE_URL (MariaDB, MySQL, PostgreSQL) to see resources in parallel"
            )
        }
    }
}
