//! The standalone handle: a lock-only transaction of its own.

use hierlock::{ErrorKind, Target, Wait};
use hierlock_tests::{Backend, Fixture};

use crate::support::{assert_free, take};

pub async fn handle_holds_until_release(backend: Backend) {
    let fx = Fixture::new(backend, "handle", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let handle = fx
        .locker
        .acquire_handle(&fx.db, [r.clone()])
        .await
        .expect("handle");
    assert_eq!(handle.requests(), std::slice::from_ref(&r));
    let txn = fx.begin().await;
    let err = take(&fx, &txn, std::slice::from_ref(&r), Wait::NoWait)
        .await
        .expect_err("held by the handle");
    assert_eq!(err.kind(), ErrorKind::WouldBlock);
    drop(txn);
    handle.release().await.expect("release");
    let txn = fx.begin().await;
    take(&fx, &txn, &[r], Wait::NoWait).await.expect("released");
}

pub async fn handle_releases_on_drop(backend: Backend) {
    let fx = Fixture::new(backend, "handledrop", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let handle = fx
        .locker
        .acquire_handle(&fx.db, [r.clone()])
        .await
        .expect("handle");
    drop(handle);
    // The rollback is sent when the connection goes back to the pool: poll.
    assert_free(&fx, "release on drop", &r).await;
}
