//! The seed's scenarios (`shared/seeds/001_*.txt`), by number.

use hierlock::{ErrorKind, Target, TxnState, Wait};
use hierlock_tests::{Backend, Fixture, bounded};
use sea_orm::{ConnectionTrait, Statement};

use crate::support::{assert_coexists, assert_waits, holding, take};

fn resource(u: &str, a: &str, r: &str) -> Target {
    Target::resource(u, a, r)
}

/// Scenario 1: T2 waits for the same Resource until T1 releases it.
pub async fn scenario_1_same_resource_twice_waits(backend: Backend) {
    let fx = Fixture::new(backend, "s1", 1000).await;
    let r = resource("u1", "a1", "r1").write();
    assert_waits(&fx, std::slice::from_ref(&r), std::slice::from_ref(&r)).await;
}

/// Scenario 2: Two resources of one account: shared ancestors coexist, different rows.
pub async fn scenario_2_sibling_resources_coexist(backend: Backend) {
    let fx = Fixture::new(backend, "s2", 1000).await;
    let (r1, r2) = (
        resource("u1", "a1", "r1").write(),
        resource("u1", "a1", "r2").write(),
    );
    if backend.is_sqlite() {
        // Coarse: SQLite serialises every two lock holders.
        assert_waits(&fx, &[r1], &[r2]).await;
    } else {
        assert_coexists(&fx, &[r1], &[r2]).await;
    }
}

/// Scenario 3: An account lock and a resource below it wait for each other, both ways.
pub async fn scenario_3_account_lock_and_resource_below_conflict(backend: Backend) {
    let fx = Fixture::new(backend, "s3", 1000).await;
    let account = Target::account("u1", "a1").write();
    let below = resource("u1", "a1", "r1").write();
    assert_waits(
        &fx,
        std::slice::from_ref(&account),
        std::slice::from_ref(&below),
    )
    .await;
    assert_waits(&fx, &[below], &[account]).await;
}

/// Scenario 4: A user lock blocks accounts and resources below it.
pub async fn scenario_4_user_lock_blocks_accounts_and_resources_below(backend: Backend) {
    let fx = Fixture::new(backend, "s4", 1000).await;
    let user = Target::user("u1").write();
    assert_waits(
        &fx,
        std::slice::from_ref(&user),
        &[Target::account("u1", "a1").write()],
    )
    .await;
    assert_waits(&fx, &[user], &[resource("u1", "a1", "r1").write()]).await;
}

/// Scenario 5: Different users are independent, at every level.
pub async fn scenario_5_different_users_are_independent(backend: Backend) {
    let fx = Fixture::new(backend, "s5", 1000).await;
    let u1 = Target::user("u1").write();
    for other in [
        Target::user("u2").write(),
        Target::account("u2", "a1").write(),
        resource("u2", "a1", "r1").write(),
    ] {
        if backend.is_sqlite() {
            assert_waits(&fx, std::slice::from_ref(&u1), &[other]).await;
        } else {
            assert_coexists(&fx, std::slice::from_ref(&u1), &[other]).await;
        }
    }
}

/// Scenario 6: The control experiment: two resources taken in opposite orders by
/// separate calls form a cycle, and the server kills one transaction.
pub async fn scenario_6_unordered_separate_calls_can_deadlock(backend: Backend) {
    let fx = Fixture::new(backend, "s6", 1000).await;
    let (r1, r2) = (
        resource("u1", "a1", "r1").write(),
        resource("u1", "a1", "r2").write(),
    );
    let t1 = fx.begin().await;
    let t2 = fx.begin().await;
    take(&fx, &t1, std::slice::from_ref(&r1), Wait::Block)
        .await
        .expect("t1 takes r1");
    take(&fx, &t2, std::slice::from_ref(&r2), Wait::Block)
        .await
        .expect("t2 takes r2");

    // t1 asks for r2 and waits for t2 …
    let t1_id = fx.connection_id(&t1).await;
    let locker = fx.locker.clone();
    let first = tokio::spawn(async move {
        let outcome = locker.acquire(&t1, [r2]).await.map(|_| ());
        (outcome, t1)
    });
    fx.wait_until_blocked(t1_id).await;
    // … and t2 closes the cycle.
    let second = bounded("t2 closing the cycle", fx.locker.acquire(&t2, [r1]))
        .await
        .map(|_| ());
    if second.is_ok() {
        // PostgreSQL picks the first waiter, once deadlock_timeout has passed.
        let (first, t1) = bounded("t1", first).await.expect("task");
        let err = first.expect_err("one of the two must be the deadlock victim");
        assert_victim(backend, &err);
        t1.rollback().await.expect("rollback");
        t2.rollback().await.expect("rollback");
    } else {
        let err = second.expect_err("checked");
        assert_victim(backend, &err);
        drop(t2); // the victim's rollback lets t1 through
        let (first, t1) = bounded("t1", first).await.expect("task");
        first.expect("the survivor gets its lock");
        t1.rollback().await.expect("rollback");
    }
}

fn assert_victim(backend: Backend, err: &hierlock::Error) {
    assert_eq!(err.kind(), ErrorKind::Deadlock, "{err}");
    let server_error = std::error::Error::source(err)
        .and_then(|e| e.downcast_ref::<sea_orm::DbErr>())
        .expect("the server's error is the source");
    assert_eq!(
        hierlock::conflict_kind(server_error),
        Some(ErrorKind::Deadlock)
    );
    assert!(err.is_retryable());
    let expected = match backend {
        Backend::MariaDb | Backend::MySql => TxnState::RolledBack,
        _ => TxnState::Aborted,
    };
    assert_eq!(err.txn_state(), expected);
}

/// Scenario 7: The remedy: many resources in one call, in any input order, never
/// deadlock — every transaction locks them in the same global order.
pub async fn scenario_7_many_resources_in_any_order_never_deadlock(backend: Backend) {
    let fx = Fixture::new(backend, "s7", 1000).await;
    let resources: Vec<_> = (0..6)
        .map(|i| resource("u1", "a1", &format!("r{i}")).write())
        .collect();
    let rounds = if backend.is_sqlite() { 10 } else { 40 };
    let tasks: Vec<_> = (0..4)
        .map(|task| {
            let (locker, db) = (fx.locker.clone(), fx.db.clone());
            let mut order = resources.clone();
            if task % 2 == 1 {
                order.reverse();
            }
            order.rotate_left(task);
            tokio::spawn(async move {
                for _ in 0..rounds {
                    let txn = sea_orm::TransactionTrait::begin(&db).await.expect("begin");
                    locker
                        .acquire(&txn, order.clone())
                        .await
                        .expect("ordered acquisition never fails");
                    tokio::task::yield_now().await;
                    txn.commit().await.expect("commit");
                }
            })
        })
        .collect();
    for task in tasks {
        bounded("an ordered worker", task)
            .await
            .expect("no deadlock, no error");
    }
}

/// Read locks (Symfony's `acquireRead`): readers share, a writer waits for them.
pub async fn readers_share_and_writers_wait_for_readers(backend: Backend) {
    let fx = Fixture::new(backend, "reads", 1000).await;
    let read = resource("u1", "a1", "r1").read();
    if backend.is_sqlite() {
        assert_waits(
            &fx,
            std::slice::from_ref(&read),
            std::slice::from_ref(&read),
        )
        .await;
    } else {
        assert_coexists(
            &fx,
            std::slice::from_ref(&read),
            std::slice::from_ref(&read),
        )
        .await;
    }
    assert_waits(
        &fx,
        std::slice::from_ref(&read),
        &[resource("u1", "a1", "r1").write()],
    )
    .await;
    assert_waits(&fx, &[Target::account("u1", "a1").write()], &[read]).await;
}

/// The locks live on the caller's transaction: a waiter is let through by
/// the commit that also makes the protected write visible, and a rollback
/// releases the lock and discards the write together.
pub async fn locks_commit_and_roll_back_with_the_callers_writes(backend: Backend) {
    let fx = Fixture::new(backend, "txn", 1000).await;
    let scratch = format!("hl_scratch_{}", fx.config.table());
    fx.exec(&format!("DROP TABLE IF EXISTS {scratch}")).await;
    fx.exec(&format!(
        "CREATE TABLE {scratch} (id INT PRIMARY KEY, v INT NOT NULL)"
    ))
    .await;
    let target = resource("u1", "a1", "r1").write();
    let backend_db = fx.db.get_database_backend();
    let stmt = |sql: String| Statement::from_string(backend_db, sql);

    for commit in [false, true] {
        let t1 = holding(&fx, std::slice::from_ref(&target)).await;
        t1.execute_raw(stmt(format!(
            "INSERT INTO {scratch} (id, v) VALUES ({}, 1)",
            i32::from(commit)
        )))
        .await
        .expect("t1 writes under the lock");
        let t2 = fx.begin().await;
        let err = take(&fx, &t2, std::slice::from_ref(&target), Wait::NoWait)
            .await
            .expect_err("t1 holds the lock");
        assert_eq!(err.kind(), ErrorKind::WouldBlock);
        drop(t2);
        if commit {
            t1.commit().await.expect("commit");
        } else {
            t1.rollback().await.expect("rollback");
        }
        let t3 = fx.begin().await;
        take(&fx, &t3, std::slice::from_ref(&target), Wait::NoWait)
            .await
            .expect("released with the transaction");
        let row = t3
            .query_one_raw(stmt(format!(
                "SELECT COUNT(*) AS n FROM {scratch} WHERE id = {}",
                i32::from(commit)
            )))
            .await
            .expect("count")
            .expect("row");
        let n: i64 = row.try_get("", "n").expect("n");
        assert_eq!(
            n,
            i64::from(commit),
            "the write went the same way as the lock (commit = {commit})"
        );
        t3.rollback().await.expect("rollback");
    }
    fx.exec(&format!("DROP TABLE {scratch}")).await;
}
