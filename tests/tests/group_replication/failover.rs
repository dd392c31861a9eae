//! The primary dies (`kill -9`) while a transaction holds a lock on it and
//! another waits: typed errors for both, the survivors refused until they
//! elect a new primary, which is then accepted, holds none of the dead
//! primary's locks, and runs `retry`'s transaction. The group is restored
//! (member 1 restarted, rejoined and made primary again) at the end.

use std::time::{Duration, Instant};

use tokio::sync::Notify;

use hierlock::sea_orm::{ConnectionTrait, DbBackend, Statement};
use hierlock::{
    Error, ErrorKind, GroupMode, Locker, MemberRole, RetryPolicy, Target, Topology, TxnState, Wait,
    retry,
};
use hierlock_tests::bounded;

use crate::group::{self, Member};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_primary_is_typed_errors_then_a_new_primary() {
    let _group = group::exclusive().await;
    let config = group::config("failover");
    group::provision(&config, &[2, 3]).await;
    let primary = Member::connect(1).await;
    primary
        .execute("DROP TABLE IF EXISTS hl_gr_failover_done")
        .await;
    primary
        .execute("CREATE TABLE hl_gr_failover_done (id INT PRIMARY KEY)")
        .await;
    for number in [2, 3] {
        group::caught_up(&primary, &Member::connect(number).await).await;
    }
    let restore = group::Restore;
    let locker = primary.locker(&config).await.expect("the primary");
    let r = Target::resource("u1", "a1", "r1").write();

    // Two transactions on the primary when it dies: `retry`'s, holding a
    // lock on r2 with its work ending only after the kill (so that its
    // COMMIT meets the dead connection), and a plain one holding r1 with a
    // third waiting for r1.
    let r2 = Target::resource("u1", "a1", "r2").write();
    let (held, killed_now) = (Notify::new(), Notify::new());
    let mut attempts = 0;
    let policy = RetryPolicy::default();
    let retried = retry(&primary.db, &policy, async |txn| {
        attempts += 1;
        locker.acquire(txn, [r2.clone()]).await?;
        held.notify_one();
        killed_now.notified().await;
        Ok::<_, Error>(())
    });
    let plain = async {
        held.notified().await;
        let holder = primary.begin().await;
        bounded(
            "the holder's acquisition",
            locker.acquire(&holder, [r.clone()]),
        )
        .await
        .expect("uncontended");
        let waiter = primary.begin().await;
        let id = group::connection_id(&waiter).await;
        let task = {
            let (locker, r) = (locker.clone(), r.clone());
            tokio::spawn(async move {
                let outcome = locker
                    .acquire_with(&waiter, [r], Wait::Block)
                    .await
                    .map(|set| set.statements());
                (outcome, waiter)
            })
        };
        primary.wait_until_blocked(id).await;

        tokio::task::block_in_place(|| group::script(&["kill", "1"])).expect("kill -9 member 1");
        let killed = Instant::now();
        killed_now.notify_one();
        let (waited, waiter) = bounded("the waiter on a killed primary", task)
            .await
            .expect("task");
        let waiter_failed = killed.elapsed();
        let err = waited.expect_err("the waiter's primary is gone");
        assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
        assert_eq!(err.txn_state(), TxnState::Lost, "{err}");
        assert!(err.is_retryable(), "{err}");
        drop(waiter);

        let commit = bounded("the holder's COMMIT on a killed primary", holder.commit())
            .await
            .expect_err("the holder's primary is gone");
        let holder_failed = killed.elapsed();
        eprintln!("the holder's COMMIT: {commit:?}");
        let err = Error::from_commit(commit);
        assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
        assert_eq!(err.txn_state(), TxnState::CommitUnknown, "{err}");
        assert!(
            !err.is_retryable(),
            "a COMMIT of unknown outcome is not retried: {err}"
        );

        (killed, waiter_failed, holder_failed)
    };
    let (retried, (killed, waiter_failed, holder_failed)) =
        tokio::time::timeout(Duration::from_secs(60), async {
            tokio::join!(retried, plain)
        })
        .await
        .expect("the transactions on the killed primary ended within 60 s");
    // `retry`'s COMMIT met the dead connection: its outcome is unknown, so
    // the error is returned, not retried.
    let err = retried.expect_err("retry's primary is gone");
    assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
    assert_eq!(err.txn_state(), TxnState::CommitUnknown, "{err}");
    assert!(!err.is_retryable(), "{err}");
    assert_eq!(attempts, 1, "a COMMIT of unknown outcome is not retried");

    // The survivors are refused until they elect a new primary.
    let survivors = [Member::connect(2).await, Member::connect(3).await];
    let mut refusals = 0;
    let (elected, new_locker) = tokio::time::timeout(Duration::from_secs(90), async {
        loop {
            for member in &survivors {
                match member.locker(&config).await {
                    Ok(locker) => return (member, locker),
                    Err(e) => {
                        assert_eq!(e.kind(), ErrorKind::UnsafeTopology, "{e}");
                        if refusals == 0 {
                            eprintln!("member {} at first: {e}", member.number);
                        }
                        refusals += 1;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
    .await
    .expect("a new primary within 90 s");
    let elected_after = killed.elapsed();
    eprintln!(
        "kill -9 of the primary: waiter ConnectionLost after {waiter_failed:?}, holder's COMMIT \
         after {holder_failed:?}, member {} elected and accepted after {elected_after:?} \
         ({refusals} refusals before)",
        elected.number
    );
    assert!(
        refusals > 0,
        "the survivors were refused before the election"
    );
    assert_eq!(
        new_locker.topology(),
        Topology::GroupReplication {
            mode: GroupMode::SinglePrimary,
            members: Some(2),
            role: Some(MemberRole::Primary),
        }
    );

    // No lock outlived the dead primary.
    let probe = elected.begin().await;
    bounded(
        "a NoWait acquisition on the new primary",
        new_locker.acquire_with(&probe, [r.clone()], Wait::NoWait),
    )
    .await
    .expect("the dead primary's locks are gone with it");
    probe.rollback().await.expect("rollback");

    // `retry` completes the work there.
    run_work(&elected.db, &new_locker, &r).await;
    let done = elected
        .scalar("SELECT CAST(COUNT(*) AS SIGNED) FROM hl_gr_failover_done")
        .await;
    assert_eq!(done, 1);

    // Back to 3 members with member 1 the primary, for the next test and run.
    restore.now();
    let primary = Member::connect(1).await;
    let locker = primary
        .locker(&config)
        .await
        .expect("member 1 primary again");
    assert_eq!(
        locker.topology(),
        Topology::GroupReplication {
            mode: GroupMode::SinglePrimary,
            members: Some(3),
            role: Some(MemberRole::Primary),
        }
    );
}

async fn run_work(
    db: &hierlock::sea_orm::DatabaseConnection,
    locker: &Locker,
    r: &hierlock::Request,
) {
    bounded(
        "retry on the new primary",
        retry(db, &RetryPolicy::default(), async |txn| {
            locker.acquire(txn, [r.clone()]).await?;
            txn.execute_raw(Statement::from_string(
                DbBackend::MySql,
                "INSERT INTO hl_gr_failover_done VALUES (1)",
            ))
            .await?;
            Ok::<_, Error>(())
        }),
    )
    .await
    .expect("retry's transaction commits on the new primary");
}
