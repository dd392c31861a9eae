//! Large plans: the largest acquisition locks exactly its planned rows, in
//! their modes, as the server's own lock state shows; and in key order.

use std::collections::BTreeSet;
use std::time::Duration;

use hierlock::{Dialect, LockMode, LockPlan, MAX_LOCKS_PER_CALL, Request, Target, Wait};
use hierlock_tests::{Backend, Fixture, bounded};
use sea_orm::{
    ConnectionTrait, DatabaseTransaction, DbBackend, IsolationLevel, Statement, TransactionTrait,
};

use crate::support::take;

/// (table level, bucket or advisory key): stripe keys in levels 3–4.
pub(crate) type Key = (i64, i64);

/// `MAX_LOCKS_PER_CALL` locks in one call (3,000 advisory keys on PostgreSQL,
/// whose shared lock table holds about 6,400 for the whole server) on a
/// 120,000-row table, then (bucket tables) a plan just past the point-lookup
/// size on a 600-row table where a scan is cheap, under REPEATABLE READ and
/// READ COMMITTED: the rows locked, and the rows locked exclusively, are
/// exactly the plan's, read from the server (`SKIP LOCKED` probes on the bucket
/// table, `pg_locks` for advisory keys).
pub async fn the_largest_acquisition_locks_exactly_its_planned_rows(backend: Backend) {
    let resources = if backend == Backend::Postgres {
        3_000
    } else {
        MAX_LOCKS_PER_CALL - 2
    };
    let fx = Fixture::new(backend, "scale", 40_000).await;
    check_exact(&fx, 40_000, resources, IsolationLevel::RepeatableRead).await;
    if backend == Backend::Postgres {
        return;
    }
    let small = Fixture::new(backend, "scale_small", 200).await;
    for isolation in [
        IsolationLevel::RepeatableRead,
        IsolationLevel::ReadCommitted,
    ] {
        check_exact(&small, 200, 150, isolation).await;
    }
}

async fn check_exact(fx: &Fixture, space: i64, resources: usize, isolation: IsolationLevel) {
    let requests: Vec<Request> = (0..resources)
        .map(|i| Target::resource("u", "a", i).write())
        .collect();
    let plan = fx.locker.plan(&requests).expect("plan");
    if fx.locker.dialect().is_mysql_family() {
        assert!(
            plan.locks().len() > fx.locker.dialect().max_rows_per_statement(),
            "past one statement of point lookups"
        );
    }
    let holder = fx
        .db
        .begin_with_config(Some(isolation), None)
        .await
        .expect("begin");
    let statements = bounded("the acquisition", take(fx, &holder, &requests, Wait::Block))
        .await
        .expect("granted");
    let expected = match fx.backend {
        // A resource plan is two runs of equal modes: one statement on the
        // MySQL family and on PostgreSQL's bucket table.
        Backend::MariaDb | Backend::MySql | Backend::PostgresBuckets => 1,
        _ => plan
            .locks()
            .len()
            .div_ceil(fx.locker.dialect().max_rows_per_statement()),
    };
    assert_eq!(statements, expected, "statements");
    let (locked, exclusive) = if fx.backend == Backend::Postgres {
        advisory_locks_of(fx, &holder, &plan).await
    } else {
        bucket_rows_locked(fx, space).await
    };
    assert_eq!(locked, keys(&plan, None), "{isolation:?}: rows locked");
    assert_eq!(
        exclusive,
        keys(&plan, Some(LockMode::Exclusive)),
        "{isolation:?}: rows locked exclusively"
    );
    holder.rollback().await.expect("rollback");
}

/// While one resource of a plan (in its middle, or its last row) is held
/// elsewhere, an acquisition of the plan waits for it holding exactly the
/// rows before it: every row is taken in key order. Blocking, and with a deadline (on
/// PostgreSQL's bucket table, a timed run locks each row in a subquery of
/// its own, after setting the time left). A large plan waits at once; a
/// small one is tried first without waiting (`NOWAIT` on the MySQL family,
/// `SKIP LOCKED` on PostgreSQL's bucket table), and the attempt stops at
/// the row held elsewhere: it holds no row past it.
pub async fn a_plan_waits_holding_exactly_the_rows_before_the_one_taken(backend: Backend) {
    let fx = Fixture::new(backend, "scale_order", 2_000).await;
    // Key lists and point lookups, a row in the middle and the last.
    let middle: fn(usize) -> usize = |len| len / 2;
    let last: fn(usize) -> usize = |len| len - 1;
    for (resources, taken) in [(600, middle), (12, middle), (3, middle), (3, last)] {
        waits_holding_the_rows_before_the_one_taken(&fx, resources, taken).await;
    }
}

/// A plan of `resources` waits on its row at `taken(plan length)`, held
/// elsewhere, holding the rows before it and no other.
async fn waits_holding_the_rows_before_the_one_taken(
    fx: &Fixture,
    resources: i64,
    taken: fn(usize) -> usize,
) {
    let requests: Vec<Request> = (0..resources)
        .map(|i| Target::resource("u", "a", i).write())
        .collect();
    let plan = fx.locker.plan(&requests).expect("plan");
    let taken = plan.locks()[taken(plan.locks().len())].key;
    let blocker = requests
        .iter()
        .find(|r| {
            fx.locker
                .plan([*r])
                .expect("plan")
                .locks()
                .last()
                .is_some_and(|l| l.key == taken)
        })
        .expect("a resource whose own row that is")
        .clone();
    let before: BTreeSet<Key> = plan
        .locks()
        .iter()
        .filter(|l| l.key <= taken)
        .map(|l| (i64::from(l.key.level.as_u8()), l.key.slot))
        .collect();
    for wait in [Wait::Block, Wait::Timeout(Duration::from_secs(60))] {
        let holder = fx.begin().await;
        take(fx, &holder, std::slice::from_ref(&blocker), Wait::Block)
            .await
            .expect("uncontended");
        let waiter = fx.begin().await;
        let id = fx.connection_id(&waiter).await;
        let locker = fx.locker.clone();
        let requests = requests.clone();
        let task = tokio::spawn(async move {
            let outcome = locker.acquire_with(&waiter, requests, wait).await.map(drop);
            (outcome, waiter)
        });
        fx.wait_until_blocked(id).await;
        let (locked, _) = bucket_rows_locked(fx, 2_000).await;
        assert_eq!(
            locked, before,
            "{resources} resources, {wait:?}: the rows before the one held elsewhere, and it"
        );
        holder.rollback().await.expect("rollback");
        let (outcome, waiter) = bounded("the waiter", task).await.expect("task");
        outcome.expect("granted once released");
        waiter.rollback().await.expect("rollback");
    }
}

/// The plan's keys (of one mode, or all).
pub(crate) fn keys(plan: &LockPlan, mode: Option<LockMode>) -> BTreeSet<Key> {
    plan.locks()
        .iter()
        .filter(|l| mode.is_none_or(|m| l.mode == m))
        .map(|l| (i64::from(l.key.table_level()), l.key.slot))
        .collect()
}

/// The bucket rows locked by anyone, and those locked exclusively: every row
/// minus what a probe can lock with `SKIP LOCKED`, exclusively then shared
/// (over the layout's levels: 3–4 are the stripes of subtree reads).
pub(crate) async fn bucket_rows_locked(fx: &Fixture, space: i64) -> (BTreeSet<Key>, BTreeSet<Key>) {
    let table = fx.config.table().to_string();
    let shared = if fx.locker.dialect() == Dialect::MariaDb {
        "LOCK IN SHARE MODE"
    } else {
        "FOR SHARE"
    };
    let backend = fx.db.get_database_backend();
    let mut taken = Vec::new();
    for clause in ["FOR UPDATE", shared] {
        let probe = fx.begin().await;
        let sql = format!(
            "SELECT CAST(level AS {int}) AS level, CAST(bucket AS {int}) AS bucket FROM {table} \
             {clause} SKIP LOCKED",
            int = if backend == DbBackend::Postgres {
                "int8"
            } else {
                "SIGNED"
            },
        );
        let rows = probe
            .query_all_raw(Statement::from_string(backend, sql))
            .await
            .expect("probe");
        let free: BTreeSet<Key> = rows
            .iter()
            .map(|row| {
                (
                    row.try_get("", "level").expect("level"),
                    row.try_get("", "bucket").expect("bucket"),
                )
            })
            .collect();
        probe.rollback().await.expect("rollback");
        let all = fx
            .config
            .table_levels()
            .flat_map(|level| (0..space).map(move |bucket| (i64::from(level), bucket)));
        taken.push(all.filter(|key| !free.contains(key)).collect());
    }
    let exclusive = taken.pop().expect("shared probe");
    (taken.pop().expect("exclusive probe"), exclusive)
}

/// PostgreSQL advisory keys held by `txn`'s connection, and those held
/// exclusively, from `pg_locks` (a bigint key is classid:objid there),
/// each with the table level of the plan's key it is (-1: not a planned key).
pub(crate) async fn advisory_locks_of(
    fx: &Fixture,
    txn: &DatabaseTransaction,
    plan: &LockPlan,
) -> (BTreeSet<Key>, BTreeSet<Key>) {
    let pid = fx.connection_id(txn).await;
    let sql = "SELECT ((classid::int8 << 32) | objid::int8) AS key, mode FROM pg_locks \
               WHERE locktype = 'advisory' AND objsubid = 1 AND granted AND pid = $1";
    let rows = fx
        .db
        .query_all_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            sql,
            [pid.into()],
        ))
        .await
        .expect("pg_locks");
    let level_of: std::collections::HashMap<i64, i64> = plan
        .locks()
        .iter()
        .map(|l| (l.key.slot, i64::from(l.key.table_level())))
        .collect();
    let (mut all, mut exclusive) = (BTreeSet::new(), BTreeSet::new());
    for row in rows {
        let slot: i64 = row.try_get("", "key").expect("key");
        let mode: String = row.try_get("", "mode").expect("mode");
        let key = (level_of.get(&slot).copied().unwrap_or(-1), slot);
        all.insert(key);
        if mode == "ExclusiveLock" {
            exclusive.insert(key);
        }
    }
    (all, exclusive)
}
