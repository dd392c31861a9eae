//! The limit of a mixed fleet: the Go `AcquireResources` locks resource rows
//! in ID string order, hierlock in bucket order. Where the two orders differ,
//! a Go call and a hierlock call on the same two resources deadlock, with no
//! bucket collision at all.
//!
//! The interleaving is forced, not hoped for: Go locks the first resource of
//! its order, hierlock is seen waiting in the server's lock-wait view (it
//! holds the other resource's row), then Go asks for that row.

use hierlock::{ErrorKind, Request, Target};
use hierlock_tests::{Backend, Fixture, bounded};
use sea_orm::DbErr;

use crate::go::{GoPackage, error_number};
use crate::single::assert_go_fails_to_parse;

/// Trials of the forced interleaving.
const TRIALS: usize = 10;

/// `count` disjoint pairs `(x, y)` with `x < y` as strings and distinct
/// buckets, the bucket of `x` above that of `y` when `reversed` (Go's order
/// is then the reverse of hierlock's), below it otherwise.
fn pairs(go: &GoPackage, u: &str, a: &str, reversed: bool, count: usize) -> Vec<(String, String)> {
    let bucket = |r: &str| go.bucket(&format!("resource:{u}:{a}:{r}"));
    let names: Vec<String> = (0..1000).map(|i| format!("r{i:03}")).collect();
    let mut found = Vec::new();
    let mut pair = names.chunks_exact(2);
    while found.len() < count {
        let [x, y] = pair.next().expect("enough pairs among 500") else {
            unreachable!("chunks of two")
        };
        let (bx, by) = (bucket(x), bucket(y));
        if bx != by && (bx > by) == reversed {
            found.push((x.clone(), y.clone()));
        }
    }
    found
}

/// What one forced trial ended with.
struct Outcome {
    /// Go's last statement (the resource that comes second in ID order).
    go: Result<(), DbErr>,
    /// hierlock's acquisition.
    hierlock: hierlock::Result<()>,
}

impl Outcome {
    fn go_deadlocked(&self) -> bool {
        self.go
            .as_ref()
            .is_err_and(|e| error_number(e) == Some(1213))
    }

    fn hierlock_deadlocked(&self) -> bool {
        self.hierlock
            .as_ref()
            .is_err_and(|e| e.kind() == ErrorKind::Deadlock)
    }
}

/// Go `AcquireResources(u, a, [x, y])` up to its first resource, then
/// hierlock's `requests` until they wait, then Go's second resource. Both
/// transactions end before it returns.
async fn forced_trial(
    fx: &Fixture,
    go: &GoPackage,
    (u, a): (&str, &str),
    (x, y): (&str, &str),
    requests: Vec<Request>,
) -> Outcome {
    let plan = go.acquire_resources_plan(u, a, &[y, x]);
    let (first, last) = plan.split_at(3); // user, account, then x: y is last
    let go_txn = GoPackage::begin(&fx.db).await;
    bounded("Go up to its first resource", go.lock_all(&go_txn, first))
        .await
        .expect("uncontended");

    let txn = fx.begin().await;
    let id = fx.connection_id(&txn).await;
    let locker = fx.locker.clone();
    let waiter = tokio::spawn(async move {
        let outcome = locker.acquire(&txn, requests).await.map(|_| ());
        (outcome, txn)
    });
    fx.wait_until_blocked(id).await;

    let go_outcome = bounded("Go's second resource", go.lock_all(&go_txn, last)).await;
    // Go releases (a rollback) once its call returned, as its callers do.
    go_txn.rollback().await.expect("Go Release");
    let (hierlock, txn) = bounded("the hierlock call", waiter).await.expect("task");
    txn.rollback().await.expect("rollback");
    Outcome {
        go: go_outcome,
        hierlock,
    }
}

/// Where Go's ID order is the reverse of the bucket order, every forced
/// trial is a deadlock (1213): one side is rolled back, the other gets its
/// locks. Nothing collides; the two orders alone make the cycle.
pub async fn go_acquire_resources_and_a_hierlock_multi_resource_call_deadlock(backend: Backend) {
    let fx = Fixture::new(backend, "go_multi_deadlock", 1000).await;
    let go = GoPackage::sharing(&fx);
    let (mut go_victims, mut hierlock_victims) = (0, 0);
    for (x, y) in pairs(&go, "u1", "a1", true, TRIALS) {
        let requests = vec![
            Target::resource("u1", "a1", x.as_str()).write(),
            Target::resource("u1", "a1", y.as_str()).write(),
        ];
        let outcome = forced_trial(&fx, &go, ("u1", "a1"), (&x, &y), requests).await;
        match (outcome.go_deadlocked(), outcome.hierlock_deadlocked()) {
            (true, false) => {
                go_victims += 1;
                outcome.hierlock.expect("the survivor gets its locks");
            }
            (false, true) => {
                hierlock_victims += 1;
                outcome.go.expect("the survivor gets its locks");
            }
            _ => panic!(
                "{x} < {y} with bucket({x}) > bucket({y}) must deadlock, one victim: Go {:?} / hierlock {:?}",
                outcome.go, outcome.hierlock
            ),
        }
    }
    assert_eq!(go_victims + hierlock_victims, TRIALS);
}

/// The same choreography without a deadlock: where Go's ID order agrees with
/// the bucket order, and where hierlock locks the account instead of the two
/// resources (it waits at the account, holding no resource row).
pub async fn aligned_orders_and_an_account_lock_do_not_deadlock(backend: Backend) {
    let fx = Fixture::new(backend, "go_multi_aligned", 1000).await;
    let go = GoPackage::sharing(&fx);
    for (x, y) in pairs(&go, "u1", "a1", false, TRIALS) {
        let requests = vec![
            Target::resource("u1", "a1", x.as_str()).write(),
            Target::resource("u1", "a1", y.as_str()).write(),
        ];
        let outcome = forced_trial(&fx, &go, ("u1", "a1"), (&x, &y), requests).await;
        outcome.go.expect("Go's order agrees with the buckets'");
        outcome.hierlock.expect("granted once Go released");
    }
    for (x, y) in pairs(&go, "u1", "a1", true, TRIALS) {
        let requests = vec![Target::account("u1", "a1").write()];
        let outcome = forced_trial(&fx, &go, ("u1", "a1"), (&x, &y), requests).await;
        outcome
            .go
            .expect("the account waiter holds no resource row");
        outcome.hierlock.expect("granted once Go released");
    }
}

/// On MariaDB the Go package's first statement, `User` `FOR SHARE`, is a
/// syntax error: `AcquireResources` cannot run there at all.
pub async fn go_acquire_resources_cannot_run_on_mariadb(backend: Backend) {
    let fx = Fixture::new(backend, "go_multi_maria", 1000).await;
    let go = GoPackage::sharing(&fx);
    assert_go_fails_to_parse(
        &fx,
        &go,
        &go.acquire_resources_plan("u1", "a1", &["r2", "r1"]),
    )
    .await;
}
