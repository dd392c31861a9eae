//! A hot key on the MySQL family: an acquisition that must wait sends the
//! statements of the waiting path only (its connection's id, the statement
//! that waits, the fence's release), without the `NOWAIT` try that would
//! fail, once a try on the key has failed a moment before; on a cold key
//! the try comes first.

use hierlock::{Target, Wait};
use hierlock_tests::{Backend, Fixture};
use sea_orm::TransactionTrait;

use crate::support::{holding, session_questions, take};

/// The statements a waiting acquisition of `r` sends on a connection of
/// its own, counted by the server, while `fx` holds it in another
/// transaction until the acquisition waits.
async fn statements_of_a_wait(fx: &Fixture, r: &hierlock::Request) -> u64 {
    let holder = holding(fx, std::slice::from_ref(r)).await;
    let txn = fx.db.begin().await.expect("begin");
    let id = fx.connection_id(&txn).await;
    let before = session_questions(&txn).await;
    let acquire = take(fx, &txn, std::slice::from_ref(r), Wait::Block);
    let release = async {
        fx.wait_until_blocked(id).await;
        holder.commit().await.expect("the holder commits");
    };
    let (taken, ()) = tokio::join!(acquire, release);
    taken.expect("granted once the holder commits");
    let after = session_questions(&txn).await;
    txn.rollback().await.expect("rollback");
    // Less the reading of `before`.
    after - before - 1
}

pub async fn a_hot_keys_wait_sends_no_failed_try(backend: Backend) {
    let fx = Fixture::new(backend, "hotkeys", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let cold = statements_of_a_wait(&fx, &r).await;
    let hot = statements_of_a_wait(&fx, &r).await;
    assert_eq!(
        (cold, hot),
        (4, 3),
        "a cold key's wait: the failed try, the id, the waiting statement and the fence's \
         release; a hot key's: all but the try"
    );
    // Another key stays cold: its uncontended acquisition is one statement.
    let other = Target::resource("u2", "a2", "r2").write();
    let txn = fx.db.begin().await.expect("begin");
    let before = session_questions(&txn).await;
    take(&fx, &txn, std::slice::from_ref(&other), Wait::Block)
        .await
        .expect("uncontended");
    assert_eq!(session_questions(&txn).await - before - 1, 1);
    txn.rollback().await.expect("rollback");
}
