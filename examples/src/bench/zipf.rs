//! A contended workload: 32 workers, rows drawn by Zipf's law (s = 1.1),
//! 1–3 rows per transaction, each locked then updated.
//!
//! Variants, each locking the transaction's rows before updating them:
//! - hierlock: one `acquire` of the rows' Resource write locks;
//! - `FOR UPDATE`: one `SELECT … FOR UPDATE` per business row, in id order;
//! - lock rows: one row per ID in a lock table of its own, inserted on
//!   demand (`INSERT … ON DUPLICATE KEY UPDATE` / `ON CONFLICT DO UPDATE`,
//!   which locks the row whether it inserts it or finds it), in id order.
//!
//! A transaction failing with a retryable conflict (deadlock, lock timeout)
//! is rolled back and run again; the report counts them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use hierlock::{ErrorKind, Locker, Target};
use hierlock_migration::Provision;
use sea_orm::{ConnectionTrait, DatabaseConnection, TransactionTrait, Value};
use tokio::task::JoinSet;

use super::rng::Zipf;
use super::stats::{Table, order};
use super::{Bench, BoxError, ROWS, ROWS_TABLE, counters};
use crate::bank::Rng;

/// Concurrent workers.
pub const WORKERS: u64 = 32;
/// Zipf's exponent over the rows.
pub const EXPONENT: f64 = 1.1;
/// The per-ID lock table of the third variant.
const ID_LOCKS: &str = "hlbench_id_locks";

#[derive(Clone, Copy, Debug)]
enum Variant {
    Hierlock,
    ForUpdate,
    LockRows,
}

/// The baseline first: what a user would write without hierlock.
const VARIANTS: [Variant; 3] = [Variant::ForUpdate, Variant::LockRows, Variant::Hierlock];

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Hierlock => "hierlock: 1 acquire",
            Variant::ForUpdate => "FOR UPDATE per business row",
            Variant::LockRows => "per-ID lock rows",
        }
    }
}

/// Conflicts met during one sample.
#[derive(Default)]
struct Conflicts {
    deadlocks: AtomicU64,
    timeouts: AtomicU64,
}

/// Measure and print the three variants.
///
/// # Errors
/// Setting up failed, or a transaction failed with a non-retryable error.
pub async fn run(bench: &Bench) -> Result<(), BoxError> {
    println!(
        "\n## Contended: {WORKERS} workers, Zipf s = {EXPONENT} over {ROWS} rows, 1–3 rows per txn \
         (txn/s, higher is better)"
    );
    if bench.dialect == hierlock::Dialect::Sqlite {
        println!("  skipped on SQLite: no row locks, every write takes the one database lock");
        return Ok(());
    }
    bench.ensure_rows().await?;
    let config = bench.lock_config()?;
    Provision::new(config.clone()).run(&bench.db).await?;
    let locker = Locker::connect(&bench.db, config).await?;
    let engine = if bench.dialect.is_mysql_family() {
        " ENGINE=InnoDB"
    } else {
        ""
    };
    bench
        .exec(&format!(
            "CREATE TABLE IF NOT EXISTS {ID_LOCKS} (id BIGINT NOT NULL PRIMARY KEY){engine}"
        ))
        .await?;
    let zipf = Arc::new(Zipf::new(ROWS as usize, EXPONENT));
    let txns = if bench.quick { 400 } else { 4000 };
    println!("{txns} transactions per sample, {} reps:", bench.reps);
    let mut table = Table::new(VARIANTS.map(Variant::name));
    let mut conflicts = vec![(0, 0); VARIANTS.len()];
    for rep in 0..bench.reps {
        for i in order(VARIANTS.len(), rep) {
            let seed = rep as u64 * 1000;
            let (tps, seen) = throughput(bench, &locker, &zipf, VARIANTS[i], txns, seed).await?;
            table.record(i, rep, tps);
            conflicts[i].0 += seen.deadlocks.load(Ordering::Relaxed);
            conflicts[i].1 += seen.timeouts.load(Ordering::Relaxed);
        }
    }
    table.print("txn/s");
    println!(
        "  retried (all reps, {} transactions each variant):",
        txns * bench.reps as u64
    );
    for (variant, (deadlocks, timeouts)) in VARIANTS.iter().zip(conflicts) {
        println!(
            "    {:<30} {deadlocks} deadlocks, {timeouts} lock timeouts",
            variant.name()
        );
    }
    counters::print_header(bench, "2 rows per transaction");
    for variant in VARIANTS {
        let counted = counters::per_txn(bench, 200, async |db, i| {
            let rows = [i as i64 % 1000, 1000 + i as i64 % 1000];
            transaction(bench, &locker, db, variant, &rows).await?;
            Ok(())
        })
        .await?;
        if let Some(counted) = counted {
            println!("    {:<30} {}", variant.name(), counted.describe());
        }
    }
    Ok(())
}

/// Committed transactions per second of [`WORKERS`] workers sharing `txns`.
async fn throughput(
    bench: &Bench,
    locker: &Locker,
    zipf: &Arc<Zipf>,
    variant: Variant,
    txns: u64,
    seed: u64,
) -> Result<(f64, Arc<Conflicts>), BoxError> {
    if matches!(variant, Variant::LockRows) {
        // Start empty, so that rows are inserted on demand as in production.
        bench.exec(&format!("DELETE FROM {ID_LOCKS}")).await?;
    }
    let tickets = Arc::new(AtomicU64::new(0));
    let conflicts = Arc::new(Conflicts::default());
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for worker in 0..WORKERS {
        let (bench, locker, zipf) = (bench.clone(), locker.clone(), zipf.clone());
        let (tickets, conflicts) = (tickets.clone(), conflicts.clone());
        tasks.spawn(async move {
            let mut rng = Rng::new(seed + worker);
            while tickets.fetch_add(1, Ordering::Relaxed) < txns {
                let rows = draw_rows(&zipf, &mut rng);
                loop {
                    match transaction(&bench, &locker, &bench.db, variant, &rows).await {
                        Ok(()) => break,
                        Err(err) if err.is_retryable() => {
                            let counter = if err.kind() == ErrorKind::Deadlock {
                                &conflicts.deadlocks
                            } else {
                                &conflicts.timeouts
                            };
                            counter.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(err) => return Err(BoxError::from(err)),
                    }
                }
            }
            Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok((txns as f64 / start.elapsed().as_secs_f64(), conflicts))
}

/// 1–3 distinct rows, each drawn by Zipf's law.
pub(super) fn draw_rows(zipf: &Zipf, rng: &mut Rng) -> Vec<i64> {
    let count = 1 + rng.below(3) as usize;
    let mut rows = Vec::with_capacity(count);
    while rows.len() < count {
        let row = zipf.sample(rng) as i64;
        if !rows.contains(&row) {
            rows.push(row);
        }
    }
    rows
}

/// Lock `rows` the variant's way, update each, commit. On error the
/// transaction is dropped, which rolls it back.
async fn transaction(
    bench: &Bench,
    locker: &Locker,
    db: &DatabaseConnection,
    variant: Variant,
    rows: &[i64],
) -> Result<(), hierlock::Error> {
    let txn = db.begin().await?;
    let mut sorted = rows.to_vec();
    sorted.sort_unstable();
    match variant {
        Variant::Hierlock => {
            let targets = rows
                .iter()
                .map(|&row| Target::resource(row / 100, row / 10, row).write());
            locker.acquire(&txn, targets).await?;
        }
        Variant::ForUpdate => {
            let sql = format!("SELECT balance FROM {ROWS_TABLE} WHERE id = ? FOR UPDATE");
            for &row in &sorted {
                txn.query_one_raw(bench.stmt(&sql, [Value::from(row)]))
                    .await?;
            }
        }
        Variant::LockRows => {
            let sql = if bench.dialect.is_mysql_family() {
                format!("INSERT INTO {ID_LOCKS} (id) VALUES (?) ON DUPLICATE KEY UPDATE id = id")
            } else {
                format!(
                    "INSERT INTO {ID_LOCKS} (id) VALUES (?) ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id"
                )
            };
            for &row in &sorted {
                txn.execute_raw(bench.stmt(&sql, [Value::from(row)]))
                    .await?;
            }
        }
    }
    let sql = format!("UPDATE {ROWS_TABLE} SET balance = balance + 1 WHERE id = ?");
    for &row in rows {
        txn.execute_raw(bench.stmt(&sql, [Value::from(row)]))
            .await?;
    }
    txn.commit().await?;
    Ok(())
}
