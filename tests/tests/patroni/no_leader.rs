//! etcd stops: no member can hold the leader key. Patroni (without
//! `failsafe_mode`) demotes the leader within `retry_timeout`: its holders
//! and waiters lose their connections, and `Locker::connect` is refused on
//! every member (hot standbys), and through HAProxy (no connection, as no
//! member passes `GET /primary`; or, while its health check catches up, one
//! to the demoted leader) until etcd is back.

use std::time::{Duration, Instant};

use hierlock::{ErrorKind, Target, TxnState, Wait};
use hierlock_tests::bounded;

use crate::patroni::{self, Node, Restore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_etcd_no_member_takes_locks() {
    let _cluster = patroni::exclusive().await;
    let config = patroni::advisory(7003);
    let restore = Restore;
    let leader = Node::leader().await;
    let haproxy = Node::haproxy().await;
    let locker = haproxy.locker(&config).await.expect("the leader");
    let r = Target::resource("u1", "a1", "r1").write();
    let holder = haproxy.begin().await;
    bounded(
        "the holder's acquisition",
        locker.acquire(&holder, [r.clone()]),
    )
    .await
    .expect("uncontended");
    let waiter = haproxy.begin().await;
    let pid = patroni::backend_pid(&waiter).await;
    let task = {
        let (locker, r) = (locker.clone(), r.clone());
        tokio::spawn(async move {
            let outcome = locker
                .acquire_with(&waiter, [r], Wait::Block)
                .await
                .map(|_| ());
            (outcome, waiter)
        })
    };
    leader.wait_until_blocked(pid).await;

    patroni::run(&["etcd-stop"]);
    let stopped = Instant::now();
    let (waited, waiter) = tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the waiter failed within 30 s")
        .expect("task");
    let waiter_failed = stopped.elapsed();
    leader.wait_until_demoted().await;
    match waited {
        Err(err) => assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}"),
        // The demotion ends every backend; when the holder's ends first,
        // its lock goes to the waiter just before the waiter's own backend
        // ends: nothing can commit under it.
        Ok(()) => {
            let commit = bounded("the waiter's COMMIT", waiter.commit())
                .await
                .expect_err("a transaction committed on the demoted leader");
            let err = hierlock::Error::from_commit(commit);
            assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
        }
    }
    let commit = bounded("the holder's COMMIT", holder.commit())
        .await
        .expect_err("the leader demoted itself");
    let err = hierlock::Error::from_commit(commit);
    assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
    assert_eq!(err.txn_state(), TxnState::CommitUnknown, "{err}");

    // No leader: every member a hot standby, HAProxy routing nowhere.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for number in 1..=3 {
        let member = Node::connect(number).await;
        let e = bounded("Locker::connect", member.locker(&config))
            .await
            .err()
            .unwrap_or_else(|| panic!("member {number} takes locks without etcd"));
        assert_eq!(e.kind(), ErrorKind::UnsafeTopology, "member {number}: {e}");
    }
    let through = match Node::try_connect(0).await {
        Err(e) => format!("no connection ({e})"),
        Ok(node) => {
            let e = bounded("Locker::connect", node.locker(&config))
                .await
                .expect_err("HAProxy found a leader without etcd");
            // A new connection lands nowhere, or (while HAProxy's health
            // check catches up) on the demoted leader, a hot standby.
            assert!(
                matches!(
                    e.kind(),
                    ErrorKind::UnsafeTopology | ErrorKind::ConnectionLost
                ),
                "{e}"
            );
            format!("{:?}: {e}", e.kind())
        }
    };
    eprintln!(
        "etcd stopped: the waiter ConnectionLost after {waiter_failed:?}, holder's COMMIT \
         CommitUnknown; every member refused; through HAProxy: {through}"
    );
    restore.now();
}
