//! The benchmark behind `cargo run --release -p hierlock-examples --example bench`:
//! hierlock against what a user would write instead, measured in the same
//! run on the same server. `BENCHMARKS.md` describes the workloads and one
//! run's figures.
//!
//! One module per workload; [`stats`] interleaves variants and summarises
//! them, [`counters`] reads the server's own statement counters (or counts
//! what the client sends), [`cpu`] the CPU time clients and server spend.

pub mod contended;
pub mod counters;
pub mod cpu;
pub mod false_conflicts;
pub mod nested;
pub mod provision;
pub mod recipe;
pub mod rng;
pub mod scale;
pub mod shapes;
pub mod stats;
pub mod subtree;
pub mod uncontended;
pub mod versions;
pub mod zipf;

use hierlock::{Config, Dialect, PostgresLocks};
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbBackend, Statement, Value,
};

/// Every error of the benchmark: it reports and stops.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The bucket table the lock workloads share: 100,000 buckets per level,
/// enough for the largest plan (30,000 locks) to take distinct rows.
pub const LOCK_TABLE: &str = "hlbench_buckets";
/// Its buckets per level.
pub const LOCK_BUCKETS: u32 = 100_000;
/// The business rows the transactions update: `id`, `balance`.
pub const ROWS_TABLE: &str = "hlbench_rows";
/// How many business rows there are.
pub const ROWS: i64 = 20_000;

/// What every workload needs: the server, how to reach it, how long to run.
#[derive(Clone)]
pub struct Bench {
    /// A pool large enough for the most concurrent workload (32 workers).
    pub db: DatabaseConnection,
    /// The URL, to open single-connection pools for counting statements.
    pub url: String,
    /// The server's kind.
    pub dialect: Dialect,
    /// Interleaved repetitions of each workload.
    pub reps: usize,
    /// Short runs, for development.
    pub quick: bool,
    /// On PostgreSQL: advisory locks or the bucket table.
    pub postgres_locks: PostgresLocks,
}

impl Bench {
    /// Connect with a pool of 40 connections (the Zipf workload runs 32
    /// workers) and detect the server.
    ///
    /// # Errors
    /// The connection or the detection failed.
    pub async fn connect(
        url: &str,
        reps: usize,
        quick: bool,
        postgres_locks: PostgresLocks,
    ) -> Result<Bench, BoxError> {
        let db = connect_pool(url, 40).await?;
        let dialect = Dialect::detect(&db).await?;
        Ok(Bench {
            db,
            url: url.to_owned(),
            dialect,
            reps: reps.max(1),
            quick,
            postgres_locks,
        })
    }

    /// The lock workloads' configuration: [`LOCK_TABLE`], [`LOCK_BUCKETS`].
    ///
    /// # Errors
    /// Never, for these constants; typed for `?`.
    pub fn lock_config(&self) -> Result<Config, BoxError> {
        Ok(Config::default()
            .with_table(LOCK_TABLE)?
            .with_bucket_space(LOCK_BUCKETS)?
            .with_postgres_locks(self.postgres_locks))
    }

    /// A statement with `values` bound; `?` placeholders are rewritten to
    /// `$n` on PostgreSQL. Every workload binds its values as hierlock does:
    /// parameterless statements take another path in the MySQL driver.
    pub fn stmt(&self, sql: &str, values: impl IntoIterator<Item = Value>) -> Statement {
        let backend = self.dialect.backend();
        let sql = if backend == DbBackend::Postgres {
            let mut out = String::with_capacity(sql.len() + 8);
            let mut n = 0;
            for c in sql.chars() {
                if c == '?' {
                    n += 1;
                    out.push_str(&format!("${n}"));
                } else {
                    out.push(c);
                }
            }
            out
        } else {
            sql.to_owned()
        };
        Statement::from_sql_and_values(backend, sql, values)
    }

    /// Run `sql` (no parameters) on the pool.
    ///
    /// # Errors
    /// The statement failed.
    pub async fn exec(&self, sql: &str) -> Result<(), BoxError> {
        self.db
            .execute_raw(Statement::from_string(self.dialect.backend(), sql))
            .await?;
        Ok(())
    }

    /// Create (once) and fill the business table `id, balance`, [`ROWS`] rows.
    ///
    /// # Errors
    /// A statement failed.
    pub async fn ensure_rows(&self) -> Result<(), BoxError> {
        self.ensure_table(
            ROWS_TABLE,
            "id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL",
            |id| format!("({id}, 0)"),
        )
        .await
    }

    /// Create `table` with `columns` (SQL column definitions, `id` the
    /// primary key) if it does not exist, and unless it has [`ROWS`] rows
    /// already, fill it afresh: row `id` is `values(id)`, a parenthesised
    /// tuple in the columns' order. Every workload's table is filled the
    /// same way, 1000 rows per statement.
    ///
    /// # Errors
    /// A statement failed.
    pub async fn ensure_table(
        &self,
        table: &str,
        columns: &str,
        values: impl Fn(i64) -> String,
    ) -> Result<(), BoxError> {
        let engine = if self.dialect.is_mysql_family() {
            " ENGINE=InnoDB"
        } else {
            ""
        };
        self.exec(&format!(
            "CREATE TABLE IF NOT EXISTS {table} ({columns}){engine}"
        ))
        .await?;
        let count = self
            .db
            .query_one_raw(Statement::from_string(
                self.dialect.backend(),
                format!("SELECT COUNT(*) AS n FROM {table}"),
            ))
            .await?
            .map(|row| row.try_get::<i64>("", "n"))
            .transpose()?
            .unwrap_or(0);
        if count != ROWS {
            self.exec(&format!("DELETE FROM {table}")).await?;
            for start in (0..ROWS).step_by(1000) {
                let rows: Vec<String> = (start..(start + 1000).min(ROWS)).map(&values).collect();
                self.exec(&format!("INSERT INTO {table} VALUES {}", rows.join(", ")))
                    .await?;
            }
        }
        Ok(())
    }
}

/// A pool of at most `size` connections to `url`, quiet (no statement logs).
///
/// # Errors
/// The connection failed.
pub async fn connect_pool(url: &str, size: u32) -> Result<DatabaseConnection, BoxError> {
    let mut options = ConnectOptions::new(url);
    options
        .max_connections(size)
        .min_connections(1)
        .sqlx_logging(false);
    Ok(Database::connect(options).await?)
}

/// Print the server, its settings that matter here, and the run's shape.
///
/// # Errors
/// The server could not be asked.
pub async fn print_header(bench: &Bench) -> Result<(), BoxError> {
    let sql = match bench.dialect {
        Dialect::Postgres => {
            "SELECT version() || ', shared_buffers ' || current_setting('shared_buffers') \
             || ', max_locks_per_transaction ' || current_setting('max_locks_per_transaction') \
             || ', max_connections ' || current_setting('max_connections') AS about"
        }
        Dialect::Sqlite => "SELECT 'SQLite ' || sqlite_version() AS about",
        _ => {
            "SELECT CONCAT(VERSION(), ', innodb_buffer_pool_size ', @@innodb_buffer_pool_size, \
             ', innodb_flush_log_at_trx_commit ', @@innodb_flush_log_at_trx_commit) AS about"
        }
    };
    let about: String = bench
        .db
        .query_one_raw(Statement::from_string(bench.dialect.backend(), sql))
        .await?
        .ok_or("the server did not say what it is")?
        .try_get("", "about")?;
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!("# hierlock bench: {:?} ({about})", bench.dialect);
    println!(
        "{cores} cores; {} reps{}; PostgreSQL locks: {:?}",
        bench.reps,
        if bench.quick { ", quick" } else { "" },
        bench.postgres_locks
    );
    Ok(())
}
