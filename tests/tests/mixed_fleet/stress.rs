//! Randomized races between the Go package and hierlock on one table, in the
//! combinations that are deadlock-free by construction: every transaction
//! takes its rows in an order consistent with one global order, `(level,
//! bucket)`.
//!
//! - A Go `Acquire` locks one row per level, levels ascending; a hierlock call
//!   locks its rows by `(level, bucket)`: whatever the collisions, no cycle.
//! - A Go `AcquireResources` orders its resource rows by ID string, not by
//!   bucket; a cycle with it needs a second transaction that holds one of its
//!   resource rows while waiting for another, which a hierlock call locking
//!   at most one resource row never does.

use std::time::Duration;

use hierlock::{Dialect, ErrorKind, Request, Target};
use hierlock_tests::{Backend, Fixture, bounded};
use sea_orm::{DbErr, TransactionTrait};

use crate::go::{self, GoPackage, GoTarget, error_number};

/// A tiny deterministic generator, so failures replay.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

/// Rounds per worker: four Go and four hierlock workers, 200 calls in all.
const ROUNDS: usize = 25;

/// What went wrong in a race, counted rather than panicking mid-race.
#[derive(Debug, Default)]
struct Tally {
    calls: usize,
    deadlocks: usize,
    other_errors: Vec<String>,
}

impl Tally {
    fn go(&mut self, outcome: Result<(), DbErr>) {
        self.calls += 1;
        match outcome {
            Ok(()) => {}
            Err(e) if error_number(&e) == Some(1213) => self.deadlocks += 1,
            Err(e) => self.other_errors.push(format!("Go: {e}")),
        }
    }

    fn hierlock(&mut self, outcome: hierlock::Result<()>) {
        self.calls += 1;
        match outcome {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Deadlock => self.deadlocks += 1,
            Err(e) => self.other_errors.push(format!("hierlock: {e}")),
        }
    }

    fn add(&mut self, other: Tally) {
        self.calls += other.calls;
        self.deadlocks += other.deadlocks;
        self.other_errors.extend(other.other_errors);
    }
}

/// A short random hold, so that calls overlap.
async fn hold(rng: &mut Lcg) {
    tokio::time::sleep(Duration::from_micros(200 * rng.below(10) as u64)).await;
}

/// A random hierlock request over users u0–u1, accounts a0–a1, resources r0–r3.
fn random_request(rng: &mut Lcg) -> Request {
    let (u, a, r) = (rng.below(2), rng.below(2), rng.below(4));
    let target = match rng.below(4) {
        0 => Target::user(format!("u{u}")),
        1 => Target::account(format!("u{u}"), format!("a{a}")),
        _ => Target::resource(format!("u{u}"), format!("a{a}"), format!("r{r}")),
    };
    if rng.below(3) == 0 {
        target.read()
    } else {
        target.write()
    }
}

/// A random Go `Acquire` over the same nodes (user locks only on MariaDB,
/// where the Go package cannot take shared locks).
fn random_go_target(rng: &mut Lcg, users_only: bool) -> GoTarget {
    let (u, a, r) = (rng.below(2), rng.below(2), rng.below(4));
    match if users_only { 0 } else { rng.below(4) } {
        0 => go::user(format!("u{u}")),
        1 => go::account(format!("u{u}"), format!("a{a}")),
        _ => go::resource(format!("u{u}"), format!("a{a}"), format!("r{r}")),
    }
}

async fn run(workers: Vec<tokio::task::JoinHandle<Tally>>) -> Tally {
    let mut tally = Tally::default();
    for worker in workers {
        tally.add(bounded("a racing worker", worker).await.expect("task"));
    }
    tally
}

/// Go single-target calls racing hierlock calls of one to four targets:
/// never a deadlock, never an error. `space` 1000 gives distinct rows; a
/// space of 3 makes most nodes of a level share rows, and still nothing
/// deadlocks.
pub async fn go_single_target_calls_never_deadlock_with_hierlock_multi_target_calls(
    backend: Backend,
    space: u32,
) {
    let fx = &Fixture::new(backend, &format!("go_race_{space}"), space).await;
    let go = GoPackage::sharing(fx);
    let users_only = fx.locker.dialect() == Dialect::MariaDb;
    let mut workers = Vec::new();
    for task in 0..4u64 {
        let (db, go) = (fx.db.clone(), go.clone());
        workers.push(tokio::spawn(async move {
            let mut rng = Lcg(100 + task);
            let mut tally = Tally::default();
            for _ in 0..ROUNDS {
                let target = random_go_target(&mut rng, users_only);
                let txn = GoPackage::begin(&db).await;
                let outcome = go.lock_all(&txn, &go.acquire_plan(&target)).await;
                if outcome.is_ok() {
                    hold(&mut rng).await;
                }
                tally.go(outcome);
                txn.rollback().await.expect("Go Release");
            }
            tally
        }));
    }
    for task in 0..4u64 {
        let (db, locker) = (fx.db.clone(), fx.locker.clone());
        workers.push(tokio::spawn(async move {
            let mut rng = Lcg(200 + task);
            let mut tally = Tally::default();
            for _ in 0..ROUNDS {
                let requests: Vec<Request> = (0..1 + rng.below(4))
                    .map(|_| random_request(&mut rng))
                    .collect();
                let txn = db.begin().await.expect("begin");
                let outcome = locker.acquire(&txn, requests).await.map(|_| ());
                if outcome.is_ok() {
                    hold(&mut rng).await;
                }
                let failed = outcome.is_err();
                tally.hierlock(outcome);
                if failed {
                    txn.rollback().await.expect("rollback");
                } else {
                    txn.commit().await.expect("commit");
                }
            }
            tally
        }));
    }
    let tally = run(workers).await;
    assert_eq!(tally.calls, 8 * ROUNDS);
    assert_eq!(
        (tally.deadlocks, &tally.other_errors),
        (0, &Vec::<String>::new()),
        "Go single-target calls and hierlock calls must never deadlock"
    );
}

/// Go `AcquireResources` racing hierlock single-target calls (reads and
/// writes at every level): never a deadlock. The resource IDs are checked to
/// have distinct buckets, so that Go calls do not deadlock among themselves
/// (the seed's own flaw under collisions, REFERENCE.md flaw 1).
pub async fn go_multi_resource_calls_never_deadlock_with_hierlock_single_target_calls(
    backend: Backend,
) {
    let fx = &Fixture::new(backend, "go_multi_race", 1000).await;
    let go = GoPackage::sharing(fx);
    let mut rows = std::collections::BTreeSet::new();
    for (u, a, r) in every_resource(2, 2, 4) {
        let bucket = go.bucket(&format!("resource:u{u}:a{a}:r{r}"));
        assert!(
            rows.insert(bucket),
            "resource IDs of the race collide: pick others"
        );
    }
    let mut workers = Vec::new();
    for task in 0..4u64 {
        let (db, go) = (fx.db.clone(), go.clone());
        workers.push(tokio::spawn(async move {
            let mut rng = Lcg(300 + task);
            let mut tally = Tally::default();
            for _ in 0..ROUNDS {
                let (u, a) = (format!("u{}", rng.below(2)), format!("a{}", rng.below(2)));
                let ids: Vec<String> = (0..2 + rng.below(3))
                    .map(|_| format!("r{}", rng.below(4)))
                    .collect();
                let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                let txn = GoPackage::begin(&db).await;
                let outcome = go
                    .lock_all(&txn, &go.acquire_resources_plan(&u, &a, &ids))
                    .await;
                if outcome.is_ok() {
                    hold(&mut rng).await;
                }
                tally.go(outcome);
                txn.rollback().await.expect("Go Release");
            }
            tally
        }));
    }
    for task in 0..4u64 {
        let (db, locker) = (fx.db.clone(), fx.locker.clone());
        workers.push(tokio::spawn(async move {
            let mut rng = Lcg(400 + task);
            let mut tally = Tally::default();
            for _ in 0..ROUNDS {
                let request = random_request(&mut rng);
                let txn = db.begin().await.expect("begin");
                let outcome = locker.acquire(&txn, [request]).await.map(|_| ());
                if outcome.is_ok() {
                    hold(&mut rng).await;
                }
                let failed = outcome.is_err();
                tally.hierlock(outcome);
                if failed {
                    txn.rollback().await.expect("rollback");
                } else {
                    txn.commit().await.expect("commit");
                }
            }
            tally
        }));
    }
    let tally = run(workers).await;
    assert_eq!(tally.calls, 8 * ROUNDS);
    assert_eq!(
        (tally.deadlocks, &tally.other_errors),
        (0, &Vec::<String>::new()),
        "Go AcquireResources and hierlock single-target calls must never deadlock"
    );
}

/// Every `(u, a, r)` index triple below the bounds.
fn every_resource(users: usize, accounts: usize, resources: usize) -> Vec<(usize, usize, usize)> {
    (0..users)
        .flat_map(|u| (0..accounts).flat_map(move |a| (0..resources).map(move |r| (u, a, r))))
        .collect()
}
