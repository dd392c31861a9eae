//! N locks in one call: the cost per lock as the plan grows, and the
//! statements a plan takes.
//!
//! A call of N locks write-locks N − 2 resources of one account (the
//! account and its user are the other two); N = 1 is one user lock. Each
//! measurement takes about the same number of locks whatever N, in calls
//! of `BEGIN; acquire; ROLLBACK`.

use std::time::Instant;

use hierlock::{Locker, Request, Target};
use hierlock_migration::{Provision, error_chain};
use sea_orm::TransactionTrait;

use super::stats::{Table, order};
use super::{Bench, BoxError, counters};

/// Locks per call, measured.
pub const SIZES: [usize; 6] = [1, 10, 100, 1_000, 10_000, 30_000];
/// The size the others are compared with.
const BASELINE: usize = 100;

/// The requests of a call taking `locks` locks.
fn requests(locks: usize) -> Vec<Request> {
    if locks < 3 {
        return vec![Target::user("scale").write()];
    }
    (0..locks - 2)
        .map(|r| Target::resource("scale", "a", r).write())
        .collect()
}

/// Measure and print the cost per lock of each size.
///
/// # Errors
/// Setting up failed, or a call failed for another reason than the
/// server's limits (which are reported in the table as `failed`).
pub async fn run(bench: &Bench) -> Result<(), BoxError> {
    println!("\n## N locks in one call (µs per lock, lower is better)");
    if bench.dialect == hierlock::Dialect::Sqlite {
        println!("  skipped on SQLite: one database-wide lock, whatever N");
        return Ok(());
    }
    let config = bench.lock_config()?;
    Provision::new(config.clone()).run(&bench.db).await?;
    let locker = Locker::connect(&bench.db, config).await?;
    let budget = if bench.quick { 6_000 } else { 60_000 };
    println!(
        "about {budget} locks (at most {} calls) per sample, {} reps:",
        budget / 30,
        bench.reps
    );
    let names = SIZES.map(|n| format!("N = {n}"));
    let baseline = SIZES.iter().position(|&n| n == BASELINE).unwrap_or(0);
    let mut table = Table::new(names).baseline(baseline);
    let mut failures = Vec::new();
    for rep in 0..=bench.reps {
        for i in order(SIZES.len(), rep) {
            let per_lock = match per_lock_seconds(bench, &locker, SIZES[i], budget).await {
                Ok(seconds) => seconds * 1e6,
                Err(err) => {
                    if rep == 0 {
                        failures.push(format!("N = {}: {}", SIZES[i], error_chain(&*err)));
                    }
                    f64::NAN
                }
            };
            // Rep 0 warms up.
            if rep > 0 {
                table.record(i, rep - 1, per_lock);
            }
        }
    }
    table.print("µs/lock");
    for failure in failures {
        println!("  {failure}");
    }
    counters::print_header(bench, "one call; ROLLBACK instead of COMMIT");
    for n in SIZES {
        let requests = requests(n);
        let counted = counters::per_txn(bench, 2, async |db, _| {
            let txn = db.begin().await?;
            locker.acquire(&txn, requests.iter().cloned()).await?;
            txn.rollback().await?;
            Ok(())
        })
        .await;
        match counted {
            Ok(Some(counted)) => println!("    N = {n:<6} {}", counted.describe()),
            Ok(None) => {}
            Err(err) => println!("    N = {n:<6} failed: {}", error_chain(&*err)),
        }
    }
    Ok(())
}

/// Seconds per lock of calls taking `locks` locks, about `budget` locks in
/// all (at most `budget / 30` calls).
async fn per_lock_seconds(
    bench: &Bench,
    locker: &Locker,
    locks: usize,
    budget: usize,
) -> Result<f64, BoxError> {
    let requests = requests(locks);
    // Small plans are dominated by the round trip: fewer calls measure it.
    let calls = (budget / locks).clamp(1, budget / 30);
    let start = Instant::now();
    for _ in 0..calls {
        let txn = bench.db.begin().await?;
        locker.acquire(&txn, requests.iter().cloned()).await?;
        txn.rollback().await?;
    }
    Ok(start.elapsed().as_secs_f64() / (calls * locks) as f64)
}
