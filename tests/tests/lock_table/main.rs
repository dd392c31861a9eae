//! PostgreSQL's shared lock table, filled by one call: a test binary of its
//! own, because while it runs the server's lock table is (nearly) full, and
//! any other test on that server would fail with `out of shared memory`.
//! Cargo runs test binaries one after the other.

use hierlock::{ErrorKind, MAX_LOCKS_PER_CALL, Request, Target, TxnState, Wait};
use hierlock_tests::{Backend, Fixture, bounded};
use sea_orm::{ConnectionTrait, DbBackend, Statement, TransactionTrait};

/// `MAX_LOCKS_PER_CALL` advisory locks in one call: PostgreSQL's shared
/// lock table, sized by the server's configuration, holds them all, or the
/// call fails saying which setting to raise, with the transaction aborted
/// and nothing held after its rollback. With the default
/// `max_locks_per_transaction` (64) it cannot hold them: the failure is
/// required there.
#[tokio::test]
async fn the_largest_advisory_acquisition_fits_or_says_what_to_raise() {
    let fx = Fixture::new(Backend::Postgres, "lock_table", 40_000).await;
    let capacity = int(
        &fx,
        "SELECT (current_setting('max_locks_per_transaction')::int8 * \
         (current_setting('max_connections')::int8 + \
          current_setting('max_prepared_transactions')::int8)) AS n",
    )
    .await;
    let requests: Vec<Request> = (0..MAX_LOCKS_PER_CALL - 2)
        .map(|i| Target::resource("u", "a", i).write())
        .collect();
    let plan = fx.locker.plan(&requests).expect("plan");
    assert_eq!(plan.locks().len(), MAX_LOCKS_PER_CALL);
    let txn = fx.db.begin().await.expect("begin");
    let pid = fx.connection_id(&txn).await;
    let outcome = bounded("the acquisition", fx.locker.acquire(&txn, requests.clone())).await;
    let refused = outcome.is_err();
    match outcome {
        Ok(_) => {
            let held = int(
                &fx,
                &format!(
                    "SELECT count(*) AS n FROM pg_locks \
                     WHERE locktype = 'advisory' AND granted AND pid = {pid}"
                ),
            )
            .await;
            assert_eq!(held, MAX_LOCKS_PER_CALL as i64, "every planned key is held");
        }
        Err(err) => {
            let message = err.to_string();
            assert_eq!(err.kind(), ErrorKind::Database, "{message}");
            assert_eq!(err.txn_state(), TxnState::Aborted, "{message}");
            assert!(!err.is_retryable(), "{message}");
            for needed in [
                "acquiring 30000 locks",
                "shared lock table is full (53200)",
                "raise max_locks_per_transaction",
            ] {
                assert!(message.contains(needed), "{needed:?} in {message}");
            }
            assert!(
                capacity < MAX_LOCKS_PER_CALL as i64,
                "a lock table for {capacity} locks refused {MAX_LOCKS_PER_CALL}: {message}"
            );
        }
    }
    txn.rollback().await.expect("rollback");
    // The server's table held at most twice its configured size here.
    if capacity * 2 < MAX_LOCKS_PER_CALL as i64 {
        assert!(
            refused,
            "a lock table for {capacity} locks took {MAX_LOCKS_PER_CALL}"
        );
    }
    // The rollback released them: the same plan's first keys are free.
    let again = fx.db.begin().await.expect("begin");
    fx.locker
        .acquire_with(&again, requests[..100].to_vec(), Wait::NoWait)
        .await
        .expect("free after the rollback");
    again.rollback().await.expect("rollback");
}

/// One integer column `n` of `sql`'s one row.
async fn int(fx: &Fixture, sql: &str) -> i64 {
    let row = fx
        .db
        .query_one_raw(Statement::from_string(DbBackend::Postgres, sql))
        .await
        .expect(sql)
        .expect("a row");
    row.try_get("", "n").expect("n")
}
