//! What an operator asks of a database before trusting it with locks:
//! [`verify`] (is the bucket table complete and the server fit for locks?)
//! and [`status`] (what is this server, how are locks kept, and how big is
//! the table against the server's memory?).

use std::fmt;

use hierlock::sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};
use hierlock::{Config, Dialect, Locker, PostgresLocks, Topology};

use serde::{Serialize, Serializer};

use crate::sql::quote;

/// How a server keeps hierlock's locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LockStore {
    /// Row locks on the bucket table.
    BucketTable,
    /// PostgreSQL transaction-scoped advisory locks.
    Advisory,
    /// SQLite's database-wide write lock.
    SqliteWriteLock,
}

impl fmt::Display for LockStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LockStore::BucketTable => "row locks on the bucket table",
            LockStore::Advisory => "transaction-scoped advisory locks (no table)",
            LockStore::SqliteWriteLock => "SQLite's database-wide write lock (coarse)",
        })
    }
}

/// The outcome of [`verify`]: everything a locker needs is there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verification {
    /// The server.
    #[serde(serialize_with = "debug_json")]
    pub dialect: Dialect,
    /// The deployment, as `Locker::connect` judged it.
    #[serde(serialize_with = "display_json")]
    pub topology: Topology,
    /// How locks are kept.
    pub store: LockStore,
    /// Bucket rows found per table level (user, account, resource, and
    /// with subtree reads user stripes, account stripes), where the locks are
    /// rows of the bucket table.
    pub rows_per_level: Option<Vec<u64>>,
    /// The bucket space: the rows each level must have.
    pub bucket_space: u32,
}

impl fmt::Display for Verification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "server:   {}", self.dialect)?;
        writeln!(f, "topology: {}", self.topology)?;
        writeln!(f, "locks:    {}", self.store)?;
        match &self.rows_per_level {
            Some(rows) => {
                let counts: Vec<String> = rows.iter().map(u64::to_string).collect();
                let names: Vec<&str> = (0..rows.len())
                    .map(|level| hierlock::schema::level_name(level as u8))
                    .collect();
                write!(
                    f,
                    "table:    complete: {} rows ({}), {} buckets per level",
                    counts.join(" / "),
                    names.join(" / "),
                    self.bucket_space
                )
            }
            None => write!(f, "table:    not needed"),
        }
    }
}

/// Check that `db` is fit for lockers configured with `config`: the server's
/// topology (refused where locks would not exclude), the bucket table's
/// metadata (scheme, bucket space, provisioning finished) and every bucket
/// row of every level.
///
/// # Errors
/// The typed errors of [`Locker::connect`] (`UnsafeTopology`,
/// `NotProvisioned`, `ConfigMismatch`); [`hierlock::Error::NotProvisioned`]
/// naming the level whose rows are missing.
pub async fn verify(db: &DatabaseConnection, config: &Config) -> hierlock::Result<Verification> {
    let locker = Locker::connect(db, config.clone()).await?;
    let store = store_of(&locker);
    let rows_per_level = match store {
        LockStore::BucketTable => Some(count_rows(db, locker.dialect(), config).await?),
        _ => None,
    };
    let space = u64::from(config.bucket_space());
    if let Some(rows) = &rows_per_level {
        for (level, &found) in config.table_levels().zip(rows) {
            if found != space {
                return Err(hierlock::Error::NotProvisioned {
                    what: format!(
                        "level {level} ({}) of `{}` ({found} of {space} bucket rows)",
                        hierlock::schema::level_name(level),
                        config.table()
                    ),
                    row: None,
                    txn_state: hierlock::TxnState::Unchanged,
                });
            }
        }
    }
    Ok(Verification {
        dialect: locker.dialect(),
        topology: locker.topology(),
        store,
        rows_per_level,
        bucket_space: config.bucket_space(),
    })
}

fn store_of(locker: &Locker) -> LockStore {
    match (locker.dialect(), locker.config().postgres_locks()) {
        (Dialect::Sqlite, _) => LockStore::SqliteWriteLock,
        (Dialect::Postgres, PostgresLocks::Advisory { .. }) => LockStore::Advisory,
        _ => LockStore::BucketTable,
    }
}

async fn count_rows(
    db: &DatabaseConnection,
    dialect: Dialect,
    config: &Config,
) -> hierlock::Result<Vec<u64>> {
    let int = if dialect.is_mysql_family() {
        "SIGNED"
    } else {
        "BIGINT"
    };
    let sql = format!(
        "SELECT CAST(level AS {int}) AS level, CAST(COUNT(*) AS {int}) AS n FROM {} GROUP BY level",
        quote(dialect, config.table().as_str())
    );
    let rows = db
        .query_all_raw(Statement::from_string(dialect.backend(), sql))
        .await
        .map_err(|e| hierlock::Error::database("counting the bucket rows", e))?;
    let mut counts = vec![0u64; config.table_levels().len()];
    for row in rows {
        let read = |column| {
            row.try_get::<i64>("", column)
                .map_err(|e| hierlock::Error::database("counting the bucket rows", e))
        };
        let (level, n) = (read("level")?, read("n")?);
        if let Some(slot) = usize::try_from(level).ok().and_then(|l| counts.get_mut(l)) {
            *slot = u64::try_from(n).unwrap_or(0);
        }
    }
    Ok(counts)
}

/// What [`status`] reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Status {
    /// The server.
    #[serde(serialize_with = "debug_json")]
    pub dialect: Dialect,
    /// What the server says it is (`SELECT VERSION()`).
    pub version: String,
    /// The deployment, as `Locker::connect` judged it.
    #[serde(serialize_with = "display_json")]
    pub topology: Topology,
    /// How locks are kept.
    pub store: LockStore,
    /// The bucket table's size on disk (data and indexes), where it is used.
    pub table_bytes: Option<u64>,
    /// The server's buffer cache: `innodb_buffer_pool_size`, or PostgreSQL's
    /// `shared_buffers`.
    pub cache_bytes: Option<u64>,
    /// PostgreSQL's advisory lock capacity: `max_locks_per_transaction` ×
    /// (`max_connections` + `max_prepared_transactions`).
    pub lock_table_slots: Option<u64>,
    /// PostgreSQL's streaming standbys, as `pg_stat_replication` shows them
    /// (a Patroni leader's replicas, say).
    pub replication: Option<Replication>,
    /// What to change, if anything.
    pub advice: Vec<String>,
}

/// The standbys a PostgreSQL primary streams to (`pg_stat_replication`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Replication {
    /// Standbys connected (streaming, or with their state hidden).
    pub standbys: u64,
    /// Those of them that are synchronous (`sync_state` `sync` or `quorum`);
    /// `None` when the user may not see `sync_state` (it needs
    /// `pg_read_all_stats` or `pg_monitor`).
    pub synchronous: Option<u64>,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "server:   {} ({})", self.dialect, self.version)?;
        writeln!(f, "topology: {}", self.topology)?;
        writeln!(f, "locks:    {}", self.store)?;
        if let Some(bytes) = self.table_bytes {
            writeln!(f, "table:    {}", mebibytes(bytes))?;
        }
        if let Some(bytes) = self.cache_bytes {
            writeln!(f, "cache:    {}", mebibytes(bytes))?;
        }
        if let Some(slots) = self.lock_table_slots {
            writeln!(
                f,
                "lock table: {slots} advisory locks at most, shared by all sessions"
            )?;
        }
        if let Some(r) = self.replication {
            match r.synchronous {
                Some(n) => writeln!(
                    f,
                    "replication: {} standby(s) streaming, {n} synchronous",
                    r.standbys
                )?,
                None => writeln!(
                    f,
                    "replication: {} standby(s) streaming (synchronous or not: not readable)",
                    r.standbys
                )?,
            }
        }
        for line in &self.advice {
            writeln!(f, "advice:   {line}")?;
        }
        Ok(())
    }
}

fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / 1_048_576.0)
}

/// Report on the server behind `db` for lockers configured with `config`.
///
/// # Errors
/// The typed errors of [`Locker::connect`]; [`hierlock::Error::Database`]
/// if the server cannot be asked.
pub async fn status(db: &DatabaseConnection, config: &Config) -> hierlock::Result<Status> {
    let locker = Locker::connect(db, config.clone()).await?;
    let dialect = locker.dialect();
    let store = store_of(&locker);
    let backend = dialect.backend();
    let version_sql = match dialect {
        Dialect::Sqlite => "SELECT sqlite_version() AS v",
        _ => "SELECT version() AS v",
    };
    let version = scalar::<String>(db, backend, version_sql.to_owned())
        .await?
        .unwrap_or_default();
    let table = config.table().as_str().to_owned();
    let (table_bytes, cache_bytes, lock_table_slots) = match dialect {
        Dialect::MySql | Dialect::MariaDb => (
            scalar::<i64>(
                db,
                backend,
                format!(
                    "SELECT CAST(DATA_LENGTH + INDEX_LENGTH AS SIGNED) AS v FROM information_schema.TABLES \
                     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{table}'"
                ),
            )
            .await?,
            scalar::<i64>(db, backend, "SELECT CAST(@@innodb_buffer_pool_size AS SIGNED) AS v".to_owned())
                .await?,
            None,
        ),
        Dialect::Postgres => {
            let table_bytes = match store {
                LockStore::BucketTable => {
                    scalar::<i64>(
                        db,
                        backend,
                        format!("SELECT pg_total_relation_size('\"{table}\"')::int8 AS v"),
                    )
                    .await?
                }
                _ => None,
            };
            let cache = scalar::<i64>(
                db,
                backend,
                "SELECT (setting::int8 * 8192) AS v FROM pg_settings WHERE name = 'shared_buffers'"
                    .to_owned(),
            )
            .await?;
            let slots = scalar::<i64>(
                db,
                backend,
                "SELECT (current_setting('max_locks_per_transaction')::int8 * \
                 (current_setting('max_connections')::int8 + \
                  current_setting('max_prepared_transactions')::int8)) AS v"
                    .to_owned(),
            )
            .await?;
            (table_bytes, cache, slots)
        }
        _ => (None, None, None),
    };
    let replication = match dialect {
        Dialect::Postgres => replication(db).await?,
        _ => None,
    };
    let to_u64 = |v: Option<i64>| v.and_then(|v| u64::try_from(v).ok());
    let (table_bytes, cache_bytes, lock_table_slots) = (
        to_u64(table_bytes),
        to_u64(cache_bytes),
        to_u64(lock_table_slots),
    );
    let mut advice = Vec::new();
    if let (Some(table), Some(cache)) = (table_bytes, cache_bytes)
        && table > cache
    {
        advice.push(format!(
            "the bucket table ({}) is larger than the cache ({}): a lock on an uncached \
             bucket costs a random page read; raise the cache or provision a smaller bucket space",
            mebibytes(table),
            mebibytes(cache)
        ));
    }
    if let Some(slots) = lock_table_slots
        && slots < 10_000
    {
        advice.push(format!(
            "{slots} advisory locks at most, shared by every session: an acquisition takes one \
             per planned lock; raise max_locks_per_transaction for large acquisitions"
        ));
    }
    if let Some(Replication {
        standbys,
        synchronous: Some(0),
    }) = replication
        && standbys > 0
    {
        advice.push(format!(
            "{standbys} standby(s), none synchronous: a failover to one of them (Patroni, a \
             manual promotion) can lose transactions this primary acknowledged, the writes made \
             under hierlock's locks included; make one synchronous (Patroni: \
             synchronous_mode: true)"
        ));
    }
    if store == LockStore::SqliteWriteLock {
        advice.push(
            "SQLite serialises every lock holder: use MySQL, MariaDB or PostgreSQL for concurrency"
                .to_owned(),
        );
    }
    Ok(Status {
        dialect,
        version,
        topology: locker.topology(),
        store,
        table_bytes,
        cache_bytes,
        lock_table_slots,
        replication,
        advice,
    })
}

/// The standbys streaming from this PostgreSQL server, if it has any.
async fn replication(db: &DatabaseConnection) -> hierlock::Result<Option<Replication>> {
    let backend = DbBackend::Postgres;
    let standbys = scalar::<i64>(
        db,
        backend,
        "SELECT count(*)::int8 AS v FROM pg_stat_replication \
         WHERE state = 'streaming' OR state IS NULL"
            .to_owned(),
    )
    .await?
    .unwrap_or(0);
    if standbys <= 0 {
        return Ok(None);
    }
    // `sync_state` is NULL for a user without pg_read_all_stats.
    let synchronous = scalar::<i64>(
        db,
        backend,
        "SELECT CASE WHEN bool_or(sync_state IS NULL) THEN NULL ELSE \
         count(*) FILTER (WHERE sync_state IN ('sync', 'quorum')) END::int8 AS v \
         FROM pg_stat_replication WHERE state = 'streaming' OR state IS NULL"
            .to_owned(),
    )
    .await?;
    Ok(Some(Replication {
        standbys: u64::try_from(standbys).unwrap_or(0),
        synchronous: synchronous.and_then(|n| u64::try_from(n).ok()),
    }))
}

async fn scalar<T>(
    db: &DatabaseConnection,
    backend: DbBackend,
    sql: String,
) -> hierlock::Result<Option<T>>
where
    T: hierlock::sea_orm::TryGetable,
{
    let row = db
        .query_one_raw(Statement::from_string(backend, sql))
        .await
        .map_err(|e| hierlock::Error::database("asking the server for its status", e))?;
    Ok(row.and_then(|row| row.try_get::<Option<T>>("", "v").ok().flatten()))
}

/// hierlock's types do not implement `Serialize`: the JSON reports carry
/// their `Debug` name (`MariaDb`) or their `Display` text.
pub(crate) fn debug_json<T: fmt::Debug, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_args!("{value:?}"))
}

fn display_json<T: fmt::Display, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}
