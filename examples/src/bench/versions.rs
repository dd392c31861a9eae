//! Optimistic versions (issue 12): what `#[protected(.., version = version)]`
//! costs a write, and what it costs when two edits start from one version.
//!
//! Both parts run on a versioned resource table of this section's own
//! ([`TABLE`]: `id, user_id, account_id, balance, version`, one row per
//! business row of the other sections, user `id / 100`, account `id / 10`).
//! - **uncontended**: 1 and 16 clients, each on rows of its own, against a
//!   plain `UPDATE … WHERE id = ?` in a transaction (no lock, no version):
//!   `exec_versioned` of the model the previous write returned (`UPDATE …
//!   AND version = ?` and the row read back), the same write with a proof
//!   (`acquire(Resource write)` first, then `exec(&lock)`, which also reads
//!   the stored row `FOR UPDATE` to check the proof covers it), and the
//!   uncontended section's floor (`SELECT … FOR UPDATE; UPDATE`) on this
//!   table. Each client reads its rows once before the clock starts, as a
//!   form shown before it is saved, and keeps what each write returns.
//! - **two editors**: [`PAIRS`] pairs of tasks, each pair on a row of its
//!   own; in every round both tasks read the row, wait for each other, and
//!   write `balance + 1` with `exec_versioned`: one of the two writes fails
//!   with `ErrorKind::Conflict`, and its task reloads the row and writes
//!   again. Against the same edits each done under a Resource write lock
//!   held from the read to the commit (they queue, nothing conflicts). Both
//!   must add every edit once: the balances are checked afterwards.

use std::sync::Arc;
use std::time::Instant;

use hierlock::sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr,
    QueryFilter, QueryOrder, TransactionTrait, Value,
};
use hierlock::{Dialect, ErrorKind, Locker, hierlocked};
use hierlock_migration::Provision;
use tokio::sync::Barrier;
use tokio::task::JoinSet;

use super::stats::{Table, order};
use super::uncontended::{ROWS_PER_CLIENT, at_1_and_16_clients};
use super::{Bench, BoxError, counters};

/// The versioned table both parts write.
pub const TABLE: &str = "hlbench_versions";
/// Pairs of editors in the second part's runs (each pair its own row).
pub const PAIRS: [i64; 2] = [1, 8];

/// A row of [`TABLE`]: a resource of account `id / 10` of user `id / 100`.
#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id, version = version)]
mod row {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlbench_versions")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub account_id: i64,
        pub balance: i64,
        pub version: i32,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

/// Measure and print both parts.
///
/// # Errors
/// Setting up failed, a write failed with anything but a version conflict,
/// or an edit was lost.
pub async fn run(bench: &Bench) -> Result<(), BoxError> {
    println!("\n## Optimistic versions: exec_versioned against locks and a plain UPDATE");
    if bench.dialect == Dialect::Sqlite {
        println!("  skipped on SQLite: no row locks, every write takes the one database lock");
        return Ok(());
    }
    ensure_table(bench).await?;
    let config = bench.lock_config()?;
    Provision::new(config.clone()).run(&bench.db).await?;
    let locker = Locker::connect(&bench.db, config).await?;
    uncontended(bench, &locker).await?;
    two_editors(bench, &locker).await?;
    Ok(())
}

/// Create (once) and fill [`TABLE`], [`ROWS`](super::ROWS) rows at version 0.
async fn ensure_table(bench: &Bench) -> Result<(), BoxError> {
    bench
        .ensure_table(
            TABLE,
            "id BIGINT NOT NULL PRIMARY KEY, user_id BIGINT NOT NULL, \
             account_id BIGINT NOT NULL, balance BIGINT NOT NULL, version INTEGER NOT NULL",
            |id| format!("({id}, {}, {}, 0, 0)", id / 100, id / 10),
        )
        .await
}

/// The rows `ids`, by id, as they are now.
async fn read_rows(
    db: &DatabaseConnection,
    ids: std::ops::Range<i64>,
) -> Result<Vec<row::Model>, DbErr> {
    row::Entity::find()
        .filter(row::Column::Id.gte(ids.start))
        .filter(row::Column::Id.lt(ids.end))
        .order_by_asc(row::Column::Id)
        .all(db)
        .await
}

/// One row as it is now.
async fn read_row(db: &impl ConnectionTrait, id: i64) -> Result<row::Model, DbErr> {
    row::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("{TABLE} row {id}")))
}

/// How one uncontended transaction writes its row.
#[derive(Clone, Copy, Debug)]
enum Write {
    /// `UPDATE … SET balance = balance + 1 WHERE id = ?`: no lock, no version.
    Plain,
    /// `exec_versioned` of the model the previous write returned.
    Versioned,
    /// The row's Resource write lock, then `exec(&lock)` of that model.
    Locked,
    /// The uncontended section's floor: `SELECT … FOR UPDATE; UPDATE`.
    Floor,
}

impl Write {
    const ALL: [Write; 4] = [Write::Plain, Write::Versioned, Write::Locked, Write::Floor];

    fn name(self) -> &'static str {
        match self {
            Write::Plain => "plain: UPDATE … WHERE id = ?",
            Write::Versioned => "exec_versioned: UPDATE … AND version = ?; read back",
            Write::Locked => "acquire(Resource write); exec(&lock), versioned",
            Write::Floor => "floor: SELECT … FOR UPDATE; UPDATE",
        }
    }
}

async fn uncontended(bench: &Bench, locker: &Locker) -> Result<(), BoxError> {
    println!(
        "### Uncontended writes, each client on rows of its own \
         (txn/s, higher is better; ratios against the plain UPDATE)"
    );
    at_1_and_16_clients(
        bench,
        Write::ALL.map(Write::name),
        async |i, clients, txns| throughput(bench, locker, Write::ALL[i], clients, txns).await,
    )
    .await?;
    counters::print_header(bench, "one row");
    for write in Write::ALL {
        let mut rows = read_rows(&bench.db, 0..ROWS_PER_CLIENT).await?;
        let counted = counters::per_txn(bench, 200, async |db, i| {
            let slot = (i as i64 % ROWS_PER_CLIENT) as usize;
            transaction(bench, locker, db, write, &mut rows[slot]).await
        })
        .await?;
        if let Some(counted) = counted {
            println!("    {:<52} {}", write.name(), counted.describe());
        }
    }
    Ok(())
}

/// Committed transactions per second of `clients` clients running
/// `txns_per_client` transactions each on their own rows, which each client
/// read before the clock started.
async fn throughput(
    bench: &Bench,
    locker: &Locker,
    write: Write,
    clients: i64,
    txns_per_client: i64,
) -> Result<f64, BoxError> {
    let mut by_client = Vec::new();
    for client in 0..clients {
        let first = client * ROWS_PER_CLIENT;
        by_client.push(read_rows(&bench.db, first..first + ROWS_PER_CLIENT).await?);
    }
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for mut rows in by_client {
        let (bench, locker) = (bench.clone(), locker.clone());
        tasks.spawn(async move {
            for i in 0..txns_per_client {
                let slot = (i % ROWS_PER_CLIENT) as usize;
                transaction(&bench, &locker, &bench.db, write, &mut rows[slot]).await?;
            }
            Ok::<_, BoxError>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok((clients * txns_per_client) as f64 / start.elapsed().as_secs_f64())
}

/// One transaction adding 1 to `row`'s balance the variant's way; a
/// versioned write leaves the row it read back in `row`.
async fn transaction(
    bench: &Bench,
    locker: &Locker,
    db: &DatabaseConnection,
    write: Write,
    row: &mut row::Model,
) -> Result<(), BoxError> {
    let txn = db.begin().await?;
    let id = Value::from(row.id);
    let increment = format!("UPDATE {TABLE} SET balance = balance + 1 WHERE id = ?");
    match write {
        Write::Plain => {
            txn.execute_raw(bench.stmt(&increment, [id])).await?;
        }
        Write::Versioned => {
            *row = row::Entity::update(incremented(row))
                .exec_versioned(&txn)
                .await?;
        }
        Write::Locked => {
            *row = locked_write(locker, &txn, row.clone()).await?;
        }
        Write::Floor => {
            let sql = format!("SELECT balance FROM {TABLE} WHERE id = ? FOR UPDATE");
            txn.query_one_raw(bench.stmt(&sql, [id.clone()])).await?;
            txn.execute_raw(bench.stmt(&increment, [id])).await?;
        }
    }
    txn.commit().await?;
    Ok(())
}

/// `base` with its balance one higher: its version is still the one read.
fn incremented(base: &row::Model) -> row::ActiveModel {
    let mut edit: row::ActiveModel = base.clone().into();
    edit.balance = Set(base.balance + 1);
    edit
}

/// Under `base`'s Resource write lock, write it one higher, still checked
/// against the version `base` was read at.
#[hierlocked(user = base.user_id, account = base.account_id, resource = base.id, locker = locker)]
async fn locked_write(
    locker: &Locker,
    txn: &DatabaseTransaction,
    base: row::Model,
) -> hierlock::Result<row::Model> {
    row::Entity::update(incremented(&base)).exec(&lock).await
}

/// How the two editors of a row each make their edit.
#[derive(Clone, Copy, Debug)]
enum Edit {
    /// Read, then `BEGIN; acquire(Resource write); read; exec(&lock); COMMIT`.
    Locked,
    /// Read, then `BEGIN; exec_versioned; COMMIT`; on a conflict, reload
    /// and write again.
    Versioned,
}

impl Edit {
    const ALL: [Edit; 2] = [Edit::Locked, Edit::Versioned];

    fn name(self) -> &'static str {
        match self {
            Edit::Locked => "Resource write lock across read-modify-write",
            Edit::Versioned => "exec_versioned from one version, retried on Conflict",
        }
    }
}

/// What the two-editor rounds did, summed over tasks and runs.
#[derive(Clone, Copy, Default)]
struct Edits {
    /// Each edit's first write: in a round, both are based on one version.
    first_writes: u64,
    /// Of those, the ones refused with `ErrorKind::Conflict`.
    first_conflicts: u64,
    /// Writes after a reload.
    rewrites: u64,
    /// Of those, the ones refused in turn.
    rewrite_conflicts: u64,
}

impl std::ops::AddAssign for Edits {
    fn add_assign(&mut self, other: Edits) {
        self.first_writes += other.first_writes;
        self.first_conflicts += other.first_conflicts;
        self.rewrites += other.rewrites;
        self.rewrite_conflicts += other.rewrite_conflicts;
    }
}

async fn two_editors(bench: &Bench, locker: &Locker) -> Result<(), BoxError> {
    let rounds = if bench.quick { 50 } else { 200 };
    println!(
        "### Two editors from one version: per pair, both read the row, then both write \
         balance + 1; {rounds} rounds, {} reps (µs per successful edit, a pair's time over \
         its edits, lower is better)",
        bench.reps
    );
    for pairs in PAIRS {
        println!("{pairs} pair(s), each on a row of its own:");
        let mut table = Table::new(Edit::ALL.map(Edit::name));
        let mut totals = [Edits::default(); 2];
        // A warm-up of each variant, not recorded.
        for edit in Edit::ALL {
            edit_rounds(bench, locker, edit, pairs, rounds / 4 + 1).await?;
        }
        for rep in 0..bench.reps {
            for i in order(Edit::ALL.len(), rep) {
                let start = Instant::now();
                totals[i] += edit_rounds(bench, locker, Edit::ALL[i], pairs, rounds).await?;
                let micros = start.elapsed().as_secs_f64() * 1e6 / (2 * rounds) as f64;
                table.record(i, rep, micros);
            }
        }
        table.print("µs/edit");
        for (edit, n) in Edit::ALL.iter().zip(totals) {
            println!(
                "  {}: {} of {} first writes refused with Conflict ({:.1} %), \
                 {} rewrites after a reload ({} refused)",
                edit.name(),
                n.first_conflicts,
                n.first_writes,
                100.0 * n.first_conflicts as f64 / n.first_writes.max(1) as f64,
                n.rewrites,
                n.rewrite_conflicts,
            );
        }
    }
    Ok(())
}

/// `rounds` rounds of two edits per row by `pairs` pairs of tasks, the
/// pair's two tasks meeting before and after each round's writes; checks
/// that every edit was added once.
async fn edit_rounds(
    bench: &Bench,
    locker: &Locker,
    edit: Edit,
    pairs: i64,
    rounds: u64,
) -> Result<Edits, BoxError> {
    let before = read_rows(&bench.db, 0..pairs).await?;
    let mut tasks = JoinSet::new();
    for id in 0..pairs {
        let barrier = Arc::new(Barrier::new(2));
        for _ in 0..2 {
            let (bench, locker, barrier) = (bench.clone(), locker.clone(), barrier.clone());
            tasks.spawn(async move {
                let mut edits = Edits::default();
                for _ in 0..rounds {
                    match edit {
                        Edit::Locked => {
                            barrier.wait().await;
                            edits.first_writes += 1;
                            let txn = bench.db.begin().await?;
                            locked_edit(&locker, &txn, id).await?;
                            txn.commit().await?;
                        }
                        Edit::Versioned => {
                            let base = read_row(&bench.db, id).await?;
                            barrier.wait().await;
                            versioned_edit(&bench.db, base, &mut edits).await?;
                        }
                    }
                    // The next round's reads wait for this round's rewrites.
                    barrier.wait().await;
                }
                Ok::<_, BoxError>(edits)
            });
        }
    }
    let mut edits = Edits::default();
    while let Some(done) = tasks.join_next().await {
        edits += done??;
    }
    let after = read_rows(&bench.db, 0..pairs).await?;
    for (old, new) in before.iter().zip(&after) {
        let added = new.balance - old.balance;
        if added != 2 * rounds as i64 {
            return Err(format!(
                "{edit:?}: row {} gained {added}, not the {} edits made",
                old.id,
                2 * rounds
            )
            .into());
        }
    }
    Ok(edits)
}

/// Under row `id`'s Resource write lock: read it, write it one higher.
#[hierlocked(user = id / 100, account = id / 10, resource = id, locker = locker)]
async fn locked_edit(
    locker: &Locker,
    txn: &DatabaseTransaction,
    id: i64,
) -> hierlock::Result<row::Model> {
    let base = read_row(txn, id).await?;
    row::Entity::update(incremented(&base)).exec(&lock).await
}

/// Write `base` one higher with `exec_versioned`; while the row has moved
/// on, reload it and write again.
async fn versioned_edit(
    db: &DatabaseConnection,
    mut base: row::Model,
    edits: &mut Edits,
) -> Result<(), BoxError> {
    edits.first_writes += 1;
    let mut first = true;
    loop {
        let txn = db.begin().await?;
        match row::Entity::update(incremented(&base))
            .exec_versioned(&txn)
            .await
        {
            Ok(_) => {
                txn.commit().await?;
                return Ok(());
            }
            Err(err) if err.kind() == ErrorKind::Conflict => {
                txn.rollback().await?;
                if first {
                    edits.first_conflicts += 1;
                } else {
                    edits.rewrite_conflicts += 1;
                }
                edits.rewrites += 1;
                first = false;
                base = read_row(db, base.id).await?;
            }
            Err(err) => return Err(err.into()),
        }
    }
}
