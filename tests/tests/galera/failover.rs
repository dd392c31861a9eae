//! The writer node dies mid-transaction: its clients get a retryable
//! `ConnectionLost`, as `Config::with_galera_single_writer` documents.

use hierlock::{Error, ErrorKind, Target, Topology, TxnState, Wait};
use hierlock_tests::bounded;

use crate::cluster::{self, Node};

fn assert_lost(err: &Error) {
    assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
    assert!(err.is_retryable(), "{err}");
    assert_eq!(err.txn_state(), TxnState::Lost, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_writer_node_is_connection_lost_for_holder_and_waiter() {
    let _cluster = cluster::exclusive().await;
    let config = cluster::config("killnode").with_galera_single_writer();
    cluster::provision(&config).await;
    // The last node is the writer here, so that the bootstrap node stays up.
    let node = Node::connect(3).await;
    let locker = node.locker(&config).await.expect("accepted");
    let r1 = Target::resource("u1", "a1", "r1").write();

    let holder = node.begin().await;
    bounded(
        "the holder's acquisition",
        locker.acquire(&holder, [r1.clone()]),
    )
    .await
    .expect("uncontended");
    let waiter = node.begin().await;
    let id = cluster::connection_id(&waiter).await;
    let killed = std::sync::Mutex::new(None);
    let (waited, ()) = tokio::join!(
        bounded(
            "the waiter's acquisition on a killed node",
            locker.acquire_with(&waiter, [r1.clone()], Wait::Block)
        ),
        async {
            node.wait_until_blocked(id).await;
            *killed.lock().expect("not poisoned") = Some(node.kill().await);
        }
    );
    let killed = killed
        .into_inner()
        .expect("not poisoned")
        .expect("the node was killed");
    // The waiter's connection closes under its lock statement (sqlx: EOF;
    // libmysqlclient would say 2013).
    assert_lost(&waited.expect_err("the waiter's node is gone"));
    // The holder's next call finds its connection gone (sqlx: connection
    // reset; libmysqlclient would say 2006).
    let r2 = Target::resource("u1", "a1", "r2").write();
    let held = bounded(
        "the holder's next acquisition on a killed node",
        locker.acquire(&holder, [r2]),
    )
    .await;
    assert_lost(&held.expect_err("the holder's node is gone"));
    drop((holder, waiter));

    // The survivors form a 2-node cluster.
    let node1 = Node::connect(1).await;
    bounded("the survivors evicting the dead node", async {
        while node1.cluster_size().await != 2 {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await;

    // Back to 3 nodes, for the other tests and the next run.
    tokio::task::block_in_place(|| killed.revive());
    let node = Node::connect(3).await;
    let locker = node.locker(&config).await.expect("accepted again");
    assert_eq!(locker.topology(), Topology::GaleraSingleWriter { nodes: 3 });
}
