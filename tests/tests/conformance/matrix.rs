//! The exhaustive generated matrix: every level, every ID pattern of
//! 2 users × 2 accounts × 2 resources, read and write, in every pair —
//! checked against an oracle that knows only the hierarchy rule.

use hierlock::{Access, ErrorKind, Request, Target, Wait};
use hierlock_tests::{Backend, Fixture, Promise};

use crate::support::{holding, take, tree};

/// Every request of the 2×2×2 tree: 14 nodes, read and write.
fn all_requests() -> Vec<Request> {
    tree()
        .into_iter()
        .flat_map(|t| [t.clone().read(), t.write()])
        .collect()
}

/// The hierarchy rule, from first principles: two requests conflict iff one
/// of them writes a node that is the other's node or one of its ancestors.
/// (A write excludes its whole subtree; reads exclude nothing but writes.)
fn oracle(promise: Promise, a: &Request, b: &Request) -> bool {
    let is_ancestor_or_self = |x: &Request, y: &Request| {
        let (x, y) = (x.target.path(), y.target.path());
        x.len() <= y.len() && x.iter().zip(y).all(|(p, q)| p == q)
    };
    match promise {
        Promise::Coarse => true,
        Promise::Exact => {
            (a.access == Access::Write && is_ancestor_or_self(a, b))
                || (b.access == Access::Write && is_ancestor_or_self(b, a))
        }
    }
}

pub async fn generated_matrix_matches_the_hierarchy_oracle(backend: Backend) {
    let fx = Fixture::new(backend, "matrix", 1000).await;
    assert_eq!(
        fx.locker.is_exact(),
        backend.promise() == Promise::Exact,
        "the declared promise"
    );
    let requests = all_requests();
    assert_eq!(requests.len(), 28);

    // The oracle assumes distinct nodes lock distinct keys: check these IDs
    // do not collide in this bucket space (a collision only adds conflicts).
    let mut keys: Vec<_> = requests
        .iter()
        .filter(|r| r.access == Access::Write)
        .map(|r| {
            *fx.locker
                .plan([r])
                .expect("plan")
                .locks()
                .last()
                .expect("a lock")
        })
        .map(|lock| lock.key)
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 14, "the matrix IDs must not collide");

    let (mut conflicts, mut mismatches) = (0, Vec::new());
    for a in &requests {
        for b in &requests {
            let expected = oracle(backend.promise(), a, b);
            let t1 = holding(&fx, std::slice::from_ref(a)).await;
            let t2 = fx.begin().await;
            let outcome = take(&fx, &t2, std::slice::from_ref(b), Wait::NoWait).await;
            let blocked = match outcome {
                Ok(_) => false,
                Err(e) if e.kind() == ErrorKind::WouldBlock => true,
                Err(e) => panic!("{a} then {b}: {e}"),
            };
            conflicts += usize::from(blocked);
            if blocked != expected {
                mismatches.push(format!(
                    "{a} held, {b} wanted: blocked = {blocked}, oracle = {expected}"
                ));
            }
            t2.rollback().await.expect("rollback");
            t1.rollback().await.expect("rollback");
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of 784 pairs disagree:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    // Sanity: the matrix has both outcomes (for the exact promise).
    if backend.promise() == Promise::Exact {
        assert!(conflicts > 0 && conflicts < 784, "{conflicts} conflicts");
    }
}

#[test]
fn the_oracle_follows_the_seed_scenarios() {
    let p = Promise::Exact;
    let w = |t: Target| t.write();
    // 1) same resource; 2) siblings; 3) account vs resource below; 5) other user.
    assert!(oracle(
        p,
        &w(Target::resource("u", "a", "r")),
        &w(Target::resource("u", "a", "r"))
    ));
    assert!(!oracle(
        p,
        &w(Target::resource("u", "a", "r1")),
        &w(Target::resource("u", "a", "r2"))
    ));
    assert!(oracle(
        p,
        &w(Target::account("u", "a")),
        &w(Target::resource("u", "a", "r"))
    ));
    assert!(!oracle(
        p,
        &w(Target::user("u1")),
        &w(Target::resource("u2", "a", "r"))
    ));
    // Reads share; a read of an inner node does not exclude writers below it.
    assert!(!oracle(
        p,
        &Target::user("u").read(),
        &Target::user("u").read()
    ));
    assert!(!oracle(
        p,
        &Target::account("u", "a").read(),
        &w(Target::resource("u", "a", "r"))
    ));
}
