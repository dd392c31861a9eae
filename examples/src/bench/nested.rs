//! Nested saves: SeaORM's own nested save of a dense entity under a lock,
//! against the same save run with the proof (`.save(&lock)`), which checks
//! every row it writes against the proof.
//!
//! The tables are this section's own: accounts ([`ACCOUNTS`]: `id,
//! user_id, balance`, user `id / 100`) and their resources ([`RESOURCES`]:
//! two per account, `2 × id` and `2 × id + 1`). Each transaction is a
//! `#[hierlocked]` method on one account (an Account write lock): it loads
//! the account with its resources (`Entity::load().with(..)`), adds 1 to
//! the three balances and saves the tree, uncontended (each client on
//! accounts of its own):
//!
//! - **SeaORM's nested save** (the baseline): the same method shape and the
//!   same lock, the tree of plain (unprotected) dense entities of the same
//!   tables, `am.save(txn)`.
//! - **the protected nested save**: `am.save(&lock)` on the protected
//!   entities' `NestedActiveModel`: each row's `UPDATE` carries the proof's
//!   check, and the save sends the statements SeaORM's own sends.
//!
//! Each is one transaction: `BEGIN`, the method, `COMMIT`.

use std::sync::Arc;
use std::time::Instant;

use hierlock::sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, DatabaseTransaction, DbErr, QueryFilter,
    TransactionTrait,
};
use hierlock::{Dialect, HasLocker, Locker, hierlocked};
use hierlock_migration::Provision;

use super::stats::Spread;
use super::uncontended::{ROWS_PER_CLIENT, at_1_and_16_clients, clients_throughput};
use super::{Bench, BoxError, counters};

/// The accounts.
pub const ACCOUNTS: &str = "hlbench_nested_accounts";
/// Their resources, two per account.
pub const RESOURCES: &str = "hlbench_nested_resources";

/// The two tables as protected dense entities.
#[hierlock::protected(level = account, user = user_id, account = id)]
mod account {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlbench_nested_accounts")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub balance: i64,
        #[sea_orm(has_many)]
        pub resources: HasMany<super::resource::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
mod resource {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlbench_nested_resources")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub account_id: i64,
        pub balance: i64,
        #[sea_orm(belongs_to, from = "account_id", to = "id")]
        pub account: HasOne<super::account::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// The same tables as plain SeaORM dense entities: the baseline.
mod plain {
    pub mod account {
        use hierlock::sea_orm::entity::prelude::*;

        #[sea_orm::model]
        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "hlbench_nested_accounts")]
        pub struct Model {
            #[sea_orm(primary_key, auto_increment = false)]
            pub id: i64,
            pub user_id: i64,
            pub balance: i64,
            #[sea_orm(has_many)]
            pub resources: HasMany<super::resource::Entity>,
        }

        impl ActiveModelBehavior for ActiveModel {}
    }

    pub mod resource {
        use hierlock::sea_orm::entity::prelude::*;

        #[sea_orm::model]
        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "hlbench_nested_resources")]
        pub struct Model {
            #[sea_orm(primary_key, auto_increment = false)]
            pub id: i64,
            pub user_id: i64,
            pub account_id: i64,
            pub balance: i64,
            #[sea_orm(belongs_to, from = "account_id", to = "id")]
            pub account: HasOne<super::account::Entity>,
        }

        impl ActiveModelBehavior for ActiveModel {}
    }
}

/// How one transaction saves its tree.
#[derive(Clone, Copy, Debug)]
enum Variant {
    /// [`Repo::bump_plain`]: the lock, then SeaORM's `am.save(txn)`.
    SeaOrm,
    /// [`Repo::bump_protected`]: the lock, then `am.save(&lock)`.
    Protected,
}

impl Variant {
    /// The baseline first: the table's ratios are against SeaORM's save.
    const ALL: [Variant; 2] = [Variant::SeaOrm, Variant::Protected];

    fn name(self) -> &'static str {
        match self {
            Variant::SeaOrm => "SeaORM's nested save: acquire; load; am.save(txn)",
            Variant::Protected => "protected nested save: acquire; load; am.save(&lock)",
        }
    }
}

/// The repository: its methods lock on the caller's transaction.
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
    /// Add 1 to account `id`'s balance and its resources': load the tree,
    /// change it, save it with the proof.
    #[hierlocked(user = user_id, account = id)]
    async fn bump_protected(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        id: i64,
    ) -> hierlock::Result<()> {
        let tree = account::Entity::load()
            .filter(account::Column::Id.eq(id))
            .with(resource::Entity)
            .one(lock.txn())
            .await?
            .ok_or_else(|| missing(id))?;
        let mut am = account::NestedActiveModel::from(tree);
        am.balance = Set(am.balance.as_ref() + 1);
        for child in am.resources.as_mut_vec() {
            child.balance = Set(child.balance.as_ref() + 1);
        }
        am.save(&lock).await?;
        Ok(())
    }

    /// [`Repo::bump_protected`] through the plain entities: the same lock,
    /// the same load, SeaORM's own nested save on the same transaction.
    #[hierlocked(user = user_id, account = id)]
    async fn bump_plain(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        id: i64,
    ) -> hierlock::Result<()> {
        let tree = plain::account::Entity::load()
            .filter(plain::account::Column::Id.eq(id))
            .with(plain::resource::Entity)
            .one(lock.txn())
            .await?
            .ok_or_else(|| missing(id))?;
        let mut am = plain::account::ActiveModelEx::from(tree);
        am.balance = Set(am.balance.as_ref() + 1);
        for child in am.resources.as_mut_vec() {
            child.balance = Set(child.balance.as_ref() + 1);
        }
        // `txn` is the proof's transaction: the save commits with the lock.
        am.save(txn).await?;
        Ok(())
    }
}

fn missing(id: i64) -> DbErr {
    DbErr::RecordNotFound(format!("{ACCOUNTS} row {id}"))
}

/// Measure and print the two variants at 1 and 16 clients, the ratio, and
/// the statements each sends.
///
/// # Errors
/// Setting up or a transaction failed.
pub async fn run(bench: &Bench) -> Result<(), BoxError> {
    println!(
        "\n## Nested saves: an account and its two resources saved with the proof, against \
         SeaORM's own nested save under the same lock (txn/s, higher is better; ratios \
         against SeaORM's save)"
    );
    if bench.dialect == Dialect::Sqlite {
        println!("  skipped on SQLite: no row locks, every write takes the one database lock");
        return Ok(());
    }
    bench
        .ensure_table(
            ACCOUNTS,
            "id BIGINT NOT NULL PRIMARY KEY, user_id BIGINT NOT NULL, balance BIGINT NOT NULL",
            |id| format!("({id}, {}, 0)", id / 100),
        )
        .await?;
    // Two resources per account: the table is filled with two rows per
    // id (and so refilled on each run, its count not being `ROWS`).
    bench
        .ensure_table(
            RESOURCES,
            "id BIGINT NOT NULL PRIMARY KEY, user_id BIGINT NOT NULL, \
             account_id BIGINT NOT NULL, balance BIGINT NOT NULL",
            |id| {
                format!(
                    "({}, {}, {id}, 0), ({}, {}, {id}, 0)",
                    2 * id,
                    id / 100,
                    2 * id + 1,
                    id / 100
                )
            },
        )
        .await?;
    let index = format!("CREATE INDEX hlbench_nested_by_account ON {RESOURCES} (account_id)");
    // Already there on a second run.
    let _ = bench.exec(&index).await;
    let config = bench.lock_config()?;
    Provision::new(config.clone()).run(&bench.db).await?;
    let repo = Repo {
        locker: Locker::connect(&bench.db, config).await?,
    };
    let shared = Arc::new(repo.clone());
    let db = bench.db.clone();
    let tables = at_1_and_16_clients(
        bench,
        Variant::ALL.map(Variant::name),
        async |i, clients, txns| {
            let shared = Arc::clone(&shared);
            let db = db.clone();
            clients_throughput(clients, txns, move |row| {
                let shared = Arc::clone(&shared);
                let db = db.clone();
                async move { transaction(&shared, &db, Variant::ALL[i], row).await }
            })
            .await
        },
    )
    .await?;
    println!("  protected nested save, txn/s ratio of the medians [range of the per-rep ratios]:");
    for (clients, table) in &tables {
        let (of_medians, per_rep) = table.ratio_to(1, 0);
        println!(
            "    {clients:>2} client(s): / SeaORM's nested save {of_medians:.2}× [{:.2}–{:.2}]",
            per_rep.min, per_rep.max
        );
    }
    alternated(bench, &repo).await?;
    print_statements(bench, &repo).await
}

/// The two alternated transaction by transaction at 1 client (A B B A):
/// the ratio of the median latencies.
async fn alternated(bench: &Bench, repo: &Repo) -> Result<(), BoxError> {
    let per_variant: usize = if bench.quick { 300 } else { 3000 };
    let mut latencies = [Vec::new(), Vec::new()];
    for i in 0..2 * per_variant {
        let which = i.div_ceil(2) % 2;
        let row = i as i64 % ROWS_PER_CLIENT;
        let start = Instant::now();
        transaction(repo, &bench.db, Variant::ALL[which], row).await?;
        latencies[which].push(start.elapsed().as_secs_f64() * 1e6);
    }
    let [seaorm, protected] = latencies.map(|samples| Spread::of(&samples).median);
    println!(
        "  1 client, the two alternated transaction by transaction ({per_variant} each), \
         median latency: SeaORM's nested save {seaorm:.0} µs, protected {protected:.0} µs, \
         protected / SeaORM's {:.3}× in throughput terms",
        seaorm / protected
    );
    Ok(())
}

/// Statements per transaction: the server's counters where it has them,
/// and the client's own count on every server.
async fn print_statements(bench: &Bench, repo: &Repo) -> Result<(), BoxError> {
    let row = |i: u64| i as i64 % ROWS_PER_CLIENT;
    if bench.dialect.is_mysql_family() {
        counters::print_header(bench, "an account and its two resources");
        for variant in Variant::ALL {
            let counted = counters::per_txn(bench, 200, async |db, i| {
                transaction(repo, db, variant, row(i)).await
            })
            .await?;
            if let Some(counted) = counted {
                println!("    {:<56} {}", variant.name(), counted.describe());
            }
        }
    }
    println!(
        "  statements per transaction between BEGIN and COMMIT, a client-side count \
         (SeaORM's metric callback; BEGIN, COMMIT and savepoints do not pass through it), \
         and the last transaction's statements:"
    );
    for variant in Variant::ALL {
        let counted = counters::client_per_txn(bench, 200, async |db, i| {
            transaction(repo, db, variant, row(i)).await
        })
        .await?;
        println!("    {:<56} {}", variant.name(), counted.describe());
    }
    Ok(())
}

/// One transaction saving account `row`'s tree the variant's way.
async fn transaction(
    repo: &Repo,
    db: &DatabaseConnection,
    variant: Variant,
    row: i64,
) -> Result<(), BoxError> {
    let txn = db.begin().await?;
    match variant {
        Variant::SeaOrm => repo.bump_plain(&txn, row / 100, row).await?,
        Variant::Protected => repo.bump_protected(&txn, row / 100, row).await?,
    }
    txn.commit().await?;
    Ok(())
}
