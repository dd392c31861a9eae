//! `Locker::connect` on the members of a healthy cluster: the leader
//! accepted (directly and through HAProxy), with advisory locks and with the
//! bucket table; the replicas refused as hot standbys; locks taken through
//! HAProxy exclude those taken on the leader directly.

use hierlock::{Config, ErrorKind, Target, Topology, Wait};
use hierlock_migration::Replication;
use hierlock_tests::bounded;

use crate::patroni::{self, Node};

async fn accepted_on_the_leader_refused_on_the_replicas(config: Config) {
    let leader_number = patroni::leader();
    let leader = Node::connect(leader_number).await;
    let haproxy = Node::haproxy().await;
    for node in [&leader, &haproxy] {
        let locker = bounded("Locker::connect", node.locker(&config))
            .await
            .unwrap_or_else(|e| panic!("the leader (node {}) takes locks: {e}", node.number));
        assert_eq!(locker.topology(), Topology::Single);
    }
    assert_eq!(
        leader
            .scalar("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
            .await
            .expect("pg_stat_replication"),
        2,
        "the leader streams to both replicas"
    );
    // `hierlock status` on the leader: its two replicas, asynchronous, and
    // the advice to make one synchronous.
    let status = bounded(
        "hierlock status",
        hierlock_migration::status(&leader.db, &config),
    )
    .await
    .expect("status on the leader");
    eprintln!("hierlock status on the leader:\n{status}");
    assert_eq!(
        status.replication,
        Some(Replication {
            standbys: 2,
            synchronous: Some(0)
        })
    );
    assert!(
        status.advice.iter().any(|a| a.contains("none synchronous")),
        "{status}"
    );
    for number in (1..=3).filter(|&n| n != leader_number) {
        let replica = Node::connect(number).await;
        let err = bounded("Locker::connect", replica.locker(&config))
            .await
            .expect_err("a replica's locks exclude nothing on the leader");
        assert_eq!(err.kind(), ErrorKind::UnsafeTopology, "{err}");
        assert!(
            err.to_string()
                .contains("hot standby (pg_is_in_recovery())"),
            "{err}"
        );
        eprintln!("member {number}: {err}");
    }

    // A write lock taken through HAProxy excludes one on the leader.
    let through = bounded("Locker::connect", haproxy.locker(&config))
        .await
        .expect("accepted");
    let direct = bounded("Locker::connect", leader.locker(&config))
        .await
        .expect("accepted");
    let r = Target::resource("u1", "a1", "r1").write();
    let holder = haproxy.begin().await;
    bounded(
        "an uncontended acquisition",
        through.acquire(&holder, [r.clone()]),
    )
    .await
    .expect("uncontended");
    let refused = leader.begin().await;
    let err = bounded(
        "a NoWait acquisition",
        direct.acquire_with(&refused, [r.clone()], Wait::NoWait),
    )
    .await
    .expect_err("held through HAProxy");
    assert_eq!(err.kind(), ErrorKind::WouldBlock, "{err}");
    refused.rollback().await.expect("rollback");
    holder.commit().await.expect("commit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advisory_locks_on_the_leader_only() {
    let _cluster = patroni::exclusive().await;
    accepted_on_the_leader_refused_on_the_replicas(patroni::advisory(7001)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bucket_table_on_the_leader_only() {
    let _cluster = patroni::exclusive().await;
    let config = patroni::buckets("topology");
    patroni::provision(&config).await;
    accepted_on_the_leader_refused_on_the_replicas(config).await;
}
