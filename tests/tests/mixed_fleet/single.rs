//! Single-target calls of the Go package against hierlock, both ways round:
//! the same rows in the same modes, so they exclude each other exactly as
//! two hierlock calls do.

use hierlock::{Dialect, Request, Target, Wait};
use hierlock_tests::{Backend, Fixture, bounded};
use sea_orm::DatabaseTransaction;

use crate::go::{self, GoPackage, GoTarget, error_number};

/// One pair of the matrix: a Go `Acquire`, a hierlock request, and whether
/// the hierarchy rule says they conflict.
struct Case {
    name: &'static str,
    go: GoTarget,
    hierlock: Request,
    conflict: bool,
}

fn cases() -> Vec<Case> {
    let case = |name, go, hierlock, conflict| Case {
        name,
        go,
        hierlock,
        conflict,
    };
    vec![
        case(
            "resource vs the same resource",
            go::resource("u1", "a1", "r1"),
            Target::resource("u1", "a1", "r1").write(),
            true,
        ),
        case(
            "account vs a resource below",
            go::account("u1", "a1"),
            Target::resource("u1", "a1", "r1").write(),
            true,
        ),
        case(
            "resource vs the account above",
            go::resource("u1", "a1", "r1"),
            Target::account("u1", "a1").write(),
            true,
        ),
        case(
            "user vs an account below",
            go::user("u1"),
            Target::account("u1", "a1").write(),
            true,
        ),
        case(
            "user vs a resource below",
            go::user("u1"),
            Target::resource("u1", "a1", "r1").write(),
            true,
        ),
        case(
            "account vs the user above",
            go::account("u1", "a1"),
            Target::user("u1").write(),
            true,
        ),
        case(
            "resource vs the user above",
            go::resource("u1", "a1", "r1"),
            Target::user("u1").write(),
            true,
        ),
        case(
            "user vs the same user",
            go::user("u1"),
            Target::user("u1").write(),
            true,
        ),
        case(
            "resource vs a hierlock read of it",
            go::resource("u1", "a1", "r1"),
            Target::resource("u1", "a1", "r1").read(),
            true,
        ),
        case(
            "sibling resources",
            go::resource("u1", "a1", "r1"),
            Target::resource("u1", "a1", "r2").write(),
            false,
        ),
        case(
            "sibling accounts",
            go::account("u1", "a1"),
            Target::account("u1", "a2").write(),
            false,
        ),
        case(
            "a resource vs a sibling account",
            go::resource("u1", "a1", "r1"),
            Target::account("u1", "a2").write(),
            false,
        ),
        case(
            "different users",
            go::user("u1"),
            Target::resource("u2", "a1", "r1").write(),
            false,
        ),
        case(
            "a resource vs a hierlock read of the account above",
            go::resource("u1", "a1", "r1"),
            Target::account("u1", "a1").read(),
            false,
        ),
    ]
}

/// Whether the Go package can send `target`'s statements to this server:
/// on MariaDB its `FOR SHARE` is a syntax error, so only a user lock (one
/// `FOR UPDATE`) works.
fn go_can(fx: &Fixture, target: &GoTarget) -> bool {
    fx.locker.dialect() != Dialect::MariaDb || matches!(target, GoTarget::User(_))
}

/// Every pair, both ways round: the second caller waits (seen in the
/// server's lock-wait view) and gets its locks once the first releases, or
/// is granted at once. On MariaDB, the Go calls that need a shared lock fail
/// with 1064 and hold nothing.
pub async fn single_target_calls_exclude_each_other_both_ways(backend: Backend) {
    let fx = Fixture::new(backend, "go_single", 1000).await;
    let go = GoPackage::sharing(&fx);
    for case in cases() {
        assert_same_rows(&fx, &go, &case.go);
        if !go_can(&fx, &case.go) {
            assert_go_fails_to_parse(&fx, &go, &go.acquire_plan(&case.go)).await;
            continue;
        }
        if case.conflict {
            hierlock_waits_for_go(&fx, &go, &case).await;
            go_waits_for_hierlock(&fx, &go, &case).await;
        } else {
            both_granted(&fx, &go, &case).await;
        }
    }
}

/// The emulation's rows are the ones hierlock plans for the same node
/// (hierlock's own golden buckets pin them to the Go package's).
fn assert_same_rows(fx: &Fixture, go: &GoPackage, target: &GoTarget) {
    let request = match target {
        GoTarget::User(u) => Target::user(u.as_str()),
        GoTarget::Account(u, a) => Target::account(u.as_str(), a.as_str()),
        GoTarget::Resource(u, a, r) => Target::resource(u.as_str(), a.as_str(), r.as_str()),
    }
    .write();
    let plan = fx.locker.plan([&request]).expect("plan");
    let rows: Vec<(i64, i64, bool)> = plan
        .locks()
        .iter()
        .map(|l| {
            (
                i64::from(l.key.level.as_u8()),
                l.key.slot,
                l.mode == hierlock::LockMode::Exclusive,
            )
        })
        .collect();
    let go_rows: Vec<(i64, i64, bool)> = go
        .acquire_plan(target)
        .iter()
        .map(|l| (l.level, l.bucket, l.exclusive))
        .collect();
    assert_eq!(rows, go_rows, "{target:?}: same rows, modes and order");
}

/// A Go call that sends `FOR SHARE` to MariaDB fails at its first shared
/// statement with 1064, before holding anything Go would need later.
pub async fn assert_go_fails_to_parse(fx: &Fixture, go: &GoPackage, plan: &[go::GoLock]) {
    let txn = GoPackage::begin(&fx.db).await;
    let err = bounded("a Go call on MariaDB", go.lock_all(&txn, plan))
        .await
        .expect_err("MariaDB rejects FOR SHARE");
    assert_eq!(error_number(&err), Some(1064), "{err}");
    // The first statement is the user's FOR SHARE: nothing was locked, so a
    // hierlock user write is granted at once while the Go transaction is open.
    let other = fx.begin().await;
    let user = Target::user("u1").write();
    fx.locker
        .acquire_with(&other, [user], Wait::NoWait)
        .await
        .expect("the failed Go call holds nothing");
    other.rollback().await.expect("rollback");
    txn.rollback().await.expect("rollback");
}

async fn go_holding(fx: &Fixture, go: &GoPackage, target: &GoTarget) -> DatabaseTransaction {
    let txn = GoPackage::begin(&fx.db).await;
    bounded(
        "an uncontended Go Acquire",
        go.lock_all(&txn, &go.acquire_plan(target)),
    )
    .await
    .unwrap_or_else(|e| panic!("Go Acquire({target:?}) is uncontended: {e}"));
    txn
}

async fn hierlock_holding(fx: &Fixture, request: &Request) -> DatabaseTransaction {
    let txn = fx.begin().await;
    bounded(
        "an uncontended hierlock acquisition",
        fx.locker.acquire(&txn, [request.clone()]),
    )
    .await
    .unwrap_or_else(|e| panic!("{request:?} is uncontended: {e}"));
    txn
}

/// Go holds; hierlock waits until the Go transaction rolls back (`Release`).
async fn hierlock_waits_for_go(fx: &Fixture, go: &GoPackage, case: &Case) {
    let held = go_holding(fx, go, &case.go).await;
    let txn = fx.begin().await;
    let id = fx.connection_id(&txn).await;
    let (locker, request) = (fx.locker.clone(), case.hierlock.clone());
    let waiter = tokio::spawn(async move {
        let outcome = locker.acquire(&txn, [request]).await.map(|_| ());
        (outcome, txn)
    });
    fx.wait_until_blocked(id).await;
    assert!(
        !waiter.is_finished(),
        "{}: hierlock was granted while Go held its lock",
        case.name
    );
    held.rollback().await.expect("Go Release");
    let (outcome, txn) = bounded("the waiting hierlock call", waiter)
        .await
        .expect("task");
    outcome.unwrap_or_else(|e| panic!("{}: granted once Go released: {e}", case.name));
    txn.rollback().await.expect("rollback");
}

/// hierlock holds; the Go call waits until hierlock's transaction ends.
async fn go_waits_for_hierlock(fx: &Fixture, go: &GoPackage, case: &Case) {
    let held = hierlock_holding(fx, &case.hierlock).await;
    let txn = GoPackage::begin(&fx.db).await;
    let id = fx.connection_id(&txn).await;
    let (go_owned, plan) = (go.clone(), go.acquire_plan(&case.go));
    let waiter = tokio::spawn(async move {
        let outcome = go_owned.lock_all(&txn, &plan).await;
        (outcome, txn)
    });
    fx.wait_until_blocked(id).await;
    assert!(
        !waiter.is_finished(),
        "{}: Go was granted while hierlock held its locks",
        case.name
    );
    held.commit().await.expect("commit");
    let (outcome, txn) = bounded("the waiting Go call", waiter).await.expect("task");
    outcome.unwrap_or_else(|e| panic!("{}: Go granted once hierlock released: {e}", case.name));
    txn.rollback().await.expect("Go Release");
}

/// Neither waits for the other, whichever comes first.
async fn both_granted(fx: &Fixture, go: &GoPackage, case: &Case) {
    let held = go_holding(fx, go, &case.go).await;
    let txn = fx.begin().await;
    bounded(
        "hierlock next to Go",
        fx.locker
            .acquire_with(&txn, [case.hierlock.clone()], Wait::NoWait),
    )
    .await
    .unwrap_or_else(|e| panic!("{}: hierlock must not wait for Go: {e}", case.name));
    txn.rollback().await.expect("rollback");
    held.rollback().await.expect("Go Release");

    let held = hierlock_holding(fx, &case.hierlock).await;
    let txn = GoPackage::begin(&fx.db).await;
    bounded(
        "Go next to hierlock (a wait here is a wrong conflict)",
        go.lock_all(&txn, &go.acquire_plan(&case.go)),
    )
    .await
    .unwrap_or_else(|e| panic!("{}: Go must not wait for hierlock: {e}", case.name));
    txn.rollback().await.expect("Go Release");
    held.rollback().await.expect("rollback");
}
