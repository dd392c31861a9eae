//! No window with two leaders granting a lock: one grant loop per member,
//! each taking the same write lock, writing a row under it and committing,
//! while the leader fails (`kill -9`, or cut from etcd). A loop keeps the
//! `Locker` it got (the old leader's goes on being used after its
//! demotion); the replicas' loops are refused until Patroni promotes one.
//! Counted per trial: transactions on two members that both committed a
//! write under the lock with overlapping hold times (must be 0), the time
//! between the old leader's last such commit and the new leader's first
//! acquisition (must be positive), and the rows the old leader committed
//! under the lock that the new leader does not have (lost writes: possible
//! with asynchronous replication, not with `synchronous_mode: true`).
//!
//! The suite runs one trial of each kind; `cargo test -p hierlock-tests
//! --test patroni -- --ignored --nocapture` runs the study (docs/topologies.md).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hierlock::sea_orm::{ConnectionTrait, DbBackend, Statement, TransactionTrait};
use hierlock::{Config, Locker, Target, Wait};

use crate::failover::Failure;
use crate::patroni::{self, Node, Restore};

const TABLE: &str = "hl_pat_writes";

/// A transaction that committed a row under the lock.
#[derive(Clone, Copy, Debug)]
struct Grant {
    member: usize,
    /// Before its acquisition was sent.
    asked: Instant,
    /// After its COMMIT answered.
    committed: Instant,
    seq: i64,
}

#[derive(Debug, Default)]
pub struct Outcome {
    /// Pairs of grants on two members whose hold times overlap.
    pub overlaps: usize,
    /// The old leader's last commit to the new leader's first acquisition
    /// (negative: the new leader granted first).
    pub gap_ms: i128,
    /// The old leader's committed rows missing on the new leader.
    pub lost: usize,
    /// The old leader's commits after the failure began.
    pub old_after_failure: usize,
    /// The old leader's last commit, after the failure began.
    pub old_last_ms: i128,
    /// The new leader's first acquisition, after the failure began.
    pub new_first_ms: i128,
}

/// One member's loop until `stop`: connect a locker (refused on a replica),
/// then take the lock, write a row, commit, again and again.
async fn grant_loop(node: Node, config: Config, stop: Arc<AtomicBool>) -> Vec<Grant> {
    let r = Target::resource("u1", "a1", "r1").write();
    let mut grants = Vec::new();
    let mut locker: Option<Locker> = None;
    let mut seq = 0i64;
    while !stop.load(Ordering::Relaxed) {
        let Some(l) = &locker else {
            if let Ok(Ok(l)) =
                tokio::time::timeout(Duration::from_secs(2), node.locker(&config)).await
            {
                locker = Some(l);
            } else {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            continue;
        };
        seq += 1;
        let asked = Instant::now();
        let one = async {
            let txn = node.db.begin().await?;
            l.acquire_with(&txn, [r.clone()], Wait::Timeout(Duration::from_secs(1)))
                .await
                .map_err(|e| sea_orm::DbErr::Custom(e.to_string()))?;
            txn.execute_raw(Statement::from_string(
                DbBackend::Postgres,
                format!("INSERT INTO {TABLE} VALUES ({}, {seq})", node.number),
            ))
            .await?;
            tokio::time::sleep(Duration::from_millis(10)).await;
            txn.commit().await
        };
        match tokio::time::timeout(Duration::from_secs(3), one).await {
            Ok(Ok(())) => grants.push(Grant {
                member: node.number,
                asked,
                committed: Instant::now(),
                seq,
            }),
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    grants
}

/// One trial: the leader fails under the three loops.
/// With `stall`, the replicas' WAL receivers are stopped for 500 ms before
/// the failure (and resumed right after it): replication lag, on demand.
pub async fn trial(failure: Failure, sync: bool, stall: bool, namespace: u16) -> Outcome {
    let restore = Restore;
    if sync {
        patroni::run(&["sync", "on"]);
    }
    let leader = Node::leader().await;
    let config = patroni::advisory(namespace);
    if sync {
        // `hierlock status` sees the synchronous standby, and advises nothing.
        let status = hierlock_migration::status(&leader.db, &config)
            .await
            .expect("status on the leader");
        assert_eq!(
            status.replication,
            Some(hierlock_migration::Replication {
                standbys: 2,
                synchronous: Some(1)
            }),
            "{status}"
        );
        assert!(
            !status.advice.iter().any(|a| a.contains("none synchronous")),
            "{status}"
        );
    }
    leader
        .execute(&format!("DROP TABLE IF EXISTS {TABLE}"))
        .await;
    leader
        .execute(&format!(
            "CREATE TABLE {TABLE} (member INT, seq BIGINT, PRIMARY KEY (member, seq))"
        ))
        .await;
    patroni::caught_up(&leader).await;

    let stop = Arc::new(AtomicBool::new(false));
    let mut loops = Vec::new();
    for number in 1..=3 {
        let node = Node::connect(number).await;
        loops.push(tokio::spawn(grant_loop(node, config.clone(), stop.clone())));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    if stall {
        patroni::run(&["stall"]);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let old = patroni::run(&[failure.command()]);
    let failed = Instant::now();
    if stall {
        patroni::run(&["resume"]);
    }
    assert_eq!(old, leader.number.to_string());

    // Until another member has committed 5 writes under the lock (it
    // records them only at the end: poll its rows).
    let new_leader = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            for number in (1..=3).filter(|&n| n != leader.number) {
                if let Ok(node) = Node::try_connect(number).await {
                    let sql = format!("SELECT count(*) FROM {TABLE} WHERE member = {number}");
                    if node.scalar(&sql).await.unwrap_or(0) >= 5 {
                        return node;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .expect("a new leader granting within 60 s");
    stop.store(true, Ordering::Relaxed);
    let mut grants = Vec::new();
    for l in loops {
        grants.extend(l.await.expect("grant loop"));
    }

    let mut outcome = Outcome::default();
    for (i, a) in grants.iter().enumerate() {
        for b in &grants[i + 1..] {
            if a.member != b.member && a.asked < b.committed && b.asked < a.committed {
                outcome.overlaps += 1;
                eprintln!("OVERLAP: {a:?} and {b:?}");
            }
        }
    }
    let ms = |t: Instant| -> i128 {
        if t >= failed {
            (t - failed).as_millis() as i128
        } else {
            -((failed - t).as_millis() as i128)
        }
    };
    let old_grants: Vec<&Grant> = grants
        .iter()
        .filter(|g| g.member == leader.number)
        .collect();
    let old_last = old_grants
        .iter()
        .map(|g| g.committed)
        .max()
        .expect("the old leader granted");
    let new_first = grants
        .iter()
        .filter(|g| g.member != leader.number)
        .map(|g| g.asked)
        .min()
        .expect("the new leader granted");
    outcome.gap_ms = ms(new_first) - ms(old_last);
    outcome.old_last_ms = ms(old_last);
    outcome.new_first_ms = ms(new_first);
    outcome.old_after_failure = old_grants.iter().filter(|g| g.committed > failed).count();

    // The old leader's acknowledged rows on the new leader.
    let txn = new_leader.db.begin().await.expect("begin");
    let rows = txn
        .query_all_raw(Statement::from_string(
            DbBackend::Postgres,
            format!("SELECT seq FROM {TABLE} WHERE member = {}", leader.number),
        ))
        .await
        .expect("the old leader's rows");
    txn.commit().await.expect("commit");
    let present: std::collections::HashSet<i64> = rows
        .iter()
        .map(|row| row.try_get_by_index::<i64>(0).expect("seq"))
        .collect();
    outcome.lost = old_grants
        .iter()
        .filter(|g| !present.contains(&g.seq))
        .count();
    eprintln!(
        "{failure:?}{}{}: old leader {} ({} commits, {} after the failure, last at {} ms), \
         new leader {} (first acquisition at {} ms): gap {} ms, {} overlaps, {} of the old \
         leader's commits missing on the new leader",
        if stall {
            " after 500 ms of stalled replication"
        } else {
            ""
        },
        if sync { " (synchronous_mode)" } else { "" },
        leader.number,
        old_grants.len(),
        outcome.old_after_failure,
        outcome.old_last_ms,
        new_leader.number,
        outcome.new_first_ms,
        outcome.gap_ms,
        outcome.overlaps,
        outcome.lost
    );
    restore.now();
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_leader_stops_granting_before_the_new_one_starts() {
    let _cluster = patroni::exclusive().await;
    let outcome = trial(Failure::Partition, false, false, 7010).await;
    assert_eq!(outcome.overlaps, 0, "two members granted the lock at once");
    assert!(outcome.gap_ms > 0, "{outcome:?}");
    assert_eq!(outcome.lost, 0, "{outcome:?}");
}

/// Asynchronous replication: what the leader acknowledged and no replica
/// received is lost in a failover, writes made under a lock included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_loses_unreplicated_writes_asynchronously() {
    let _cluster = patroni::exclusive().await;
    let outcome = trial(Failure::Kill, false, true, 7012).await;
    assert_eq!(outcome.overlaps, 0, "two members granted the lock at once");
    assert!(outcome.gap_ms > 0, "{outcome:?}");
    assert!(
        outcome.lost > 0,
        "the writes acknowledged while replication stalled survived: {outcome:?}"
    );
}

/// `synchronous_mode: true`: a COMMIT is acknowledged once a standby has
/// it, and Patroni promotes only that standby: nothing acknowledged is lost,
/// even when replication stalled before the crash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_loses_no_write_in_synchronous_mode() {
    let _cluster = patroni::exclusive().await;
    let outcome = trial(Failure::Kill, true, true, 7011).await;
    assert_eq!(outcome.overlaps, 0, "two members granted the lock at once");
    assert!(outcome.gap_ms > 0, "{outcome:?}");
    assert_eq!(
        outcome.lost, 0,
        "synchronous_mode lost a write: {outcome:?}"
    );
}

/// The study: `HIERLOCK_PATRONI_TRIALS` trials (default 10) of each kind of
/// failure, asynchronous and in `synchronous_mode`, and a crash after
/// 500 ms of stalled replication.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the study behind docs/topologies.md: several minutes"]
async fn study() {
    let _cluster = patroni::exclusive().await;
    let trials: usize = std::env::var("HIERLOCK_PATRONI_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let mut summary = Vec::new();
    for (failure, sync, stall) in [
        (Failure::Kill, false, false),
        (Failure::Kill, true, false),
        (Failure::Partition, false, false),
        (Failure::Partition, true, false),
        (Failure::Kill, false, true),
        (Failure::Kill, true, true),
    ] {
        // `HIERLOCK_PATRONI_STUDY=Partition` (say): only the kinds whose
        // label contains it.
        let label = format!("{failure:?} sync={sync} stall={stall}");
        if let Ok(only) = std::env::var("HIERLOCK_PATRONI_STUDY")
            && !label.contains(&only)
        {
            continue;
        }
        let (mut overlaps, mut lost, mut gaps, mut firsts) = (0, 0, Vec::new(), Vec::new());
        let mut lost_trials = 0;
        for i in 0..trials {
            let o = trial(failure, sync, stall, 7100 + i as u16).await;
            overlaps += o.overlaps;
            lost += o.lost;
            lost_trials += usize::from(o.lost > 0);
            gaps.push(o.gap_ms);
            firsts.push(o.new_first_ms);
        }
        summary.push(format!(
            "{label}: {trials} trials, {overlaps} overlapping \
             grants, {lost} lost writes (in {lost_trials} trials), gap old-last-commit -> \
             new-first-acquisition {:?}..{:?} ms, new leader's first acquisition {:?}..{:?} ms \
             after the failure",
            gaps.iter().min().unwrap(),
            gaps.iter().max().unwrap(),
            firsts.iter().min().unwrap(),
            firsts.iter().max().unwrap()
        ));
    }
    for line in &summary {
        eprintln!("{line}");
    }
}
