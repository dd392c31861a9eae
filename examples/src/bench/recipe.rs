//! Protected writes: the main recipe, as users write it, against SeaORM's
//! own write under the same lock and against the floor.
//!
//! hierlock's recipe is a `#[hierlocked]` repository method that reads a row
//! of a `#[protected]` entity and writes it back with the proof
//! (`Entity::update(am).exec(&lock)`). What does the protection cost over
//! the lock itself? Three variants, uncontended (each client on rows of its
//! own, see [`clients_throughput`]), on a table of this section's own
//! ([`TABLE`]: `id, user_id, account_id, balance`, user `id / 100`, account
//! `id / 10`):
//!
//! - **SeaORM's write** (the baseline): the same method shape and the same
//!   `acquire` of the row's Resource write lock, then `find_by_id` and
//!   SeaORM's `am.update(txn)` through a plain (unprotected) entity of the
//!   same table. The difference to the recipe is the protected write alone.
//! - **the protected recipe**: `find_by_id` on the proof's transaction, then
//!   `Entity::update(am).exec(&lock)`, whose `UPDATE` carries the proof's
//!   check (`.. AND user_id = ? AND account_id = ?`): the statements of
//!   SeaORM's own write.
//! - **the floor**: what a user writes without hierlock, `SELECT balance …
//!   FOR UPDATE` of the row and an `UPDATE` of the new balance, sent as SQL
//!   like the other sections' floors (so the ratio to it also holds SeaORM's
//!   own client cost).
//!
//! Each is one transaction: `BEGIN`, the method (or the floor's two
//! statements), `COMMIT`. Statements per transaction come from the server's
//! counters on the MySQL family and, on every server, from the client's own
//! count (see [`counters::client_per_txn`]).

use std::sync::Arc;
use std::time::Instant;

use hierlock::sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ConnectionTrait, DatabaseConnection, DatabaseTransaction,
    DbErr, EntityTrait, TransactionTrait, Value,
};
use hierlock::{Dialect, HasLocker, Locker, hierlocked};
use hierlock_migration::Provision;

use super::stats::{Spread, Table};
use super::uncontended::{ROWS_PER_CLIENT, at_1_and_16_clients, clients_throughput};
use super::{Bench, BoxError, counters};

/// The table the three variants write.
pub const TABLE: &str = "hlbench_recipe";

/// [`TABLE`] as a protected entity: written only with a lock proof.
#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
mod protected_row {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlbench_recipe")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub account_id: i64,
        pub balance: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

/// [`TABLE`] as a plain SeaORM entity, the twin of [`protected_row`]: what
/// the same service has without hierlock's protection.
mod plain_row {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlbench_recipe")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub account_id: i64,
        pub balance: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// How one transaction writes its row.
#[derive(Clone, Copy, Debug)]
enum Variant {
    /// [`Repo::add_plain`]: the lock, then SeaORM's `am.update`.
    SeaOrm,
    /// [`Repo::add_protected`]: the lock, then `exec(&lock)`.
    Protected,
    /// [`floor`]: `SELECT … FOR UPDATE; UPDATE`, no hierlock.
    Floor,
}

impl Variant {
    /// The baseline first: the table's ratios are against SeaORM's write.
    const ALL: [Variant; 3] = [Variant::SeaOrm, Variant::Protected, Variant::Floor];

    fn name(self) -> &'static str {
        match self {
            Variant::SeaOrm => "SeaORM's write: acquire; find_by_id; am.update(txn)",
            Variant::Protected => "protected recipe: acquire; find_by_id; exec(&lock)",
            Variant::Floor => "floor: SELECT … FOR UPDATE; UPDATE",
        }
    }

    /// This variant's index in [`Variant::ALL`] (and in the tables): its
    /// discriminant, as `ALL` lists the variants in declaration order.
    fn index(self) -> usize {
        self as usize
    }
}

/// The repository, as a service declares it: its methods lock on the
/// caller's transaction before their body runs.
#[derive(Clone)]
struct Repo {
    locker: Locker,
}

impl HasLocker for Repo {
    fn locker(&self) -> &Locker {
        &self.locker
    }
}

impl Repo {
    /// Add `amount` to resource `id`: read it, add in Rust, write it back
    /// with the proof. hierlock's main recipe.
    #[hierlocked(user = user_id, account = account_id, resource = id)]
    async fn add_protected(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        account_id: i64,
        id: i64,
        amount: i64,
    ) -> hierlock::Result<()> {
        let row = protected_row::Entity::find_by_id(id)
            .one(lock.txn())
            .await?
            .ok_or_else(|| missing(id))?;
        let balance = row.balance + amount;
        let mut edit: protected_row::ActiveModel = row.into();
        edit.balance = Set(balance);
        protected_row::Entity::update(edit).exec(&lock).await?;
        Ok(())
    }

    /// [`Repo::add_protected`] through the plain entity: the same lock, the
    /// same read, SeaORM's own write on the same transaction.
    #[hierlocked(user = user_id, account = account_id, resource = id)]
    async fn add_plain(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        account_id: i64,
        id: i64,
        amount: i64,
    ) -> hierlock::Result<()> {
        let row = plain_row::Entity::find_by_id(id)
            .one(lock.txn())
            .await?
            .ok_or_else(|| missing(id))?;
        let balance = row.balance + amount;
        let mut edit: plain_row::ActiveModel = row.into();
        edit.balance = Set(balance);
        // `txn` is the proof's transaction: the write commits with the lock.
        edit.update(txn).await?;
        Ok(())
    }
}

/// The error of a row that is not there (the table is filled first).
fn missing(id: i64) -> DbErr {
    DbErr::RecordNotFound(format!("{TABLE} row {id}"))
}

/// Measure and print the three variants at 1 and 16 clients, the recipe's
/// ratios, and the statements each sends.
///
/// # Errors
/// Setting up or a transaction failed.
pub async fn run(bench: &Bench) -> Result<(), BoxError> {
    println!(
        "\n## Protected writes: the main recipe against SeaORM's write under the same lock \
         and the floor (txn/s, higher is better; ratios against SeaORM's write)"
    );
    if bench.dialect == Dialect::Sqlite {
        println!("  skipped on SQLite: no row locks, every write takes the one database lock");
        return Ok(());
    }
    bench
        .ensure_table(
            TABLE,
            "id BIGINT NOT NULL PRIMARY KEY, user_id BIGINT NOT NULL, \
             account_id BIGINT NOT NULL, balance BIGINT NOT NULL",
            |id| format!("({id}, {}, {}, 0)", id / 100, id / 10),
        )
        .await?;
    let config = bench.lock_config()?;
    Provision::new(config.clone()).run(&bench.db).await?;
    let repo = Repo {
        locker: Locker::connect(&bench.db, config).await?,
    };
    // Shared by every transaction: one reference count each, no copies.
    let shared = Arc::new((bench.clone(), repo.clone()));
    let tables = at_1_and_16_clients(
        bench,
        Variant::ALL.map(Variant::name),
        async |i, clients, txns| {
            let shared = Arc::clone(&shared);
            clients_throughput(clients, txns, move |row| {
                let shared = Arc::clone(&shared);
                async move {
                    let (bench, repo) = &*shared;
                    transaction(bench, repo, &bench.db, Variant::ALL[i], row).await
                }
            })
            .await
        },
    )
    .await?;
    print_ratios(&tables);
    alternated(bench, &repo).await?;
    print_statements(bench, &repo).await
}

/// The recipe against SeaORM's write and against the floor, per client
/// count: the ratio of the medians, and the range of the ratios of the
/// same repetition.
fn print_ratios(tables: &[(i64, Table)]) {
    println!("  protected recipe, txn/s ratio of the medians [range of the per-rep ratios]:");
    let recipe = Variant::Protected.index();
    for (clients, table) in tables {
        let against = |other: Variant| {
            let (of_medians, per_rep) = table.ratio_to(recipe, other.index());
            format!("{of_medians:.2}× [{:.2}–{:.2}]", per_rep.min, per_rep.max)
        };
        println!(
            "    {clients:>2} client(s): / SeaORM's write {}, / floor {}",
            against(Variant::SeaOrm),
            against(Variant::Floor)
        );
    }
}

/// The recipe against SeaORM's write at 1 client, alternated transaction
/// by transaction (A B B A, so that neither always runs right after the
/// other): each transaction's latency, and the ratio of the two medians.
/// Whatever drifts on the machine falls on both alike within milliseconds,
/// so this sees differences of a per cent that the throughput runs'
/// repetitions (seconds each) cannot tell from noise.
async fn alternated(bench: &Bench, repo: &Repo) -> Result<(), BoxError> {
    let per_variant: usize = if bench.quick { 500 } else { 4000 };
    let variants = [Variant::SeaOrm, Variant::Protected];
    let mut latencies = [Vec::new(), Vec::new()];
    for i in 0..2 * per_variant {
        // A B B A A B B A …
        let which = i.div_ceil(2) % 2;
        let row = i as i64 % ROWS_PER_CLIENT;
        let start = Instant::now();
        transaction(bench, repo, &bench.db, variants[which], row).await?;
        latencies[which].push(start.elapsed().as_secs_f64() * 1e6);
    }
    let [seaorm, recipe] = latencies.map(|samples| Spread::of(&samples).median);
    println!(
        "  1 client, the two alternated transaction by transaction ({per_variant} each), \
         median latency: SeaORM's write {seaorm:.0} µs, protected recipe {recipe:.0} µs, \
         recipe / SeaORM's write {:.3}× in throughput terms",
        seaorm / recipe
    );
    Ok(())
}

/// Statements per transaction: the server's counters where it has them,
/// and the client's own count on every server.
async fn print_statements(bench: &Bench, repo: &Repo) -> Result<(), BoxError> {
    // Each count's transactions on the first client's rows.
    let row = |i: u64| i as i64 % ROWS_PER_CLIENT;
    if bench.dialect.is_mysql_family() {
        counters::print_header(bench, "one row");
        for variant in Variant::ALL {
            let counted = counters::per_txn(bench, 200, async |db, i| {
                transaction(bench, repo, db, variant, row(i)).await
            })
            .await?;
            if let Some(counted) = counted {
                println!("    {:<52} {}", variant.name(), counted.describe());
            }
        }
    }
    println!(
        "  statements per transaction between BEGIN and COMMIT, a client-side count \
         (SeaORM's metric callback on a one-connection pool; BEGIN and COMMIT do not pass \
         through it), and the last transaction's statements:"
    );
    for variant in Variant::ALL {
        let counted = counters::client_per_txn(bench, 200, async |db, i| {
            transaction(bench, repo, db, variant, row(i)).await
        })
        .await?;
        println!("    {:<52} {}", variant.name(), counted.describe());
    }
    Ok(())
}

/// One transaction adding 1 to `row`'s balance the variant's way.
async fn transaction(
    bench: &Bench,
    repo: &Repo,
    db: &DatabaseConnection,
    variant: Variant,
    row: i64,
) -> Result<(), BoxError> {
    let txn = db.begin().await?;
    // Users of 100 rows, accounts of 10, as the table was filled.
    let (user, account) = (row / 100, row / 10);
    match variant {
        Variant::SeaOrm => repo.add_plain(&txn, user, account, row, 1).await?,
        Variant::Protected => repo.add_protected(&txn, user, account, row, 1).await?,
        Variant::Floor => floor(bench, &txn, row, 1).await?,
    }
    txn.commit().await?;
    Ok(())
}

/// The floor's read-modify-write on `txn`: the row's balance read
/// `FOR UPDATE`, the new one computed here and written.
async fn floor(
    bench: &Bench,
    txn: &DatabaseTransaction,
    row: i64,
    amount: i64,
) -> Result<(), BoxError> {
    let select = format!("SELECT balance FROM {TABLE} WHERE id = ? FOR UPDATE");
    let balance: i64 = txn
        .query_one_raw(bench.stmt(&select, [Value::from(row)]))
        .await?
        .ok_or_else(|| missing(row))?
        .try_get("", "balance")?;
    let update = format!("UPDATE {TABLE} SET balance = ? WHERE id = ?");
    txn.execute_raw(bench.stmt(&update, [Value::from(balance + amount), Value::from(row)]))
        .await?;
    Ok(())
}
