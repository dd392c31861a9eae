//! The example's main output: the same workload run without locks and with
//! hierlock, side by side, then the hierarchy measured.

use std::fmt;

use hierlock::{Dialect, Locker};
use sea_orm::DatabaseConnection;

use super::hierarchy::{self, Hierarchy};
use super::{BoxError, Options, Report, backend_name};

/// Both runs of one workload, and the hierarchy's measurement.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// The run without locks.
    pub unlocked: Report,
    /// The same operations with hierlock.
    pub locked: Report,
    /// Resources in parallel, the account excluding them.
    pub hierarchy: Hierarchy,
}

impl Comparison {
    /// What went wrong without locks, one phrase each (empty: nothing did).
    pub fn unlocked_anomalies(&self) -> Vec<String> {
        anomalies(&self.unlocked)
    }

    /// What went wrong with hierlock (empty when it works).
    pub fn locked_anomalies(&self) -> Vec<String> {
        anomalies(&self.locked)
    }
}

/// Broken invariants, conflict errors and deadlocks: everything a user of
/// the bank would notice or a retry had to hide.
fn anomalies(report: &Report) -> Vec<String> {
    let mut found: Vec<String> = report
        .checks
        .iter()
        .filter(|c| !c.held)
        .map(|c| format!("{} broken", c.name))
        .collect();
    let conflicts: u64 = report.tally.errors.values().sum();
    if conflicts > 0 {
        found.push(format!("{conflicts} failed attempts"));
    }
    if report.tally.deadlocks > 0 {
        found.push(format!("{} deadlocks", report.tally.deadlocks));
    }
    found
}

/// Seed and run `options`' workload without locks, seed and run it again
/// with `locker`, and measure the hierarchy with it.
///
/// # Errors
/// As [`super::run`] and [`hierarchy::measure`].
pub async fn compare(
    db: &DatabaseConnection,
    locker: Locker,
    options: &Options,
    hierarchy: hierarchy::Options,
) -> Result<Comparison, BoxError> {
    let unlocked = super::run(db, None, options).await?;
    let locked = super::run(db, Some(locker.clone()), options).await?;
    let hierarchy = hierarchy::measure(db, &locker, hierarchy).await?;
    Ok(Comparison {
        unlocked,
        locked,
        hierarchy,
    })
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (u, l) = (&self.unlocked, &self.locked);
        writeln!(
            f,
            "backend: {} {}; hierlock takes {}",
            backend_name(l.dialect),
            l.server,
            l.locking.as_deref().unwrap_or("no locks")
        )?;
        writeln!(f, "work: {}", u.describe_work())?;
        writeln!(f)?;
        let row = |f: &mut fmt::Formatter<'_>, name: &str, a: String, b: String| {
            writeln!(f, "{name:<30}{a:>16}{b:>16}")
        };
        row(f, "", "without locks".into(), "with hierlock".into())?;
        row(
            f,
            "elapsed",
            format!("{:.2} s", u.elapsed.as_secs_f64()),
            format!("{:.2} s", l.elapsed.as_secs_f64()),
        )?;
        let outcomes = |r: &Report| {
            let declined: u64 = r.tally.declined.values().sum();
            format!("{} / {declined} / {}", r.tally.committed, r.tally.failed)
        };
        row(f, "committed / declined / failed", outcomes(u), outcomes(l))?;
        let conflicts = |r: &Report| r.tally.errors.values().sum::<u64>().to_string();
        row(f, "failed attempts (retried)", conflicts(u), conflicts(l))?;
        row(
            f,
            "deadlocks",
            u.tally.deadlocks.to_string(),
            l.tally.deadlocks.to_string(),
        )?;
        for (a, b) in u.checks.iter().zip(&l.checks) {
            let verdict = |held| if held { "yes" } else { "BROKEN" }.to_owned();
            row(f, a.name, verdict(a.held), verdict(b.held))?;
        }
        writeln!(f)?;
        for (label, report) in [("without locks", u), ("with hierlock", l)] {
            for check in report.checks.iter().filter(|c| !c.held) {
                writeln!(f, "{label}: {check}")?;
            }
            if !report.tally.errors.is_empty() {
                let errors: Vec<String> = report
                    .tally
                    .errors
                    .iter()
                    .map(|(e, n)| format!("{e} x{n}"))
                    .collect();
                writeln!(f, "{label}, failed attempts: {}", errors.join(", "))?;
            }
        }
        writeln!(f, "{}", self.verdict())?;
        writeln!(f)?;
        write!(f, "{}", self.hierarchy)
    }
}

impl Comparison {
    /// The one-line conclusion of the two runs.
    fn verdict(&self) -> String {
        let (u, l) = (self.unlocked_anomalies(), self.locked_anomalies());
        let unlocked = match (u.is_empty(), self.unlocked.dialect) {
            (true, _) => {
                "without locks nothing went wrong this time, by luck (try more --ops)".into()
            }
            (false, Dialect::Sqlite) => format!(
                "without locks, SQLite let one writer in at a time and refused the others \
                 (`database is locked`): {}",
                u.join(", ")
            ),
            (false, _) => format!(
                "without locks, transactions that read the same row before either wrote \
                 overwrote each other: {}",
                u.join(", ")
            ),
        };
        let locked = if l.is_empty() {
            "with hierlock: none, every request answered".to_owned()
        } else {
            format!("WITH hierlock: {} (this is a bug)", l.join(", "))
        };
        format!("=> {unlocked}; {locked}")
    }
}
