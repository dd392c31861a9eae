//! hierlock against what a user would write instead, measured side by side
//! in one run: interleaved variants, several repetitions, each figure's
//! median and [min–max], ratios to the baseline of the same repetition, and
//! statements counted by the server's own counters. `BENCHMARKS.md` has one
//! run's figures and how to read them.
//!
//! ```sh
//! cargo run --release -p hierlock-examples --example bench -- \
//!     --database-url mysql://root@127.0.0.1:3306/test            # everything, 3 reps
//! cargo run --release -p hierlock-examples --example bench -- \
//!     --database-url postgres://postgres@127.0.0.1:5432/test --postgres-locks bucket-table \
//!     --workload scale --quick                                    # one workload, short
//! ```
//!
//! Workloads: `uncontended` (a Resource write against `SELECT … FOR UPDATE`,
//! 1 and 16 clients), `shapes` (the same transaction with other lock
//! statement shapes, MySQL family), `zipf` (32 workers on Zipf-distributed rows against
//! `FOR UPDATE` per row and per-ID lock rows), `contended` (the same draw as
//! a read-check-write against `FOR UPDATE` per row and hierlock's statement
//! sent by hand, with each transaction's wait, hold, CPU and statements),
//! `scale` (N locks in one
//! call), `provision` (hierlock-migration against the seed's
//! `INSERT … SELECT`), `subtree` (subtree reads against an exclusive
//! account lock under a mixed workload, the stripes' cost to writes and
//! reads), `versions` (optimistic versions: `exec_versioned` against a
//! plain `UPDATE`, a lock and the floor, and two edits from one version
//! against a lock held across read-modify-write), `recipe` (the main
//! recipe, a `#[hierlocked]` method writing a `#[protected]` entity with
//! `exec(&lock)`, against SeaORM's own `am.update` under the same lock and
//! the floor, 1 and 16 clients), `nested` (a nested save of a dense entity,
//! an account and its resources, with the proof against SeaORM's own nested
//! save under the same lock, 1 and 16 clients), `false-conflicts`
//! (bucket collisions against the birthday bound; no server needed). The
//! tables it creates are named `hlbench_*`.

use clap::{Parser, ValueEnum};
use hierlock::PostgresLocks;
use hierlock_examples::bench::{self, Bench, BoxError, contended};

#[derive(Parser)]
struct Args {
    /// The server to measure (MySQL, MariaDB, PostgreSQL or SQLite).
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "mysql://root@127.0.0.1:3306/test"
    )]
    database_url: String,
    /// What to measure.
    #[arg(long, value_enum, default_value = "all")]
    workload: Workload,
    /// Interleaved repetitions of each workload.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Short runs (a couple of minutes in all), for development.
    #[arg(long)]
    quick: bool,
    /// Provision the seed's full 10^7 buckets per level (3×10^7 rows, about
    /// a minute per run) instead of 10^6.
    #[arg(long)]
    provision_full: bool,
    /// Buckets per level of the `subtree` workload's tables (one per lock
    /// layout: 3× this many rows without stripes, 5× with).
    #[arg(long, default_value_t = 10_000)]
    subtree_space: u32,
    /// The `contended` workload's variants to measure besides `FOR UPDATE`,
    /// comma-separated (default: every one the server supports).
    #[arg(long, value_enum, value_delimiter = ',')]
    variants: Option<Vec<contended::Variant>>,
    /// Transactions per sample of the `contended` workload (default 3,000;
    /// 400 with `--quick`); at least one per worker (32).
    #[arg(long, value_parser = clap::value_parser!(u64).range(32..))]
    transactions: Option<u64>,
    /// On PostgreSQL: `advisory` locks (the default) or the `bucket-table`.
    #[arg(long, value_enum, default_value = "advisory")]
    postgres_locks: PgLocks,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Workload {
    Uncontended,
    Shapes,
    Zipf,
    Contended,
    Scale,
    Provision,
    Subtree,
    Versions,
    Recipe,
    Nested,
    FalseConflicts,
    All,
}

#[derive(Clone, Copy, ValueEnum)]
enum PgLocks {
    Advisory,
    BucketTable,
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    let runs = |w: Workload| args.workload == w || args.workload == Workload::All;
    if args.workload == Workload::FalseConflicts {
        bench::false_conflicts::run(args.quick);
        return Ok(());
    }
    let postgres_locks = match args.postgres_locks {
        PgLocks::Advisory => PostgresLocks::Advisory {
            namespace: hierlock::DEFAULT_ADVISORY_NAMESPACE,
        },
        PgLocks::BucketTable => PostgresLocks::BucketTable,
    };
    let bench = Bench::connect(&args.database_url, args.reps, args.quick, postgres_locks).await?;
    bench::print_header(&bench).await?;
    if runs(Workload::Uncontended) {
        bench::uncontended::run(&bench).await?;
    }
    if runs(Workload::Shapes) {
        bench::shapes::run(&bench).await?;
    }
    if runs(Workload::Zipf) {
        bench::zipf::run(&bench).await?;
    }
    if runs(Workload::Contended) {
        let options = contended::Options {
            variants: args.variants.clone(),
            transactions: args.transactions,
        };
        contended::run(&bench, &options).await?;
    }
    if runs(Workload::Scale) {
        bench::scale::run(&bench).await?;
    }
    if runs(Workload::Provision) {
        let space = if args.provision_full {
            10_000_000
        } else {
            1_000_000
        };
        bench::provision::run(&bench, space).await?;
    }
    if runs(Workload::Subtree) {
        bench::subtree::run(&bench, args.subtree_space).await?;
    }
    if runs(Workload::Versions) {
        bench::versions::run(&bench).await?;
    }
    if runs(Workload::Recipe) {
        bench::recipe::run(&bench).await?;
    }
    if runs(Workload::Nested) {
        bench::nested::run(&bench).await?;
    }
    if runs(Workload::FalseConflicts) {
        bench::false_conflicts::run(args.quick);
    }
    Ok(())
}
