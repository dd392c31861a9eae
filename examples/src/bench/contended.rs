//! Where a contended transaction's time goes: the `zipf` workload as a
//! service writes it, each transaction reading the rows it locked, checking
//! them and writing them back, with the time of each phase, the statements
//! the server counted, and the CPU both sides spent.
//!
//! Variants, each locking the transaction's rows (1–3, drawn by Zipf's law,
//! s = 1.1, over 20,000 rows; 32 workers) before its read and write:
//! - `FOR UPDATE`: one `SELECT balance … FOR UPDATE` per row, in id order:
//!   the lock is the read (baseline: what a SeaORM user writes instead);
//! - hierlock: one `acquire` of the rows' Resource write locks, then one
//!   `SELECT balance` per row;
//! - hierlock, reading: `acquire_reading` of the same locks and the rows
//!   (one `SELECT` of them, which on the MySQL family is the last part of
//!   the lock statement);
//! - by hand: the statement of hierlock's plan (the same keys, modes and
//!   order) sent as plain SQL that waits, with no first try and no
//!   cancellation fence, then the same reads: what the lock itself costs;
//! - by hand, the targets only: the same statement without the shared
//!   ancestor rows (the user and account buckets every transaction under
//!   them also locks), then the same reads: what those rows cost;
//! - by hand, the ancestors striped (MySQL family): each target's shared
//!   ancestor rows moved to one of [`STRIPES`] rows per ancestor, chosen by
//!   the target (as a design where an ancestor's writer locks every stripe
//!   would), then the same reads: whether those rows cost because many
//!   transactions share them;
//! - by hand, tried first (MySQL family): the statement with `NOWAIT`
//!   first; if a row is taken, the connection's id read, then the statement
//!   that waits: what hierlock's path before the wait costs, without its
//!   cancellation fence;
//! - by hand, the id first (MySQL family): the connection's id read, then
//!   the statement that waits, with no try: what that round trip costs;
//! - by hand, the lock and the read in one statement: on the MySQL family
//!   the statement's ancestor branches as they are, and each target's
//!   branch joined to its data row, locked and read there (`FOR UPDATE` of
//!   both); on PostgreSQL the plan's locks in a CTE (the advisory calls or
//!   the bucket rows), then the rows read `FOR UPDATE`: what a lock that is
//!   also the read costs;
//! - by hand, one more round trip held (MySQL family): the statement, then
//!   `DO 0` before the reads: what a release of the fence sent after the
//!   grant would cost, while the rows are held;
//! - by hand, hierlock's earlier waiting path (MySQL family): the `NOWAIT`
//!   try; if a row is taken, the connection's id read, the statement that
//!   waits with its fence (`GET_LOCK` after the locks), then `DO
//!   RELEASE_LOCK` (hierlock now keeps the fence until the connection's next
//!   wait);
//! - by hand, the try names the connection (MySQL family): the same, but
//!   the try takes a lock named for the acquisition in its first branch and
//!   lets it go in its last, so a failed try leaves it held and a
//!   cancellation can find the connection by it (`IS_USED_LOCK`): no id
//!   read; the release lets both go. What that design would save.
//! - by hand, the fence kept (MySQL family): hierlock's waiting path, the
//!   `NOWAIT` try; if a row is taken, the connection's id, then the
//!   statement that waits, taking its fence and letting go of the one the
//!   connection kept from its previous wait;
//! - by hand, the wait held by name (MySQL family): the `NOWAIT` try; if a
//!   row is taken, the statement that waits with no id read before it: its
//!   first branch takes a lock named for the acquisition (failing before
//!   any row if a cancellation holds it), its last takes the fence and lets
//!   both go, so nothing is kept. What a cancellation that finds the
//!   connection by that lock would save.
//! - by hand, `acquire_reading`'s path (MySQL family): the statements
//!   `acquire_reading` sends, as plain SQL: the plan's branches with
//!   `NOWAIT` and a last branch that reads the rows; if a row is taken, the
//!   connection's id, then the same statement waiting, with the fence
//!   branch after the read (the fence kept until the connection's next
//!   wait). The best shape found that keeps every guarantee: whether
//!   hierlock's own work costs anything on top of what it sends.
//! - by hand, the bucket table's path (PostgreSQL's bucket table): the
//!   statements hierlock sends there, as plain SQL: a try that cannot fail
//!   (each row `SKIP LOCKED`, in `CASE`s that stop at the first row taken)
//!   and names the backend and its transaction when a row was taken; then
//!   the statement that waits, with the fence after its locks; then one
//!   read of the rows, as `acquire_reading` reads them there.
//!
//! On PostgreSQL's bucket table the statement by hand locks each bucket row
//! in a `MATERIALIZED` `WITH` query of its own, read in the plan's order
//! by a `UNION ALL` (PostgreSQL refuses lock clauses inside a `UNION`).
//!
//! Per transaction: the **wait** (from sending the first lock statement to
//! holding every lock), the **hold** (from then to the end of `COMMIT`,
//! while the hot rows are held), the latency (from `BEGIN` to the end of
//! `COMMIT`, retries included), the statements (MySQL family: the deltas of
//! the server's global counters over the sample, divided by its
//! transactions), and the CPU of the clients and of the server.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hierlock::{Dialect, LockMode, Locker, PostgresLocks, Target};
use hierlock_migration::Provision;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, QueryFilter, TransactionTrait,
    Value,
};
use tokio::task::JoinSet;

use super::counters;
use super::cpu::CpuTimes;
use super::rng::Zipf;
use super::stats::{Spread, Table, fmt, order};
use super::zipf::{EXPONENT, WORKERS, draw_rows};
use super::{Bench, BoxError, ROWS, ROWS_TABLE};
use crate::bank::Rng;

/// The rows table as a SeaORM entity, for `acquire_reading`.
mod bench_row {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlbench_rows")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub balance: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// A way to lock the transaction's rows (see the module's docs); on the
/// command line, `--variants for-update,acquire-reading,..`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Variant {
    /// `FOR UPDATE` per row (the baseline, always measured).
    ForUpdate,
    /// hierlock's `acquire`, then a `SELECT` per row.
    #[value(name = "acquire")]
    Hierlock,
    /// hierlock's `acquire_reading`.
    #[value(name = "acquire-reading")]
    HierlockReading,
    /// hierlock's statement by hand, then the reads.
    ByHand,
    /// By hand without the shared ancestor rows.
    #[value(name = "by-hand-targets-only")]
    ByHandTargetsOnly,
    /// By hand with the ancestors striped (MySQL family).
    #[value(name = "by-hand-striped")]
    ByHandStripedAncestors,
    /// By hand, `NOWAIT` first and the id before a wait (MySQL family).
    ByHandTriedFirst,
    /// By hand, the id read first (MySQL family).
    ByHandIdFirst,
    /// By hand plus `DO 0` while the rows are held (MySQL family).
    #[value(name = "by-hand-round-trip-held")]
    ByHandOneMoreRoundTripHeld,
    /// By hand, the lock is the read.
    ByHandLockAndRead,
    /// hierlock's earlier waiting path, by hand (MySQL family).
    #[value(name = "by-hand-previous-path")]
    ByHandWaitingPath,
    /// By hand, a try that names its connection (MySQL family).
    ByHandNamedTry,
    /// hierlock's waiting path by hand (MySQL family): try, id, the fence
    /// kept until the connection's next wait.
    #[value(name = "by-hand-kept-fence")]
    ByHandKeptFence,
    /// By hand, a wait that names its connection by a lock held while it
    /// runs, nothing kept, no id read (MySQL family).
    #[value(name = "by-hand-presence")]
    ByHandPresence,
    /// `acquire_reading`'s statements by hand (MySQL family): the try that
    /// reads, the id, the wait that reads, the fence kept.
    #[value(name = "by-hand-reading-path")]
    ByHandReadingPath,
    /// hierlock's statements by hand on PostgreSQL's bucket table: the try,
    /// the wait with its fence, one read.
    #[value(name = "by-hand-bucket-path")]
    ByHandBucketPath,
}

/// The baseline first.
const VARIANTS: [Variant; 16] = [
    Variant::ForUpdate,
    Variant::Hierlock,
    Variant::HierlockReading,
    Variant::ByHand,
    Variant::ByHandTargetsOnly,
    Variant::ByHandStripedAncestors,
    Variant::ByHandTriedFirst,
    Variant::ByHandIdFirst,
    Variant::ByHandOneMoreRoundTripHeld,
    Variant::ByHandLockAndRead,
    Variant::ByHandWaitingPath,
    Variant::ByHandNamedTry,
    Variant::ByHandKeptFence,
    Variant::ByHandPresence,
    Variant::ByHandReadingPath,
    Variant::ByHandBucketPath,
];

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::ForUpdate => "FOR UPDATE per row (reads it)",
            Variant::Hierlock => "hierlock: acquire; SELECT per row",
            Variant::HierlockReading => "hierlock: acquire_reading",
            Variant::ByHand => "hierlock's statement by hand; SELECT",
            Variant::ByHandTargetsOnly => "by hand, no shared ancestors; SELECT",
            Variant::ByHandStripedAncestors => "by hand, ancestors striped; SELECT",
            Variant::ByHandTriedFirst => "by hand, NOWAIT first + id; SELECT",
            Variant::ByHandIdFirst => "by hand, id first; SELECT",
            Variant::ByHandOneMoreRoundTripHeld => "by hand + DO 0 held; SELECT",
            Variant::ByHandLockAndRead => "by hand, the lock is the read",
            Variant::ByHandWaitingPath => "by hand, try + id + fence + release; SELECT",
            Variant::ByHandNamedTry => "by hand, try names the conn + fence + release; SELECT",
            Variant::ByHandKeptFence => "by hand, try + id + fence kept; SELECT",
            Variant::ByHandPresence => "by hand, try + wait held by name; SELECT",
            Variant::ByHandReadingPath => "by hand, acquire_reading's statements",
            Variant::ByHandBucketPath => "by hand, SKIP LOCKED try + fenced wait; one read",
        }
    }

    /// PostgreSQL's bucket table's waiting path.
    fn postgres_bucket_only(self) -> bool {
        self == Variant::ByHandBucketPath
    }

    /// Splits of the MySQL family's waiting path.
    fn mysql_family_only(self) -> bool {
        matches!(
            self,
            Variant::ByHandTriedFirst
                | Variant::ByHandStripedAncestors
                | Variant::ByHandIdFirst
                | Variant::ByHandOneMoreRoundTripHeld
                | Variant::ByHandWaitingPath
                | Variant::ByHandNamedTry
                | Variant::ByHandKeptFence
                | Variant::ByHandPresence
                | Variant::ByHandReadingPath
        )
    }
}

/// The MySQL family's global counters read around each sample.
const COUNTERS: [&str; 6] = [
    "Questions",
    "Com_select",
    "Com_update",
    "Com_do",
    "Com_commit",
    "Com_rollback",
];

/// What hierlock reads before a wait on the MySQL family.
const CONNECTION_ID: &str = "SELECT CAST(CONNECTION_ID() AS SIGNED) AS id";

/// One transaction's times: from `BEGIN` to the end of `COMMIT` (retries
/// included), and the last try's wait and hold.
struct Timing {
    latency: Duration,
    wait: Duration,
    hold: Duration,
}

/// What one sample measured.
struct Sample {
    tps: f64,
    timings: Vec<Timing>,
    retries: u64,
    counters: Option<[f64; COUNTERS.len()]>,
    client_cpu_us: f64,
    server_cpu_us: f64,
}

/// What to run: which variants (`None`: every one the server supports;
/// `FOR UPDATE`, the baseline, always) and how many transactions a sample
/// (`None`: 3,000, or 400 with `--quick`).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The variants to measure besides `FOR UPDATE`.
    pub variants: Option<Vec<Variant>>,
    /// Transactions per sample.
    pub transactions: Option<u64>,
}

/// Measure and print the variants and the breakdown.
///
/// # Errors
/// Setting up failed, or a transaction failed with a non-retryable error.
pub async fn run(bench: &Bench, options: &Options) -> Result<(), BoxError> {
    println!(
        "\n## Contended read-check-write: {WORKERS} workers, Zipf s = {EXPONENT} over {ROWS} rows, \
         1–3 rows per txn, each read, checked and written"
    );
    if bench.dialect == Dialect::Sqlite {
        println!("  skipped on SQLite: no row locks, every write takes the one database lock");
        return Ok(());
    }
    bench.ensure_rows().await?;
    let config = bench.lock_config()?;
    Provision::new(config.clone()).run(&bench.db).await?;
    let locker = Locker::connect(&bench.db, config.clone()).await?;
    let table = config.table().as_str().to_owned();
    let variants: Vec<Variant> = VARIANTS
        .into_iter()
        .filter(|v| !v.mysql_family_only() || bench.dialect.is_mysql_family())
        .filter(|v| {
            !v.postgres_bucket_only()
                || (bench.dialect == Dialect::Postgres
                    && bench.postgres_locks == PostgresLocks::BucketTable)
        })
        .filter(|v| {
            *v == Variant::ForUpdate || options.variants.as_ref().is_none_or(|o| o.contains(v))
        })
        .collect();
    let zipf = Arc::new(Zipf::new(ROWS as usize, EXPONENT));
    let txns = options
        .transactions
        .unwrap_or(if bench.quick { 400 } else { 3000 });
    println!(
        "{txns} transactions per sample, {} reps, variants interleaved:",
        bench.reps
    );
    // A warm-up sample of each, not counted.
    for &variant in &variants {
        sample(bench, &locker, &table, &zipf, variant, txns / 4, 7).await?;
    }
    let mut samples: Vec<Vec<Sample>> = variants.iter().map(|_| Vec::new()).collect();
    for rep in 0..bench.reps {
        for i in order(variants.len(), rep) {
            let seed = rep as u64 * 1000;
            samples[i].push(sample(bench, &locker, &table, &zipf, variants[i], txns, seed).await?);
        }
    }
    print(bench, &variants, &samples);
    Ok(())
}

/// One sample: [`WORKERS`] workers sharing `txns` transactions.
async fn sample(
    bench: &Bench,
    locker: &Locker,
    table: &str,
    zipf: &Arc<Zipf>,
    variant: Variant,
    txns: u64,
    seed: u64,
) -> Result<Sample, BoxError> {
    let counters_before = global_counters(bench).await?;
    let cpu_before = CpuTimes::now(bench.dialect);
    let tickets = Arc::new(AtomicU64::new(0));
    let retries = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for worker in 0..WORKERS {
        let (bench, locker, zipf, table) = (
            bench.clone(),
            locker.clone(),
            zipf.clone(),
            table.to_owned(),
        );
        let (tickets, retries) = (tickets.clone(), retries.clone());
        tasks.spawn(async move {
            let mut rng = Rng::new(seed + worker);
            let mut timings = Vec::new();
            while tickets.fetch_add(1, Ordering::Relaxed) < txns {
                let rows = draw_rows(&zipf, &mut rng);
                let began = Instant::now();
                let (wait, hold) = loop {
                    match transaction(&bench, &locker, &table, variant, &rows).await {
                        Ok(phases) => break phases,
                        Err(err) if err.is_retryable() => {
                            retries.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(err) => return Err(BoxError::from(err)),
                    }
                };
                timings.push(Timing {
                    latency: began.elapsed(),
                    wait,
                    hold,
                });
            }
            Ok::<_, BoxError>(timings)
        });
    }
    let mut timings = Vec::with_capacity(txns as usize);
    while let Some(done) = tasks.join_next().await {
        timings.extend(done??);
    }
    let elapsed = start.elapsed();
    let cpu = cpu_before.per_txn_since(CpuTimes::now(bench.dialect), txns as i64);
    let counters_after = global_counters(bench).await?;
    let counters = counters_before.zip(counters_after).map(|(before, after)| {
        std::array::from_fn(|i| (after[i] - before[i]) as f64 / txns as f64)
    });
    Ok(Sample {
        tps: txns as f64 / elapsed.as_secs_f64(),
        timings,
        retries: retries.load(Ordering::Relaxed),
        counters,
        client_cpu_us: cpu.client_us,
        server_cpu_us: cpu.server_us,
    })
}

/// Lock `rows` the variant's way, read and check each, write each, commit.
/// Returns the wait and the hold. On error the transaction is dropped,
/// which rolls it back.
async fn transaction(
    bench: &Bench,
    locker: &Locker,
    table: &str,
    variant: Variant,
    rows: &[i64],
) -> Result<(Duration, Duration), hierlock::Error> {
    let txn = bench.db.begin().await?;
    let mut sorted = rows.to_vec();
    sorted.sort_unstable();
    let targets = || {
        rows.iter()
            .map(|&row| Target::resource(row / 100, row / 10, row).write())
    };
    let asked = Instant::now();
    // `FOR UPDATE` reads the rows as it locks them; the others read after.
    let read_by_lock = match variant {
        Variant::ForUpdate => Some(read_balances(bench, &txn, &sorted, " FOR UPDATE").await?),
        Variant::Hierlock => {
            locker.acquire(&txn, targets()).await?;
            None
        }
        Variant::HierlockReading => {
            let select =
                bench_row::Entity::find().filter(bench_row::Column::Id.is_in(sorted.clone()));
            let (_, found) = locker.acquire_reading(&txn, targets(), select).await?;
            Some(balances_by_id(
                found.iter().map(|r| (r.id, r.balance)).collect(),
            ))
        }
        Variant::ByHand => {
            let plan = locker.plan(&targets().collect::<Vec<_>>())?;
            txn.query_all_raw(by_hand_statement(bench, table, plan.locks()))
                .await?;
            None
        }
        Variant::ByHandTargetsOnly => {
            let plan = locker.plan(&targets().collect::<Vec<_>>())?;
            let targets: Vec<hierlock::PlannedLock> = plan
                .locks()
                .iter()
                .filter(|lock| lock.mode == LockMode::Exclusive)
                .copied()
                .collect();
            txn.query_all_raw(by_hand_statement(bench, table, &targets))
                .await?;
            None
        }
        Variant::ByHandStripedAncestors => {
            let locks = striped_ancestors(locker, rows)?;
            txn.query_all_raw(by_hand_statement(bench, table, &locks))
                .await?;
            None
        }
        Variant::ByHandTriedFirst => {
            let plan = locker.plan(&targets().collect::<Vec<_>>())?;
            if !granted_at_once(bench, &txn, table, plan.locks()).await {
                txn.query_one_raw(bench.stmt(CONNECTION_ID, [])).await?;
                txn.query_all_raw(by_hand_statement(bench, table, plan.locks()))
                    .await?;
            }
            None
        }
        Variant::ByHandIdFirst => {
            let plan = locker.plan(&targets().collect::<Vec<_>>())?;
            txn.query_one_raw(bench.stmt(CONNECTION_ID, [])).await?;
            txn.query_all_raw(by_hand_statement(bench, table, plan.locks()))
                .await?;
            None
        }
        Variant::ByHandLockAndRead => {
            let found = txn
                .query_all_raw(lock_and_read_statement(bench, locker, table, rows)?)
                .await?;
            let mut read = Vec::with_capacity(sorted.len());
            for row in found {
                if let Some(id) = row.try_get_by_index::<Option<i64>>(0)? {
                    read.push((id, row.try_get_by_index::<i64>(1)?));
                }
            }
            Some(balances_by_id(read))
        }
        Variant::ByHandOneMoreRoundTripHeld => {
            let plan = locker.plan(&targets().collect::<Vec<_>>())?;
            txn.query_all_raw(by_hand_statement(bench, table, plan.locks()))
                .await?;
            txn.execute_raw(bench.stmt("DO 0", [])).await?;
            None
        }
        Variant::ByHandWaitingPath | Variant::ByHandNamedTry => {
            let plan = locker.plan(&targets().collect::<Vec<_>>())?;
            let named = variant == Variant::ByHandNamedTry;
            waiting_path(bench, &txn, table, plan.locks(), named).await?;
            None
        }
        Variant::ByHandKeptFence => {
            let plan = locker.plan(&targets().collect::<Vec<_>>())?;
            kept_fence_path(bench, &txn, 1, |suffix| {
                by_hand_statement_with(bench, table, plan.locks(), suffix)
            })
            .await?;
            None
        }
        Variant::ByHandPresence => {
            let plan = locker.plan(&targets().collect::<Vec<_>>())?;
            presence_path(bench, &txn, table, plan.locks()).await?;
            None
        }
        Variant::ByHandBucketPath => {
            let plan = locker.plan(&targets().collect::<Vec<_>>())?;
            bucket_path(bench, &txn, table, plan.locks()).await?;
            let marks = vec!["?"; sorted.len()].join(", ");
            let read = txn
                .query_all_raw(bench.stmt(
                    &format!("SELECT id, balance FROM {ROWS_TABLE} WHERE id IN ({marks})"),
                    sorted.iter().map(|&row| Value::from(row)),
                ))
                .await?;
            let mut found = Vec::with_capacity(read.len());
            for row in read {
                found.push((
                    row.try_get::<i64>("", "id")?,
                    row.try_get::<i64>("", "balance")?,
                ));
            }
            Some(balances_by_id(found))
        }
        Variant::ByHandReadingPath => {
            let plan = locker.plan(&targets().collect::<Vec<_>>())?;
            let locked = kept_fence_path(bench, &txn, READING_COLUMNS, |suffix| {
                reading_statement(bench, table, plan.locks(), &sorted, suffix)
            })
            .await?;
            let mut read = Vec::with_capacity(sorted.len());
            for row in locked {
                if let Some(id) = row.try_get::<Option<i64>>("", "id")? {
                    read.push((id, row.try_get::<i64>("", "balance")?));
                }
            }
            Some(balances_by_id(read))
        }
    };
    let granted = Instant::now();
    let balances = match read_by_lock {
        Some(balances) => balances,
        None => read_balances(bench, &txn, &sorted, "").await?,
    };
    if balances.iter().any(|&b| b < 0) {
        return Err(sea_orm::DbErr::Custom("a negative balance".into()).into());
    }
    let sql = format!("UPDATE {ROWS_TABLE} SET balance = ? WHERE id = ?");
    for (&row, balance) in sorted.iter().zip(balances) {
        txn.execute_raw(bench.stmt(&sql, [Value::from(balance + 1), Value::from(row)]))
            .await?;
    }
    txn.commit().await?;
    Ok((granted - asked, granted.elapsed()))
}

/// A name no other acquisition of this process uses, for a fence or the
/// lock a try names its connection by.
fn lock_name(kind: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "hlbench_{kind}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The MySQL family's waiting path by hand, as hierlock sends it: the
/// `NOWAIT` try; if a row is taken, the connection's id (unless `named`:
/// then the try took a lock named for the acquisition first and let it go
/// last, which a failed try leaves held), the statement that waits with
/// its fence after its locks, and the release of what is held.
async fn waiting_path(
    bench: &Bench,
    txn: &DatabaseTransaction,
    table: &str,
    locks: &[hierlock::PlannedLock],
    named: bool,
) -> Result<(), hierlock::Error> {
    let branch = |condition: &str| format!("(SELECT NULL FROM DUAL WHERE {condition} = 2)");
    let mut try_first = by_hand_statement_with(bench, table, locks, " NOWAIT");
    let name = lock_name("name");
    if named {
        try_first = between(
            Some((&branch("GET_LOCK(?, 0)"), vec![Value::from(name.clone())])),
            try_first,
            (&branch("RELEASE_LOCK(?)"), vec![Value::from(name.clone())]),
        );
    }
    if txn.query_all_raw(try_first).await.is_ok() {
        return Ok(());
    }
    if !named {
        txn.query_one_raw(bench.stmt(CONNECTION_ID, [])).await?;
    }
    let fence = lock_name("fence");
    let wait = between(
        None,
        by_hand_statement(bench, table, locks),
        (
            &branch("GET_LOCK(?, 31536000)"),
            vec![Value::from(fence.clone())],
        ),
    );
    txn.query_all_raw(wait).await?;
    let release = if named {
        bench.stmt(
            "DO RELEASE_LOCK(?), RELEASE_LOCK(?)",
            [Value::from(fence), Value::from(name)],
        )
    } else {
        bench.stmt("DO RELEASE_LOCK(?)", [Value::from(fence)])
    };
    txn.execute_raw(release).await?;
    Ok(())
}

/// `stmt` as the middle of a `UNION ALL`: `first` (a branch and its values)
/// before it, if any, and `last` after it.
fn between(
    first: Option<(&str, Vec<Value>)>,
    stmt: sea_orm::Statement,
    last: (&str, Vec<Value>),
) -> sea_orm::Statement {
    let (head, mut values) = first
        .map(|(branch, values)| (format!("{branch} UNION ALL "), values))
        .unwrap_or_default();
    values.extend(stmt.values.map(|v| v.0).unwrap_or_default());
    values.extend(last.1);
    sea_orm::Statement {
        sql: format!("{head}{} UNION ALL {}", stmt.sql, last.0),
        values: Some(sea_orm::Values(values)),
        ..stmt
    }
}

/// The statement by hand with `NOWAIT`: whether every lock was free (a
/// failed try holds the rows before the one taken, as hierlock's does).
async fn granted_at_once(
    bench: &Bench,
    txn: &DatabaseTransaction,
    table: &str,
    locks: &[hierlock::PlannedLock],
) -> bool {
    let nowait = by_hand_statement_with(bench, table, locks, " NOWAIT");
    txn.query_all_raw(nowait).await.is_ok()
}

/// hierlock's waiting path on the MySQL family, by hand: the `NOWAIT` try;
/// if a row is taken, the connection's id, then the statement that waits,
/// whose last branch takes its fence and lets go of the one the connection
/// kept from its previous wait. `statement` writes the lock statement, each
/// lock clause followed by its argument (` NOWAIT` for the try), with
/// `columns` columns; the rows of the statement that locked are returned.
async fn kept_fence_path(
    bench: &Bench,
    txn: &DatabaseTransaction,
    columns: usize,
    statement: impl Fn(&str) -> sea_orm::Statement,
) -> Result<Vec<sea_orm::QueryResult>, hierlock::Error> {
    static KEPT: std::sync::Mutex<Option<std::collections::HashMap<i64, String>>> =
        std::sync::Mutex::new(None);
    if let Ok(rows) = txn.query_all_raw(statement(" NOWAIT")).await {
        return Ok(rows);
    }
    let id: i64 = match txn.query_one_raw(bench.stmt(CONNECTION_ID, [])).await? {
        Some(row) => row.try_get("", "id")?,
        None => 0,
    };
    let fence = lock_name("fence");
    let kept = KEPT
        .lock()
        .expect("the kept fences")
        .get_or_insert_default()
        .insert(id, fence.clone());
    // MySQL refuses an empty lock name: a connection's first wait lets
    // nothing go.
    let release = if kept.is_some() {
        " + COALESCE(RELEASE_LOCK(?), 0)"
    } else {
        ""
    };
    let nulls = vec!["NULL"; columns].join(", ");
    let fence_branch =
        format!("(SELECT {nulls} FROM DUAL WHERE GET_LOCK(?, 31536000){release} < 0)");
    let names = std::iter::once(fence)
        .chain(kept)
        .map(Value::from)
        .collect();
    let wait = between(None, statement(""), (&fence_branch, names));
    Ok(txn.query_all_raw(wait).await?)
}

/// One MySQL-family point lookup per lock, `columns` selected, each with its
/// mode's lock clause followed by `suffix`, in plan order; their keys are
/// pushed onto `values`.
fn mysql_branches(
    bench: &Bench,
    table: &str,
    locks: &[hierlock::PlannedLock],
    columns: &str,
    suffix: &str,
    values: &mut Vec<Value>,
) -> Vec<String> {
    let shared = if bench.dialect == Dialect::MySql {
        "FOR SHARE"
    } else {
        "LOCK IN SHARE MODE"
    };
    locks
        .iter()
        .map(|lock| {
            values.push(Value::from(i64::from(lock.key.table_level())));
            values.push(Value::from(lock.key.slot));
            let clause = match lock.mode {
                LockMode::Shared => shared,
                LockMode::Exclusive => "FOR UPDATE",
            };
            format!(
                "(SELECT {columns} FROM {table} WHERE level = ? AND bucket = ? {clause}{suffix})"
            )
        })
        .collect()
}

/// The columns of a [`reading_statement`]'s rows.
const READING_COLUMNS: usize = 5;

/// `acquire_reading`'s statement on the MySQL family, by hand: hierlock's
/// lock branches (each with the server's read-only flag, as hierlock checks
/// it, and `NULL` for the data columns), each clause followed by `suffix`,
/// then a last branch that reads `rows` (a plain read, run once every lock
/// is held).
fn reading_statement(
    bench: &Bench,
    table: &str,
    locks: &[hierlock::PlannedLock],
    rows: &[i64],
    suffix: &str,
) -> sea_orm::Statement {
    let mut values = Vec::with_capacity(locks.len() * 2 + rows.len());
    let mut branches = mysql_branches(
        bench,
        table,
        locks,
        "CAST(level AS SIGNED) AS locked_level, CAST(bucket AS SIGNED) AS locked_bucket, \
         CAST(@@GLOBAL.read_only AS SIGNED) AS read_only, NULL AS id, NULL AS balance",
        suffix,
        &mut values,
    );
    let marks = vec!["?"; rows.len()].join(", ");
    values.extend(rows.iter().map(|&row| Value::from(row)));
    branches.push(format!(
        "(SELECT NULL, NULL, NULL, id, balance FROM {ROWS_TABLE} WHERE id IN ({marks}))"
    ));
    bench.stmt(&branches.join(" UNION ALL "), values)
}

/// hierlock's waiting path on PostgreSQL's bucket table, by hand: a try
/// that cannot fail (each row `FOR SHARE`/`FOR UPDATE SKIP LOCKED` in an
/// `EXISTS`, nested in `CASE`s that stop at the first row taken, so a
/// refused try holds a prefix of the plan), whose row names the backend and
/// assigns the transaction its id when a row was taken; then the statement
/// that waits, whose last branch takes the fence (a shared advisory lock)
/// once every row is locked.
async fn bucket_path(
    bench: &Bench,
    txn: &DatabaseTransaction,
    table: &str,
    locks: &[hierlock::PlannedLock],
) -> Result<(), hierlock::Error> {
    let mut try_sql = String::from("SELECT ");
    let mut values = Vec::with_capacity(locks.len() * 2);
    for lock in locks {
        let clause = match lock.mode {
            LockMode::Shared => "FOR SHARE",
            LockMode::Exclusive => "FOR UPDATE",
        };
        try_sql.push_str(&format!(
            "CASE WHEN EXISTS (SELECT 1 FROM {table} AS t WHERE t.level = ? AND t.bucket = ? \
             {clause} OF t SKIP LOCKED) THEN "
        ));
        values.push(Value::from(i64::from(lock.key.table_level())));
        values.push(Value::from(lock.key.slot));
    }
    try_sql.push('1');
    try_sql.push_str(&" ELSE 0 END".repeat(locks.len()));
    let probe = format!(
        "WITH probe AS MATERIALIZED ({try_sql} AS granted) SELECT probe.granted, \
         pg_backend_pid()::int8 AS id, CASE WHEN probe.granted = 1 THEN -1 \
         ELSE pg_current_xact_id()::text::int8 END AS xact FROM probe"
    );
    let tried = txn.query_one_raw(bench.stmt(&probe, values)).await?;
    if tried.is_some_and(|row| row.try_get::<i32>("", "granted").is_ok_and(|g| g == 1)) {
        return Ok(());
    }
    let fence = {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        i64::from(std::process::id()) << 20
            | (NEXT.fetch_add(1, Ordering::Relaxed) as i64 & 0xfffff)
    };
    let wait = by_hand_statement(bench, table, locks);
    let mut values = wait.values.map(|v| v.0).unwrap_or_default();
    let fence_param = values.len() + 1;
    values.push(Value::from(fence));
    // The fence as one more branch of the `UNION ALL` the locks are read
    // by: it runs once every row is locked, and returns no row.
    let sql = wait.sql.replacen(
        ") AS locked",
        &format!(" UNION ALL SELECT 1 WHERE pg_advisory_xact_lock_shared(${fence_param})::text IS NULL) AS locked"),
        1,
    );
    txn.query_all_raw(sea_orm::Statement::from_sql_and_values(
        bench.dialect.backend(),
        sql,
        values,
    ))
    .await?;
    Ok(())
}

/// A waiting path with no id read and nothing kept, by hand: the `NOWAIT`
/// try; if a row is taken, the statement that waits, whose first branch
/// takes a lock named for the acquisition without waiting (failing the
/// statement, before any row, if a cancellation holds it) and whose last
/// takes its fence and lets both go. A cancellation would find the
/// connection by the first lock while the statement runs.
async fn presence_path(
    bench: &Bench,
    txn: &DatabaseTransaction,
    table: &str,
    locks: &[hierlock::PlannedLock],
) -> Result<(), hierlock::Error> {
    if granted_at_once(bench, txn, table, locks).await {
        return Ok(());
    }
    let (presence, fence) = (lock_name("presence"), lock_name("fence"));
    let wait = between(
        Some((
            "(SELECT NULL FROM DUAL WHERE IF(GET_LOCK(?, 0) = 1, 0, \
             (SELECT 1 FROM DUAL UNION ALL SELECT 2 FROM DUAL)) = 2)",
            vec![Value::from(presence.clone())],
        )),
        by_hand_statement(bench, table, locks),
        (
            "(SELECT NULL FROM DUAL WHERE \
             GET_LOCK(?, 31536000) + RELEASE_LOCK(?) + RELEASE_LOCK(?) < 0)",
            vec![
                Value::from(fence.clone()),
                Value::from(fence),
                Value::from(presence),
            ],
        ),
    );
    txn.query_all_raw(wait).await?;
    Ok(())
}

/// The plan of `rows`' Resource write locks in one MySQL-family statement
/// that also reads the rows: the plan's branches in its order, each shared
/// one as [`by_hand_statement`] writes it (its columns `NULL`), each
/// exclusive one joined to the data rows under that bucket, which its
/// `FOR UPDATE` locks and reads (`STRAIGHT_JOIN`: the bucket row first).
fn lock_and_read_statement(
    bench: &Bench,
    locker: &Locker,
    table: &str,
    rows: &[i64],
) -> Result<sea_orm::Statement, hierlock::Error> {
    let target = |row: i64| Target::resource(row / 100, row / 10, row).write();
    let plan = locker.plan(&rows.iter().map(|&row| target(row)).collect::<Vec<_>>())?;
    if !bench.dialect.is_mysql_family() {
        // The plan's locks first (a CTE is evaluated once, before the
        // rows it is joined to are locked), then the rows, locked for the
        // newest version a wait may have let another transaction write.
        let calls = by_hand_statement(bench, table, plan.locks());
        let mut values = calls.values.map(|v| v.0).unwrap_or_default();
        let mut sorted = rows.to_vec();
        sorted.sort_unstable();
        let first = values.len() + 1;
        let ids: Vec<String> = (first..first + sorted.len())
            .map(|n| format!("${n}"))
            .collect();
        values.extend(sorted.into_iter().map(Value::from));
        let sql = format!(
            "WITH hierlock_locks AS MATERIALIZED ({}) SELECT r.id, r.balance \
             FROM hierlock_locks, {ROWS_TABLE} AS r WHERE r.id IN ({}) ORDER BY r.id FOR UPDATE OF r",
            calls.sql,
            ids.join(", ")
        );
        return Ok(sea_orm::Statement::from_sql_and_values(
            bench.dialect.backend(),
            sql,
            values,
        ));
    }
    // Each row's own key: the exclusive lock of its one-target plan.
    let mut keyed = Vec::with_capacity(rows.len());
    for &row in rows {
        let own = locker.plan(&[target(row)])?;
        let key = own
            .locks()
            .iter()
            .find(|lock| lock.mode == LockMode::Exclusive)
            .map(|lock| lock.key);
        keyed.push((key, row));
    }
    let shared = if bench.dialect == Dialect::MySql {
        "FOR SHARE"
    } else {
        "LOCK IN SHARE MODE"
    };
    let mut values = Vec::new();
    let mut branches = Vec::new();
    for lock in plan.locks() {
        match lock.mode {
            LockMode::Shared => {
                values.push(Value::from(i64::from(lock.key.table_level())));
                values.push(Value::from(lock.key.slot));
                branches.push(format!(
                    "(SELECT NULL AS id, NULL AS balance FROM {table} WHERE level = ? AND bucket = ? {shared})"
                ));
            }
            LockMode::Exclusive => {
                for &(_, row) in keyed.iter().filter(|(key, _)| *key == Some(lock.key)) {
                    values.push(Value::from(i64::from(lock.key.table_level())));
                    values.push(Value::from(lock.key.slot));
                    values.push(Value::from(row));
                    branches.push(format!(
                        "(SELECT r.id, r.balance FROM {table} AS b STRAIGHT_JOIN {ROWS_TABLE} AS r \
                         WHERE b.level = ? AND b.bucket = ? AND r.id = ? FOR UPDATE)"
                    ));
                }
            }
        }
    }
    Ok(bench.stmt(&branches.join(" UNION ALL "), values))
}

/// How many rows each shared ancestor is striped over
/// ([`Variant::ByHandStripedAncestors`]).
const STRIPES: i64 = 8;

/// `rows`' Resource write locks with each target's shared ancestor rows
/// moved to stripe `row % STRIPES` of that ancestor (another bucket row of
/// its level), deduplicated and in key order.
fn striped_ancestors(
    locker: &Locker,
    rows: &[i64],
) -> Result<Vec<hierlock::PlannedLock>, hierlock::Error> {
    let mut locks: Vec<hierlock::PlannedLock> = Vec::new();
    for &row in rows {
        let plan = locker.plan(&[Target::resource(row / 100, row / 10, row).write()])?;
        for lock in plan.locks() {
            let mut lock = *lock;
            if lock.mode == LockMode::Shared {
                let stripe = row % STRIPES;
                lock.key.slot = (lock.key.slot + stripe * 7_919) % i64::from(super::LOCK_BUCKETS);
            }
            if !locks.iter().any(|l| l.key == lock.key) {
                locks.push(lock);
            }
        }
    }
    locks.sort_by_key(|l| (l.key.table_level(), l.key.slot));
    Ok(locks)
}

/// The balances of `(id, balance)` rows read in any order, in id order (the
/// order the transaction writes them in).
fn balances_by_id(mut read: Vec<(i64, i64)>) -> Vec<i64> {
    read.sort_unstable();
    read.into_iter().map(|(_, balance)| balance).collect()
}

/// `SELECT balance` of each row, one statement each, with `clause`.
async fn read_balances(
    bench: &Bench,
    txn: &DatabaseTransaction,
    rows: &[i64],
    clause: &str,
) -> Result<Vec<i64>, hierlock::Error> {
    let sql = format!("SELECT balance FROM {ROWS_TABLE} WHERE id = ?{clause}");
    let mut balances = Vec::with_capacity(rows.len());
    for &row in rows {
        let found = txn
            .query_one_raw(bench.stmt(&sql, [Value::from(row)]))
            .await?
            .ok_or_else(|| sea_orm::DbErr::RecordNotFound(format!("row {row}")))?;
        balances.push(found.try_get_by_index::<i64>(0)?);
    }
    Ok(balances)
}

/// The plan's locks in one statement that waits: on the MySQL family one
/// point lookup per bucket row with its mode's clause, joined by `UNION
/// ALL` (locked in branch order); on PostgreSQL's advisory locks one call
/// per key in the select list (taken left to right); on its bucket table
/// one `MATERIALIZED` query per row, read in order.
fn by_hand_statement(
    bench: &Bench,
    table: &str,
    locks: &[hierlock::PlannedLock],
) -> sea_orm::Statement {
    by_hand_statement_with(bench, table, locks, "")
}

/// [`by_hand_statement`], each MySQL-family branch's clause followed by
/// `suffix` (` NOWAIT`: a try).
fn by_hand_statement_with(
    bench: &Bench,
    table: &str,
    locks: &[hierlock::PlannedLock],
    suffix: &str,
) -> sea_orm::Statement {
    let mut values = Vec::new();
    let sql = if bench.dialect.is_mysql_family() {
        mysql_branches(bench, table, locks, "bucket", suffix, &mut values).join(" UNION ALL ")
    } else if bench.postgres_locks == PostgresLocks::BucketTable {
        // One query per row (PostgreSQL refuses lock clauses inside a
        // `UNION`), each materialized and read in the plan's order: one row
        // in all, as the advisory calls' statement answers.
        let with: Vec<String> = locks
            .iter()
            .enumerate()
            .map(|(i, lock)| {
                values.push(Value::from(i64::from(lock.key.table_level())));
                values.push(Value::from(lock.key.slot));
                let clause = match lock.mode {
                    LockMode::Shared => "FOR SHARE",
                    LockMode::Exclusive => "FOR UPDATE",
                };
                format!(
                    "l{i} AS MATERIALIZED (SELECT 1 FROM {table} WHERE level = ? AND bucket = ? {clause})"
                )
            })
            .collect();
        let reads: Vec<String> = (0..locks.len())
            .map(|i| format!("SELECT 1 FROM l{i}"))
            .collect();
        format!(
            "WITH {} SELECT count(*) FROM ({}) AS locked",
            with.join(", "),
            reads.join(" UNION ALL ")
        )
    } else {
        let calls: Vec<&str> = locks
            .iter()
            .map(|lock| {
                values.push(Value::from(lock.key.slot));
                match lock.mode {
                    LockMode::Shared => "pg_advisory_xact_lock_shared(?)",
                    LockMode::Exclusive => "pg_advisory_xact_lock(?)",
                }
            })
            .collect();
        format!("SELECT {}", calls.join(", "))
    };
    bench.stmt(&sql, values)
}

/// The MySQL family's [`COUNTERS`], server-wide; `None` elsewhere.
async fn global_counters(bench: &Bench) -> Result<Option<[i64; COUNTERS.len()]>, BoxError> {
    if !bench.dialect.is_mysql_family() {
        return Ok(None);
    }
    let read = counters::status(bench, &bench.db, "GLOBAL", &COUNTERS).await?;
    Ok(Some(COUNTERS.map(|name| read[name])))
}

/// The `q` quantile of one of the sample's times, in ms.
fn quantile_ms(sample: &Sample, time: fn(&Timing) -> Duration, q: f64) -> f64 {
    let mut sorted: Vec<Duration> = sample.timings.iter().map(time).collect();
    sorted.sort_unstable();
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

/// The mean of one of the sample's times, in ms.
fn mean_ms(sample: &Sample, time: fn(&Timing) -> Duration) -> f64 {
    if sample.timings.is_empty() {
        return f64::NAN;
    }
    let total: Duration = sample.timings.iter().map(time).sum();
    total.as_secs_f64() * 1e3 / sample.timings.len() as f64
}

fn print(bench: &Bench, variants: &[Variant], samples: &[Vec<Sample>]) {
    let figure = |f: &dyn Fn(&Sample) -> f64, unit: &str| {
        let mut table = Table::new(variants.iter().map(|v| v.name()));
        for (i, of_variant) in samples.iter().enumerate() {
            for (rep, s) in of_variant.iter().enumerate() {
                table.record(i, rep, f(s));
            }
        }
        table.print(unit);
    };
    println!("throughput (txn/s, higher is better):");
    figure(&|s| s.tps, "txn/s");
    println!("latency p50, BEGIN to the end of COMMIT, retries included (ms):");
    figure(&|s| quantile_ms(s, |t| t.latency, 0.5), "ms");
    println!("latency p99 (ms):");
    figure(&|s| quantile_ms(s, |t| t.latency, 0.99), "ms");
    println!("wait: sending the lock statement(s) to holding every lock, mean (ms):");
    figure(&|s| mean_ms(s, |t| t.wait), "ms");
    println!("hold: holding every lock to the end of COMMIT, mean (ms):");
    figure(&|s| mean_ms(s, |t| t.hold), "ms");
    println!("hold p50 (ms):");
    figure(&|s| quantile_ms(s, |t| t.hold, 0.5), "ms");
    println!("server CPU per transaction (µs):");
    figure(&|s| s.server_cpu_us, "µs");
    println!("client CPU per transaction (µs):");
    figure(&|s| s.client_cpu_us, "µs");
    for (variant, of_variant) in variants.iter().zip(samples) {
        let retries: u64 = of_variant.iter().map(|s| s.retries).sum();
        println!(
            "  {:<40} {retries} transactions retried (deadlock or lock timeout)",
            variant.name()
        );
    }
    if !bench.dialect.is_mysql_family() {
        println!(
            "statements: not counted (PostgreSQL has no per-statement counter without pg_stat_statements)"
        );
        return;
    }
    println!(
        "statements per transaction, the server's global counters over each sample (median of the reps; \
         1–3 rows a transaction, 2 on average):"
    );
    for (variant, of_variant) in variants.iter().zip(samples) {
        let figures: Vec<String> = COUNTERS
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let per_rep: Vec<f64> = of_variant
                    .iter()
                    .filter_map(|s| s.counters.map(|c| c[i]))
                    .collect();
                format!("{name} {}", fmt(Spread::of(&per_rep).median))
            })
            .collect();
        println!("  {:<40} {}", variant.name(), figures.join(", "));
    }
}
