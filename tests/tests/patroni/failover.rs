//! The leader fails while a transaction holds a lock on it and another
//! waits, both through HAProxy: typed errors for both (`ConnectionLost`, the
//! holder's COMMIT `CommitUnknown`), the members refused until Patroni
//! promotes a replica, the old leader refused from then on, and `retry`
//! through HAProxy completes the work on the new leader. Two ways to fail:
//! `kill -9` of the leader's Patroni and postmaster (advisory locks), and the
//! leader cut from etcd while clients still reach it (the bucket table). The
//! cluster is healed at the end.

use std::time::{Duration, Instant};

use tokio::sync::Notify;

use hierlock::sea_orm::{ConnectionTrait, DbBackend, Statement};
use hierlock::{Config, Error, ErrorKind, Locker, RetryPolicy, Target, TxnState, Wait, retry};
use hierlock_tests::bounded;

use crate::patroni::{self, Node, Restore};

/// How the leader fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// `patroni.sh kill`: `kill -9` of its Patroni and its postmaster.
    Kill,
    /// `patroni.sh partition`: cut from etcd, still reachable by clients.
    Partition,
}

impl Failure {
    pub fn command(self) -> &'static str {
        match self {
            Failure::Kill => "kill",
            Failure::Partition => "partition",
        }
    }
}

/// `retry` through HAProxy while there is no leader: up to a minute.
pub fn patient() -> RetryPolicy {
    RetryPolicy::default()
        .with_max_attempts(200)
        .with_backoff(Duration::from_millis(100), Duration::from_millis(500))
        .with_deadline(Duration::from_secs(60))
}

async fn failover(failure: Failure, config: Config, done: &str) {
    let haproxy = Node::haproxy().await;
    let leader = Node::leader().await;
    leader
        .execute(&format!("DROP TABLE IF EXISTS {done}"))
        .await;
    leader
        .execute(&format!("CREATE TABLE {done} (id INT PRIMARY KEY)"))
        .await;
    patroni::caught_up(&leader).await;
    let restore = Restore;
    let locker = haproxy.locker(&config).await.expect("the leader");
    let r = Target::resource("u1", "a1", "r1").write();

    // `retry`'s transaction holds r2, its work ending only after the
    // waiter's failure (so that its COMMIT meets the failed connection); a
    // plain one holds r1 with a third waiting for r1.
    let r2 = Target::resource("u1", "a1", "r2").write();
    let (held, failed_now) = (Notify::new(), Notify::new());
    let mut attempts = 0;
    let once = RetryPolicy::default();
    let retried = retry(&haproxy.db, &once, async |txn| {
        attempts += 1;
        locker.acquire(txn, [r2.clone()]).await?;
        held.notify_one();
        failed_now.notified().await;
        Ok::<_, Error>(())
    });
    let plain = async {
        held.notified().await;
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
                    .acquire_with(&waiter, [r], Wait::Timeout(Duration::from_secs(20)))
                    .await
                    .map(|set| set.statements());
                (outcome, waiter)
            })
        };
        leader.wait_until_blocked(pid).await;

        let old = patroni::run(&[failure.command()]);
        let failed = Instant::now();
        assert_eq!(old, leader.number.to_string(), "the leader failed");
        // Within its deadline, as a lost connection (not a lock timeout).
        let (waited, waiter) = tokio::time::timeout(Duration::from_secs(25), task)
            .await
            .expect("the waiter's acquisition ended within its deadline")
            .expect("task");
        let waiter_failed = failed.elapsed();
        let err = waited.expect_err("the waiter's leader is gone");
        eprintln!("the waiter: {err}");
        assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
        assert_eq!(err.txn_state(), TxnState::Lost, "{err}");
        assert!(err.is_retryable(), "{err}");
        drop(waiter);
        leader.wait_until_demoted().await;
        failed_now.notify_one();

        let commit = bounded("the holder's COMMIT", holder.commit())
            .await
            .expect_err("the holder's leader is gone");
        let holder_failed = failed.elapsed();
        eprintln!("the holder's COMMIT: {commit:?}");
        let err = Error::from_commit(commit);
        assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
        assert_eq!(err.txn_state(), TxnState::CommitUnknown, "{err}");
        assert!(!err.is_retryable(), "{err}");
        (failed, waiter_failed, holder_failed)
    };
    let (retried, (failed, waiter_failed, holder_failed)) =
        tokio::time::timeout(Duration::from_secs(60), async {
            tokio::join!(retried, plain)
        })
        .await
        .expect("the transactions on the failed leader ended within 60 s");
    let err = retried.expect_err("retry's leader is gone");
    assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
    assert_eq!(err.txn_state(), TxnState::CommitUnknown, "{err}");
    assert!(!err.is_retryable(), "{err}");
    assert_eq!(attempts, 1, "a COMMIT of unknown outcome is not retried");

    // The other members are refused until Patroni promotes one.
    let others: Vec<Node> =
        futures::future::join_all((1..=3).filter(|&n| n != leader.number).map(Node::connect)).await;
    let mut refusals = 0;
    let (elected, _) = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            for member in &others {
                match member.locker(&config).await {
                    Ok(locker) => return (member, locker),
                    Err(e) => {
                        assert_eq!(e.kind(), ErrorKind::UnsafeTopology, "{e}");
                        refusals += 1;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("a new leader within 60 s");
    let elected_after = failed.elapsed();
    assert!(
        refusals > 0,
        "the replicas were refused before the promotion"
    );

    // `retry` through HAProxy, with the locker connected before the
    // failover, completes there.
    let policy = patient();
    let work = retry(&haproxy.db, &policy, async |txn| {
        locker.acquire(txn, [r.clone()]).await?;
        txn.execute_raw(Statement::from_string(
            DbBackend::Postgres,
            format!("INSERT INTO {done} VALUES (1)"),
        ))
        .await?;
        Ok::<_, Error>(())
    });
    tokio::time::timeout(Duration::from_secs(70), work)
        .await
        .expect("retry ended")
        .expect("retry's transaction commits on the new leader");
    let retried_after = failed.elapsed();
    let done_rows = elected
        .scalar(&format!("SELECT count(*) FROM {done}"))
        .await
        .expect("count");
    assert_eq!(done_rows, 1, "retry's row is on the new leader");
    // A new locker through HAProxy lands on the new leader too.
    Locker::connect(&haproxy.db, config.clone())
        .await
        .expect("HAProxy routes to the new leader");

    // The old leader: gone (kill) or demoted to a hot standby (partition),
    // never a second leader.
    match (Node::try_connect(leader.number).await, failure) {
        (Err(e), Failure::Kill) => eprintln!("the old leader: unreachable: {e}"),
        (Err(e), Failure::Partition) => panic!("the cut leader is reachable: {e}"),
        (Ok(old), _) => {
            let e = old
                .locker(&config)
                .await
                .expect_err("the old leader still takes locks after the promotion");
            eprintln!("the old leader: {e}");
            assert_eq!(e.kind(), ErrorKind::UnsafeTopology, "{e}");
        }
    }
    eprintln!(
        "{failure:?} of the leader (member {}): waiter ConnectionLost after {waiter_failed:?}, \
         holder's COMMIT CommitUnknown after {holder_failed:?}, member {} accepted after \
         {elected_after:?} ({refusals} refusals before), retry through HAProxy done after \
         {retried_after:?}",
        leader.number, elected.number
    );
    restore.now();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_is_typed_errors_then_a_new_leader() {
    let _cluster = patroni::exclusive().await;
    failover(Failure::Kill, patroni::advisory(7002), "hl_pat_kill_done").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_from_etcd_demotes_itself_before_a_new_leader() {
    let _cluster = patroni::exclusive().await;
    let config = patroni::buckets("partition");
    patroni::provision(&config).await;
    failover(Failure::Partition, config, "hl_pat_partition_done").await;
}
