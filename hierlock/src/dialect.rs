//! The SQL each server accepts, written by hand.
//!
//! SeaORM's `lock_shared()` emits `LOCK IN SHARE MODE` for every MySQL-family
//! server and drops lock clauses on SQLite, and no ORM knows MariaDB's
//! `WAIT n`; so the server is detected once and the statements built here.

use std::fmt::Write as _;
use std::time::Duration;

use sea_orm::{ConnectionTrait, DbBackend, Statement, Value};

use crate::config::{TableName, Wait};
use crate::error::{Error, Result};
use crate::plan::{LockMode, PlannedLock};

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
        crate::classify::require_backend_feature(backend)?;
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

    /// The most rows (or advisory keys) one lock statement names; longer runs
    /// are split into consecutive statements, in plan order.
    ///
    /// Measured: MySQL's cost per row of a `UNION ALL` stays flat up to about
    /// a hundred members and then grows (7 ms per row at 26,000); PostgreSQL
    /// refuses more than 1,664 select-list entries (advisory locks) and runs
    /// out of parser stack on a 26,000-row `IN` list.
    pub fn max_rows_per_statement(self) -> usize {
        match self {
            Dialect::MySql | Dialect::MariaDb => 100,
            _ => 1_000,
        }
    }

    /// `name`, quoted as an identifier (names are validated, never escaped).
    pub(crate) fn quote(self, name: &str) -> String {
        if self.is_mysql_family() {
            format!("`{name}`")
        } else {
            format!("\"{name}\"")
        }
    }

    /// One statement locking every row of `run` in key order: rows of
    /// both modes on the MySQL family, rows of one mode on PostgreSQL.
    ///
    /// MySQL family: a `UNION ALL` of point lookups, each with its own lock
    /// clause, in plan order. Each member is an equality on the full primary
    /// key, so InnoDB takes record locks only (no gap locks, even under
    /// REPEATABLE READ) on exactly that row. A single `WHERE (level, bucket)
    /// IN (…)` was measured locking *every* row of a small table on MySQL 9
    /// (the optimizer prefers a full scan of the clustered index, which
    /// `FORCE INDEX` still allows) and on MariaDB as a prepared statement.
    ///
    /// PostgreSQL locks only the rows a query returns, and rejects lock
    /// clauses inside a `UNION`: one `IN` list, locked in `ORDER BY` order.
    pub(crate) fn bucket_lock_statement(
        self,
        table: &TableName,
        run: &[PlannedLock],
        wait: Wait,
    ) -> Statement {
        let table = self.quote(table.as_str());
        let mut values = Vec::with_capacity(run.len() * 2);
        for lock in run {
            values.push(Value::from(i32::from(lock.key.level.as_u8())));
            values.push(Value::from(lock.key.slot));
        }
        let mut sql = String::with_capacity(32 + run.len() * (table.len() + 110));
        if self == Dialect::Postgres {
            sql.push_str("SELECT level::int8 AS locked_level, bucket::int8 AS locked_bucket FROM ");
            sql.push_str(&table);
            sql.push_str(" WHERE (level, bucket) IN (");
            for i in 0..run.len() {
                let sep = if i > 0 { ", " } else { "" };
                write!(sql, "{sep}(${}, ${})", 2 * i + 1, 2 * i + 2).ok();
            }
            // One mode per statement: PostgreSQL refuses lock clauses
            // inside a `UNION`.
            let mode = run.first().map_or(LockMode::Shared, |lock| lock.mode);
            let lock = format!("{}{}", self.lock_clause(mode), self.wait_clause(wait));
            write!(sql, ") ORDER BY level, bucket {lock}").ok();
        } else {
            // Each branch has its own lock clause, so one statement takes
            // shared and exclusive rows alike, in branch order. Both servers
            // need the parentheses; one clause at the end would be refused by
            // MariaDB (1221) and lock only the last branch on MySQL.
            let wait = self.wait_clause(wait);
            let member = |mode: LockMode| {
                format!(
                    "SELECT CAST(level AS SIGNED) AS locked_level, CAST(bucket AS SIGNED) AS locked_bucket \
                     FROM {table} WHERE level = ? AND bucket = ? {}{wait}",
                    self.lock_clause(mode)
                )
            };
            if let [only] = run {
                sql.push_str(&member(only.mode));
            } else {
                for (i, lock) in run.iter().enumerate() {
                    let sep = if i > 0 { " UNION ALL " } else { "" };
                    write!(sql, "{sep}({})", member(lock.mode)).ok();
                }
            }
        }
        Statement::from_sql_and_values(self.backend(), sql, values)
    }

    fn lock_clause(self, mode: LockMode) -> &'static str {
        match (self, mode) {
            (_, LockMode::Exclusive) => "FOR UPDATE",
            // MariaDB rejects FOR SHARE (1064); PostgreSQL rejects LOCK IN SHARE MODE.
            (Dialect::MariaDb, LockMode::Shared) => "LOCK IN SHARE MODE",
            (_, LockMode::Shared) => "FOR SHARE",
        }
    }

    /// The statement-level wait clause. MariaDB's `WAIT n` bounds the wait on
    /// the server too; MySQL and PostgreSQL have no per-statement timeout:
    /// hierlock cancels their statements at the deadline (see `cancel`).
    fn wait_clause(self, wait: Wait) -> String {
        match (self, wait) {
            (_, Wait::NoWait) => " NOWAIT".to_owned(),
            (Dialect::MariaDb, Wait::Timeout(d)) => format!(" WAIT {}", whole_seconds(d)),
            _ => String::new(),
        }
    }

    /// `SELECT pg_advisory_xact_lock_shared($1), pg_advisory_xact_lock($2), …`:
    /// one statement for a whole plan, taken left to right. With `try_`, each
    /// column says whether its key was granted.
    pub(crate) fn advisory_lock_statement(self, plan: &[PlannedLock], try_only: bool) -> Statement {
        let prefix = if try_only {
            "pg_try_advisory_xact_lock"
        } else {
            "pg_advisory_xact_lock"
        };
        let mut sql = String::from("SELECT ");
        for (i, lock) in plan.iter().enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            let shared = if lock.mode == LockMode::Shared {
                "_shared"
            } else {
                ""
            };
            write!(sql, "{prefix}{shared}(${}) AS l{i}", i + 1).ok();
        }
        let values = plan.iter().map(|lock| Value::from(lock.key.slot));
        Statement::from_sql_and_values(self.backend(), sql, values)
    }

    /// `SELECT CASE WHEN pg_try_advisory_xact_lock_shared($1) THEN CASE WHEN
    /// pg_try_advisory_xact_lock($2) THEN 1 ELSE 0 END ELSE 0 END`: try the
    /// keys left to right and stop at the first one taken (a `CASE` is
    /// evaluated in order; `AND` is not guaranteed to be), so that a failed
    /// attempt holds a prefix of the plan, never a key past a gap. Returns
    /// one column, `granted`: 1 if every key was taken.
    pub(crate) fn advisory_probe_statement(self, plan: &[PlannedLock]) -> Statement {
        let mut sql = String::from("SELECT ");
        for (i, lock) in plan.iter().enumerate() {
            let shared = if lock.mode == LockMode::Shared {
                "_shared"
            } else {
                ""
            };
            write!(
                sql,
                "CASE WHEN pg_try_advisory_xact_lock{shared}(${}) THEN ",
                i + 1
            )
            .ok();
        }
        sql.push('1');
        for _ in plan {
            sql.push_str(" ELSE 0 END");
        }
        sql.push_str(" AS granted");
        let values = plan.iter().map(|lock| Value::from(lock.key.slot));
        Statement::from_sql_and_values(self.backend(), sql, values)
    }

    /// SQLite: a write to the metadata table takes the database's write
    /// (RESERVED) lock even though it changes no row.
    pub(crate) fn sqlite_write_lock_statement(self, table: &TableName) -> Statement {
        let sql = format!("UPDATE {} SET id = id WHERE 0", self.quote(&table.meta()));
        Statement::from_string(self.backend(), sql)
    }

    /// SQLite: the busy timeout is the lock wait; `None` reads it.
    pub(crate) fn sqlite_busy_timeout_statement(self, millis: Option<u128>) -> Statement {
        let sql = match millis {
            Some(ms) => format!("PRAGMA busy_timeout = {ms}"),
            None => "PRAGMA busy_timeout".to_owned(),
        };
        Statement::from_string(self.backend(), sql)
    }
}

/// What the server says it is (`SELECT version()`; `None` on SQLite, which
/// is not asked).
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

/// MySQL-family lock timeouts are whole seconds: round up, never down to zero.
fn whole_seconds(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::KeyScheme;
    use crate::level::Level;
    use crate::plan::{Keyspace, LockPlan};
    use crate::target::Target;

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
            .bucket_lock_statement(&TableName::default(), run, wait)
            .sql
    }

    #[test]
    fn the_mysql_family_takes_a_whole_plan_in_one_statement_with_a_clause_per_row() {
        let plan = resource_plan();
        let table = TableName::default();
        let mysql = Dialect::MySql
            .bucket_lock_statement(&table, plan.locks(), Wait::Block)
            .sql;
        let branch = |clause: &str| {
            format!(
                "(SELECT CAST(level AS SIGNED) AS locked_level, CAST(bucket AS SIGNED) AS locked_bucket \
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
            .bucket_lock_statement(&table, plan.locks(), Wait::NoWait)
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
        assert!(sql(Dialect::Postgres, 0, Wait::Block).ends_with("FOR SHARE"));
        assert!(sql(Dialect::MySql, 1, Wait::NoWait).ends_with("FOR UPDATE NOWAIT"));
    }

    #[test]
    fn the_statement_names_exactly_the_planned_rows() {
        assert_eq!(
            sql(Dialect::MySql, 0, Wait::Block),
            "(SELECT CAST(level AS SIGNED) AS locked_level, CAST(bucket AS SIGNED) AS locked_bucket \
             FROM `hier_lock_buckets` WHERE level = ? AND bucket = ? FOR SHARE) UNION ALL \
             (SELECT CAST(level AS SIGNED) AS locked_level, CAST(bucket AS SIGNED) AS locked_bucket \
             FROM `hier_lock_buckets` WHERE level = ? AND bucket = ? FOR SHARE)"
        );
        assert_eq!(
            sql(Dialect::MariaDb, 1, Wait::NoWait),
            "SELECT CAST(level AS SIGNED) AS locked_level, CAST(bucket AS SIGNED) AS locked_bucket \
             FROM `hier_lock_buckets` WHERE level = ? AND bucket = ? FOR UPDATE NOWAIT"
        );
        assert_eq!(
            sql(Dialect::Postgres, 0, Wait::Block),
            "SELECT level::int8 AS locked_level, bucket::int8 AS locked_bucket FROM \"hier_lock_buckets\" \
             WHERE (level, bucket) IN (($1, $2), ($3, $4)) ORDER BY level, bucket FOR SHARE"
        );
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
        let stmt = Dialect::Postgres.advisory_probe_statement(plan.locks());
        assert_eq!(
            stmt.sql,
            "SELECT CASE WHEN pg_try_advisory_xact_lock_shared($1) THEN \
             CASE WHEN pg_try_advisory_xact_lock($2) THEN 1 ELSE 0 END ELSE 0 END AS granted"
        );
    }

    #[test]
    fn advisory_locks_are_one_statement_left_to_right() {
        let keyspace = Keyspace::Advisory { namespace: 7 };
        let plan = LockPlan::new(&[Target::account("u", "a").write()], keyspace).unwrap();
        let stmt = Dialect::Postgres.advisory_lock_statement(plan.locks(), false);
        assert_eq!(
            stmt.sql,
            "SELECT pg_advisory_xact_lock_shared($1) AS l0, pg_advisory_xact_lock($2) AS l1"
        );
        assert_eq!(plan.locks()[0].key.level, Level::User);
    }
}
