//! Uncontended Resource writes against the floor, at 1 and 16 clients.
//!
//! The floor is what a user would write instead of hierlock for one row:
//! `BEGIN; SELECT … FOR UPDATE; UPDATE; COMMIT`. hierlock's transaction is
//! `BEGIN; acquire(Resource write); UPDATE; COMMIT`. Each client updates
//! rows of its own, so nothing waits: this is the fixed cost of a lock.

use std::sync::Arc;
use std::time::Instant;

use hierlock::{Locker, Target};
use hierlock_migration::Provision;
use sea_orm::{ConnectionTrait, DatabaseConnection, TransactionTrait, Value};
use tokio::task::JoinSet;

use super::cpu::CpuTimes;
use super::stats::{Table, order};
use super::{Bench, BoxError, ROWS_TABLE, counters};

/// What one measured transaction does before its `UPDATE`.
#[derive(Clone, Copy, Debug)]
pub(super) enum Variant {
    /// `SELECT balance … FOR UPDATE` on the row.
    Floor,
    /// `locker.acquire` of the row's Resource write lock.
    Hierlock,
}

const VARIANTS: [Variant; 2] = [Variant::Floor, Variant::Hierlock];

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Floor => "floor: SELECT … FOR UPDATE; UPDATE",
            Variant::Hierlock => "hierlock: acquire(Resource write); UPDATE",
        }
    }
}

/// Rows each client cycles through; client `c` owns `c * ROWS_PER_CLIENT ..`.
pub(super) const ROWS_PER_CLIENT: i64 = 1000;

/// Measure and print both variants at 1 and 16 clients.
///
/// # Errors
/// Setting up or a transaction failed.
pub async fn run(bench: &Bench) -> Result<(), BoxError> {
    println!("\n## Uncontended Resource writes against the floor (txn/s, higher is better)");
    if bench.dialect == hierlock::Dialect::Sqlite {
        println!("  skipped on SQLite: no row locks, every write takes the one database lock");
        return Ok(());
    }
    bench.ensure_rows().await?;
    let config = bench.lock_config()?;
    Provision::new(config.clone()).run(&bench.db).await?;
    let locker = Locker::connect(&bench.db, config).await?;
    at_1_and_16_clients(
        bench,
        VARIANTS.map(Variant::name),
        async |i, clients, txns| throughput(bench, &locker, VARIANTS[i], clients, txns).await,
    )
    .await?;
    counters::print_header(bench, "one row");
    for variant in VARIANTS {
        let counted = counters::per_txn(bench, 200, async |db, i| {
            transaction(bench, &locker, db, variant, i as i64 % ROWS_PER_CLIENT).await
        })
        .await?;
        if let Some(counted) = counted {
            println!("    {:<44} {}", variant.name(), counted.describe());
        }
    }
    Ok(())
}

/// One client count's measurement: each repetition is `txns_per_client`
/// transactions per client and variant, run in `slices` slices.
struct Run {
    clients: i64,
    txns_per_client: i64,
    slices: i64,
}

/// 1 and 16 clients; a slice is a few hundred milliseconds, long enough
/// that starting the clients is not part of what it measures.
const RUNS: [Run; 2] = [
    Run {
        clients: 1,
        txns_per_client: 2000,
        slices: 8,
    },
    Run {
        clients: 16,
        txns_per_client: 400,
        slices: 4,
    },
];

/// Measure the variants named `names` at 1 and 16 clients (txn/s), each
/// client on rows of its own: for each client count a warm-up of each
/// variant, not recorded, then `bench.reps` interleaved repetitions, printed
/// as one table, with the CPU the clients and the server spent per
/// transaction (see [`cpu`](super::cpu)). `measure(variant, clients,
/// txns_per_client)` runs variant number `variant` and returns its txn/s.
///
/// A repetition runs in slices (see [`RUNS`]): the variants take turns
/// slice by slice, each slice in an order rotated by one, and a variant's
/// figure for the repetition is its transactions over its time summed over
/// the slices. Drift on the machine (a checkpoint, another job) then falls
/// on every variant of the repetition alike rather than on the one that
/// happened to run during it: on a shared machine, blocks of a few seconds
/// per variant gave per-repetition ratios of ±10–15 % between variants
/// whose transactions, alternated one by one, differ by about 1 %.
///
/// Returns each client count with its throughput table, for a caller that
/// compares variants other than against the first (see [`Table::ratio_to`]).
pub(super) async fn at_1_and_16_clients(
    bench: &Bench,
    names: impl IntoIterator<Item = impl Into<String>>,
    mut measure: impl AsyncFnMut(usize, i64, i64) -> Result<f64, BoxError>,
) -> Result<Vec<(i64, Table)>, BoxError> {
    let names: Vec<String> = names.into_iter().map(Into::into).collect();
    let mut tables = Vec::new();
    for Run {
        clients,
        txns_per_client,
        slices,
    } in RUNS
    {
        let (txns_per_client, slices) = if bench.quick {
            (txns_per_client / 8, 1)
        } else {
            (txns_per_client, slices)
        };
        let per_slice = txns_per_client / slices;
        println!(
            "{clients} client(s), {} transactions each in {slices} interleaved slice(s), {} reps:",
            per_slice * slices,
            bench.reps
        );
        let mut table = Table::new(names.clone());
        let mut client_cpu = Table::new(names.clone());
        let mut server_cpu = Table::new(names.clone());
        for variant in 0..names.len() {
            measure(variant, clients, txns_per_client / 4 + 1).await?;
        }
        let slice_txns = clients * per_slice;
        for rep in 0..bench.reps {
            let mut seconds = vec![0.0; names.len()];
            let mut cpu_us = vec![(0.0, 0.0); names.len()];
            for slice in 0..slices {
                for variant in order(names.len(), rep + slice as usize) {
                    let before = CpuTimes::now(bench.dialect);
                    let tps = measure(variant, clients, per_slice).await?;
                    let cpu = before.per_txn_since(CpuTimes::now(bench.dialect), slice_txns);
                    seconds[variant] += slice_txns as f64 / tps;
                    cpu_us[variant].0 += cpu.client_us * slice_txns as f64;
                    cpu_us[variant].1 += cpu.server_us * slice_txns as f64;
                }
            }
            let txns = (slice_txns * slices) as f64;
            for variant in 0..names.len() {
                table.record(variant, rep, txns / seconds[variant]);
                client_cpu.record(variant, rep, cpu_us[variant].0 / txns);
                server_cpu.record(variant, rep, cpu_us[variant].1 / txns);
            }
        }
        table.print("txn/s");
        println!("  CPU per transaction, this process (the clients: hierlock, SeaORM, sqlx):");
        client_cpu.print("µs");
        println!("  CPU per transaction, the server's processes on this machine:");
        server_cpu.print("µs");
        tables.push((clients, table));
    }
    Ok(tables)
}

/// Committed transactions per second of `clients` clients running
/// `txns_per_client` transactions each on their own rows.
pub(super) async fn throughput(
    bench: &Bench,
    locker: &Locker,
    variant: Variant,
    clients: i64,
    txns_per_client: i64,
) -> Result<f64, BoxError> {
    // Shared by every transaction: one reference count each, no copies.
    let shared = Arc::new((bench.clone(), locker.clone()));
    clients_throughput(clients, txns_per_client, move |row| {
        let shared = Arc::clone(&shared);
        async move {
            let (bench, locker) = &*shared;
            transaction(bench, locker, &bench.db, variant, row).await
        }
    })
    .await
}

/// Committed transactions per second of `clients` concurrent clients, each
/// running `transaction(row)` `txns_per_client` times, client `c` on rows
/// `c * ROWS_PER_CLIENT ..` of its own.
pub(super) async fn clients_throughput<F, T>(
    clients: i64,
    txns_per_client: i64,
    transaction: F,
) -> Result<f64, BoxError>
where
    F: Fn(i64) -> T + Clone + Send + 'static,
    T: Future<Output = Result<(), BoxError>> + Send,
{
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for client in 0..clients {
        let transaction = transaction.clone();
        tasks.spawn(async move {
            for i in 0..txns_per_client {
                transaction(client * ROWS_PER_CLIENT + i % ROWS_PER_CLIENT).await?;
            }
            Ok::<_, BoxError>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok((clients * txns_per_client) as f64 / start.elapsed().as_secs_f64())
}

/// One transaction: lock `row` the variant's way, update it, commit.
pub(super) async fn transaction(
    bench: &Bench,
    locker: &Locker,
    db: &DatabaseConnection,
    variant: Variant,
    row: i64,
) -> Result<(), BoxError> {
    let txn = db.begin().await?;
    match variant {
        Variant::Floor => {
            let sql = format!("SELECT balance FROM {ROWS_TABLE} WHERE id = ? FOR UPDATE");
            txn.query_one_raw(bench.stmt(&sql, [Value::from(row)]))
                .await?;
        }
        Variant::Hierlock => {
            // Users of 100 rows, accounts of 10: each client's users are its own.
            locker
                .acquire(&txn, [Target::resource(row / 100, row / 10, row).write()])
                .await?;
        }
    }
    let sql = format!("UPDATE {ROWS_TABLE} SET balance = balance + 1 WHERE id = ?");
    txn.execute_raw(bench.stmt(&sql, [Value::from(row)]))
        .await?;
    txn.commit().await?;
    Ok(())
}
