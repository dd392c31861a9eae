//! On the primary of a single-primary group, locks exclude as on one server.

use hierlock::{ErrorKind, Target, Wait};
use hierlock_tests::bounded;

use crate::group::{self, Member};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_transactions_on_the_primary_exclude_each_other() {
    let _group = group::exclusive().await;
    let config = group::config("exclusion");
    group::provision(&config, &[]).await;
    let primary = Member::connect(1).await;
    let locker = primary.locker(&config).await.expect("the primary");
    let r = Target::resource("u1", "a1", "r1").write();

    let holder = primary.begin().await;
    bounded(
        "an uncontended acquisition",
        locker.acquire(&holder, [r.clone()]),
    )
    .await
    .expect("uncontended");

    let refused = primary.begin().await;
    let err = bounded(
        "a NoWait acquisition",
        locker.acquire_with(&refused, [r.clone()], Wait::NoWait),
    )
    .await
    .expect_err("a write lock held on the primary");
    assert_eq!(err.kind(), ErrorKind::WouldBlock, "{err}");
    refused.rollback().await.expect("rollback");

    // Block: waits, as INNODB_TRX shows, until the holder commits.
    let waiter = primary.begin().await;
    let id = group::connection_id(&waiter).await;
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
    primary.wait_until_blocked(id).await;
    assert!(
        !task.is_finished(),
        "granted while the holder held the lock"
    );
    holder.commit().await.expect("commit");
    let (outcome, waiter) = bounded("the waiting acquisition", task)
        .await
        .expect("task");
    outcome.expect("granted once the holder committed");
    waiter.commit().await.expect("commit");
}
