//! How much a hierlock acquisition costs, against baselines measured in the
//! same run on the same server.
//!
//! ```sh
//! DATABASE_URL=mysql://root@127.0.0.1:3306/test cargo run --release -p hierlock-examples --example acquire_bench
//! ```
//!
//! Each line is N uncontended transactions of `BEGIN; <locks>; COMMIT`:
//!
//! - `floor`: one raw `SELECT … FOR UPDATE` on one bucket row (what a
//!   hand-written single-row lock costs);
//! - `seed`: the Go package's way, one statement per row (user, account,
//!   resource);
//! - `hierlock`: `locker.acquire` of one Resource write lock (two statements:
//!   one per run of equal modes; one advisory statement on PostgreSQL);
//! - `hierlock x10`: ten resources of one account in one call.
//!
//! Ratios are against `floor`. Figures vary with the machine; compare ratios.
//!
//! With `--scale`, it measures instead how the cost per lock grows with the
//! plan: one call write-locking N resources of one account (N + 2 locks), for
//! each N of `--sizes`, rounds interleaved, each N's median and min–max per
//! lock, and its ratio to the smallest N. `--postgres-locks bucket-table`
//! measures PostgreSQL's bucket table instead of its advisory locks:
//!
//! ```sh
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo run --release -p hierlock-examples \
//!     --example acquire_bench -- --scale --postgres-locks bucket-table
//! ```

use std::time::{Duration, Instant};

use clap::Parser;
use hierlock::{Config, Dialect, LockMode, Locker, PostgresLocks, Target};
use hierlock_migration::Provision;
use sea_orm::{
    ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbBackend, Statement,
    TransactionTrait, Value,
};

#[derive(Parser)]
struct Args {
    /// The server to measure.
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "mysql://root@127.0.0.1:3306/test"
    )]
    database_url: String,
    /// Transactions per measurement.
    #[arg(long, default_value_t = 2000)]
    iterations: u32,
    /// Measure the cost per lock of one large call instead (see above).
    #[arg(long)]
    scale: bool,
    /// With `--scale`: the numbers of resources locked in one call.
    #[arg(long, value_delimiter = ',', default_value = "100,1000,10000,30000")]
    sizes: Vec<usize>,
    /// With `--scale`: interleaved rounds over all sizes.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// On PostgreSQL: `advisory` (the default) or `bucket-table`.
    #[arg(long, default_value = "advisory")]
    postgres_locks: String,
}

/// What one measured transaction does between `BEGIN` and `COMMIT`.
#[derive(Clone, Copy)]
enum Workload {
    Floor,
    Seed,
    Hierlock,
    HierlockTen,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Floor => "floor (1 raw FOR UPDATE)",
            Workload::Seed => "seed (1 statement per row)",
            Workload::Hierlock => "hierlock (Resource write)",
            Workload::HierlockTen => "hierlock x10 (10 resources, 1 call)",
        }
    }

    async fn run(self, locker: &Locker, txn: &DatabaseTransaction, i: u32) -> Result<(), BoxError> {
        let backend = txn.get_database_backend();
        let raw = |sql: String| Statement::from_string(backend, sql);
        match self {
            Workload::Floor if backend == DbBackend::Sqlite => {
                txn.execute_raw(raw(
                    "UPDATE bench_lock_buckets_meta SET id = id WHERE 0".into()
                ))
                .await?;
            }
            Workload::Floor => {
                let sql = format!(
                    "SELECT bucket FROM bench_lock_buckets WHERE level = 2 AND bucket = {} FOR UPDATE",
                    param(backend, 1)
                );
                let stmt = Statement::from_sql_and_values(
                    backend,
                    sql,
                    [Value::from(i64::from(i % BUCKETS))],
                );
                txn.query_all_raw(stmt).await?;
            }
            Workload::Seed => {
                let shared = if locker.dialect() == Dialect::MariaDb {
                    "LOCK IN SHARE MODE"
                } else {
                    "FOR SHARE"
                };
                let plan = locker.plan([&Target::resource("u", "a", i).write()])?;
                for lock in plan.locks() {
                    let mode = if lock.mode == LockMode::Shared {
                        shared
                    } else {
                        "FOR UPDATE"
                    };
                    let sql =
                        "SELECT bucket FROM bench_lock_buckets WHERE level = ? AND bucket = ? ";
                    let values = [
                        Value::from(i32::from(lock.key.level.as_u8())),
                        Value::from(lock.key.slot),
                    ];
                    txn.query_all_raw(Statement::from_sql_and_values(
                        backend,
                        format!("{sql}{mode}"),
                        values,
                    ))
                    .await?;
                }
            }
            Workload::Hierlock => {
                locker
                    .acquire(txn, [Target::resource("u", "a", i).write()])
                    .await?;
            }
            Workload::HierlockTen => {
                locker
                    .acquire(txn, (0..10).map(|r| Target::resource("u", i, r).write()))
                    .await?;
            }
        }
        Ok(())
    }
}

const BUCKETS: u32 = 100_000;

/// The n-th bind placeholder: parameterless statements take another path in
/// the MySQL driver (and met TCP delayed ACKs here, 40 ms each), so every
/// workload binds its values like hierlock does.
fn param(backend: DbBackend, n: usize) -> String {
    if backend == DbBackend::Postgres {
        format!("${n}")
    } else {
        "?".to_owned()
    }
}

type BoxError = Box<dyn std::error::Error>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    let db = Database::connect(&args.database_url).await?;
    if args.scale {
        return scale(&db, &args).await;
    }
    let config = Config::default()
        .with_table("bench_lock_buckets")?
        .with_bucket_space(BUCKETS)?;
    // The floor and seed rows need the table on every server but SQLite.
    if Dialect::detect(&db).await? != Dialect::Sqlite {
        let with_table = config
            .clone()
            .with_postgres_locks(PostgresLocks::BucketTable);
        Provision::new(with_table).run(&db).await?;
    }
    let locker = Locker::connect(&db, config).await?;
    println!(
        "{:?} at {}: {} transactions each",
        locker.dialect(),
        args.database_url,
        args.iterations
    );
    let mut workloads = vec![Workload::Floor, Workload::Hierlock, Workload::HierlockTen];
    if locker.dialect().is_mysql_family() {
        workloads.insert(1, Workload::Seed);
    }
    let mut floor = None;
    for workload in workloads {
        let per_txn = measure(&db, &locker, workload, args.iterations).await?;
        let floor = *floor.get_or_insert(per_txn);
        println!(
            "  {:<38} {:>8.1} µs/txn  {:>5.2}x floor",
            workload.name(),
            per_txn.as_secs_f64() * 1e6,
            per_txn.as_secs_f64() / floor.as_secs_f64()
        );
    }
    Ok(())
}

/// Mean time of one `BEGIN; workload; COMMIT`, after a warm-up round.
async fn measure(
    db: &DatabaseConnection,
    locker: &Locker,
    workload: Workload,
    n: u32,
) -> Result<Duration, BoxError> {
    let mut timed = Duration::ZERO;
    for round in 0..2 {
        let start = Instant::now();
        for i in 0..n {
            let txn = db.begin().await?;
            workload.run(locker, &txn, i).await?;
            txn.commit().await?;
        }
        if round == 1 {
            timed = start.elapsed();
        }
    }
    Ok(timed / n)
}

/// The most locks the `--scale` plans need: the largest N plus user and account.
const SCALE_BUCKETS: u32 = 100_000;

/// `--scale`: the cost per lock of one call write-locking N resources of one
/// account, for each N of `args.sizes`, on a table of its own.
async fn scale(db: &DatabaseConnection, args: &Args) -> Result<(), BoxError> {
    let mut config = Config::default()
        .with_table("scale_lock_buckets")?
        .with_bucket_space(SCALE_BUCKETS)?;
    if args.postgres_locks == "bucket-table" {
        config = config.with_postgres_locks(PostgresLocks::BucketTable);
    }
    Provision::new(config.clone()).run(db).await?;
    let locker = Locker::connect(db, config).await?;
    let locks = match locker.dialect() {
        Dialect::Postgres => format!(" ({} locks)", args.postgres_locks),
        _ => String::new(),
    };
    println!(
        "{:?}{locks} at {}: one call locking N resources, {} rounds",
        locker.dialect(),
        args.database_url,
        args.rounds
    );
    // Per size: (locks per call, seconds per lock of each round).
    let mut per_lock: Vec<(usize, Vec<f64>)> = Vec::new();
    for &n in &args.sizes {
        let requests: Vec<_> = (0..n)
            .map(|r| Target::resource("u", "a", r).write())
            .collect();
        per_lock.push((locker.plan(&requests)?.locks().len(), Vec::new()));
    }
    for round in 0..=args.rounds {
        for (i, &n) in args.sizes.iter().enumerate() {
            // About 30,000 locks per measurement, whatever N.
            let calls = (30_000 / n).max(1);
            let requests: Vec<_> = (0..n)
                .map(|r| Target::resource("u", "a", r).write())
                .collect();
            let start = Instant::now();
            for _ in 0..calls {
                let txn = db.begin().await?;
                locker.acquire(&txn, requests.iter().cloned()).await?;
                txn.rollback().await?;
            }
            let (locks, samples) = &mut per_lock[i];
            // Round 0 warms up.
            if round > 0 {
                samples.push(start.elapsed().as_secs_f64() / (calls * *locks) as f64);
            }
        }
    }
    let base = per_lock.first().map(|(_, s)| median(s)).unwrap_or(1.0);
    for (n, (locks, samples)) in args.sizes.iter().zip(&per_lock) {
        let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
        let max = samples.iter().copied().fold(0.0, f64::max);
        println!(
            "  N = {n:>6} ({locks:>6} locks): {:>7.2} µs/lock (min {:.2}, max {:.2})  {:>5.2}x N = {}",
            median(samples) * 1e6,
            min * 1e6,
            max * 1e6,
            median(samples) / base,
            args.sizes[0]
        );
    }
    Ok(())
}

fn median(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}
