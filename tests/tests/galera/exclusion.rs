//! What a lock excludes on Galera: everything on its own node, nothing on
//! the others.

use hierlock::{ErrorKind, Target, Wait};
use hierlock_tests::bounded;

use crate::cluster::{self, Node};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_transactions_on_one_node_exclude_each_other() {
    let _cluster = cluster::exclusive().await;
    let config = cluster::config("onenode").with_galera_single_writer();
    cluster::provision(&config).await;
    let node = Node::connect(1).await;
    let locker = node.locker(&config).await.expect("accepted");
    let r = Target::resource("u1", "a1", "r1").write();

    let holder = node.begin().await;
    bounded(
        "an uncontended acquisition",
        locker.acquire(&holder, [r.clone()]),
    )
    .await
    .expect("uncontended");

    // NoWait: refused at once.
    let refused = node.begin().await;
    let err = bounded(
        "a NoWait acquisition",
        locker.acquire_with(&refused, [r.clone()], Wait::NoWait),
    )
    .await
    .expect_err("a write lock held on the same node");
    assert_eq!(err.kind(), ErrorKind::WouldBlock, "{err}");
    refused.rollback().await.expect("rollback");

    // Block: waits, as INNODB_TRX shows, until the holder lets go.
    let waiter = node.begin().await;
    let id = cluster::connection_id(&waiter).await;
    let task = {
        let (locker, r) = (locker.clone(), r.clone());
        tokio::spawn(async move {
            let outcome = locker
                .acquire(&waiter, [r])
                .await
                .map(|set| set.statements());
            (outcome, waiter)
        })
    };
    node.wait_until_blocked(id).await;
    assert!(
        !task.is_finished(),
        "granted while the holder held the lock"
    );
    holder.rollback().await.expect("rollback");
    let (outcome, waiter) = bounded("the waiting acquisition", task)
        .await
        .expect("task");
    outcome.expect("granted once the holder rolled back");
    waiter.rollback().await.expect("rollback");
}

/// Documentation by test: this is why `Locker::connect` refuses Galera
/// unless told that every lock-taking transaction runs on one node. Row
/// locks are InnoDB's, per node, and Galera does not replicate them: the
/// same bucket row is locked `FOR UPDATE` on two nodes at once, and neither
/// transaction waits. (Had both written, one would fail certification at
/// commit with 1213; hierlock's locks only read, so both commit.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_transactions_on_different_nodes_do_not_exclude_each_other() {
    let _cluster = cluster::exclusive().await;
    let config = cluster::config("twonodes").with_galera_single_writer();
    cluster::provision(&config).await;
    let (node1, node2) = (Node::connect(1).await, Node::connect(2).await);
    let locker1 = node1.locker(&config).await.expect("accepted");
    let locker2 = node2.locker(&config).await.expect("accepted");
    let r = Target::resource("u1", "a1", "r1").write();

    let on_node1 = node1.begin().await;
    bounded(
        "node 1's acquisition",
        locker1.acquire(&on_node1, [r.clone()]),
    )
    .await
    .expect("uncontended");
    let on_node2 = node2.begin().await;
    bounded(
        "node 2's acquisition",
        locker2.acquire_with(&on_node2, [r.clone()], Wait::NoWait),
    )
    .await
    .expect("granted on node 2 while node 1 holds the same write lock: no exclusion across nodes");

    // Both hold it at once, and both commit.
    on_node2.commit().await.expect("node 2 commits");
    on_node1.commit().await.expect("node 1 commits");
}

/// Waits on a Galera single writer are cancelled: a timed wait ends
/// `LockTimeout` by its deadline and the margin, a dropped one ends on the
/// server. (Some MariaDB releases refuse `GET_LOCK` with Galera, which
/// fences a waiting statement; `Locker::connect` then marks the statement
/// in its text instead. MariaDB 10.11.19 here takes it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_on_a_single_writer_are_cancelled() {
    let _cluster = cluster::exclusive().await;
    let config = cluster::config("cancel").with_galera_single_writer();
    cluster::provision(&config).await;
    let node = Node::connect(1).await;
    let locker = node.locker(&config).await.expect("accepted");
    let r = Target::resource("u1", "a1", "r1").write();
    let holder = node.begin().await;
    locker
        .acquire(&holder, [r.clone()])
        .await
        .expect("uncontended");

    let timeout = std::time::Duration::from_millis(500);
    let timed = node.begin().await;
    let started = std::time::Instant::now();
    let err = bounded(
        "a timed acquisition",
        locker.acquire_with(&timed, [r.clone()], Wait::Timeout(timeout)),
    )
    .await
    .expect_err("held");
    let took = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::LockTimeout, "{err}");
    assert!(took <= timeout + hierlock::DEADLINE_MARGIN, "took {took:?}");
    timed.rollback().await.expect("rollback");

    let waiter = node.begin().await;
    let id = cluster::connection_id(&waiter).await;
    tokio::select! {
        outcome = locker.acquire(&waiter, [r.clone()]) => panic!("granted while held: {outcome:?}"),
        () = node.wait_until_blocked(id) => {}
    }
    // Polled more slowly than InnoDB refreshes INNODB_TRX (100 ms).
    bounded("the dropped wait to end on the server", async {
        while node.is_waiting(id).await {
            tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        }
    })
    .await;
    drop(waiter);
    holder.rollback().await.expect("rollback");
}
