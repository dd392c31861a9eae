//! Subtree reads (issue 12): multiple-granularity locking built from S and X
//! locks on stripe keys. The full compatibility matrix against an oracle of
//! the MGL rule; stress with real rows, where a subtree read must see no
//! write below it commit; the server's own lock state; and the layouts that
//! are refused.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use hierlock::{
    Access, ErrorKind, KeyKind, Level, LockKey, LockMode, LockPlan, Locker, Request, SubtreeReads,
    Target, TxnState, Wait,
};
use hierlock_tests::{Backend, Fixture, Promise, bounded};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, IsolationLevel, Statement,
    TransactionTrait,
};

use crate::deadlock::Lcg;
use crate::errors::query_i64;
use crate::scale::{advisory_locks_of, bucket_rows_locked, keys};
use crate::support::{holding, take, tree};

/// Stripes per node in the matrix and the exactness checks: two writes below
/// one node falsely conflict with probability 1/8.
const STRIPES: u16 = 8;

fn striped(stripes: u16) -> SubtreeReads {
    SubtreeReads::striped(stripes).expect("a valid stripe count")
}

/// Every node of the tree read, written and read as a subtree: 42 requests.
fn all_requests() -> Vec<Request> {
    tree()
        .into_iter()
        .flat_map(|t| [t.clone().read(), t.clone().write(), t.read_subtree()])
        .collect()
}

/// The MGL rule, from first principles (not from the plan): a write of `n`
/// excludes its whole subtree; a read of `m` needs `m`'s own node unwritten;
/// a subtree read of `m` needs `m`, its ancestors and its subtree unwritten.
/// Reads and subtree reads never exclude each other.
fn mgl_conflict(a: &Request, b: &Request) -> bool {
    use Access::{Read, ReadSubtree, Write};
    let (n, m) = (&a.target, &b.target);
    match (a.access, b.access) {
        (Write, Write) | (Write, ReadSubtree) | (ReadSubtree, Write) => {
            n.contains(m) || m.contains(n)
        }
        (Write, Read) => n.contains(m),
        (Read, Write) => m.contains(n),
        (Read | ReadSubtree, Read | ReadSubtree) => false,
    }
}

/// The keys both plans lock with at least one of them exclusive, with the
/// two modes: where the server must make one transaction wait.
fn contested(a: &LockPlan, b: &LockPlan) -> Vec<(LockKey, LockMode, LockMode)> {
    let held: HashMap<LockKey, LockMode> = a.locks().iter().map(|l| (l.key, l.mode)).collect();
    b.locks()
        .iter()
        .filter_map(|l| held.get(&l.key).map(|&mode| (l.key, mode, l.mode)))
        .filter(|&(_, x, y)| x == LockMode::Exclusive || y == LockMode::Exclusive)
        .collect()
}

/// The oracle assumes distinct nodes and distinct stripes lock distinct
/// keys: check these IDs do not collide in the fixture's key space.
fn assert_no_key_collides(locker: &Locker) {
    let keyspace = locker.keyspace();
    let nodes = tree();
    let node_keys: BTreeSet<LockKey> = nodes
        .iter()
        .map(|t| keyspace.key_of(t.level(), t.path()))
        .collect();
    assert_eq!(
        node_keys.len(),
        nodes.len(),
        "the matrix's nodes must not collide"
    );
    let inner: Vec<&Target> = nodes
        .iter()
        .filter(|t| t.level() != Level::Resource)
        .collect();
    let stripe_keys: BTreeSet<LockKey> = inner
        .iter()
        .flat_map(|t| (0..STRIPES).map(|s| keyspace.stripe_key_of(t.level(), t.path(), s)))
        .collect();
    assert_eq!(
        stripe_keys.len(),
        inner.len() * usize::from(STRIPES),
        "the matrix's stripes must not collide"
    );
}

/// Every ordered pair of the 42 requests: hold one, try the other without
/// waiting. The server blocks exactly the pairs whose plans contest a key;
/// every MGL conflict is such a pair (no exclusion is ever lost), and every
/// other such pair is two writes that picked the same stripe of a common
/// ancestor (the documented 1/K false conflicts, counted and printed).
pub async fn subtree_matrix_matches_the_mgl_oracle(backend: Backend) {
    let fx = Fixture::with_subtree_reads(backend, "stmatrix", 20_000, striped(STRIPES)).await;
    let requests = all_requests();
    assert_eq!(requests.len(), 42);
    assert_no_key_collides(&fx.locker);
    let plans: Vec<LockPlan> = requests
        .iter()
        .map(|r| fx.locker.plan([r]).expect("plan"))
        .collect();

    let (mut blocked_pairs, mut mgl_pairs, mut false_conflicts) = (0, 0, 0);
    // Pairs of compatible writes below one user: those that may meet on a stripe.
    let mut sibling_writes = 0;
    let mut mismatches = Vec::new();
    for (a, plan_a) in requests.iter().zip(&plans) {
        // Holding `a` once for all 42 tries keeps the matrix quick.
        let t1 = holding(&fx, std::slice::from_ref(a)).await;
        for (b, plan_b) in requests.iter().zip(&plans) {
            let t2 = fx.begin().await;
            let blocked = match take(&fx, &t2, std::slice::from_ref(b), Wait::NoWait).await {
                Ok(_) => false,
                Err(e) if e.kind() == ErrorKind::WouldBlock => true,
                Err(e) => panic!("{a} held, {b} wanted: {e}"),
            };
            t2.rollback().await.expect("rollback");
            blocked_pairs += usize::from(blocked);

            let contested = contested(plan_a, plan_b);
            let planned = !contested.is_empty();
            let expected = match backend.promise() {
                Promise::Coarse => true,
                Promise::Exact => planned,
            };
            if blocked != expected {
                mismatches.push(format!(
                    "{a} held, {b} wanted: blocked = {blocked}, plans contest {contested:?}"
                ));
            }
            let mgl = mgl_conflict(a, b);
            sibling_writes += usize::from(
                !mgl && a.access == Access::Write
                    && b.access == Access::Write
                    && a.target.user_id() == b.target.user_id(),
            );
            mgl_pairs += usize::from(mgl);
            if mgl && !planned {
                mismatches.push(format!(
                    "{a} and {b}: the MGL rule excludes, the plans do not"
                ));
            }
            if planned && !mgl {
                let stripe_collision = a.access == Access::Write
                    && b.access == Access::Write
                    && contested.iter().all(|&(key, x, y)| {
                        key.kind == KeyKind::Stripe
                            && x == LockMode::Exclusive
                            && y == LockMode::Exclusive
                    });
                if stripe_collision {
                    false_conflicts += 1;
                } else {
                    mismatches.push(format!(
                        "{a} and {b}: the plans contest {contested:?}, the MGL rule does not"
                    ));
                }
            }
        }
        t1.rollback().await.expect("rollback");
    }
    println!(
        "{backend:?}: subtree matrix, {blocked_pairs} of 1764 pairs blocked, {mgl_pairs} by the MGL \
         rule, {false_conflicts} false conflicts (of {sibling_writes} pairs of compatible writes \
         below one user, on one of {STRIPES} stripes)"
    );
    assert!(
        mismatches.is_empty(),
        "{} of 1764 pairs disagree:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    // Both outcomes occur, and false conflicts are the exception.
    assert!(
        mgl_pairs > 0 && mgl_pairs < 1764,
        "{mgl_pairs} MGL conflicts"
    );
    assert!(
        false_conflicts < mgl_pairs / 4,
        "{false_conflicts} false conflicts"
    );
    if backend.promise() == Promise::Exact {
        assert_eq!(blocked_pairs, mgl_pairs + false_conflicts);
    }
}

// ---- stress, with real rows ----------------------------------------------

/// 2 users × 2 accounts × 3 resources, each a row of the stress table.
const USERS: usize = 2;
const ACCOUNTS: usize = 2;
const RESOURCES: usize = 3;
const OPENING_BALANCE: i64 = 100;

/// The stress table's row of resource (u, a, r).
fn row_id(u: usize, a: usize, r: usize) -> usize {
    (u * ACCOUNTS + a) * RESOURCES + r
}

/// The rows below a node: all of a user's, or one account's.
fn rows_below(u: usize, a: Option<usize>) -> Vec<usize> {
    let accounts = a.map_or(0..ACCOUNTS, |a| a..a + 1);
    accounts
        .flat_map(|a| (0..RESOURCES).map(move |r| row_id(u, a, r)))
        .collect()
}

/// Any node of the stress tree, read, written or read as a subtree.
fn random_request(rng: &mut Lcg) -> Request {
    let (u, a, r) = (rng.below(USERS), rng.below(ACCOUNTS), rng.below(RESOURCES));
    let target = match rng.below(3) {
        0 => Target::user(u),
        1 => Target::account(u, a),
        _ => Target::resource(u, a, r),
    };
    match rng.below(3) {
        0 => target.read(),
        1 => target.read_subtree(),
        _ => target.write(),
    }
}

/// The stress table, created afresh with every balance at the opening balance.
struct Ledger {
    table: String,
    backend: DbBackend,
}

impl Ledger {
    async fn create(fx: &Fixture) -> Ledger {
        let table = format!("hl_rows_{}", fx.config.table());
        fx.exec(&format!("DROP TABLE IF EXISTS {table}")).await;
        fx.exec(&format!(
            "CREATE TABLE {table} (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL)"
        ))
        .await;
        let rows: Vec<String> = (0..USERS * ACCOUNTS * RESOURCES)
            .map(|id| format!("({id}, {OPENING_BALANCE})"))
            .collect();
        fx.exec(&format!(
            "INSERT INTO {table} (id, balance) VALUES {}",
            rows.join(", ")
        ))
        .await;
        Ledger {
            table,
            backend: fx.db.get_database_backend(),
        }
    }

    /// One row's balance, in a statement of its own.
    async fn balance(&self, txn: &DatabaseTransaction, id: usize) -> i64 {
        let sql = format!("SELECT balance FROM {} WHERE id = {id}", self.table);
        let row = txn
            .query_one_raw(Statement::from_string(self.backend, sql))
            .await
            .expect("read a balance")
            .expect("the row");
        row.try_get("", "balance").expect("balance")
    }

    async fn set(&self, txn: &DatabaseTransaction, id: usize, balance: i64) {
        let sql = format!(
            "UPDATE {} SET balance = {balance} WHERE id = {id}",
            self.table
        );
        txn.execute_raw(Statement::from_string(self.backend, sql))
            .await
            .expect("write a balance");
    }

    /// The balances of `ids`, one statement each with a yield in between, so
    /// that a write committed meanwhile would show.
    async fn read_one_by_one(&self, txn: &DatabaseTransaction, ids: &[usize]) -> Vec<i64> {
        let mut balances = Vec::with_capacity(ids.len());
        for &id in ids {
            balances.push(self.balance(txn, id).await);
            tokio::task::yield_now().await;
        }
        balances
    }
}

/// A transaction in which each statement sees what is committed when it runs
/// (READ COMMITTED: under the MySQL family's default REPEATABLE READ, a
/// snapshot would hide the writes a subtree read must exclude).
async fn begin_read_committed(db: &DatabaseConnection) -> DatabaseTransaction {
    let isolation = match db.get_database_backend() {
        DbBackend::Sqlite => None,
        _ => Some(IsolationLevel::ReadCommitted),
    };
    db.begin_with_config(isolation, None).await.expect("begin")
}

/// Many tasks, each round one of: a transfer between two resources of one
/// account (under their write locks, or the account's, or the user's); a
/// subtree read of an account or a user that reads its balances one by one,
/// twice; or other requests alone. Every call adds random requests of every
/// access at every level. Never a deadlock or an error; every subtree read
/// sees the same balances twice, summing to its node's opening total; and
/// the total is unchanged at the end.
async fn stress_with_subtree_reads(fx: &Fixture, seed: u64) {
    let ledger = std::sync::Arc::new(Ledger::create(fx).await);
    let (tasks, rounds) = if fx.backend == Backend::Sqlite {
        (4, 15)
    } else {
        (8, 30)
    };
    let workers: Vec<_> = (0..tasks)
        .map(|task| {
            let (locker, db, ledger) = (fx.locker.clone(), fx.db.clone(), ledger.clone());
            tokio::spawn(async move {
                let mut rng = Lcg(seed + task);
                let (mut transfers, mut subtree_reads) = (0, 0);
                for _ in 0..rounds {
                    let mut requests: Vec<Request> = (0..rng.below(3))
                        .map(|_| random_request(&mut rng))
                        .collect();
                    let (u, a) = (rng.below(USERS), rng.below(ACCOUNTS));
                    let txn = begin_read_committed(&db).await;
                    match rng.below(10) {
                        0..=4 => {
                            let from = rng.below(RESOURCES);
                            let to = (from + 1 + rng.below(RESOURCES - 1)) % RESOURCES;
                            match rng.below(8) {
                                0 => requests.push(Target::user(u).write()),
                                1 | 2 => requests.push(Target::account(u, a).write()),
                                _ => requests.extend([
                                    Target::resource(u, a, from).write(),
                                    Target::resource(u, a, to).write(),
                                ]),
                            }
                            locker
                                .acquire(&txn, requests.clone())
                                .await
                                .unwrap_or_else(|e| panic!("{requests:?}: {e}"));
                            let (from, to) = (row_id(u, a, from), row_id(u, a, to));
                            let amount = 1 + rng.below(10) as i64;
                            let (from_balance, to_balance) = (
                                ledger.balance(&txn, from).await,
                                ledger.balance(&txn, to).await,
                            );
                            ledger.set(&txn, from, from_balance - amount).await;
                            tokio::task::yield_now().await;
                            ledger.set(&txn, to, to_balance + amount).await;
                            transfers += 1;
                        }
                        5..=7 => {
                            let (node, below) = if rng.below(3) == 0 {
                                (Target::user(u), rows_below(u, None))
                            } else {
                                (Target::account(u, a), rows_below(u, Some(a)))
                            };
                            requests.push(node.clone().read_subtree());
                            locker
                                .acquire(&txn, requests.clone())
                                .await
                                .unwrap_or_else(|e| panic!("{requests:?}: {e}"));
                            let first = ledger.read_one_by_one(&txn, &below).await;
                            tokio::time::sleep(Duration::from_millis(1)).await;
                            let second = ledger.read_one_by_one(&txn, &below).await;
                            assert_eq!(
                                first, second,
                                "a write below {node} committed during its subtree read"
                            );
                            assert_eq!(
                                first.iter().sum::<i64>(),
                                OPENING_BALANCE * below.len() as i64,
                                "{node}: a subtree read saw part of a transfer"
                            );
                            subtree_reads += 1;
                        }
                        _ => {
                            requests.push(random_request(&mut rng));
                            locker
                                .acquire(&txn, requests.clone())
                                .await
                                .unwrap_or_else(|e| panic!("{requests:?}: {e}"));
                            tokio::task::yield_now().await;
                        }
                    }
                    txn.commit().await.expect("commit");
                }
                (transfers, subtree_reads)
            })
        })
        .collect();
    let (mut transfers, mut subtree_reads) = (0, 0);
    for worker in workers {
        let (t, s) = bounded("a stress worker", worker)
            .await
            .expect("no deadlock, no error, no write seen by a subtree read");
        transfers += t;
        subtree_reads += s;
    }
    assert!(
        transfers > 0 && subtree_reads > 0,
        "{transfers} / {subtree_reads}"
    );
    let txn = begin_read_committed(&fx.db).await;
    let all: Vec<usize> = (0..USERS * ACCOUNTS * RESOURCES).collect();
    let balances = ledger.read_one_by_one(&txn, &all).await;
    for chunk in balances.chunks(RESOURCES) {
        assert_eq!(
            chunk.iter().sum::<i64>(),
            OPENING_BALANCE * RESOURCES as i64
        );
    }
    txn.rollback().await.expect("rollback");
    fx.exec(&format!("DROP TABLE {}", ledger.table)).await;
}

pub async fn subtree_stress_never_deadlocks_and_subtree_reads_see_no_write(backend: Backend) {
    // Few stripes, so that writers below one node often meet on one.
    let fx = Fixture::with_subtree_reads(backend, "ststress", 1000, striped(2)).await;
    stress_with_subtree_reads(&fx, 1).await;
}

/// Two buckets per level: nodes of every level share rows, and so do the
/// stripes of different nodes; the plan order still prevents every deadlock.
pub async fn subtree_stress_in_a_tiny_bucket_space(backend: Backend) {
    let fx = Fixture::with_subtree_reads(backend, "sttiny", 2, striped(4)).await;
    let keyspace = fx.locker.keyspace();
    let (a1, a2) = (Target::account("0", "0"), Target::account("1", "1"));
    let shared_stripe = (0..4).any(|s| {
        (0..4).any(|t| {
            keyspace.stripe_key_of(Level::Account, a1.path(), s)
                == keyspace.stripe_key_of(Level::Account, a2.path(), t)
        })
    });
    assert!(shared_stripe, "stripes of different accounts collide");
    stress_with_subtree_reads(&fx, 100).await;
}

// ---- the server's own lock state -------------------------------------------

/// A resource write (an exclusive stripe per ancestor), an account's subtree
/// read (all its stripes, shared), and both in one call, under REPEATABLE
/// READ and READ COMMITTED: the rows (or advisory keys) locked, and those
/// locked exclusively, are exactly the plan's, stripes included.
pub async fn subtree_plans_lock_exactly_their_planned_rows(backend: Backend) {
    let space = 64;
    let fx = Fixture::with_subtree_reads(backend, "stexact", space, striped(STRIPES)).await;
    let write = Target::resource("u", "a", "r").write();
    let subtree_read = Target::account("u", "b").read_subtree();
    for isolation in [
        IsolationLevel::RepeatableRead,
        IsolationLevel::ReadCommitted,
    ] {
        for requests in [
            vec![write.clone()],
            vec![subtree_read.clone()],
            vec![write.clone(), subtree_read.clone()],
        ] {
            let plan = fx.locker.plan(&requests).expect("plan");
            let stripes = |mode| {
                plan.locks()
                    .iter()
                    .filter(|l| l.key.kind == KeyKind::Stripe && l.mode == mode)
                    .count()
            };
            // One exclusive stripe per ancestor of the written resource, and
            // every stripe of the account read as a subtree, shared.
            let has = |wanted: &Request| usize::from(requests.contains(wanted));
            assert_eq!(stripes(LockMode::Exclusive), 2 * has(&write), "{plan:?}");
            assert_eq!(
                stripes(LockMode::Shared),
                usize::from(STRIPES) * has(&subtree_read),
                "{plan:?}"
            );
            let holder = fx
                .db
                .begin_with_config(Some(isolation), None)
                .await
                .expect("begin");
            take(&fx, &holder, &requests, Wait::Block)
                .await
                .expect("uncontended");
            let (locked, exclusive) = if backend == Backend::Postgres {
                advisory_locks_of(&fx, &holder, &plan).await
            } else {
                bucket_rows_locked(&fx, i64::from(space)).await
            };
            assert_eq!(
                locked,
                keys(&plan, None),
                "{isolation:?}, {requests:?}: rows locked"
            );
            assert_eq!(
                exclusive,
                keys(&plan, Some(LockMode::Exclusive)),
                "{isolation:?}, {requests:?}: rows locked exclusively"
            );
            holder.rollback().await.expect("rollback");
        }
    }
}

// ---- refusals -------------------------------------------------------------

/// In the seed's layout a subtree read cannot be honoured: `Misuse`, before
/// any SQL (on PostgreSQL a failed statement would abort the transaction).
pub async fn subtree_read_without_stripes_is_misuse_before_any_sql(backend: Backend) {
    let fx = Fixture::new(backend, "stoff", 1000).await;
    let txn = fx.begin().await;
    for node in [Target::user("u"), Target::account("u", "a")] {
        let requests = [Target::resource("u", "a", "r").write(), node.read_subtree()];
        let err = take(&fx, &txn, &requests, Wait::Block)
            .await
            .expect_err("no stripes");
        assert_eq!(err.kind(), ErrorKind::Misuse, "{err}");
        assert_eq!(err.txn_state(), TxnState::Unchanged);
        assert!(err.to_string().contains("with_subtree_reads"), "{err}");
    }
    assert_eq!(query_i64(&txn, "SELECT 1").await, 1);
    // Nothing was locked: another transaction writes the user at once.
    let other = fx.begin().await;
    take(&fx, &other, &[Target::user("u").write()], Wait::NoWait)
        .await
        .expect("nothing held");
}

/// Every service sharing a table must use its layout: a table without
/// stripes and a config with them, the reverse, and another stripe count
/// are each refused by `Locker::connect`.
pub async fn subtree_layout_mismatch_is_refused(backend: Backend) {
    let off = Fixture::new(backend, "stlayout_off", 1000).await;
    let on = Fixture::with_subtree_reads(backend, "stlayout_on", 1000, striped(STRIPES)).await;
    let cases = [
        (&off, striped(STRIPES), "+stripes-8"),
        (&on, SubtreeReads::Off, "+stripes-8"),
        (&on, striped(16), "+stripes-16"),
    ];
    for (fx, layout, named) in cases {
        let config = fx.config.clone().with_subtree_reads(layout);
        let err = Locker::connect(&fx.db, config)
            .await
            .expect_err("another layout");
        assert_eq!(err.kind(), ErrorKind::ConfigMismatch, "{layout:?}: {err}");
        assert!(err.to_string().contains(named), "{layout:?}: {err}");
    }
    // The layout each table was provisioned with is accepted.
    for fx in [&off, &on] {
        Locker::connect(&fx.db, fx.config.clone())
            .await
            .expect("the table's own layout");
    }
}

#[test]
fn the_mgl_oracle_follows_the_issue() {
    let account = || Target::account("u", "a");
    let resource = |r: &str| Target::resource("u", "a", r);
    // A subtree read and every write in its subtree, itself and its ancestors.
    for written in [resource("r"), account(), Target::user("u")] {
        assert!(mgl_conflict(
            &account().read_subtree(),
            &written.clone().write()
        ));
        assert!(mgl_conflict(&written.write(), &account().read_subtree()));
    }
    // Not a write elsewhere, nor a read of any kind.
    assert!(!mgl_conflict(
        &account().read_subtree(),
        &Target::resource("u", "b", "r").write()
    ));
    assert!(!mgl_conflict(
        &account().read_subtree(),
        &account().read_subtree()
    ));
    assert!(!mgl_conflict(
        &account().read_subtree(),
        &resource("r").read()
    ));
    // A plain read of the account does not exclude writes below it.
    assert!(!mgl_conflict(&account().read(), &resource("r").write()));
    assert!(mgl_conflict(&account().read(), &account().write()));
    // Writes: one contains the other, siblings coexist.
    assert!(mgl_conflict(&account().write(), &resource("r").write()));
    assert!(!mgl_conflict(
        &resource("r").write(),
        &resource("s").write()
    ));
}
