//! The `metrics` an acquisition records, read back with a debugging recorder
//! (SQLite: no server needed).

use hierlock::sea_orm::{ConnectOptions, Database, TransactionTrait};
use hierlock::{Config, Locker, Target, Wait};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::{CompositeKey, MetricKind};

fn labelled(key: &CompositeKey, name: &str, labels: &[(&str, &str)]) -> bool {
    key.key().name() == name
        && labels.iter().all(|(k, v)| {
            key.key()
                .labels()
                .any(|label| label.key() == *k && label.value() == *v)
        })
}

#[test]
fn acquisitions_are_counted_by_level_and_outcome_and_timed() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let path = std::env::temp_dir().join(format!("hierlock-telemetry-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let mut options = ConnectOptions::new(format!("sqlite://{}?mode=rwc", path.display()));
            options.max_connections(2).sqlx_logging(false);
            let db = Database::connect(options).await.expect("sqlite");
            let locker = Locker::connect(&db, Config::default())
                .await
                .expect("locker");
            let r = Target::resource("u1", "a1", "r1").write();
            let holder = db.begin().await.expect("begin");
            locker.acquire(&holder, [r.clone()]).await.expect("locked");
            let other = db.begin().await.expect("begin");
            locker
                .acquire_with(&other, [Target::account("u2", "a2").write()], Wait::NoWait)
                .await
                .expect_err("SQLite's one write lock is held");
        });
    });
    let snapshot = snapshotter.snapshot().into_vec();
    let counter = |labels: &[(&str, &str)]| {
        snapshot
            .iter()
            .find(|(key, ..)| {
                key.kind() == MetricKind::Counter
                    && labelled(key, "hierlock_acquisitions_total", labels)
            })
            .map(|(.., value)| value)
    };
    assert_eq!(
        counter(&[("level", "resource"), ("outcome", "locked")]),
        Some(&DebugValue::Counter(1))
    );
    assert_eq!(
        counter(&[("level", "account"), ("outcome", "would_block")]),
        Some(&DebugValue::Counter(1))
    );
    let timed: usize = snapshot
        .iter()
        .filter(|(key, ..)| {
            key.kind() == MetricKind::Histogram
                && labelled(key, "hierlock_acquisition_seconds", &[])
        })
        .map(|(.., value)| match value {
            DebugValue::Histogram(values) => values.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(timed, 2, "{snapshot:?}");
}
