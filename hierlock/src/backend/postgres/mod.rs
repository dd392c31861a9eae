//! PostgreSQL: transaction-scoped advisory locks (the default) and the
//! optional bucket table.
//!
//! PostgreSQL rejects lock clauses inside a `UNION`, so a bucket plan's
//! rows (a small plan) or runs of equal modes (a large one) are `WITH`
//! queries of one statement. It has no
//! per-statement lock timeout: a timed statement sets `lock_timeout` for
//! its own waits ([`bounded`]), and hierlock cancels it if it has not
//! answered just after the deadline (see `cancel`).

pub(crate) mod advisory;

/// The largest plan tried key by key before waiting on PostgreSQL: its
/// probe nests one `CASE` per key. Larger plans read the connection id
/// first and wait at once.
pub(crate) const MAX_PROBED_KEYS: usize = 64;

/// The largest part of a plan whose bucket rows are locked by point
/// lookups, one query each ([`bucket_statement`]); a larger one sends each
/// run of equal modes as two arrays. The MySQL family's limit.
pub(crate) const MAX_POINT_LOOKUPS: usize = 12;

use std::fmt::Write as _;
use std::time::Duration;

use sea_orm::{DbBackend, Statement, Value};

use super::fence::Fence;
use crate::config::Wait;
use crate::model::plan::{LockMode, PlannedLock};

/// A part of a plan on the bucket table, in one statement: each run of
/// equal modes its keys as two array parameters (whatever the run's
/// length: no parameter limit, no select-list limit). PostgreSQL refuses
/// lock clauses inside a `UNION`, so each run is a query of its own,
/// locking its rows as it is read (PostgreSQL locks only the rows a query
/// returns, in `ORDER BY` order: the lock is taken above the sort; here the
/// keys' order in the arrays, the plan's, which is not the table's
/// `(level, bucket)` order once stripes sit between the levels). A part of
/// one run is that query alone; a longer one puts each run in a
/// `MATERIALIZED` `WITH` query and reads them one after another with
/// `UNION ALL`, which runs its branches in order: a run's rows are all
/// locked before the next run's are read.
///
/// A part of up to [`MAX_POINT_LOOKUPS`] rows with no bound (see
/// [`bounded`]) locks each row in a query of its own instead
/// ([`point_lookups`]).
///
/// With a `fence` (see `cancel`), a last branch takes it once every row is
/// locked and returns no row.
pub(super) fn bucket_statement(
    table: &str,
    part: &[PlannedLock],
    wait: Wait,
    lease: Option<Duration>,
    fence: Option<Fence>,
) -> Statement {
    let bound = server_bound(wait);
    if bound.is_none() && part.len() <= MAX_POINT_LOOKUPS {
        return point_lookups(table, part, wait, lease, fence);
    }
    let runs: Vec<&[PlannedLock]> = part.chunk_by(|a, b| a.mode == b.mode).collect();
    let nowait = if wait == Wait::NoWait { " NOWAIT" } else { "" };
    // Each run's two arrays, then the fence's keys, then the bound.
    let fence_param = 2 * runs.len() + 1;
    let bound_param = fence_param + if fence.is_some() { 2 } else { 0 };
    let run_query = |i: usize, run: &[PlannedLock]| {
        let lock = lock_clause(run.first().map_or(LockMode::Shared, |lock| lock.mode));
        // The locked rows, `b`, one for each key of `k`, in the keys' order.
        let keys = format!(
            "SELECT b.level::int8 AS locked_level, b.bucket::int8 AS locked_bucket{} \
             FROM unnest(${}::int2[], ${}::int4[]) WITH ORDINALITY AS k(level, bucket, position)",
            lease_column(lease),
            2 * i + 1,
            2 * i + 2
        );
        if bound.is_some() {
            // The bound (see `bounded`) is set again before each row's lock:
            // the row is locked in a subquery of its own, in the `WHERE` of
            // which the setting is made, so each row's `FOR UPDATE` runs
            // after its own setting. A nested loop over the keys, in their
            // order, runs those subqueries: the rows are locked in the
            // plan's order, as the `ORDER BY` below does it for an unbounded
            // run.
            format!(
                "{keys} CROSS JOIN hierlock_d CROSS JOIN LATERAL (SELECT t.level, t.bucket \
                 FROM {table} AS t WHERE t.level = k.level AND t.bucket = k.bucket \
                 AND {REBOUND} IS NOT NULL {lock} OF t) AS b ORDER BY k.position"
            )
        } else {
            format!(
                "{keys} JOIN {table} AS b ON b.level = k.level AND b.bucket = k.bucket \
                 ORDER BY k.position {lock} OF b{nowait}"
            )
        }
    };
    let sql = if let ([run], None, None) = (runs.as_slice(), fence, bound) {
        run_query(0, run)
    } else {
        // The `WITH` queries are read in the order of the `UNION ALL`
        // branches, each to its end; a later branch's condition has no
        // column, so it is evaluated once, when that branch starts.
        // `hierlock_d` is read once (materialized: it is named several
        // times and volatile).
        let mut with: Vec<String> = bound.iter().map(|_| bound_query(bound_param)).collect();
        let mut branches = Vec::with_capacity(runs.len() + 2);
        for (i, run) in runs.iter().enumerate() {
            with.push(format!("hierlock_r{i} AS MATERIALIZED ({})", run_query(i, run)));
            branches.push(format!("SELECT locked_level, locked_bucket FROM hierlock_r{i}"));
        }
        if bound.is_some() {
            branches.push(
                "SELECT NULL, NULL WHERE set_config('lock_timeout', \
                 (SELECT hierlock_prev FROM hierlock_d), true) IS NULL"
                    .to_owned(),
            );
        }
        if fence.is_some() {
            branches.push(fence_branch(fence_param));
        }
        format!("WITH {} {}", with.join(", "), branches.join(" UNION ALL "))
    };
    let array = |run: &[PlannedLock], field: fn(&PlannedLock) -> i64| {
        let mut text = String::with_capacity(2 + run.len() * 8);
        text.push('{');
        for (i, lock) in run.iter().enumerate() {
            let sep = if i > 0 { "," } else { "" };
            write!(text, "{sep}{}", field(lock)).ok();
        }
        text.push('}');
        Value::from(text)
    };
    let mut values = Vec::with_capacity(2 * runs.len() + 3);
    for run in &runs {
        values.push(array(run, |lock| i64::from(lock.key.table_level())));
        values.push(array(run, |lock| lock.key.slot));
    }
    values.extend(fence_values(fence));
    values.extend(bound.map(bound_value));
    Statement::from_sql_and_values(DbBackend::Postgres, sql, values)
}

/// A small part of a plan on the bucket table: each row a point lookup on
/// its full key, locking the row it finds, in a `MATERIALIZED` `WITH` query
/// of its own, which the `UNION ALL` reads in the plan's order (a part of
/// one row is that query alone). A small plan's rows cost the server less
/// this way than the arrays' join, sort and lock (measured under a hot key:
/// BENCHMARKS.md, "PostgreSQL's bucket table by point lookups").
/// With a `fence`, a last branch takes it once every row is locked.
fn point_lookups(
    table: &str,
    part: &[PlannedLock],
    wait: Wait,
    lease: Option<Duration>,
    fence: Option<Fence>,
) -> Statement {
    let nowait = if wait == Wait::NoWait { " NOWAIT" } else { "" };
    let lease = lease_column(lease);
    let lookup = |i: usize, lock: &PlannedLock| {
        format!(
            "SELECT b.level::int8 AS locked_level, b.bucket::int8 AS locked_bucket{lease} \
             FROM {table} AS b WHERE b.level = ${}::int2 AND b.bucket = ${}::int4 {} OF b{nowait}",
            2 * i + 1,
            2 * i + 2,
            lock_clause(lock.mode)
        )
    };
    let sql = if let ([only], None) = (part, fence) {
        lookup(0, only)
    } else {
        let mut with = Vec::with_capacity(part.len());
        let mut branches = Vec::with_capacity(part.len() + 1);
        for (i, lock) in part.iter().enumerate() {
            with.push(format!("hierlock_k{i} AS MATERIALIZED ({})", lookup(i, lock)));
            branches.push(format!("SELECT locked_level, locked_bucket FROM hierlock_k{i}"));
        }
        if fence.is_some() {
            branches.push(fence_branch(2 * part.len() + 1));
        }
        format!("WITH {} {}", with.join(", "), branches.join(" UNION ALL "))
    };
    let values = row_keys(part).chain(fence_values(fence));
    Statement::from_sql_and_values(DbBackend::Postgres, sql, values)
}

/// `SELECT pg_advisory_xact_lock_shared($1), pg_advisory_xact_lock($2), …`:
/// one statement for a whole plan, taken left to right. With `try_only`,
/// each column says whether its key was granted.
///
/// With a `fence` (see `cancel`), a last column takes it once every key is.
///
/// With a `bound` (the time left before the acquisition's deadline), the
/// server ends the statement's waits itself ([`bounded`]).
pub(super) fn advisory_locks(
    plan: &[PlannedLock],
    try_only: bool,
    lease: Option<Duration>,
    fence: Option<Fence>,
    bound: Option<Duration>,
) -> Statement {
    let prefix = if try_only {
        "pg_try_advisory_xact_lock"
    } else {
        "pg_advisory_xact_lock"
    };
    let mut sql = String::from("SELECT ");
    debug_assert!(!(try_only && bound.is_some()), "a try-lock never waits");
    for (i, lock) in plan.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        if bound.is_some() {
            // The select list is evaluated left to right: each key's wait
            // gets what is left of the deadline when it starts.
            write!(sql, "{REBOUND} AS hierlock_b{i}, ").ok();
        }
        write!(sql, "{prefix}{}(${}) AS l{i}", shared_suffix(lock), i + 1).ok();
    }
    sql.push_str(STANDBY_COLUMN);
    sql.push_str(&lease_column(lease));
    // The bound ends before the fence, which waits only for a canceller.
    let bound_param = plan.len() + 1 + if fence.is_some() { 2 } else { 0 };
    if bound.is_some() {
        sql.push_str(", set_config('lock_timeout', hierlock_d.hierlock_prev, true) AS hierlock_restore");
    }
    if fence.is_some() {
        write!(sql, ", {} AS hierlock_fence", fence_call(plan.len() + 1)).ok();
    }
    if bound.is_some() {
        sql.push_str(&bounded(bound_param));
    }
    let values = plan
        .iter()
        .map(|lock| Value::from(lock.key.slot))
        .chain(fence_values(fence))
        .chain(bound.map(bound_value));
    Statement::from_sql_and_values(DbBackend::Postgres, sql, values)
}

/// ` FROM (…) AS hierlock_d`: the server's own bound on a lock statement's
/// waits, so that a deadline holds when hierlock's cancellation cannot
/// reach the server in time (a side connection queued behind the waiters
/// in a full pgbouncer pool, a slow network). The subquery reads the
/// caller's `lock_timeout` (`hierlock_prev`) and fixes the deadline
/// (`hierlock_end`: the time left, parameter `$param` in milliseconds, from
/// when the statement runs); before each lock, [`REBOUND`] sets
/// `lock_timeout` for the transaction to what is left of it, so that the
/// statement's waits together end by the deadline, not each of them. A
/// tighter `lock_timeout` of the caller's bounds each wait as before. A
/// column after the locks (`hierlock_restore`) sets the caller's value
/// back. A wait the bound ends fails the statement (55P03, a `LockTimeout`)
/// inside the acquisition's savepoint, whose rollback sets it back too.
/// `OFFSET 0` keeps the subquery, hence the order, as written.
///
/// PostgreSQL may wait twice for one row (for the row's lock, then for the
/// transaction that held it), each wait bounded by what was left before it.
fn bounded(param: usize) -> String {
    format!(" FROM ({} OFFSET 0) AS hierlock_d", bound_select(param))
}

/// `hierlock_d AS (…)`: [`bounded`]'s subquery as a `WITH` query, for the
/// bucket table's statement.
fn bound_query(param: usize) -> String {
    format!("hierlock_d AS ({})", bound_select(param))
}

/// The caller's `lock_timeout` (`hierlock_prev`, and `hierlock_cap` in
/// milliseconds when it bounds waits), and the deadline (`hierlock_end`):
/// the time left (parameter `$param`, milliseconds) from now.
fn bound_select(param: usize) -> String {
    format!(
        "SELECT current_setting('lock_timeout') AS hierlock_prev, \
         clock_timestamp() + (${param} || ' milliseconds')::interval AS hierlock_end, \
         CASE WHEN current_setting('lock_timeout')::interval >= interval '1 millisecond' \
         THEN extract(epoch FROM current_setting('lock_timeout')::interval) * 1000 END \
         AS hierlock_cap"
    )
}

/// Set `lock_timeout` to what is left before `hierlock_d`'s deadline (at
/// least 1 ms: `0` would turn it off), or to the caller's tighter value:
/// evaluated right before a lock (see [`bounded`]).
const REBOUND: &str = "set_config('lock_timeout', greatest(1, ceil(least(hierlock_d.hierlock_cap, \
    extract(epoch FROM hierlock_d.hierlock_end - clock_timestamp()) * 1000)))::int8::text, true)";

/// The server's bound for a statement that waits as `wait`: the time left
/// of a [`Wait::Timeout`]; none past the largest `lock_timeout` (`INT_MAX`
/// milliseconds, about 24.8 days), where hierlock's cancellation alone
/// keeps the deadline.
pub(crate) fn server_bound(wait: Wait) -> Option<Duration> {
    match wait {
        Wait::Timeout(left) if left.as_millis() <= i32::MAX as u128 => Some(left),
        _ => None,
    }
}

/// The time left, as [`bounded`]'s parameter: whole milliseconds, at least
/// one (`0` would turn the timeout off).
fn bound_value(left: Duration) -> Value {
    let millis = left.as_millis().max(1);
    Value::from(millis.to_string())
}

/// `pg_advisory_xact_lock_shared($n, $n+1)::text`: take a fence, shared (a
/// cancellation asks for it exclusive), until the transaction ends; its two
/// keys are the parameters from `$first` on.
fn fence_call(first: usize) -> String {
    format!(
        "pg_advisory_xact_lock_shared(${first}::int4, ${}::int4)::text",
        first + 1
    )
}

/// The fence's parameters for [`fence_call`].
fn fence_values(fence: Option<Fence>) -> impl Iterator<Item = Value> {
    fence.into_iter().flat_map(|fence| {
        let (high, low) = fence.postgres_keys();
        [Value::from(high), Value::from(low)]
    })
}

/// The `UNION ALL` branch that takes a fence (keys from `$first` on) once
/// the branches before it have locked their rows, and returns no row.
fn fence_branch(first: usize) -> String {
    format!("SELECT NULL, NULL WHERE {} IS NULL", fence_call(first))
}

/// Each bucket row's `level` and `bucket`, in plan order: the parameters of
/// statements that name each row by its full key.
fn row_keys(plan: &[PlannedLock]) -> impl Iterator<Item = Value> + '_ {
    plan.iter().flat_map(|lock| {
        [
            Value::from(i32::from(lock.key.table_level())),
            Value::from(lock.key.slot),
        ]
    })
}

/// `SELECT CASE WHEN pg_try_advisory_xact_lock_shared($1) THEN CASE WHEN
/// pg_try_advisory_xact_lock($2) THEN 1 ELSE 0 END ELSE 0 END`: try the keys
/// left to right and stop at the first one taken
/// ([`granted_until_the_first_refused`]). Returns one column, `granted`: 1
/// if every key was taken.
///
/// With `name_waiter`, the row also names the backend and, if a key was
/// taken, the transaction (the columns of [`waiter`](crate::backend::waiter)),
/// so that the statement that then waits needs no round trip before it to
/// be cancellable. The attempt is then a `MATERIALIZED` CTE: its try-locks
/// run once, before the columns that read `granted`.
pub(super) fn advisory_probe(plan: &[PlannedLock], lease: Option<Duration>, name_waiter: bool) -> Statement {
    let tries = plan
        .iter()
        .enumerate()
        .map(|(i, lock)| format!("pg_try_advisory_xact_lock{}(${})", shared_suffix(lock), i + 1));
    let mut sql = granted_until_the_first_refused(tries);
    sql.push_str(STANDBY_COLUMN);
    sql.push_str(&lease_column(lease));
    if name_waiter {
        sql = naming_the_waiter(&sql);
    }
    let values = plan.iter().map(|lock| Value::from(lock.key.slot));
    Statement::from_sql_and_values(DbBackend::Postgres, sql, values)
}

/// The bucket table's attempt without waiting, as [`advisory_probe`]'s: each
/// row locked in plan order by an `EXISTS` of its own with `SKIP LOCKED`
/// (a row another transaction holds in a conflicting mode is skipped, no
/// error, no wait), stopping at the first row skipped
/// ([`granted_until_the_first_refused`]). Returns `granted` (1 if every
/// row was locked; a row that is not there is skipped too, and the
/// statement that waits then reports it) and, with `name_waiter`, the
/// columns that name the waiter. A `NOWAIT` would
/// abort the transaction (PostgreSQL has no statement rollback outside a
/// savepoint); a skipped row does not.
pub(super) fn bucket_probe(
    table: &str,
    plan: &[PlannedLock],
    lease: Option<Duration>,
    name_waiter: bool,
) -> Statement {
    let tries = plan.iter().enumerate().map(|(i, lock)| {
        format!(
            "EXISTS (SELECT 1 FROM {table} AS t WHERE t.level = ${}::int2 \
             AND t.bucket = ${}::int4 {} OF t SKIP LOCKED)",
            2 * i + 1,
            2 * i + 2,
            lock_clause(lock.mode)
        )
    });
    let mut sql = granted_until_the_first_refused(tries);
    let values = row_keys(plan);
    sql.push_str(&lease_column(lease));
    if name_waiter {
        sql = naming_the_waiter(&sql);
    }
    Statement::from_sql_and_values(DbBackend::Postgres, sql, values)
}

/// The lock clause of a bucket row taken in `mode` (PostgreSQL rejects
/// MariaDB's `LOCK IN SHARE MODE`).
fn lock_clause(mode: LockMode) -> &'static str {
    match mode {
        LockMode::Exclusive => "FOR UPDATE",
        LockMode::Shared => "FOR SHARE",
    }
}

/// `SELECT CASE WHEN <try 1> THEN CASE WHEN <try 2> THEN 1 ELSE 0 END ELSE
/// 0 END AS granted`: the tries (conditions that lock without waiting) in
/// order, stopping at the first that fails (a `CASE` is evaluated in order;
/// `AND` is not guaranteed to be), so that a failed probe holds a prefix of
/// the plan, never a lock past a gap.
fn granted_until_the_first_refused(tries: impl Iterator<Item = String>) -> String {
    let mut sql = String::from("SELECT ");
    let mut depth = 0;
    for try_lock in tries {
        write!(sql, "CASE WHEN {try_lock} THEN ").ok();
        depth += 1;
    }
    sql.push('1');
    sql.push_str(&" ELSE 0 END".repeat(depth));
    sql.push_str(" AS granted");
    sql
}

/// A probe (a statement whose one row says in `granted` whether every lock
/// was taken) that also names the waiter, if one was not: the probe in a
/// `MATERIALIZED` CTE, so that its locks are tried once, before the
/// columns of [`waiter`](crate::backend::waiter) that read `granted`.
fn naming_the_waiter(probe: &str) -> String {
    let waiter = crate::backend::waiter::postgres_columns(Some("hierlock_probe.granted = 1"));
    format!("WITH hierlock_probe AS MATERIALIZED ({probe}) SELECT hierlock_probe.*, {waiter} FROM hierlock_probe")
}

/// Whether a probe's row says every lock was taken.
pub(super) fn probe_granted(rows: &[sea_orm::QueryResult]) -> bool {
    rows.first()
        .and_then(|row| row.try_get::<i32>("", "granted").ok())
        == Some(1)
}

/// `, pg_is_in_recovery() AS hierlock_standby`: whether the server is a hot
/// standby. PostgreSQL grants advisory locks there (they are the server's
/// own), where they exclude nothing on the primary: a pool that reached the
/// primary when its locker connected reaches a standby after a failover
/// that demoted that server. The column costs no round trip; a `true`
/// fails the acquisition (see `advisory::take_probing`).
pub(super) const STANDBY_COLUMN: &str = ", pg_is_in_recovery() AS hierlock_standby";

/// Whether a row of an advisory lock statement says the server is a hot
/// standby ([`STANDBY_COLUMN`]).
pub(super) fn on_standby(rows: &[sea_orm::QueryResult]) -> bool {
    rows.first()
        .and_then(|row| row.try_get::<bool>("", "hierlock_standby").ok())
        .unwrap_or(false)
}

/// `, set_config('idle_in_transaction_session_timeout', …, true) AS
/// hierlock_lease`: the lease, for the transaction only (`true`: it reverts
/// at COMMIT or ROLLBACK, and with a savepoint rolled back to), as the last
/// column of a lock statement, so that setting it costs no round trip.
///
/// A tighter timeout already in force (set by the application, or a role's
/// or database's default) is kept: the lease never widens it. `0` (off) and
/// a longer one are replaced. The value is a literal (the statement text
/// stays the same for one lease, and is prepared once).
fn lease_column(lease: Option<Duration>) -> String {
    lease.map_or_else(String::new, |lease| {
        let millis = lease.as_millis();
        format!(
            ", set_config('idle_in_transaction_session_timeout', \
             CASE WHEN current_setting('idle_in_transaction_session_timeout')::interval \
             BETWEEN interval '1 millisecond' AND interval '{millis} milliseconds' \
             THEN current_setting('idle_in_transaction_session_timeout') ELSE '{millis}' END, \
             true) AS hierlock_lease"
        )
    })
}

fn shared_suffix(lock: &PlannedLock) -> &'static str {
    match lock.mode {
        LockMode::Shared => "_shared",
        LockMode::Exclusive => "",
    }
}
