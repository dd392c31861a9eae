//! The resumable fill of the bucket table.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::{StreamExt, stream};
use hierlock::schema::{self, Metadata};
use hierlock::{Config, Dialect, Error, PostgresLocks, Result, TxnState};
use sea_orm::{ConnectionTrait, DbErr, Statement};

use crate::LockStore;
use crate::sql::{self, Generator};

/// Rows per `INSERT` statement unless [`Provision::chunk_rows`] says
/// otherwise, or the server is MariaDB with its sequence engine
/// ([`SEQUENCE_ENGINE_CHUNK_ROWS`]). MySQL sorts each chunk's rows (in
/// memory up to about this many).
pub const DEFAULT_CHUNK_ROWS: u32 = 50_000;

/// Rows per `INSERT` statement on MariaDB with its sequence engine, unless
/// [`Provision::chunk_rows`] says otherwise: the rows come in order with no
/// sort, and fewer, bigger transactions (fewer round trips and commits) were
/// measured faster; an interruption loses at most one chunk.
pub const SEQUENCE_ENGINE_CHUNK_ROWS: u32 = 1_000_000;

/// Levels filled at the same time, unless [`Provision::concurrent_levels`]
/// says otherwise: each in flight holds one pooled connection. Three (the
/// seed layout's levels) took 0.54× the time of one at a time on MySQL 9.7
/// on 2 cores: a fill is bound by the server's CPU per row, which one
/// statement at a time leaves half idle.
pub const DEFAULT_CONCURRENT_LEVELS: usize = 3;

/// Creates and fills the bucket table for one [`Config`].
///
/// ```no_run
/// # async fn provision(db: &sea_orm::DatabaseConnection) -> hierlock::Result<()> {
/// use hierlock::Config;
/// use hierlock_migration::Provision;
///
/// let config = Config::default().with_bucket_space(1_000_000)?;
/// let report = Provision::new(config).run(db).await?;
/// println!("{} rows inserted, {} were already there", report.inserted, report.resumed_from);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Provision {
    config: Config,
    /// `None`: the server's default ([`DEFAULT_CHUNK_ROWS`] or
    /// [`SEQUENCE_ENGINE_CHUNK_ROWS`]).
    chunk_rows: Option<u32>,
    /// Levels filled at the same time (at least 1).
    concurrent_levels: usize,
}

/// What a provisioning run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// How the server keeps locks, so what was provisioned: bucket rows
    /// ([`LockStore::BucketTable`]), nothing (PostgreSQL's advisory locks),
    /// or only the metadata row (SQLite).
    pub store: LockStore,
    /// Bucket rows this run inserted.
    pub inserted: u64,
    /// Bucket rows the table holds when complete: 3 × the bucket space, 5 ×
    /// with subtree reads (the users' and accounts' stripe levels); 0 where
    /// there is no bucket table (SQLite, PostgreSQL's advisory locks).
    pub total_rows: u64,
    /// Bucket rows that were already there when this run started (from an
    /// earlier, possibly interrupted, run).
    pub resumed_from: u64,
}

/// How far a provisioning run has got, passed to the callback of
/// [`Provision::run_with_progress`].
#[derive(Debug, Clone)]
pub struct Progress {
    /// The bucket table level being filled (0–2: users, accounts,
    /// resources; 3–4: their stripes, with subtree reads): see
    /// [`hierlock::schema::level_name`].
    pub level: u8,
    /// Bucket rows of all levels known to be there, the ones found at the
    /// start included.
    pub rows_done: u64,
    /// Bucket rows of all levels when complete: 3 × the bucket space (5 ×
    /// with subtree reads).
    pub rows_total: u64,
    /// Bucket rows that were already there when this run started: not part
    /// of this run's rate.
    pub resumed_from: u64,
}

impl Progress {
    /// Rows this run inserted per second, `elapsed` after it started (rows
    /// found already there do not count). `None` before the first insert.
    pub fn rows_per_second(&self, elapsed: Duration) -> Option<f64> {
        let inserted = self.rows_done.saturating_sub(self.resumed_from);
        let seconds = elapsed.as_secs_f64();
        (inserted > 0 && seconds > 0.0).then(|| inserted as f64 / seconds)
    }

    /// The time left at this run's rate so far (see
    /// [`Progress::rows_per_second`]). `None` until there is a rate.
    pub fn eta(&self, elapsed: Duration) -> Option<Duration> {
        let rate = self.rows_per_second(elapsed)?;
        let left = self.rows_total.saturating_sub(self.rows_done);
        Some(Duration::from_secs_f64(left as f64 / rate))
    }
}

impl Provision {
    /// Provision the table that `config` names, for its key scheme and bucket
    /// space, inserting [`DEFAULT_CHUNK_ROWS`] rows per statement
    /// ([`SEQUENCE_ENGINE_CHUNK_ROWS`] on MariaDB with its sequence engine).
    pub fn new(config: Config) -> Self {
        Provision {
            config,
            chunk_rows: None,
            concurrent_levels: DEFAULT_CONCURRENT_LEVELS,
        }
    }

    /// Fill at most `levels` levels at the same time (at least 1; default
    /// [`DEFAULT_CONCURRENT_LEVELS`]), each on a connection of its own from
    /// the pool `run` is given: one statement per level in flight. Give the
    /// pool at least as many connections, or the levels wait for one
    /// (within the pool's acquire timeout); on a single connection or a
    /// transaction they take turns. 1 fills one level after the other.
    pub fn concurrent_levels(mut self, levels: usize) -> Self {
        self.concurrent_levels = levels;
        self
    }

    /// Insert `rows` rows per statement (at least 1). Each statement commits
    /// on its own, so this is also how much an interruption can lose.
    pub fn chunk_rows(mut self, rows: u32) -> Self {
        self.chunk_rows = Some(rows);
        self
    }

    /// The configuration being provisioned.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Create the tables, write or check the metadata row, insert every
    /// missing bucket row, and mark the table complete.
    ///
    /// Safe to run again at any time: it resumes where an interrupted run
    /// stopped, and does nothing but check when the table is complete.
    ///
    /// # Errors
    /// - [`Error::InvalidConfig`]: `chunk_rows` or `concurrent_levels` is 0,
    ///   or the backend is not supported.
    /// - [`Error::ConfigMismatch`]: the table was provisioned for another key
    ///   scheme or bucket space; nothing was changed.
    /// - [`Error::Database`]: a statement failed; the rows committed so far stay,
    ///   and running again resumes from them.
    pub async fn run(&self, db: &impl ConnectionTrait) -> Result<Report> {
        self.run_with_progress(db, |_| {}).await
    }

    /// [`Provision::run`], calling `on_progress` once before the first insert
    /// (with the rows found already there) and again after every insert
    /// statement. `rows_done` never decreases, and reaches `rows_total` when
    /// the table is complete (short of it only if another run inserted some
    /// of the rows at the same time: each run counts its own inserts).
    ///
    /// # Errors
    /// As [`Provision::run`].
    pub async fn run_with_progress(
        &self,
        db: &impl ConnectionTrait,
        on_progress: impl FnMut(&Progress),
    ) -> Result<Report> {
        if self.chunk_rows == Some(0) {
            return Err(Error::InvalidConfig(
                "chunk_rows must be at least 1 row per statement".into(),
            ));
        }
        if self.concurrent_levels == 0 {
            return Err(Error::InvalidConfig(
                "concurrent_levels must be at least 1 level at a time".into(),
            ));
        }
        let config = &self.config;
        let table = config.table();
        let dialect = Dialect::detect(db).await?;
        if dialect == Dialect::Sqlite {
            // One database-wide write lock: no buckets, only the metadata row.
            schema::ensure_sqlite(db, config).await?;
            tracing::info!(table = %table, "hierlock on SQLite needs no bucket rows; metadata ready");
            return Ok(Report {
                store: LockStore::SqliteWriteLock,
                inserted: 0,
                total_rows: 0,
                resumed_from: 0,
            });
        }
        if dialect == Dialect::Postgres && config.postgres_locks() != PostgresLocks::BucketTable {
            // Advisory locks need no table: filling 3×10^7 rows nobody reads
            // would only cost minutes and a gigabyte.
            tracing::info!(
                table = %table,
                "hierlock on PostgreSQL uses advisory locks by default; no bucket table to provision \
                 (configure PostgresLocks::BucketTable to use one)"
            );
            return Ok(Report {
                store: LockStore::Advisory,
                inserted: 0,
                total_rows: 0,
                resumed_from: 0,
            });
        }

        let create = [
            (
                schema::create_bucket_table(dialect, config),
                table.to_string(),
            ),
            (schema::create_meta_table(dialect, config), table.meta()),
        ];
        for (sql, name) in create {
            execute(db, Statement::from_string(dialect.backend(), sql), || {
                format!("creating table `{name}`")
            })
            .await?;
        }
        let complete = self.claim_metadata(db, dialect).await?.complete;
        let generator = generator(db, dialect).await?;
        let chunk_rows = self.chunk_rows.unwrap_or(match generator {
            Generator::SequenceEngine => SEQUENCE_ENGINE_CHUNK_ROWS,
            Generator::GenerateSeries | Generator::DigitCrossJoin => DEFAULT_CHUNK_ROWS,
        });

        let space = config.bucket_space();
        let levels = config.table_levels();
        let rows_total = levels.len() as u64 * u64::from(space);
        let mut starts = Vec::with_capacity(levels.len());
        let mut resumed_from = 0;
        for level in levels.clone() {
            let (present, start) = self.survey(db, dialect, level, complete).await?;
            starts.push(start);
            resumed_from += present;
        }
        tracing::info!(
            table = %table, bucket_space = space, rows_total, resumed_from,
            "provisioning hierlock's bucket table"
        );

        // Shared by the levels' futures, which run in this one task (the
        // atomics and the mutex only keep the future `Send`).
        let rows_done = AtomicU64::new(resumed_from);
        let on_progress = Mutex::new(on_progress);
        let report = |progress: Progress| {
            let mut on_progress = on_progress.lock().unwrap_or_else(|e| e.into_inner());
            on_progress(&progress);
        };
        report(Progress {
            level: 0,
            rows_done: resumed_from,
            rows_total,
            resumed_from,
        });
        // Up to `concurrent_levels` levels are filled side by side, each in
        // ascending chunks, so that each stays a prefix (what a rerun
        // resumes from). After a failure no level starts another chunk; the
        // chunks in flight end, committed, before the error is returned.
        let failed = AtomicBool::new(false);
        let fill_level = async |level: u8, start: u32| -> Result<()> {
            let mut from = start;
            while from < space && !failed.load(Ordering::Relaxed) {
                let to = from.saturating_add(chunk_rows).min(space);
                let stmt = sql::fill_chunk(generator, table, level, from, to);
                let done = execute(db, stmt, || {
                    let name = schema::level_name(level);
                    format!(
                        "inserting buckets {from}..{to} of level {level} ({name}) into `{table}`"
                    )
                })
                .await
                .inspect_err(|_| failed.store(true, Ordering::Relaxed))?;
                report(Progress {
                    level,
                    rows_done: rows_done.fetch_add(done, Ordering::Relaxed) + done,
                    rows_total,
                    resumed_from,
                });
                from = to;
            }
            Ok(())
        };
        let outcomes: Vec<Result<()>> = stream::iter(levels.zip(starts))
            .map(|(level, start)| fill_level(level, start))
            .buffer_unordered(self.concurrent_levels)
            .collect()
            .await;
        outcomes.into_iter().collect::<Result<()>>()?;
        let rows_done = rows_done.into_inner();

        execute(db, sql::mark_complete(dialect, table), || {
            format!("marking `{}` complete", table.meta())
        })
        .await?;
        let inserted = rows_done - resumed_from;
        tracing::info!(table = %table, inserted, resumed_from, "hierlock's bucket table is complete");
        Ok(Report {
            store: LockStore::BucketTable,
            inserted,
            total_rows: rows_total,
            resumed_from,
        })
    }

    /// Write the metadata row unless there is one, then check that the row
    /// there describes this configuration. Returns that row.
    async fn claim_metadata(
        &self,
        db: &impl ConnectionTrait,
        dialect: Dialect,
    ) -> Result<Metadata> {
        let config = &self.config;
        let meta = config.table().meta();
        execute(db, sql::insert_metadata(dialect, config), || {
            format!("writing the metadata row of `{meta}`")
        })
        .await?;
        let Some(found) = schema::read_metadata(db, dialect, config).await? else {
            return Err(Error::NotProvisioned {
                what: format!("metadata row of `{meta}` (written, but not found again)"),
                row: None,
                txn_state: TxnState::Unchanged,
            });
        };
        found.check_describes(config)?;
        Ok(found)
    }

    /// How many of `level`'s bucket rows are there, and the bucket to fill from.
    ///
    /// Chunks are inserted in ascending order, each committed whole, so after
    /// an interruption the rows form a prefix `0..=highest` and the fill goes
    /// on after it. The rows are counted to make sure (a few seconds for ten
    /// million), except on a table marked complete whose highest bucket is
    /// there: a rerun on a complete table costs three index look-ups. Rows
    /// missing inside the prefix (deleted by hand) make the fill start over
    /// at 0, skipping the rows that are there.
    async fn survey(
        &self,
        db: &impl ConnectionTrait,
        dialect: Dialect,
        level: u8,
        complete: bool,
    ) -> Result<(u64, u32)> {
        let table = self.config.table();
        let space = self.config.bucket_space();
        let doing = || {
            let name = schema::level_name(level);
            format!("counting the buckets of level {level} ({name}) in `{table}`")
        };
        let highest = query_int(
            db,
            sql::highest_bucket(dialect, table, level, space),
            "highest",
        )
        .await
        .map_err(|e| database(doing(), e))?;
        let Some(highest) = highest.and_then(|h| u32::try_from(h).ok()) else {
            return Ok((0, 0));
        };
        if complete && highest + 1 == space {
            return Ok((u64::from(space), space));
        }
        let present = query_int(
            db,
            sql::count_buckets(dialect, table, level, space),
            "present",
        )
        .await
        .map_err(|e| database(doing(), e))?
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(0);
        if u64::from(highest) + 1 == present {
            return Ok((present, highest + 1));
        }
        tracing::warn!(
            table = %table, %level, present, highest,
            "bucket rows are missing below the highest one; filling the level from 0"
        );
        Ok((present, 0))
    }
}

/// The fastest generator of ordered numbers the server has.
async fn generator(db: &impl ConnectionTrait, dialect: Dialect) -> Result<Generator> {
    Ok(match dialect {
        Dialect::Postgres => Generator::GenerateSeries,
        Dialect::MariaDb => {
            let stmt = Statement::from_string(dialect.backend(), sql::sequence_engine_available());
            let found = query_int(db, stmt, "n")
                .await
                .map_err(|e| database("looking for MariaDB's sequence engine".into(), e))?;
            if found.unwrap_or(0) > 0 {
                Generator::SequenceEngine
            } else {
                Generator::DigitCrossJoin
            }
        }
        _ => Generator::DigitCrossJoin,
    })
}

/// The one integer column `column` of the one row `stmt` returns (`None` for NULL).
async fn query_int(
    db: &impl ConnectionTrait,
    stmt: Statement,
    column: &str,
) -> Result<Option<i64>, DbErr> {
    match db.query_one_raw(stmt).await? {
        Some(row) => row.try_get::<Option<i64>>("", column),
        None => Ok(None),
    }
}

/// Run `stmt`, returning the rows it affected.
async fn execute(
    db: &impl ConnectionTrait,
    stmt: Statement,
    doing: impl FnOnce() -> String,
) -> Result<u64> {
    db.execute_raw(stmt)
        .await
        .map(|done| done.rows_affected())
        .map_err(|e| database(doing(), e))
}

fn database(doing: String, source: DbErr) -> Error {
    Error::database(doing, source)
}
