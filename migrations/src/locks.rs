//! Live locks: who holds and who waits for hierlock's bucket rows or advisory
//! keys right now, read from the server's own lock views ([`live_locks`]),
//! mapped back to level and bucket (or advisory key), and to the nodes the
//! caller names. What each server's views show, and leave out, is listed
//! on [`live_locks`].

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use hierlock::sea_orm::{ConnectionTrait, DatabaseConnection, QueryResult, Statement, Value};
use hierlock::{
    Config, Dialect, Error, KeyKind, Keyspace, Level, LockKey, LockMode, PostgresLocks, Target,
    TxnState,
};
use serde::{Serialize, Serializer};

use crate::inspect::LockStore;
use crate::sql::quote;

/// How many keys [`LiveLocks::hottest`] lists at most.
pub const HOTTEST_KEYS: usize = 10;

/// Whether a session has a lock or is waiting for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LockState {
    /// Granted.
    Held,
    /// Asked for, not granted yet.
    Waiting,
}

/// One lock held or awaited by one session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LiveLock {
    /// The server connection: MySQL's and MariaDB's `CONNECTION_ID()`
    /// (processlist id), PostgreSQL's backend pid.
    pub session: i64,
    /// The server's transaction id, where the view shows one.
    pub transaction: Option<String>,
    /// The bucket row or advisory key.
    #[serde(serialize_with = "key_json")]
    pub key: LockKey,
    /// Shared or exclusive; `None` where the server does not say (a holder of
    /// a PostgreSQL row lock).
    #[serde(serialize_with = "mode_json")]
    pub mode: Option<LockMode>,
    /// Held or awaited.
    pub state: LockState,
    /// How long a waiter has waited so far.
    #[serde(rename = "waited_ms", serialize_with = "millis_json")]
    pub waited: Option<Duration>,
    /// The sessions a waiter waits for (holders, or waiters queued first).
    pub blocked_by: Vec<i64>,
    /// The named nodes that hash to this key (see [`live_locks`]).
    #[serde(serialize_with = "targets_json")]
    pub nodes: Vec<Target>,
}

/// A key sessions are waiting for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HotKey {
    /// The bucket row or advisory key.
    #[serde(serialize_with = "key_json")]
    pub key: LockKey,
    /// Sessions waiting for it.
    pub waiters: usize,
    /// The longest of their waits.
    #[serde(rename = "longest_wait_ms", serialize_with = "duration_json")]
    pub longest_wait: Duration,
    /// The named nodes that hash to it.
    #[serde(serialize_with = "targets_json")]
    pub nodes: Vec<Target>,
}

/// What [`live_locks`] found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LiveLocks {
    /// The server.
    #[serde(serialize_with = "crate::inspect::debug_json")]
    pub dialect: Dialect,
    /// How locks are kept.
    pub store: LockStore,
    /// Where nodes hash to: the bucket table's recorded scheme and bucket
    /// space, or the advisory namespace.
    #[serde(serialize_with = "keyspace_json")]
    pub keyspace: Keyspace,
    /// Every lock shown, ordered by key, holders before waiters.
    pub locks: Vec<LiveLock>,
    /// The keys with the most waiters (then the longest wait), at most
    /// [`HOTTEST_KEYS`].
    pub hottest: Vec<HotKey>,
    /// What this server's views leave out, if anything.
    pub caveat: Option<&'static str>,
}

impl LiveLocks {
    /// The locks held.
    pub fn holders(&self) -> impl Iterator<Item = &LiveLock> {
        self.locks.iter().filter(|l| l.state == LockState::Held)
    }

    /// The locks awaited.
    pub fn waiters(&self) -> impl Iterator<Item = &LiveLock> {
        self.locks.iter().filter(|l| l.state == LockState::Waiting)
    }
}

/// A node from its IDs joined with `/`: `u1` (a user), `u1/a1` (an account),
/// `u1/a1/r1` (a resource). IDs containing `/` cannot be named this way.
///
/// # Errors
/// [`InvalidNodePath`] for an empty ID or more than three.
pub fn target_from_path(path: &str) -> Result<Target, InvalidNodePath> {
    let ids: Vec<&str> = path.split('/').collect();
    match ids[..] {
        _ if ids.iter().any(|id| id.is_empty()) => Err(InvalidNodePath(path.to_owned())),
        [user] => Ok(Target::user(user)),
        [user, account] => Ok(Target::account(user, account)),
        [user, account, resource] => Ok(Target::resource(user, account, resource)),
        _ => Err(InvalidNodePath(path.to_owned())),
    }
}

/// A string that [`target_from_path`] cannot read as a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidNodePath(pub String);

impl fmt::Display for InvalidNodePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` names no node: write user, user/account or user/account/resource \
             (IDs joined with `/`, none empty)",
            self.0
        )
    }
}

impl std::error::Error for InvalidNodePath {}

/// The hierlock locks held and awaited on the server behind `db`, for
/// lockers configured with `config` (its table, or its advisory namespace on
/// PostgreSQL), each mapped to the nodes among `nodes` and their ancestors
/// that hash to its key.
///
/// Keys are computed with the scheme and bucket space recorded in the bucket
/// table's metadata row, not with `config`'s.
///
/// What each server shows, and so what [`LiveLocks`] can list:
///
/// - **MySQL 8+**: `performance_schema.data_locks` lists every row lock,
///   held or awaited; `data_lock_waits` says who blocks whom.
/// - **MariaDB**: `information_schema.INNODB_LOCKS` lists **only locks
///   involved in a wait**: a holder nobody waits for is not shown.
///   `INNODB_LOCK_WAITS` says who blocks whom.
/// - **PostgreSQL, advisory locks**: `pg_locks` lists every key, held or
///   awaited (a bigint key as `classid` = high 32 bits, `objid` = low 32).
/// - **PostgreSQL, bucket table**: row locks live in the rows, not in
///   `pg_locks`; only rows someone waits for are shown (the waiter's tuple
///   lock names the row), with the sessions blocking the waiters as holders.
///   A holder's mode is known only when a shared waiter waits for it (it then
///   holds the row exclusively).
///
/// Waits are timed from `INNODB_TRX.trx_wait_started` on MySQL and MariaDB
/// (whole seconds) and from the waiting statement's start
/// (`pg_stat_activity.query_start`) on PostgreSQL.
///
/// # Errors
/// [`Error::NotProvisioned`] if the bucket table's metadata row is missing;
/// [`Error::ConfigMismatch`] if it names a key scheme this version does not
/// know; [`Error::InvalidConfig`] on SQLite, which shows no locks;
/// [`Error::Database`] if a view cannot be read (MySQL needs the
/// `performance_schema` and the `PROCESS` privilege).
pub async fn live_locks(
    db: &DatabaseConnection,
    config: &Config,
    nodes: &[Target],
) -> hierlock::Result<LiveLocks> {
    let dialect = Dialect::detect(db).await?;
    let table = config.table().as_str();
    let (store, keyspace) = match (dialect, config.postgres_locks()) {
        (Dialect::Sqlite, _) => {
            return Err(Error::InvalidConfig(
                "SQLite shows no locks: hierlock takes its database-wide write lock there".into(),
            ));
        }
        (Dialect::Postgres, PostgresLocks::Advisory { namespace }) => {
            (LockStore::Advisory, Keyspace::Advisory { namespace })
        }
        _ => (
            LockStore::BucketTable,
            recorded_keyspace(db, dialect, config).await?,
        ),
    };
    let (mut locks, caveat) = match (dialect, keyspace) {
        (Dialect::Postgres, Keyspace::Advisory { namespace }) => {
            (postgres_advisory_locks(db, namespace).await?, None)
        }
        (Dialect::Postgres, _) => (
            postgres_row_locks(db, table).await?,
            Some(
                "PostgreSQL keeps row locks in the rows: only rows someone waits for are shown, \
                 and a holder's mode only when a shared waiter waits for it",
            ),
        ),
        (Dialect::MariaDb, _) => (
            innodb_locks(db, dialect, table).await?,
            Some("MariaDB's INNODB_LOCKS lists only locks involved in a wait"),
        ),
        _ => (innodb_locks(db, dialect, table).await?, None),
    };
    let named = named_keys(keyspace, nodes);
    for lock in &mut locks {
        lock.nodes = named.get(&lock.key).cloned().unwrap_or_default();
    }
    locks.sort_by_key(|l| (l.key, l.state, l.session));
    let hottest = hottest(&locks);
    Ok(LiveLocks {
        dialect,
        store,
        keyspace,
        locks,
        hottest,
        caveat,
    })
}

/// The keyspace the bucket table was provisioned for (its metadata row).
async fn recorded_keyspace(
    db: &DatabaseConnection,
    dialect: Dialect,
    config: &Config,
) -> hierlock::Result<Keyspace> {
    let table = config.table().as_str();
    let Some(metadata) = hierlock::schema::read_metadata(db, dialect, config).await? else {
        return Err(Error::NotProvisioned {
            what: format!("the metadata row of bucket table `{table}`"),
            row: None,
            txn_state: TxnState::Unchanged,
        });
    };
    let scheme = metadata.layout().map(|(scheme, _)| scheme);
    let space = u32::try_from(metadata.bucket_space).ok().filter(|s| *s > 0);
    match (scheme, space) {
        (Some(scheme), Some(space)) => Ok(Keyspace::Buckets { scheme, space }),
        _ => Err(Error::ConfigMismatch {
            table: table.to_owned(),
            found: format!(
                "key scheme `{}` over {} buckets",
                metadata.key_scheme, metadata.bucket_space
            ),
            expected: "a key scheme this version knows and a positive bucket space".to_owned(),
        }),
    }
}

/// Every key the named nodes and their ancestors lock, with those nodes.
fn named_keys(keyspace: Keyspace, nodes: &[Target]) -> BTreeMap<LockKey, Vec<Target>> {
    let mut named = BTreeMap::<LockKey, Vec<Target>>::new();
    for node in nodes {
        let path = node.path();
        for level in Level::ALL.into_iter().take(path.len()) {
            let ids = &path[..level.depth()];
            let ancestor = target_from_ids(ids);
            let slot = named.entry(keyspace.key_of(level, ids)).or_default();
            if !slot.contains(&ancestor) {
                slot.push(ancestor);
            }
        }
    }
    named
}

fn target_from_ids(ids: &[String]) -> Target {
    match ids {
        [user] => Target::user(user),
        [user, account] => Target::account(user, account),
        [user, account, resource, ..] => Target::resource(user, account, resource),
        [] => unreachable!("a node has at least one id"),
    }
}

fn hottest(locks: &[LiveLock]) -> Vec<HotKey> {
    let mut hot = BTreeMap::<LockKey, HotKey>::new();
    for lock in locks.iter().filter(|l| l.state == LockState::Waiting) {
        let entry = hot.entry(lock.key).or_insert_with(|| HotKey {
            key: lock.key,
            waiters: 0,
            longest_wait: Duration::ZERO,
            nodes: lock.nodes.clone(),
        });
        entry.waiters += 1;
        entry.longest_wait = entry.longest_wait.max(lock.waited.unwrap_or_default());
    }
    let mut hot: Vec<HotKey> = hot.into_values().collect();
    hot.sort_by(|a, b| (b.waiters, b.longest_wait, a.key).cmp(&(a.waiters, a.longest_wait, b.key)));
    hot.truncate(HOTTEST_KEYS);
    hot
}

/// MySQL's `data_locks` or MariaDB's `INNODB_LOCKS`: record locks on the
/// bucket table's primary key, whose `lock_data` is `'level, bucket'`.
async fn innodb_locks(
    db: &DatabaseConnection,
    dialect: Dialect,
    table: &str,
) -> hierlock::Result<Vec<LiveLock>> {
    let (locks_sql, waits_sql) = if dialect == Dialect::MySql {
        (
            "SELECT CAST(t.PROCESSLIST_ID AS SIGNED) AS session, \
                    CAST(l.ENGINE_TRANSACTION_ID AS CHAR) AS trx, l.ENGINE_LOCK_ID AS lock_id, \
                    l.LOCK_MODE AS mode, l.LOCK_DATA AS data, \
                    CAST(l.LOCK_STATUS = 'WAITING' AS SIGNED) AS waiting, \
                    CAST(TIMESTAMPDIFF(MICROSECOND, x.trx_wait_started, NOW(6)) AS SIGNED) AS waited_us \
             FROM performance_schema.data_locks l \
             JOIN performance_schema.threads t ON t.THREAD_ID = l.THREAD_ID \
             LEFT JOIN information_schema.INNODB_TRX x \
                    ON x.trx_mysql_thread_id = t.PROCESSLIST_ID AND l.LOCK_STATUS = 'WAITING' \
             WHERE l.OBJECT_SCHEMA = DATABASE() AND l.OBJECT_NAME = ? \
               AND l.LOCK_TYPE = 'RECORD' AND l.INDEX_NAME = 'PRIMARY'",
            "SELECT w.REQUESTING_ENGINE_LOCK_ID AS lock_id, CAST(t.PROCESSLIST_ID AS SIGNED) AS blocker \
             FROM performance_schema.data_lock_waits w \
             JOIN performance_schema.threads t ON t.THREAD_ID = w.BLOCKING_THREAD_ID",
        )
    } else {
        (
            "SELECT CAST(x.trx_mysql_thread_id AS SIGNED) AS session, \
                    CAST(l.lock_trx_id AS CHAR) AS trx, l.lock_id AS lock_id, \
                    l.lock_mode AS mode, l.lock_data AS data, \
                    CAST(x.trx_requested_lock_id <=> l.lock_id AS SIGNED) AS waiting, \
                    CAST(TIMESTAMPDIFF(MICROSECOND, x.trx_wait_started, NOW(6)) AS SIGNED) AS waited_us \
             FROM information_schema.INNODB_LOCKS l \
             JOIN information_schema.INNODB_TRX x ON x.trx_id = l.lock_trx_id \
             WHERE l.lock_table = CONCAT('`', DATABASE(), '`.`', ?, '`') \
               AND l.lock_type = 'RECORD' AND l.lock_index = 'PRIMARY'",
            "SELECT w.requested_lock_id AS lock_id, CAST(x.trx_mysql_thread_id AS SIGNED) AS blocker \
             FROM information_schema.INNODB_LOCK_WAITS w \
             JOIN information_schema.INNODB_TRX x ON x.trx_id = w.blocking_trx_id",
        )
    };
    let mut blockers = BTreeMap::<String, Vec<i64>>::new();
    for row in query(db, dialect, waits_sql, []).await? {
        let lock_id: String = read(&row, "lock_id")?;
        blockers
            .entry(lock_id)
            .or_default()
            .push(read(&row, "blocker")?);
    }
    let mut locks = Vec::new();
    for row in query(db, dialect, locks_sql, [table.into()]).await? {
        let data: Option<String> = read(&row, "data")?;
        let mode: String = read(&row, "mode")?;
        // Not a bucket row (the supremum pseudo-record), or not a row lock mode.
        let (Some(key), Some(mode)) = (data.as_deref().and_then(bucket_of), innodb_mode(&mode))
        else {
            continue;
        };
        let waiting = read::<i64>(&row, "waiting")? != 0;
        let lock_id: String = read(&row, "lock_id")?;
        let waited_us: Option<i64> = read(&row, "waited_us")?;
        locks.push(LiveLock {
            session: read(&row, "session")?,
            transaction: read(&row, "trx")?,
            key,
            mode: Some(mode),
            state: if waiting {
                LockState::Waiting
            } else {
                LockState::Held
            },
            waited: waiting.then(|| micros(waited_us)),
            blocked_by: if waiting {
                blockers.remove(&lock_id).unwrap_or_default()
            } else {
                Vec::new()
            },
            nodes: Vec::new(),
        });
    }
    Ok(locks)
}

/// `'2, 185732'` (InnoDB's `lock_data` for the key `(level, bucket)`).
fn bucket_of(data: &str) -> Option<LockKey> {
    let (level, bucket) = data.split_once(',')?;
    LockKey::of_row(level.trim().parse().ok()?, bucket.trim().parse().ok()?)
}

/// InnoDB's record lock modes: `S` / `X`, with flags such as `,REC_NOT_GAP`.
fn innodb_mode(mode: &str) -> Option<LockMode> {
    match mode.split(',').next()? {
        "S" => Some(LockMode::Shared),
        "X" => Some(LockMode::Exclusive),
        _ => None,
    }
}

/// `pg_locks` rows of the advisory keys under `namespace` (bigint keys:
/// `objsubid = 1`) in this database.
async fn postgres_advisory_locks(
    db: &DatabaseConnection,
    namespace: u16,
) -> hierlock::Result<Vec<LiveLock>> {
    let sql = "SELECT l.pid::int8 AS session, l.virtualtransaction AS trx, \
                      ((l.classid::int8 << 32) | l.objid::int8) AS key, l.mode AS mode, \
                      (NOT l.granted) AS waiting, \
                      CASE WHEN l.granted THEN NULL ELSE \
                        (EXTRACT(EPOCH FROM clock_timestamp() - a.query_start) * 1000000)::int8 END AS waited_us, \
                      CASE WHEN l.granted THEN '' ELSE array_to_string(pg_blocking_pids(l.pid), ',') END AS blockers \
               FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid \
               WHERE l.locktype = 'advisory' AND l.objsubid = 1 \
                 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                 AND (l.classid::int8 >> 16) = $1";
    let mut locks = Vec::new();
    for row in query(db, Dialect::Postgres, sql, [i64::from(namespace).into()]).await? {
        let key: i64 = read(&row, "key")?;
        let Some(key) = LockKey::of_advisory(key) else {
            continue;
        };
        let waiting: bool = read(&row, "waiting")?;
        let mode: String = read(&row, "mode")?;
        locks.push(LiveLock {
            session: read(&row, "session")?,
            transaction: read(&row, "trx")?,
            key,
            mode: Some(postgres_mode(&mode)),
            state: if waiting {
                LockState::Waiting
            } else {
                LockState::Held
            },
            waited: waiting.then(|| micros(read(&row, "waited_us").ok().flatten())),
            blocked_by: sessions(&read::<String>(&row, "blockers")?),
            nodes: Vec::new(),
        });
    }
    Ok(locks)
}

/// Waiters for rows of the bucket table (their tuple locks, which name the
/// row by `ctid`), and the sessions they wait for as holders.
async fn postgres_row_locks(
    db: &DatabaseConnection,
    table: &str,
) -> hierlock::Result<Vec<LiveLock>> {
    let table = quote(Dialect::Postgres, table);
    // LATERAL with `ctid = …`: a TID lookup per waiter, never a table scan.
    let sql = format!(
        "SELECT l.pid::int8 AS session, l.virtualtransaction AS trx, \
                r.level::int8 AS level, r.bucket::int8 AS bucket, l.mode AS mode, \
                (EXTRACT(EPOCH FROM clock_timestamp() - a.query_start) * 1000000)::int8 AS waited_us, \
                array_to_string(pg_blocking_pids(l.pid), ',') AS blockers \
         FROM pg_locks l \
         LEFT JOIN pg_stat_activity a ON a.pid = l.pid \
         CROSS JOIN LATERAL (SELECT level, bucket FROM {table} \
                             WHERE ctid = format('(%s,%s)', l.page, l.tuple)::tid) r \
         WHERE l.locktype = 'tuple' AND l.relation = '{table}'::regclass \
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
           AND cardinality(pg_blocking_pids(l.pid)) > 0"
    );
    let mut waiters = Vec::new();
    for row in query(db, Dialect::Postgres, &sql, []).await? {
        let Some(key) = LockKey::of_row(read(&row, "level")?, read(&row, "bucket")?) else {
            continue;
        };
        let mode: String = read(&row, "mode")?;
        waiters.push(LiveLock {
            session: read(&row, "session")?,
            transaction: read(&row, "trx")?,
            key,
            mode: Some(postgres_mode(&mode)),
            state: LockState::Waiting,
            waited: Some(micros(read(&row, "waited_us")?)),
            blocked_by: sessions(&read::<String>(&row, "blockers")?),
            nodes: Vec::new(),
        });
    }
    Ok(with_blockers_as_holders(waiters))
}

/// `waiters` and, for each row, the sessions they wait for that are not
/// themselves waiting for that row, as its holders: exclusive if a shared
/// waiter waits for them, unknown otherwise.
fn with_blockers_as_holders(waiters: Vec<LiveLock>) -> Vec<LiveLock> {
    let mut holders = BTreeMap::<(LockKey, i64), Option<LockMode>>::new();
    for waiter in &waiters {
        for &blocker in &waiter.blocked_by {
            let queued = waiters
                .iter()
                .any(|w| w.key == waiter.key && w.session == blocker);
            if queued {
                continue;
            }
            let mode = holders.entry((waiter.key, blocker)).or_default();
            if waiter.mode == Some(LockMode::Shared) {
                *mode = Some(LockMode::Exclusive);
            }
        }
    }
    let mut locks = waiters;
    locks.extend(holders.into_iter().map(|((key, session), mode)| LiveLock {
        session,
        transaction: None,
        key,
        mode,
        state: LockState::Held,
        waited: None,
        blocked_by: Vec::new(),
        nodes: Vec::new(),
    }));
    locks
}

/// PostgreSQL's lock modes: advisory `ShareLock` / `ExclusiveLock`, and the
/// tuple locks of `FOR KEY SHARE` / `FOR SHARE` (`AccessShareLock`,
/// `RowShareLock`) against the exclusive ones.
fn postgres_mode(mode: &str) -> LockMode {
    match mode {
        "ShareLock" | "RowShareLock" | "AccessShareLock" => LockMode::Shared,
        _ => LockMode::Exclusive,
    }
}

/// `'12,34'` (`array_to_string` of `pg_blocking_pids`).
fn sessions(list: &str) -> Vec<i64> {
    list.split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

fn micros(us: Option<i64>) -> Duration {
    Duration::from_micros(us.and_then(|us| u64::try_from(us).ok()).unwrap_or(0))
}

async fn query<const N: usize>(
    db: &DatabaseConnection,
    dialect: Dialect,
    sql: &str,
    values: [Value; N],
) -> hierlock::Result<Vec<QueryResult>> {
    db.query_all_raw(Statement::from_sql_and_values(
        dialect.backend(),
        sql,
        values,
    ))
    .await
    .map_err(|e| Error::database("reading the server's lock views", e))
}

fn read<T: hierlock::sea_orm::TryGetable>(row: &QueryResult, column: &str) -> hierlock::Result<T> {
    row.try_get("", column)
        .map_err(|e| Error::database(format!("reading `{column}` from the lock views"), e))
}

impl fmt::Display for LiveLocks {
    /// An aligned table of the locks, then the hottest keys.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "server:   {}", self.dialect)?;
        match self.keyspace {
            Keyspace::Buckets { scheme, space } => writeln!(
                f,
                "locks:    {}: {}, {space} buckets per level",
                self.store,
                scheme.name()
            )?,
            Keyspace::Advisory { namespace } => {
                writeln!(f, "locks:    {}, namespace {namespace:#06x}", self.store)?
            }
        }
        if let Some(caveat) = self.caveat {
            writeln!(f, "note:     {caveat}")?;
        }
        if self.locks.is_empty() {
            return writeln!(f, "no hierlock locks held or awaited");
        }
        let key_header = self.key_header();
        let mut rows = vec![
            [
                "SESSION",
                "TRANSACTION",
                "STATE",
                "MODE",
                "LEVEL",
                key_header,
                "WAITED",
                "BLOCKED BY",
                "NODES",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for lock in &self.locks {
            rows.push(vec![
                lock.session.to_string(),
                lock.transaction.clone().unwrap_or_else(|| "-".into()),
                match lock.state {
                    LockState::Held => "held".into(),
                    LockState::Waiting => "waiting".into(),
                },
                mode_letter(lock.mode).into(),
                level_text(lock.key),
                self.slot_text(lock.key),
                lock.waited.map_or_else(|| "-".into(), seconds),
                join_or_dash(lock.blocked_by.iter()),
                join_or_dash(lock.nodes.iter()),
            ]);
        }
        write_table(f, &rows)?;
        if !self.hottest.is_empty() {
            writeln!(f, "\nhottest:")?;
            let mut rows = vec![
                ["LEVEL", key_header, "WAITERS", "LONGEST WAIT", "NODES"]
                    .map(String::from)
                    .to_vec(),
            ];
            for hot in &self.hottest {
                rows.push(vec![
                    level_text(hot.key),
                    self.slot_text(hot.key),
                    hot.waiters.to_string(),
                    seconds(hot.longest_wait),
                    join_or_dash(hot.nodes.iter()),
                ]);
            }
            write_table(f, &rows)?;
        }
        Ok(())
    }
}

impl LiveLocks {
    fn key_header(&self) -> &'static str {
        match self.keyspace {
            Keyspace::Advisory { .. } => "ADVISORY KEY",
            _ => "BUCKET",
        }
    }

    fn slot_text(&self, key: LockKey) -> String {
        match self.keyspace {
            Keyspace::Advisory { .. } => format!("{:#018x}", key.slot as u64),
            _ => key.slot.to_string(),
        }
    }
}

fn write_table(f: &mut fmt::Formatter<'_>, rows: &[Vec<String>]) -> fmt::Result {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(&widths) {
            line.push_str(&format!("{cell:<width$}  "));
        }
        writeln!(f, "{}", line.trim_end())?;
    }
    Ok(())
}

/// `account`, or `account stripe` for one of an account's stripe keys.
fn level_text(key: LockKey) -> String {
    match key.kind {
        KeyKind::Node => key.level.name().to_owned(),
        KeyKind::Stripe => format!("{} stripe", key.level.name()),
    }
}

fn mode_letter(mode: Option<LockMode>) -> &'static str {
    match mode {
        Some(LockMode::Shared) => "S",
        Some(LockMode::Exclusive) => "X",
        None => "?",
    }
}

fn seconds(duration: Duration) -> String {
    format!("{:.1}s", duration.as_secs_f64())
}

fn join_or_dash<T: fmt::Display>(items: impl Iterator<Item = T>) -> String {
    let joined: Vec<String> = items.map(|i| i.to_string()).collect();
    if joined.is_empty() {
        "-".into()
    } else {
        joined.join(", ")
    }
}

// JSON shapes of hierlock's types, which do not implement `Serialize`.

fn key_json<S: Serializer>(key: &LockKey, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let mut out = s.serialize_struct("LockKey", 3)?;
    out.serialize_field("level", key.level.name())?;
    let kind = match key.kind {
        KeyKind::Node => "node",
        KeyKind::Stripe => "stripe",
    };
    out.serialize_field("kind", kind)?;
    out.serialize_field("slot", &key.slot)?;
    out.end()
}

fn mode_json<S: Serializer>(mode: &Option<LockMode>, s: S) -> Result<S::Ok, S::Error> {
    match mode {
        Some(mode) => s.serialize_str(mode_letter(Some(*mode))),
        None => s.serialize_none(),
    }
}

fn millis_json<S: Serializer>(duration: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match duration {
        Some(d) => duration_json(d, s),
        None => s.serialize_none(),
    }
}

fn duration_json<S: Serializer>(duration: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u128(duration.as_millis())
}

fn targets_json<S: Serializer>(targets: &[Target], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(targets.iter().map(|t| t.path().join("/")))
}

fn keyspace_json<S: Serializer>(keyspace: &Keyspace, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut out = s.serialize_map(Some(2))?;
    match keyspace {
        Keyspace::Buckets { scheme, space } => {
            out.serialize_entry("key_scheme", scheme.name())?;
            out.serialize_entry("bucket_space", space)?;
        }
        Keyspace::Advisory { namespace } => {
            out.serialize_entry("advisory_namespace", namespace)?;
        }
    }
    out.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn innodb_lock_data_is_a_level_and_a_bucket() {
        assert_eq!(
            bucket_of("2, 185732"),
            Some(LockKey::node(Level::Resource, 185_732))
        );
        assert_eq!(bucket_of("supremum pseudo-record"), None);
        // Levels 3 and 4 hold the users' and accounts' stripes.
        assert_eq!(
            bucket_of("4, 1"),
            Some(LockKey {
                kind: KeyKind::Stripe,
                level: Level::Account,
                slot: 1
            })
        );
        assert_eq!(bucket_of("5, 1"), None);
        assert_eq!(innodb_mode("S,REC_NOT_GAP"), Some(LockMode::Shared));
        assert_eq!(innodb_mode("X"), Some(LockMode::Exclusive));
        assert_eq!(
            innodb_mode("X,GAP,INSERT_INTENTION"),
            Some(LockMode::Exclusive)
        );
        assert_eq!(innodb_mode("IX"), None);
    }

    #[test]
    fn nodes_are_named_by_their_ids_joined_with_slashes() {
        assert_eq!(target_from_path("u1").unwrap(), Target::user("u1"));
        assert_eq!(
            target_from_path("u1/a1/r1").unwrap(),
            Target::resource("u1", "a1", "r1")
        );
        assert!(target_from_path("u1//r1").is_err());
        assert!(target_from_path("a/b/c/d").is_err());
    }

    #[test]
    fn a_named_node_maps_its_own_key_and_its_ancestors_keys() {
        let keyspace = Keyspace::Advisory { namespace: 1 };
        let named = named_keys(keyspace, &[Target::resource("u1", "a1", "r1")]);
        let ids = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(named.len(), 3);
        assert_eq!(
            named[&keyspace.key_of(Level::Account, &ids(&["u1", "a1"]))],
            vec![Target::account("u1", "a1")]
        );
    }

    #[test]
    fn blockers_of_a_row_are_its_holders_unless_queued_for_it() {
        let key = LockKey::node(Level::Resource, 5);
        let waiter = |session, mode, blocked_by: Vec<i64>| LiveLock {
            session,
            transaction: None,
            key,
            mode: Some(mode),
            state: LockState::Waiting,
            waited: Some(Duration::from_secs(1)),
            blocked_by,
            nodes: Vec::new(),
        };
        // 2 waits (X) for holder 1; 3 waits (S) behind 2 in the queue.
        let locks = with_blockers_as_holders(vec![
            waiter(2, LockMode::Exclusive, vec![1]),
            waiter(3, LockMode::Shared, vec![2]),
        ]);
        let holders: Vec<_> = locks
            .iter()
            .filter(|l| l.state == LockState::Held)
            .collect();
        assert_eq!(holders.len(), 1);
        assert_eq!((holders[0].session, holders[0].mode), (1, None));
        // A shared waiter blocked by the holder: the holder's is exclusive.
        let locks = with_blockers_as_holders(vec![waiter(2, LockMode::Shared, vec![1])]);
        assert_eq!(locks[1].mode, Some(LockMode::Exclusive));
    }
}
