//! Which server a locker talks to, and the SQL it gets: the statements are
//! written by hand, one module per server (`mysql`, `postgres`, `sqlite`).
//!
//! SeaORM's `lock_shared()` emits `LOCK IN SHARE MODE` for every MySQL-family
//! server and drops lock clauses on SQLite, and no ORM knows MariaDB's
//! `WAIT n`; so the server is detected once and the statements built here.

use std::time::Duration;

use sea_orm::{ConnectionTrait, DbBackend, Statement};

use super::fence::{Fence, Fencing};
use super::row_read::{self, RowRead};
use super::{mysql, postgres, sqlite};

use crate::config::{TableName, Wait};
use crate::error::{Error, Result};
use crate::model::plan::PlannedLock;

/// The most runs of equal modes one MySQL-family statement of a large plan
/// locks (one `UNION ALL` branch each; a `UNION` costs more per member past
/// about a hundred).
const MAX_RUNS_PER_STATEMENT: usize = 100;

/// The database server a [`Locker`](crate::Locker) talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// MySQL 8 or later (InnoDB).
    MySql,
    /// MariaDB (InnoDB).
    MariaDb,
    /// PostgreSQL.
    Postgres,
    /// SQLite.
    Sqlite,
}

impl Dialect {
    /// Ask the server what it is (`SELECT VERSION()` tells MariaDB from MySQL).
    ///
    /// # Errors
    /// [`Error::Database`] if the query fails; [`Error::InvalidConfig`] for a
    /// backend hierlock was built without (its `mysql`, `postgres` or
    /// `sqlite` feature is off, the driver came from another crate).
    pub async fn detect(db: &impl ConnectionTrait) -> Result<Dialect> {
        let version = match db.get_database_backend() {
            DbBackend::MySql => server_version(db).await?,
            _ => None,
        };
        Dialect::of(db.get_database_backend(), version.as_deref())
    }

    /// The dialect of a `backend` server whose `SELECT version()` said
    /// `version` (which tells MariaDB from MySQL).
    pub(crate) fn of(backend: DbBackend, version: Option<&str>) -> Result<Dialect> {
        require_backend_feature(backend)?;
        match backend {
            DbBackend::Postgres => Ok(Dialect::Postgres),
            DbBackend::Sqlite => Ok(Dialect::Sqlite),
            DbBackend::MySql if version.is_some_and(|v| v.contains("MariaDB")) => {
                Ok(Dialect::MariaDb)
            }
            DbBackend::MySql => Ok(Dialect::MySql),
            other => Err(Error::InvalidConfig(format!(
                "unsupported database backend {other:?}"
            ))),
        }
    }

    /// The SeaORM backend this dialect runs on.
    pub fn backend(self) -> DbBackend {
        match self {
            Dialect::MySql | Dialect::MariaDb => DbBackend::MySql,
            Dialect::Postgres => DbBackend::Postgres,
            Dialect::Sqlite => DbBackend::Sqlite,
        }
    }

    /// Whether this is MySQL or MariaDB.
    pub fn is_mysql_family(self) -> bool {
        matches!(self, Dialect::MySql | Dialect::MariaDb)
    }

    /// The most rows (or advisory keys) one lock statement names one by one:
    /// a MySQL-family plan up to this size is one `UNION ALL` of point
    /// lookups; PostgreSQL's advisory plans are split into statements of this
    /// many keys. Larger bucket plans send each run of equal modes as one
    /// list, up to 100 runs per statement.
    ///
    /// Measured (`bench --workload scale`, both forms side by side on
    /// MariaDB 10.11 and MySQL 9.7): point lookups are 3–13 % cheaper per
    /// lock up to 8 rows, the lists 6–16 % cheaper from 12–16 rows on (and
    /// 2–3× cheaper from 32), so the lists take over past 12 rows.
    /// PostgreSQL refuses more than 1,664 select-list entries (advisory locks).
    pub fn max_rows_per_statement(self) -> usize {
        match self {
            Dialect::MySql | Dialect::MariaDb => 12,
            _ => 1_000,
        }
    }

    /// A bucket plan's statements, in plan order: the slice of the plan each
    /// one locks.
    ///
    /// - MySQL family: a plan of up to
    ///   [`max_rows_per_statement`](Dialect::max_rows_per_statement) rows is
    ///   one statement of point lookups (the common, small case: one round
    ///   trip). A larger plan sends each run of equal modes as one list, up
    ///   to [`MAX_RUNS_PER_STATEMENT`] runs per statement: a 30,000-row
    ///   resource plan is one statement, and the cost per row stays flat.
    /// - PostgreSQL: a small part's rows are point lookups, a larger one's
    ///   runs two arrays each, whatever their length, taken one after
    ///   another (see `postgres::bucket_statement`): up to 1,000 rows, or
    ///   100 runs, per statement.
    pub(crate) fn split_bucket_plan(self, locks: &[PlannedLock]) -> Vec<&[PlannedLock]> {
        let runs = locks.chunk_by(|a, b| a.mode == b.mode);
        if locks.len() <= self.max_rows_per_statement() {
            return vec![locks];
        }
        let mut statements = Vec::new();
        let mut start = 0;
        let mut runs = runs.peekable();
        while runs.peek().is_some() {
            let len: usize = runs
                .by_ref()
                .take(MAX_RUNS_PER_STATEMENT)
                .map(<[_]>::len)
                .sum();
            statements.push(&locks[start..start + len]);
            start += len;
        }
        statements
    }

    /// `name`, quoted as an identifier (names are validated, never escaped).
    pub(crate) fn quote(self, name: &str) -> String {
        if self.is_mysql_family() {
            format!("`{name}`")
        } else {
            format!("\"{name}\"")
        }
    }

    /// One statement locking every row of `part` (one element of
    /// [`split_bucket_plan`](Dialect::split_bucket_plan)) in key order, and
    /// returning each row it locked as `locked_level`, `locked_bucket`.
    ///
    /// With a `lease`, PostgreSQL's statement also sets it for the
    /// transaction (see [`Config::with_lease`](crate::Config::with_lease));
    /// the MySQL family's lease is the pool's. With a `fence`, the
    /// statement takes it after its locks, and on the MySQL family lets go
    /// of those it names to release (see `cancel`). With a `read`
    /// (MySQL family), the statement reads after its locks (see `row_read`;
    /// PostgreSQL's never reads: see [`Dialect::reads_in_lock_statement`]).
    pub(crate) fn bucket_lock_statement(
        self,
        table: &TableName,
        part: &[PlannedLock],
        wait: Wait,
        lease: Option<Duration>,
        fence: Option<&Fencing>,
        read: Option<&RowRead>,
    ) -> Statement {
        let table = self.quote(table.as_str());
        let flavor = match self {
            Dialect::Postgres => {
                return postgres::bucket_statement(&table, part, wait, lease, fence.map(|f| f.own));
            }
            Dialect::MariaDb => mysql::Flavor::MariaDb,
            _ => mysql::Flavor::MySql,
        };
        let read_columns = read.map(RowRead::lock_branch_columns).unwrap_or_default();
        let mut stmt = if part.len() <= self.max_rows_per_statement() {
            mysql::point_lookups(flavor, &table, part, wait, &read_columns)
        } else {
            mysql::run_lists(flavor, &table, part, wait, &read_columns)
        };
        if let Some(read) = read {
            stmt = read.append_to(stmt);
        }
        let columns = row_read::LOCK_COLUMNS + read.map_or(0, RowRead::width);
        match fence {
            Some(fence) => mysql::fenced(stmt, fence, columns),
            None => stmt,
        }
    }

    /// Whether a read can ride on this server's lock statement (see
    /// `row_read`): on the MySQL family, whose plain reads take their
    /// snapshot when they run, after the statement's waits. PostgreSQL's
    /// statement reads as of its start, before any wait.
    pub(crate) fn reads_in_lock_statement(self) -> bool {
        self.is_mysql_family()
    }

    /// PostgreSQL's advisory locks for a whole plan in one statement, taken
    /// left to right; with `try_only`, each column says whether its key was
    /// granted. With a `lease`, it also sets it for the transaction; with a
    /// `fence`, it takes it after its locks (see `cancel`).
    pub(crate) fn advisory_lock_statement(
        self,
        plan: &[PlannedLock],
        try_only: bool,
        lease: Option<Duration>,
        fence: Option<Fence>,
        bound: Option<Duration>,
    ) -> Statement {
        postgres::advisory_locks(plan, try_only, lease, fence, bound)
    }

    /// PostgreSQL's bucket table, tried without waiting (see
    /// `postgres::bucket_probe`).
    pub(crate) fn bucket_probe_statement(
        self,
        table: &TableName,
        plan: &[PlannedLock],
        lease: Option<Duration>,
        name_waiter: bool,
    ) -> Statement {
        postgres::bucket_probe(&self.quote(table.as_str()), plan, lease, name_waiter)
    }

    /// PostgreSQL's advisory try-locks, stopping at the first key taken; one
    /// column, `granted`: 1 if every key was taken.
    pub(crate) fn advisory_probe_statement(
        self,
        plan: &[PlannedLock],
        lease: Option<Duration>,
        name_waiter: bool,
    ) -> Statement {
        postgres::advisory_probe(plan, lease, name_waiter)
    }

    /// SQLite's database-wide write lock.
    pub(crate) fn sqlite_write_lock_statement(self, table: &TableName) -> Statement {
        sqlite::write_lock(&self.quote(&table.meta()))
    }

    /// [`sqlite_write_lock_statement`](Dialect::sqlite_write_lock_statement)
    /// for a connection with hierlock's busy handler, which then waits as
    /// the acquisition registered under `token` allows.
    pub(crate) fn sqlite_watched_write_lock_statement(
        self,
        table: &TableName,
        token: i64,
    ) -> Statement {
        sqlite::watched_write_lock(&self.quote(&table.meta()), token)
    }

    /// SQLite's busy timeout, the lock wait: set to `millis`, or read.
    pub(crate) fn sqlite_busy_timeout_statement(self, millis: Option<u128>) -> Statement {
        sqlite::busy_timeout(millis)
    }
}

/// What the server says it is (`SELECT version()`; `None` on SQLite, which
/// is not asked).
/// Refuse a backend this build cannot read the errors of.
///
/// Its driver may be compiled in while hierlock's feature for it is off (the
/// application's own SeaORM enabled it): the server's error types are then
/// unknown here, and a lock conflict would pass for any other database error.
pub(crate) fn require_backend_feature(backend: DbBackend) -> Result<(), Error> {
    let feature = match backend {
        DbBackend::MySql if !cfg!(feature = "mysql") => "mysql",
        DbBackend::Postgres if !cfg!(feature = "postgres") => "postgres",
        DbBackend::Sqlite if !cfg!(feature = "sqlite") => "sqlite",
        _ => return Ok(()),
    };
    Err(Error::InvalidConfig(format!(
        "hierlock was built without its `{feature}` feature, so it cannot tell this \
         {backend:?} server's lock conflicts from other errors: enable it \
         (`hierlock = {{ version = \"0.1\", features = [\"{feature}\"] }}`)"
    )))
}

pub(crate) async fn server_version(db: &impl ConnectionTrait) -> Result<Option<String>> {
    let backend = db.get_database_backend();
    if backend == DbBackend::Sqlite {
        return Ok(None);
    }
    let row = db
        .query_one_raw(Statement::from_string(backend, "SELECT version() AS v"))
        .await
        .map_err(|e| Error::database("asking the server for its version", e))?;
    row.map(|row| row.try_get::<String>("", "v"))
        .transpose()
        .map_err(|e| Error::database("reading the server version", e))
}

/// The server's own name: `MySQL`, `MariaDB`, `PostgreSQL`, `SQLite`.
impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Dialect::MySql => "MySQL",
            Dialect::MariaDb => "MariaDB",
            Dialect::Postgres => "PostgreSQL",
            Dialect::Sqlite => "SQLite",
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::model::key::KeyScheme;
    use crate::model::level::Level;
    use crate::model::plan::{Keyspace, LockPlan};
    use crate::model::target::Target;

    fn resource_plan() -> LockPlan {
        let keyspace = Keyspace::Buckets {
            scheme: KeyScheme::SeedFnv1a32,
            space: 10_000_000,
        };
        LockPlan::new(&[Target::resource("u1", "a1", "r1").write()], keyspace).unwrap()
    }

    fn sql(dialect: Dialect, run: usize, wait: Wait) -> String {
        let plan = resource_plan();
        let run = plan.runs().nth(run).unwrap();
        dialect
            .bucket_lock_statement(&TableName::default(), run, wait, None, None, None)
            .sql
    }

    #[test]
    fn the_mysql_family_takes_a_whole_plan_in_one_statement_with_a_clause_per_row() {
        let plan = resource_plan();
        let table = TableName::default();
        let mysql = Dialect::MySql
            .bucket_lock_statement(&table, plan.locks(), Wait::Block, None, None, None)
            .sql;
        let branch = |clause: &str| {
            format!(
                "(SELECT CAST(level AS SIGNED) AS locked_level, CAST(bucket AS SIGNED) AS locked_bucket, \
                 CAST(@@GLOBAL.read_only AS SIGNED) AS hierlock_read_only \
                 FROM `hier_lock_buckets` WHERE level = ? AND bucket = ? {clause})"
            )
        };
        assert_eq!(
            mysql,
            [
                branch("FOR SHARE"),
                branch("FOR SHARE"),
                branch("FOR UPDATE")
            ]
            .join(" UNION ALL ")
        );
        let mariadb = Dialect::MariaDb
            .bucket_lock_statement(&table, plan.locks(), Wait::NoWait, None, None, None)
            .sql;
        assert_eq!(
            mariadb.matches("LOCK IN SHARE MODE NOWAIT)").count(),
            2,
            "{mariadb}"
        );
        assert!(mariadb.ends_with("FOR UPDATE NOWAIT)"), "{mariadb}");
    }

    #[test]
    fn each_server_gets_the_shared_lock_syntax_it_accepts() {
        assert!(sql(Dialect::MariaDb, 0, Wait::Block).contains("LOCK IN SHARE MODE"));
        assert!(!sql(Dialect::MariaDb, 0, Wait::Block).contains("FOR SHARE"));
        assert!(sql(Dialect::MySql, 0, Wait::Block).contains("FOR SHARE)"));
        assert!(sql(Dialect::Postgres, 0, Wait::Block).contains("FOR SHARE OF b)"));
        assert!(sql(Dialect::Postgres, 1, Wait::NoWait).ends_with("FOR UPDATE OF b NOWAIT"));
        assert!(sql(Dialect::MySql, 1, Wait::NoWait).ends_with("FOR UPDATE NOWAIT"));
    }

    #[test]
    fn the_statement_names_exactly_the_planned_rows() {
        assert_eq!(
            sql(Dialect::MySql, 0, Wait::Block),
            "(SELECT CAST(level AS SIGNED) AS locked_level, CAST(bucket AS SIGNED) AS locked_bucket, \
             CAST(@@GLOBAL.read_only AS SIGNED) AS hierlock_read_only \
             FROM `hier_lock_buckets` WHERE level = ? AND bucket = ? FOR SHARE) UNION ALL \
             (SELECT CAST(level AS SIGNED) AS locked_level, CAST(bucket AS SIGNED) AS locked_bucket, \
             CAST(@@GLOBAL.read_only AS SIGNED) AS hierlock_read_only \
             FROM `hier_lock_buckets` WHERE level = ? AND bucket = ? FOR SHARE)"
        );
        assert_eq!(
            sql(Dialect::MariaDb, 1, Wait::NoWait),
            "SELECT CAST(level AS SIGNED) AS locked_level, CAST(bucket AS SIGNED) AS locked_bucket, \
             CAST(@@GLOBAL.read_only AS SIGNED) AS hierlock_read_only \
             FROM `hier_lock_buckets` WHERE level = ? AND bucket = ? FOR UPDATE NOWAIT"
        );
        let lookup = |n: usize| {
            format!(
                "hierlock_k{n} AS MATERIALIZED (SELECT b.level::int8 AS locked_level, \
                 b.bucket::int8 AS locked_bucket FROM \"hier_lock_buckets\" AS b \
                 WHERE b.level = ${}::int2 AND b.bucket = ${}::int4 FOR SHARE OF b)",
                2 * n + 1,
                2 * n + 2
            )
        };
        assert_eq!(
            sql(Dialect::Postgres, 0, Wait::Block),
            format!(
                "WITH {}, {} SELECT locked_level, locked_bucket FROM hierlock_k0 \
                 UNION ALL SELECT locked_level, locked_bucket FROM hierlock_k1",
                lookup(0),
                lookup(1)
            )
        );
        // Past the point lookups' limit, a run's keys are two arrays.
        let large = many_resources(postgres::MAX_POINT_LOOKUPS + 1, 0);
        let resources = large.runs().nth(1).unwrap();
        assert_eq!(resources.len(), postgres::MAX_POINT_LOOKUPS + 1);
        assert_eq!(
            Dialect::Postgres
                .bucket_lock_statement(&TableName::default(), resources, Wait::Block, None, None, None)
                .sql,
            "SELECT b.level::int8 AS locked_level, b.bucket::int8 AS locked_bucket \
             FROM unnest($1::int2[], $2::int4[]) WITH ORDINALITY AS k(level, bucket, position) \
             JOIN \"hier_lock_buckets\" AS b ON b.level = k.level AND b.bucket = k.bucket \
             ORDER BY k.position FOR UPDATE OF b"
        );
    }

    fn many_resources(n: usize, read_every: usize) -> LockPlan {
        let keyspace = Keyspace::Buckets {
            scheme: KeyScheme::SeedFnv1a32,
            space: 10_000_000,
        };
        let requests: Vec<_> = (0..n)
            .map(|i| {
                let target = Target::resource("u", "a", i);
                if read_every > 0 && i % read_every == 0 {
                    target.read()
                } else {
                    target.write()
                }
            })
            .collect();
        LockPlan::new(&requests, keyspace).unwrap()
    }

    #[test]
    fn a_large_plan_sends_each_run_as_one_key_list_in_plan_order() {
        // 30,000 resource writes: two runs, one statement on either family.
        let plan = many_resources(29_998, 0);
        let parts = Dialect::MariaDb.split_bucket_plan(plan.locks());
        assert_eq!(parts.len(), 1);
        let stmt =
            Dialect::MySql.bucket_lock_statement(&TableName::default(), parts[0], Wait::NoWait, None, None, None);
        assert_eq!(stmt.sql.matches("JSON_TABLE(?").count(), 2, "{}", stmt.sql);
        assert!(
            stmt.sql.contains("FOR SHARE OF b0 NOWAIT) UNION ALL ("),
            "{}",
            stmt.sql
        );
        assert!(
            stmt.sql.ends_with("FOR UPDATE OF b1 NOWAIT)"),
            "{}",
            stmt.sql
        );
        let values = stmt.values.unwrap().0;
        let first = &plan.locks()[2];
        let exclusive = format!("[[2,{}],", first.key.slot);
        assert!(
            values[1].to_string().contains(&exclusive),
            "{:?}",
            values[1]
        );
        let mariadb =
            Dialect::MariaDb.bucket_lock_statement(&TableName::default(), parts[0], Wait::Block, None, None, None);
        assert!(
            mariadb.sql.contains("LOCK IN SHARE MODE) UNION ALL ("),
            "{}",
            mariadb.sql
        );
        assert!(
            !mariadb.sql.contains(" OF "),
            "MariaDB has no OF: {}",
            mariadb.sql
        );
        // PostgreSQL: its runs, one after another, in one statement.
        assert_eq!(Dialect::Postgres.split_bucket_plan(plan.locks()), vec![plan.locks()]);
        // Alternating modes: at most 100 runs per statement, in order, all rows once.
        let mixed = many_resources(1_000, 2);
        let parts = Dialect::MySql.split_bucket_plan(mixed.locks());
        let runs = mixed.runs().count();
        assert!(runs > 100);
        assert_eq!(parts.len(), runs.div_ceil(MAX_RUNS_PER_STATEMENT));
        assert_eq!(parts.concat(), mixed.locks());
        // Small plans stay one statement of point lookups.
        let small = many_resources(98, 0);
        assert_eq!(
            Dialect::MySql.split_bucket_plan(small.locks()),
            vec![small.locks()]
        );
    }

    /// PostgreSQL's bucket table: a small part locks each row by a point
    /// lookup of its own, in plan order, the fence last; a larger one, or
    /// one whose waits are bounded, joins each run's keys as arrays.
    #[test]
    fn postgres_locks_a_small_part_by_point_lookups_and_a_large_one_by_runs() {
        use sea_orm::Value;
        let table = TableName::default();
        let plan = resource_plan();
        let fence = Fence::next(true);
        let fencing = Fencing {
            own: fence,
            releasing: Vec::new(),
        };
        let stmt = Dialect::Postgres.bucket_lock_statement(
            &table,
            plan.locks(),
            Wait::Block,
            Some(Duration::from_secs(60)),
            Some(&fencing),
            None,
        );
        assert_eq!(stmt.sql.matches(" OF b").count(), 3, "{}", stmt.sql);
        for (i, clause) in ["FOR SHARE", "FOR SHARE", "FOR UPDATE"].iter().enumerate() {
            let query = format!("hierlock_k{i} AS MATERIALIZED (SELECT b.level::int8");
            assert!(stmt.sql.contains(&query), "{}", stmt.sql);
            let key = format!("WHERE b.level = ${}::int2 AND b.bucket = ${}::int4 {clause} OF b)", 2 * i + 1, 2 * i + 2);
            assert!(stmt.sql.contains(&key), "{key}: {}", stmt.sql);
        }
        assert_eq!(stmt.sql.matches("idle_in_transaction_session_timeout', CASE").count(), 3);
        assert!(!stmt.sql.contains("unnest("), "{}", stmt.sql);
        assert!(
            stmt.sql.ends_with(
                "FROM hierlock_k2 UNION ALL SELECT NULL, NULL WHERE \
                 pg_advisory_xact_lock_shared($7::int4, $8::int4)::text IS NULL"
            ),
            "{}",
            stmt.sql
        );
        let values = stmt.values.expect("values").0;
        let (high, low) = fence.postgres_keys();
        assert_eq!(values.len(), 8);
        assert_eq!(values[1], Value::from(plan.locks()[0].key.slot));
        assert_eq!(values[6..], [Value::from(high), Value::from(low)]);

        let runs = |part: &[PlannedLock], wait| {
            Dialect::Postgres
                .bucket_lock_statement(&table, part, wait, None, None, None)
                .sql
        };
        let large = many_resources(postgres::MAX_POINT_LOOKUPS, 0);
        assert!(large.locks().len() > postgres::MAX_POINT_LOOKUPS);
        assert!(runs(large.locks(), Wait::Block).contains("unnest("));
        let bounded = runs(plan.locks(), Wait::Timeout(Duration::from_secs(1)));
        assert!(bounded.contains("unnest(") && bounded.contains("lock_timeout"), "{bounded}");
    }

    #[test]
    fn mariadb_timeouts_are_a_clause_rounded_up_to_seconds() {
        let s = sql(
            Dialect::MariaDb,
            1,
            Wait::Timeout(Duration::from_millis(1500)),
        );
        assert!(s.ends_with("FOR UPDATE WAIT 2"), "{s}");
        let shared = sql(Dialect::MariaDb, 0, Wait::Timeout(Duration::from_secs(3)));
        assert_eq!(
            shared.matches("LOCK IN SHARE MODE WAIT 3").count(),
            2,
            "{shared}"
        );
        let mysql = sql(Dialect::MySql, 1, Wait::Timeout(Duration::from_secs(3)));
        assert!(
            mysql.ends_with("FOR UPDATE"),
            "no session setting, no clause: {mysql}"
        );
    }

    #[test]
    fn an_advisory_probe_stops_at_the_first_key_taken() {
        let keyspace = Keyspace::Advisory { namespace: 7 };
        let plan = LockPlan::new(&[Target::account("u", "a").write()], keyspace).unwrap();
        let stmt = Dialect::Postgres.advisory_probe_statement(plan.locks(), None, false);
        assert_eq!(
            stmt.sql,
            "SELECT CASE WHEN pg_try_advisory_xact_lock_shared($1) THEN \
             CASE WHEN pg_try_advisory_xact_lock($2) THEN 1 ELSE 0 END ELSE 0 END AS granted, \
             pg_is_in_recovery() AS hierlock_standby"
        );
        // Naming the waiter keeps the attempt whole, evaluated once, and
        // assigns a transaction id only when a key was taken.
        let named = Dialect::Postgres.advisory_probe_statement(plan.locks(), None, true);
        assert!(
            named.sql.starts_with(&format!("WITH hierlock_probe AS MATERIALIZED ({}) ", stmt.sql)),
            "{}",
            named.sql
        );
        assert!(
            named.sql.ends_with(
                "SELECT hierlock_probe.*, pg_backend_pid()::int8 AS id, \
                 CASE WHEN hierlock_probe.granted = 1 THEN -1 ELSE \
                 CASE WHEN pg_is_in_recovery() THEN -1 ELSE pg_current_xact_id()::text::int8 END \
                 END AS xact FROM hierlock_probe"
            ),
            "{}",
            named.sql
        );
    }

    #[test]
    fn advisory_locks_are_one_statement_left_to_right() {
        let keyspace = Keyspace::Advisory { namespace: 7 };
        let plan = LockPlan::new(&[Target::account("u", "a").write()], keyspace).unwrap();
        let stmt = Dialect::Postgres.advisory_lock_statement(plan.locks(), false, None, None, None);
        assert_eq!(
            stmt.sql,
            "SELECT pg_advisory_xact_lock_shared($1) AS l0, pg_advisory_xact_lock($2) AS l1, \
             pg_is_in_recovery() AS hierlock_standby"
        );
        assert_eq!(plan.locks()[0].key.level, Level::User);
    }

    #[test]
    fn a_timed_advisory_statement_bounds_its_waits_and_restores_the_setting() {
        use crate::backend::fence::Fence;

        let keyspace = Keyspace::Advisory { namespace: 7 };
        let plan = LockPlan::new(&[Target::account("u", "a").write()], keyspace).unwrap();
        let left = Some(Duration::from_micros(300_400));
        let stmt = Dialect::Postgres.advisory_lock_statement(
            plan.locks(),
            false,
            None,
            Some(Fence::next(true)),
            left,
        );
        let sql = &stmt.sql;
        // The deadline is fixed in the subquery; before each lock, the time
        // left of it is set; the setting is set back after the locks, before
        // the fence; the bound's parameter follows the fence's.
        let restore = sql.find("hierlock_restore").expect(sql);
        let fence = sql.find("hierlock_fence").expect(sql);
        let first = sql.find("pg_advisory_xact_lock_shared($1)").expect(sql);
        let second = sql.find("pg_advisory_xact_lock($2)").expect(sql);
        let rebound = |column: &str| {
            let at = sql.find(&format!("AS {column}")).expect(sql);
            assert!(sql[..at].ends_with("::int8::text, true) "), "{sql}");
            at
        };
        assert!(rebound("hierlock_b0") < first && first < rebound("hierlock_b1"), "{sql}");
        assert!(rebound("hierlock_b1") < second, "{sql}");
        assert!(second < restore && restore < fence, "{sql}");
        assert!(
            sql.ends_with(
                "FROM (SELECT current_setting('lock_timeout') AS hierlock_prev, \
                 clock_timestamp() + ($5 || ' milliseconds')::interval AS hierlock_end, \
                 CASE WHEN current_setting('lock_timeout')::interval >= interval '1 millisecond' \
                 THEN extract(epoch FROM current_setting('lock_timeout')::interval) * 1000 END \
                 AS hierlock_cap OFFSET 0) AS hierlock_d"
            ),
            "{sql}"
        );
        let values = stmt.values.expect("values").0;
        assert_eq!(values.len(), 5);
        assert_eq!(values[4], sea_orm::Value::from("300".to_owned()));
        // No deadline, no bound.
        let blocking = Dialect::Postgres.advisory_lock_statement(plan.locks(), false, None, None, None);
        assert!(!blocking.sql.contains("lock_timeout"), "{}", blocking.sql);
    }

    #[test]
    fn servers_display_their_own_names() {
        assert_eq!(Dialect::MySql.to_string(), "MySQL");
        assert_eq!(Dialect::MariaDb.to_string(), "MariaDB");
        assert_eq!(Dialect::Postgres.to_string(), "PostgreSQL");
        assert_eq!(Dialect::Sqlite.to_string(), "SQLite");
    }
}
