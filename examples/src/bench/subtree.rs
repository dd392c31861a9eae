//! Subtree reads (issue 12): a consistent read of a whole account against
//! the alternative, an exclusive account lock, and what the stripe layout
//! costs.
//!
//! Three parts, each on bucket tables of this section's own (one per
//! layout, `space` buckets per level: 3 × `space` rows in the seed's layout,
//! 5 × `space` with stripes):
//! - **mixed**: per account, [`WRITERS`] writers update random resources of
//!   it while [`READERS`] readers read all its resources' rows (`SUM`),
//!   under `read_subtree` ([`MIXED_STRIPES`] stripes) or under the account's
//!   write lock (the seed's layout). Readers of one account share the first
//!   and queue behind each other under the second. Once with the readers
//!   committing right after the `SUM`, once with them holding their lock a
//!   few ms more ([`READER_HOLDS_MS`]), as a reader that does work of its
//!   own (a report, a call) before it commits.
//! - **write overhead**: an uncontended Resource write with K = 16 and 64
//!   stripes against the same write in the seed's layout, 1 and 16 clients,
//!   and the statements each takes.
//! - **read cost**: one subtree read of an account (`BEGIN; acquire;
//!   COMMIT`) for K = 1, 16, 64, 256, against the account's write lock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hierlock::{Config, Dialect, Locker, Request, SubtreeReads, Target};
use hierlock_migration::Provision;
use sea_orm::{ConnectionTrait, DatabaseConnection, TransactionTrait, Value};
use tokio::task::JoinSet;

use super::stats::{Table, order};
use super::uncontended::{ROWS_PER_CLIENT, Variant, at_1_and_16_clients, throughput, transaction};
use super::{Bench, BoxError, ROWS_TABLE, counters};
use crate::bank::Rng;

/// Accounts of the mixed workload, each its own user's.
pub const ACCOUNTS: i64 = 4;
/// Writer tasks per account.
pub const WRITERS: i64 = 2;
/// Reader tasks per account.
pub const READERS: i64 = 4;
/// Resources (business rows) per account.
pub const RESOURCES: i64 = 50;
/// Stripes of the mixed workload's subtree-read layout.
pub const MIXED_STRIPES: u16 = 16;
/// How long the mixed workload's readers keep their lock after the `SUM`,
/// in ms: not at all, then as a reader doing work of its own would.
pub const READER_HOLDS_MS: [u64; 2] = [0, 5];

/// Every layout this section provisions: 0 is the seed's (no stripes).
const LAYOUTS: [u16; 5] = [0, 1, 16, 64, 256];

/// One locker per layout of [`LAYOUTS`], all on `space` buckets per level.
struct Lockers {
    by_stripes: Vec<(u16, Locker)>,
}

impl Lockers {
    /// Provision (once: a table per layout, kept between runs) and connect.
    async fn connect(bench: &Bench, space: u32) -> Result<Lockers, BoxError> {
        let mut by_stripes = Vec::new();
        for stripes in LAYOUTS {
            let mut config = Config::default()
                .with_table(&format!("hlbench_sub_b{space}_k{stripes}"))?
                .with_bucket_space(space)?
                .with_postgres_locks(bench.postgres_locks);
            if stripes > 0 {
                config = config.with_subtree_reads(SubtreeReads::striped(stripes)?);
            }
            Provision::new(config.clone()).run(&bench.db).await?;
            by_stripes.push((stripes, Locker::connect(&bench.db, config).await?));
        }
        Ok(Lockers { by_stripes })
    }

    /// The locker of the layout with `stripes` stripes (0: the seed's).
    fn get(&self, stripes: u16) -> Result<&Locker, BoxError> {
        let found = self.by_stripes.iter().find(|(k, _)| *k == stripes);
        let missing = || format!("no layout with {stripes} stripes was provisioned");
        Ok(&found.ok_or_else(missing)?.1)
    }
}

/// Measure and print the three parts, on tables of `space` buckets per level.
///
/// # Errors
/// Setting up failed, or a transaction failed with a non-retryable error.
pub async fn run(bench: &Bench, space: u32) -> Result<(), BoxError> {
    println!(
        "\n## Subtree reads: read_subtree against an exclusive account lock \
         ({space} buckets per level)"
    );
    if bench.dialect == Dialect::Sqlite {
        println!("  skipped on SQLite: no row locks, every write takes the one database lock");
        return Ok(());
    }
    bench.ensure_rows().await?;
    let lockers = Lockers::connect(bench, space).await?;
    mixed(bench, &lockers).await?;
    write_overhead(bench, &lockers).await?;
    read_cost(bench, &lockers).await?;
    Ok(())
}

/// How the readers of the mixed workload lock their account.
#[derive(Clone, Copy, Debug)]
enum Reader {
    /// The account's write lock, in the seed's layout.
    Exclusive,
    /// `read_subtree` of the account, with [`MIXED_STRIPES`] stripes.
    Subtree,
}

impl Reader {
    const ALL: [Reader; 2] = [Reader::Exclusive, Reader::Subtree];

    fn name(self) -> &'static str {
        match self {
            Reader::Exclusive => "account write lock (seed layout)",
            Reader::Subtree => "read_subtree (K = 16)",
        }
    }

    fn stripes(self) -> u16 {
        match self {
            Reader::Exclusive => 0,
            Reader::Subtree => MIXED_STRIPES,
        }
    }

    fn request(self, account: i64) -> Request {
        let target = Target::account(account, account);
        match self {
            Reader::Exclusive => target.write(),
            Reader::Subtree => target.read_subtree(),
        }
    }
}

/// Committed reads and writes in one sample, and the conflicts retried.
#[derive(Default)]
struct Counts {
    reads: AtomicU64,
    writes: AtomicU64,
    retried: AtomicU64,
}

async fn mixed(bench: &Bench, lockers: &Lockers) -> Result<(), BoxError> {
    for hold_ms in READER_HOLDS_MS {
        mixed_with_hold(bench, lockers, Duration::from_millis(hold_ms)).await?;
    }
    Ok(())
}

async fn mixed_with_hold(bench: &Bench, lockers: &Lockers, hold: Duration) -> Result<(), BoxError> {
    let seconds = if bench.quick { 3 } else { 10 };
    println!(
        "### Mixed: {ACCOUNTS} accounts × ({WRITERS} writers + {READERS} readers), \
         {RESOURCES} resources each, readers holding their lock {} ms after the SUM; \
         {seconds} s per sample, {} reps (reads/s and writes/s, higher is better)",
        hold.as_millis(),
        bench.reps
    );
    let duration = Duration::from_secs(seconds);
    let mut reads = Table::new(Reader::ALL.map(Reader::name));
    let mut writes = Table::new(Reader::ALL.map(Reader::name));
    let mut retried = [0; 2];
    // A warm-up of each variant, not recorded.
    for reader in Reader::ALL {
        mixed_sample(bench, lockers, reader, hold, duration / 4, 0).await?;
    }
    for rep in 0..bench.reps {
        for i in order(Reader::ALL.len(), rep) {
            let seed = rep as u64 * 1000;
            let counts = mixed_sample(bench, lockers, Reader::ALL[i], hold, duration, seed).await?;
            let per_second = |n: &AtomicU64| n.load(Ordering::Relaxed) as f64 / seconds as f64;
            reads.record(i, rep, per_second(&counts.reads));
            writes.record(i, rep, per_second(&counts.writes));
            retried[i] += counts.retried.load(Ordering::Relaxed);
        }
    }
    println!("  reads (a consistent SUM over the account's {RESOURCES} rows):");
    reads.print("reads/s");
    println!("  writes (Resource write lock; UPDATE; COMMIT):");
    writes.print("writes/s");
    for (reader, n) in Reader::ALL.iter().zip(retried) {
        println!(
            "  retried (deadlocks, lock timeouts) with {}: {n}",
            reader.name()
        );
    }
    Ok(())
}

/// Run the mixed workload for `duration` and count what committed in it.
async fn mixed_sample(
    bench: &Bench,
    lockers: &Lockers,
    reader: Reader,
    hold: Duration,
    duration: Duration,
    seed: u64,
) -> Result<Arc<Counts>, BoxError> {
    let locker = lockers.get(reader.stripes())?;
    let counts = Arc::new(Counts::default());
    let deadline = Instant::now() + duration;
    let mut tasks = JoinSet::new();
    for account in 0..ACCOUNTS {
        for task in 0..WRITERS + READERS {
            let (bench, locker, counts) = (bench.clone(), locker.clone(), counts.clone());
            let mut rng = Rng::new(seed + (account * 100 + task) as u64);
            tasks.spawn(async move {
                let is_writer = task < WRITERS;
                while Instant::now() < deadline {
                    let done = if is_writer {
                        let resource = rng.below(RESOURCES as u64) as i64;
                        write(&bench, &locker, account, resource).await
                    } else {
                        read(&bench, &locker, reader, account, hold).await
                    };
                    match done {
                        Ok(()) if Instant::now() >= deadline => {}
                        Ok(()) if is_writer => _ = counts.writes.fetch_add(1, Ordering::Relaxed),
                        Ok(()) => _ = counts.reads.fetch_add(1, Ordering::Relaxed),
                        Err(err) if err.is_retryable() => {
                            _ = counts.retried.fetch_add(1, Ordering::Relaxed)
                        }
                        Err(err) => return Err(BoxError::from(err)),
                    }
                }
                Ok(())
            });
        }
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(counts)
}

/// The business row of `resource` of `account`.
fn row_of(account: i64, resource: i64) -> i64 {
    account * RESOURCES + resource
}

/// Lock a resource of `account` for writing, update its row, commit.
async fn write(
    bench: &Bench,
    locker: &Locker,
    account: i64,
    resource: i64,
) -> Result<(), hierlock::Error> {
    let txn = bench.db.begin().await?;
    let target = Target::resource(account, account, resource);
    locker.acquire(&txn, [target.write()]).await?;
    let sql = format!("UPDATE {ROWS_TABLE} SET balance = balance + 1 WHERE id = ?");
    let row = Value::from(row_of(account, resource));
    txn.execute_raw(bench.stmt(&sql, [row])).await?;
    txn.commit().await?;
    Ok(())
}

/// Lock `account` the reader's way, sum its resources' rows, hold the lock
/// `hold` longer, commit.
async fn read(
    bench: &Bench,
    locker: &Locker,
    reader: Reader,
    account: i64,
    hold: Duration,
) -> Result<(), hierlock::Error> {
    let txn = bench.db.begin().await?;
    locker.acquire(&txn, [reader.request(account)]).await?;
    let sql = format!("SELECT SUM(balance) AS total FROM {ROWS_TABLE} WHERE id >= ? AND id < ?");
    let range = [row_of(account, 0), row_of(account + 1, 0)].map(Value::from);
    txn.query_one_raw(bench.stmt(&sql, range)).await?;
    if !hold.is_zero() {
        tokio::time::sleep(hold).await;
    }
    txn.commit().await?;
    Ok(())
}

/// The write-overhead part's layouts, the seed's (the baseline) first.
const WRITE_LAYOUTS: [u16; 3] = [0, 16, 64];

fn layout_name(stripes: u16) -> String {
    match stripes {
        0 => "seed layout (no stripes)".to_owned(),
        k => format!("K = {k} stripes"),
    }
}

async fn write_overhead(bench: &Bench, lockers: &Lockers) -> Result<(), BoxError> {
    println!(
        "### Write overhead: an uncontended Resource write (acquire; UPDATE; COMMIT) \
         with stripes against the seed layout (txn/s, higher is better)"
    );
    at_1_and_16_clients(
        bench,
        WRITE_LAYOUTS.map(layout_name),
        async |i, clients, txns| {
            let locker = lockers.get(WRITE_LAYOUTS[i])?;
            throughput(bench, locker, Variant::Hierlock, clients, txns).await
        },
    )
    .await?;
    counters::print_header(bench, "one Resource write");
    for stripes in WRITE_LAYOUTS {
        let locker = lockers.get(stripes)?;
        let counted = counters::per_txn(bench, 200, async |db, i| {
            transaction(
                bench,
                locker,
                db,
                Variant::Hierlock,
                i as i64 % ROWS_PER_CLIENT,
            )
            .await
        })
        .await?;
        if let Some(counted) = counted {
            println!("    {:<26} {}", layout_name(stripes), counted.describe());
        }
    }
    Ok(())
}

/// The read-cost part's variants: the account's write lock in the seed
/// layout (the baseline), then a subtree read with each number of stripes.
const READ_LAYOUTS: [u16; 5] = [0, 1, 16, 64, 256];

fn read_name(stripes: u16) -> String {
    match stripes {
        0 => "account write lock (seed)".to_owned(),
        k => format!("read_subtree, K = {k}"),
    }
}

/// Accounts the read-cost part cycles through.
const READ_ACCOUNTS: i64 = 100;

async fn read_cost(bench: &Bench, lockers: &Lockers) -> Result<(), BoxError> {
    let reads = if bench.quick { 200 } else { 1000 };
    println!(
        "### Read cost: one account lock (BEGIN; acquire; COMMIT), 1 client, \
         {reads} reads per sample, {} reps (µs per read, lower is better)",
        bench.reps
    );
    let mut table = Table::new(READ_LAYOUTS.map(read_name));
    for stripes in READ_LAYOUTS {
        read_latency(bench, lockers.get(stripes)?, stripes, reads / 4 + 1).await?;
    }
    for rep in 0..bench.reps {
        for i in order(READ_LAYOUTS.len(), rep) {
            let stripes = READ_LAYOUTS[i];
            let micros = read_latency(bench, lockers.get(stripes)?, stripes, reads).await?;
            table.record(i, rep, micros);
        }
    }
    table.print("µs/read");
    counters::print_header(bench, "one account lock");
    for stripes in READ_LAYOUTS {
        let locker = lockers.get(stripes)?;
        let counted = counters::per_txn(bench, 200, async |db, i| {
            account_lock(locker, db, stripes, i as i64 % READ_ACCOUNTS).await
        })
        .await?;
        if let Some(counted) = counted {
            println!("    {:<26} {}", read_name(stripes), counted.describe());
        }
    }
    Ok(())
}

/// Mean µs of `reads` account locks in a row, on the pool.
async fn read_latency(
    bench: &Bench,
    locker: &Locker,
    stripes: u16,
    reads: i64,
) -> Result<f64, BoxError> {
    let start = Instant::now();
    for i in 0..reads {
        account_lock(locker, &bench.db, stripes, i % READ_ACCOUNTS).await?;
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / reads as f64)
}

/// `BEGIN`; the account's write lock (no stripes) or its subtree read; `COMMIT`.
async fn account_lock(
    locker: &Locker,
    db: &DatabaseConnection,
    stripes: u16,
    account: i64,
) -> Result<(), BoxError> {
    let target = Target::account(account, account);
    let request = if stripes == 0 {
        target.write()
    } else {
        target.read_subtree()
    };
    let txn = db.begin().await?;
    locker.acquire(&txn, [request]).await?;
    txn.commit().await?;
    Ok(())
}
