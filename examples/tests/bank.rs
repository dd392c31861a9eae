//! The `bank` example's own code on every backend: with hierlock's locks
//! every invariant holds, nothing deadlocks, nothing fails; without them the
//! same workload goes wrong (lost updates on the servers, refused writers on
//! SQLite); and the hierarchy lets resources of one account be held at once
//! while the account excludes them.
//!
//! SQLite needs nothing. The servers are the suite's (see `tests/run`):
//! `HIERLOCK_MARIADB_URL`, `HIERLOCK_MYSQL_URL`, `HIERLOCK_POSTGRES_URL`, with
//! the same defaults. A server that cannot be reached fails its test.
//!
//! Each test works in its own database (MySQL family), schema (PostgreSQL)
//! or file (SQLite), so the tests, the example and the rest of the suite can
//! run at the same time.

use std::path::{Path, PathBuf};

use hierlock::PostgresLocks;
use hierlock_examples::bank::compare::{self, Comparison};
use hierlock_examples::bank::{self, Options, Report, hierarchy};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection};

/// Where this file's tests keep their tables on a server (one per test,
/// suffixed).
const ISOLATED: &str = "hierlock_bank_test";

fn options() -> Options {
    Options {
        ops: 240,
        ..Options::default()
    }
}

fn server_url(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_owned())
}

/// A pool on `base`'s server, in a database or schema of the test's own.
async fn isolated(base: &str, test: &str, options: &Options) -> DatabaseConnection {
    let admin = Database::connect(base)
        .await
        .unwrap_or_else(|e| panic!("{base} is unreachable (start it or set its URL): {e}"));
    let isolated = format!("{ISOLATED}_{test}");
    let (statement, url) = if base.starts_with("postgres") {
        let separator = if base.contains('?') { '&' } else { '?' };
        (
            format!("CREATE SCHEMA IF NOT EXISTS {isolated}"),
            format!("{base}{separator}options=-c%20search_path%3D{isolated}"),
        )
    } else {
        let (server, _database) = base.rsplit_once('/').expect("a URL with a database");
        (
            format!("CREATE DATABASE IF NOT EXISTS {isolated}"),
            format!("{server}/{isolated}"),
        )
    };
    admin
        .execute_unprepared(&statement)
        .await
        .expect("creating the test's schema");
    admin.close().await.expect("closing");
    bank::connect(&url, options).await.expect("connecting")
}

/// A pool on a new SQLite file of this test's own, and the file's path.
async fn sqlite(name: &str, options: &Options) -> (DatabaseConnection, PathBuf) {
    let file = std::env::temp_dir().join(format!(
        "hierlock-bank-test-{name}-{}.db",
        std::process::id()
    ));
    remove_sqlite(&file);
    let url = format!("sqlite://{}?mode=rwc", file.display());
    (
        bank::connect(&url, options).await.expect("connecting"),
        file,
    )
}

/// Remove an SQLite file and its write-ahead log.
fn remove_sqlite(file: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut path = file.as_os_str().to_owned();
        path.push(suffix);
        let _ = std::fs::remove_file(path);
    }
}

async fn run(db: DatabaseConnection, locked: bool, options: &Options) -> Report {
    let locker = if locked {
        Some(bank::locker(&db).await.expect("making the locker"))
    } else {
        None
    };
    let report = bank::run(&db, locker, options).await.expect("the run");
    println!("{report}");
    let t = &report.tally;
    let declined: u64 = t.declined.values().sum();
    assert_eq!(
        t.committed + declined + t.failed,
        t.transactions,
        "every transaction is counted once"
    );
    assert_eq!(t.ops.values().sum::<u64>(), options.ops as u64);
    db.close().await.expect("closing");
    report
}

/// What the example promises with locks.
fn assert_locked_run_is_clean(report: &Report) {
    assert!(report.invariants_held(), "{report}");
    assert_eq!(report.tally.deadlocks, 0, "{report}");
    assert_eq!(report.tally.failed, 0, "{report}");
    assert!(
        report.tally.double_submits > 0,
        "the run exercised seed 004"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_locks_sqlite_keeps_every_invariant() {
    let options = options();
    let (db, file) = sqlite("locked", &options).await;
    assert_locked_run_is_clean(&run(db, true, &options).await);
    remove_sqlite(&file);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_locks_mariadb_keeps_every_invariant() {
    let options = options();
    let url = server_url("HIERLOCK_MARIADB_URL", "mysql://root@127.0.0.1:3306/test");
    let db = isolated(&url, "locked", &options).await;
    assert_locked_run_is_clean(&run(db, true, &options).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_locks_mysql_keeps_every_invariant() {
    let options = options();
    let url = server_url("HIERLOCK_MYSQL_URL", "mysql://root@127.0.0.1:3307/test");
    let db = isolated(&url, "locked", &options).await;
    assert_locked_run_is_clean(&run(db, true, &options).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_locks_postgres_keeps_every_invariant() {
    let options = options();
    let url = server_url(
        "HIERLOCK_POSTGRES_URL",
        "postgres://postgres@127.0.0.1:5432/test",
    );
    let db = isolated(&url, "locked", &options).await;
    assert_locked_run_is_clean(&run(db, true, &options).await);
}

/// The example's default output, compared: `db` runs the tests' workload
/// (the example's, shorter) without locks and with a locker of its own advisory namespace (so that
/// parallel tests on one PostgreSQL database do not share locks).
async fn compare(db: DatabaseConnection) -> Comparison {
    let config = bank::config()
        .expect("the example's configuration")
        .with_postgres_locks(PostgresLocks::Advisory { namespace: 0xBA2C });
    let locker = bank::locker_with(&db, config)
        .await
        .expect("making the locker");
    let comparison = compare::compare(&db, locker, &options(), hierarchy::Options::default())
        .await
        .expect("the comparison");
    println!("{comparison}");
    db.close().await.expect("closing");
    comparison
}

/// With hierlock nothing goes wrong, and the hierarchy holds: an account
/// writer never alongside a resource writer, account writers one at a time.
fn assert_locked_side_is_clean(comparison: &Comparison) {
    assert!(
        comparison.locked_anomalies().is_empty(),
        "{:?}\n{comparison}",
        comparison.locked_anomalies()
    );
    assert!(comparison.locked.invariants_held(), "{comparison}");
    let h = &comparison.hierarchy;
    assert_eq!(h.mixed_overlaps, 0, "{comparison}");
    assert_eq!(h.account.max_at_once, 1, "{comparison}");
}

/// On a server, without locks the same code loses updates (an invariant
/// breaks: that is the anomaly, not merely retried conflicts; the double
/// submits alone make it all but certain), and
/// resources of one account are held at once with hierlock.
fn assert_servers_contrast(comparison: &Comparison) {
    assert!(!comparison.unlocked.invariants_held(), "{comparison}");
    assert_locked_side_is_clean(comparison);
    assert!(comparison.hierarchy.exact, "{comparison}");
    assert!(
        comparison.hierarchy.resources.max_at_once >= 2,
        "resources of one account were never held at once:\n{comparison}"
    );
}

/// SQLite lets one writer in at a time: without locks the read-then-write
/// race ends in `database is locked` failures, with hierlock in none; and
/// everything, resources included, is held one at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn compare_sqlite_fails_writers_without_locks_and_none_with() {
    let options = options();
    let (db, file) = sqlite("compare", &options).await;
    let comparison = compare(db).await;
    let refused: u64 = comparison
        .unlocked
        .tally
        .errors
        .iter()
        .filter(|(label, _)| label.starts_with("database is locked"))
        .map(|(_, n)| n)
        .sum();
    assert!(refused > 0, "{comparison}");
    assert!(!comparison.unlocked_anomalies().is_empty(), "{comparison}");
    assert!(
        comparison
            .unlocked
            .checks
            .iter()
            .filter(|c| c.name != "every request answered")
            .all(|c| c.held),
        "SQLite serialises writers, so no update is lost:\n{comparison}"
    );
    assert_locked_side_is_clean(&comparison);
    assert!(!comparison.hierarchy.exact);
    assert_eq!(
        comparison.hierarchy.resources.max_at_once, 1,
        "{comparison}"
    );
    remove_sqlite(&file);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn compare_mariadb_loses_updates_without_locks_and_none_with() {
    let url = server_url("HIERLOCK_MARIADB_URL", "mysql://root@127.0.0.1:3306/test");
    let db = isolated(&url, "compare", &options()).await;
    assert_servers_contrast(&compare(db).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn compare_mysql_loses_updates_without_locks_and_none_with() {
    let url = server_url("HIERLOCK_MYSQL_URL", "mysql://root@127.0.0.1:3307/test");
    let db = isolated(&url, "compare", &options()).await;
    assert_servers_contrast(&compare(db).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn compare_postgres_loses_updates_without_locks_and_none_with() {
    let url = server_url(
        "HIERLOCK_POSTGRES_URL",
        "postgres://postgres@127.0.0.1:5432/test",
    );
    let db = isolated(&url, "compare", &options()).await;
    assert_servers_contrast(&compare(db).await);
}
