//! MySQL and MariaDB: the lock statements over the bucket table.
//!
//! Both take a parenthesised `UNION ALL` with a lock clause per branch, and
//! lock rows in branch order. They differ in the shared clause (MariaDB
//! rejects `FOR SHARE` with 1064), in `OF` (MySQL needs it, MariaDB has
//! none) and in the wait (MariaDB's `WAIT n`; MySQL has no per-statement
//! timeout, so hierlock cancels the statement at the deadline).

use std::fmt::Write as _;
use std::time::Duration;

use sea_orm::{DbBackend, Statement, Value};

use super::fence::Fencing;
use crate::config::Wait;
use crate::model::plan::{LockMode, PlannedLock};

/// Which server of the family: their lock syntax differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flavor {
    MySql,
    MariaDb,
}

/// Small plans: a `UNION ALL` of point lookups, each with its own lock
/// clause, in plan order. Each member is an equality on the full primary
/// key, so InnoDB takes record locks only (no gap locks, even under
/// REPEATABLE READ) on exactly that row. A single `WHERE (level, bucket) IN
/// (…)` was measured locking *every* row of a small table on MySQL 9 (the
/// optimizer prefers a full scan of the clustered index, which `FORCE INDEX`
/// still allows) and on MariaDB as a prepared statement.
/// `read_columns` follow the lock columns (see `row_read`).
pub(super) fn point_lookups(
    flavor: Flavor,
    table: &str,
    part: &[PlannedLock],
    wait: Wait,
    read_columns: &str,
) -> Statement {
    let mut values = Vec::with_capacity(part.len() * 2);
    for lock in part {
        values.push(Value::from(i32::from(lock.key.table_level())));
        values.push(Value::from(lock.key.slot));
    }
    // Each branch has its own lock clause, so one statement takes shared and
    // exclusive rows alike, in branch order. Both servers need the
    // parentheses; one clause at the end would be refused by MariaDB (1221)
    // and lock only the last branch on MySQL.
    let wait = wait_clause(flavor, wait);
    let member = |mode: LockMode| {
        format!(
            "SELECT CAST(level AS SIGNED) AS locked_level, CAST(bucket AS SIGNED) AS locked_bucket\
             {READ_ONLY_COLUMN}{read_columns} FROM {table} WHERE level = ? AND bucket = ? {}{wait}",
            lock_clause(flavor, mode)
        )
    };
    let mut sql = String::with_capacity(32 + part.len() * (table.len() + 110));
    if let [only] = part {
        sql.push_str(&member(only.mode));
    } else {
        for (i, lock) in part.iter().enumerate() {
            let sep = if i > 0 { " UNION ALL " } else { "" };
            write!(sql, "{sep}({})", member(lock.mode)).ok();
        }
    }
    Statement::from_sql_and_values(DbBackend::MySql, sql, values)
}

/// Large plans: each run of equal modes is one `UNION ALL` branch that joins
/// its keys, one JSON array parameter read by `JSON_TABLE` (MySQL 8.0.4+,
/// MariaDB 10.6+), to the bucket table. `STRAIGHT_JOIN` reads the keys
/// first, in array (= plan) order, and `FORCE INDEX (PRIMARY)` looks each one
/// up by the full primary key, so the rows are locked one by one in plan
/// order, record locks only, as with point lookups; the statement's text and
/// cost no longer grow with the number of rows. MySQL needs `OF` (its lock
/// clauses would otherwise also name the key list); MariaDB has no `OF` and
/// needs none. `read_columns` follow the lock columns (see `row_read`).
pub(super) fn run_lists(
    flavor: Flavor,
    table: &str,
    part: &[PlannedLock],
    wait: Wait,
    read_columns: &str,
) -> Statement {
    let wait = wait_clause(flavor, wait);
    let runs: Vec<&[PlannedLock]> = part.chunk_by(|a, b| a.mode == b.mode).collect();
    let mut sql = String::with_capacity(runs.len() * (table.len() + 400));
    let mut values = Vec::with_capacity(runs.len());
    for (i, run) in runs.iter().enumerate() {
        let mode = run[0].mode;
        let of = if flavor == Flavor::MySql {
            format!(" OF b{i}")
        } else {
            String::new()
        };
        let sep = if i > 0 { " UNION ALL " } else { "" };
        write!(
            sql,
            "{sep}(SELECT CAST(b{i}.level AS SIGNED) AS locked_level, \
             CAST(b{i}.bucket AS SIGNED) AS locked_bucket{READ_ONLY_COLUMN}{read_columns} \
             FROM JSON_TABLE(?, '$[*]' COLUMNS (level INT PATH '$[0]', bucket INT PATH '$[1]')) AS k{i} \
             STRAIGHT_JOIN {table} AS b{i} FORCE INDEX (PRIMARY) \
             ON b{i}.level = k{i}.level AND b{i}.bucket = k{i}.bucket {}{of}{wait})",
            lock_clause(flavor, mode)
        )
        .ok();
        values.push(Value::from(json_keys(run)));
    }
    Statement::from_sql_and_values(DbBackend::MySql, sql, values)
}

/// `stmt`, then its fence (see `cancel`): a last `UNION ALL` branch that
/// takes the fence's `GET_LOCK` lock once every earlier branch has locked
/// its rows (the branches run in order), then lets go of the fences its
/// connection kept from earlier statements (`RELEASE_LOCK`: a fence
/// outlives its statement, see `cancel::kept`), and returns no row. It
/// waits for the fence as long as a cancellation holds it, a year at most
/// (MariaDB has no endless `GET_LOCK`). A fence that is only a mark
/// (Galera) is a comment at the end of the text.
/// `columns`: how many columns the statement's rows have.
pub(super) fn fenced(mut stmt: Statement, fencing: &Fencing, columns: usize) -> Statement {
    let fence = fencing.own;
    if !fence.locks() {
        stmt.sql.push_str(&format!(" /* {} */", fence.mysql_name()));
        return stmt;
    }
    let nulls = vec!["NULL"; columns].join(", ");
    // A sum, so that every call runs, left to right: the fence first. A
    // release answers 1, or 0 or NULL for a lock this session does not
    // hold (a statement that never reached its fence): nothing happens.
    let releases = " + COALESCE(RELEASE_LOCK(?), 0)".repeat(fencing.releasing.len());
    let branch = format!("SELECT {nulls} FROM DUAL WHERE GET_LOCK(?, 31536000){releases} < 0");
    let names = std::iter::once(fence).chain(fencing.releasing.iter().copied());
    union_all(stmt, &branch, names.map(|f| Value::from(f.mysql_name())))
}

/// `stmt` (lock branches), then `branch` with its `values`, as one more
/// `UNION ALL` branch.
pub(super) fn union_all(
    mut stmt: Statement,
    branch: &str,
    values: impl IntoIterator<Item = Value>,
) -> Statement {
    // A lone branch gets the parentheses a `UNION` needs around a lock clause.
    if !stmt.sql.starts_with('(') {
        stmt.sql = format!("({})", stmt.sql);
    }
    write!(stmt.sql, " UNION ALL ({branch})").ok();
    let values = values.into_iter();
    match &mut stmt.values {
        Some(own) => own.0.extend(values),
        None => stmt.values = Some(sea_orm::Values(values.collect())),
    }
    stmt
}

/// The column each row of a lock statement carries: whether the server is
/// read-only (`@@read_only`, which `super_read_only` also sets). A user
/// with `SUPER` (or MySQL's `CONNECTION_ADMIN`), root as most services
/// connect, takes row locks on a plain read-only server, a replica whose
/// locks exclude nothing on its primary: a pool that reaches one after
/// `Locker::connect` (a failover behind a router to a replica without
/// `super_read_only`) would be granted them. Read in the same statement, so
/// it costs no round trip. Others are refused by the server (1290).
pub(super) const READ_ONLY_COLUMN: &str =
    ", CAST(@@GLOBAL.read_only AS SIGNED) AS hierlock_read_only";

/// Whether a lock statement's rows say its server is read-only
/// ([`READ_ONLY_COLUMN`]).
pub(super) fn on_read_only(rows: &[sea_orm::QueryResult]) -> bool {
    rows.iter()
        .any(|row| row.try_get::<i64>("", "hierlock_read_only").is_ok_and(|flag| flag != 0))
}

fn lock_clause(flavor: Flavor, mode: LockMode) -> &'static str {
    match (flavor, mode) {
        (_, LockMode::Exclusive) => "FOR UPDATE",
        // MariaDB rejects FOR SHARE (1064).
        (Flavor::MariaDb, LockMode::Shared) => "LOCK IN SHARE MODE",
        (_, LockMode::Shared) => "FOR SHARE",
    }
}

/// The statement-level wait clause. MariaDB's `WAIT n` bounds the wait on the
/// server too; MySQL has no per-statement timeout: hierlock cancels its
/// statements at the deadline (see `cancel`).
fn wait_clause(flavor: Flavor, wait: Wait) -> String {
    match (flavor, wait) {
        (_, Wait::NoWait) => " NOWAIT".to_owned(),
        (Flavor::MariaDb, Wait::Timeout(d)) => format!(" WAIT {}", whole_seconds(d)),
        _ => String::new(),
    }
}

/// `[[level,bucket],…]`: a run's keys for `JSON_TABLE`, in plan order.
fn json_keys(run: &[PlannedLock]) -> String {
    let mut json = String::with_capacity(2 + run.len() * 12);
    json.push('[');
    for (i, lock) in run.iter().enumerate() {
        let sep = if i > 0 { "," } else { "" };
        write!(json, "{sep}[{},{}]", lock.key.table_level(), lock.key.slot).ok();
    }
    json.push(']');
    json
}

/// MySQL-family timeouts are whole seconds: round up, never down to zero.
pub(crate) fn whole_seconds(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::fence::Fence;

    /// The fence branch takes the statement's own fence, then lets go of
    /// the ones its connection kept, in one sum so that every call runs,
    /// and returns no row; its parameters follow the statement's.
    #[test]
    fn the_fence_branch_takes_its_own_then_lets_the_kept_ones_go() {
        let stmt = Statement::from_sql_and_values(
            DbBackend::MySql,
            "SELECT 1, 2 FROM t WHERE k = ? FOR UPDATE",
            [Value::from(7_i64)],
        );
        let (own, kept) = (Fence::next(true), [Fence::next(true), Fence::next(true)]);
        let fencing = Fencing {
            own,
            releasing: kept.to_vec(),
        };
        let fenced = fenced(stmt, &fencing, 2);
        assert_eq!(
            fenced.sql,
            "(SELECT 1, 2 FROM t WHERE k = ? FOR UPDATE) UNION ALL (SELECT NULL, NULL FROM DUAL \
             WHERE GET_LOCK(?, 31536000) + COALESCE(RELEASE_LOCK(?), 0) + COALESCE(RELEASE_LOCK(?), 0) < 0)"
        );
        let names: Vec<Value> = [own, kept[0], kept[1]].iter().map(|f| Value::from(f.mysql_name())).collect();
        assert_eq!(fenced.values.expect("values").0[1..], names[..]);
        // A mark (a server that refuses `GET_LOCK`) lets nothing go.
        let mark = Fencing {
            own: Fence::next(false),
            releasing: Vec::new(),
        };
        let marked = fenced_mark(&mark);
        assert!(marked.ends_with(&format!(" /* {} */", mark.own.mysql_name())), "{marked}");
    }

    fn fenced_mark(fencing: &Fencing) -> String {
        let stmt = Statement::from_string(DbBackend::MySql, "SELECT 1 FROM t FOR UPDATE");
        fenced(stmt, fencing, 1).sql
    }
}
