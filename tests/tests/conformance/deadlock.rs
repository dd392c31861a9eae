//! Deadlock freedom: the global order holds under stress and under bucket
//! collisions, where the seed's Go implementation (sort IDs, lock buckets)
//! deadlocks.

use hierlock::{ErrorKind, Level, Request, Target, Wait};
use hierlock_tests::{Backend, Fixture, bounded};
use sea_orm::TransactionTrait;

use crate::support::take;

/// A tiny deterministic generator, so failures replay.
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

/// Random mixes of users, accounts and resources, read and write, several per
/// call, from many tasks at once: never a deadlock, never an error.
pub async fn ordered_multi_target_stress_never_deadlocks(backend: Backend) {
    let fx = Fixture::new(backend, "stress", 1000).await;
    let (tasks, rounds) = if backend.is_sqlite() {
        (4, 15)
    } else {
        (8, 30)
    };
    let workers: Vec<_> = (0..tasks)
        .map(|task| {
            let (locker, db) = (fx.locker.clone(), fx.db.clone());
            tokio::spawn(async move {
                let mut rng = Lcg(task as u64 + 1);
                for _ in 0..rounds {
                    let requests: Vec<Request> = (0..1 + rng.below(4))
                        .map(|_| {
                            let (u, a, r) = (rng.below(2), rng.below(2), rng.below(3));
                            let target = match rng.below(4) {
                                0 => Target::user(u),
                                1 => Target::account(u, a),
                                _ => Target::resource(u, a, r),
                            };
                            if rng.below(3) == 0 {
                                target.read()
                            } else {
                                target.write()
                            }
                        })
                        .collect();
                    let txn = db.begin().await.expect("begin");
                    locker
                        .acquire(&txn, requests.clone())
                        .await
                        .unwrap_or_else(|e| panic!("{requests:?}: {e}"));
                    tokio::task::yield_now().await;
                    txn.commit().await.expect("commit");
                }
            })
        })
        .collect();
    for worker in workers {
        bounded("a stress worker", worker)
            .await
            .expect("no deadlock, no error");
    }
}

/// Large plans (hundreds of rows, many runs of alternating modes: several
/// statements on the MySQL family) over overlapping resources, in random
/// input orders, from several tasks at once: never a deadlock, never an error.
pub async fn large_mixed_plans_never_deadlock(backend: Backend) {
    let fx = Fixture::new(backend, "bigstress", 1000).await;
    let workers: Vec<_> = (0..4)
        .map(|task| {
            let (locker, db) = (fx.locker.clone(), fx.db.clone());
            tokio::spawn(async move {
                let mut rng = Lcg(task as u64 + 100);
                for _ in 0..5 {
                    let requests: Vec<Request> = (0..400)
                        .map(|_| {
                            let target = Target::resource("u", "a", rng.below(600));
                            if rng.below(2) == 0 {
                                target.read()
                            } else {
                                target.write()
                            }
                        })
                        .collect();
                    let txn = db.begin().await.expect("begin");
                    locker
                        .acquire(&txn, requests)
                        .await
                        .unwrap_or_else(|e| panic!("task {task}: {e}"));
                    tokio::task::yield_now().await;
                    txn.commit().await.expect("commit");
                }
            })
        })
        .collect();
    for worker in workers {
        bounded("a large-plan worker", worker)
            .await
            .expect("no deadlock, no error");
    }
}

/// Four resource IDs a < b < c < d with bucket(a) = bucket(d) = X and
/// bucket(b) = bucket(c) = Y ≠ X (REFERENCE.md, flaw 1).
fn colliding_ids(fx: &Fixture) -> [String; 4] {
    let bucket = |id: &str| {
        let request = Target::resource("u", "acc", id).write();
        let plan = fx.locker.plan([&request]).expect("plan");
        let lock = plan.locks().last().copied().expect("a lock");
        assert_eq!(lock.key.level, Level::Resource);
        lock.key.slot
    };
    let names: Vec<String> = (0..200).map(|i| format!("r{i:03}")).collect();
    for a in &names {
        let x = bucket(a);
        let later = |after: &String, want: &dyn Fn(i64) -> bool| {
            names
                .iter()
                .find(|n| *n > after && want(bucket(n)))
                .cloned()
        };
        let Some(b) = later(a, &|k| k != x) else {
            continue;
        };
        let y = bucket(&b);
        let Some(c) = later(&b, &|k| k == y) else {
            continue;
        };
        let Some(d) = later(&c, &|k| k == x) else {
            continue;
        };
        return [a.clone(), b, c, d];
    }
    panic!("no colliding IDs in a two-bucket space");
}

pub async fn tiny_bucket_space_plan_order_prevents_the_id_order_deadlock(backend: Backend) {
    let fx = Fixture::new(backend, "collide", 2).await;
    let [a, b, c, d] = colliding_ids(&fx);
    let w = |id: &str| Target::resource("u", "acc", id).write();

    // The Go way: sort IDs, then lock each: T1 = {a, c}, T2 = {b, d}.
    let t1 = fx.begin().await;
    let t2 = fx.begin().await;
    take(&fx, &t1, &[w(&a)], Wait::Block)
        .await
        .expect("t1 locks a (bucket X)");
    take(&fx, &t2, &[w(&b)], Wait::Block)
        .await
        .expect("t2 locks b (bucket Y)");
    let t1_id = fx.connection_id(&t1).await;
    let locker = fx.locker.clone();
    let wc = w(&c);
    let first = tokio::spawn(async move { (locker.acquire(&t1, [wc]).await.map(|_| ()), t1) });
    fx.wait_until_blocked(t1_id).await; // t1 wants c: bucket Y, held by t2
    let second = bounded("t2 locking d", fx.locker.acquire(&t2, [w(&d)]))
        .await
        .map(|_| ());
    drop(t2);
    let (first, survivor) = bounded("t1 locking c", first).await.expect("task");
    let deadlocks = [&first, &second]
        .iter()
        .filter(|o| o.as_ref().is_err_and(|e| e.kind() == ErrorKind::Deadlock))
        .count();
    assert_eq!(
        deadlocks, 1,
        "ID order must deadlock: {first:?} / {second:?}"
    );
    survivor.rollback().await.expect("rollback");

    // The planned way: each transaction's set in one call, locked by bucket.
    let t1 = fx.begin().await;
    let t2 = fx.begin().await;
    take(&fx, &t1, &[w(&a), w(&c)], Wait::Block)
        .await
        .expect("t1 locks X then Y");
    let t2_id = fx.connection_id(&t2).await;
    let locker = fx.locker.clone();
    let set2 = [w(&b), w(&d)];
    let waiter = tokio::spawn(async move { (locker.acquire(&t2, set2).await.map(|_| ()), t2) });
    fx.wait_until_blocked(t2_id).await; // t2 waits on X, holding nothing of level 2
    t1.commit().await.expect("commit");
    let (outcome, t2) = bounded("t2", waiter).await.expect("task");
    outcome.expect("no deadlock in plan order");
    t2.commit().await.expect("commit");

    // And many rounds of both sets in reversed input orders.
    let workers: Vec<_> = [
        [a.clone(), c.clone()],
        [d.clone(), b.clone()],
        [c, a],
        [b, d],
    ]
    .into_iter()
    .map(|ids| {
        let (locker, db) = (fx.locker.clone(), fx.db.clone());
        tokio::spawn(async move {
            for _ in 0..40 {
                let txn = db.begin().await.expect("begin");
                let set: Vec<_> = ids
                    .iter()
                    .map(|id| Target::resource("u", "acc", id.as_str()).write())
                    .collect();
                locker.acquire(&txn, set).await.expect("never a deadlock");
                txn.commit().await.expect("commit");
            }
        })
    })
    .collect();
    for worker in workers {
        bounded("a colliding worker", worker)
            .await
            .expect("no deadlock");
    }
}
