//! The `bank` example's own code, with hierlock's locks, on every backend:
//! every invariant holds, nothing deadlocks, nothing fails.
//!
//! SQLite needs nothing. The servers are the suite's (see `tests/run`):
//! `HIERLOCK_MARIADB_URL`, `HIERLOCK_MYSQL_URL`, `HIERLOCK_POSTGRES_URL`, with
//! the same defaults. A server that cannot be reached fails its test.
//!
//! Each test works in its own database (MySQL family), schema (PostgreSQL)
//! or file (SQLite), so the tests, the example and the rest of the suite can
//! run at the same time.

use std::path::{Path, PathBuf};

use hierlock_examples::bank::{self, Options, Report};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection};

/// Where this file's tests keep their tables on a server.
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

/// A pool on `base`'s server, in a database or schema of this file's own.
async fn isolated(base: &str, options: &Options) -> DatabaseConnection {
    let admin = Database::connect(base)
        .await
        .unwrap_or_else(|e| panic!("{base} is unreachable (start it or set its URL): {e}"));
    let (statement, url) = if base.starts_with("postgres") {
        let separator = if base.contains('?') { '&' } else { '?' };
        (
            format!("CREATE SCHEMA IF NOT EXISTS {ISOLATED}"),
            format!("{base}{separator}options=-c%20search_path%3D{ISOLATED}"),
        )
    } else {
        let (server, _database) = base.rsplit_once('/').expect("a URL with a database");
        (
            format!("CREATE DATABASE IF NOT EXISTS {ISOLATED}"),
            format!("{server}/{ISOLATED}"),
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
    let db = isolated(&url, &options).await;
    assert_locked_run_is_clean(&run(db, true, &options).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_locks_mysql_keeps_every_invariant() {
    let options = options();
    let url = server_url("HIERLOCK_MYSQL_URL", "mysql://root@127.0.0.1:3307/test");
    let db = isolated(&url, &options).await;
    assert_locked_run_is_clean(&run(db, true, &options).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_locks_postgres_keeps_every_invariant() {
    let options = options();
    let url = server_url(
        "HIERLOCK_POSTGRES_URL",
        "postgres://postgres@127.0.0.1:5432/test",
    );
    let db = isolated(&url, &options).await;
    assert_locked_run_is_clean(&run(db, true, &options).await);
}

/// SQLite is honest even without hierlock: one writer at a time, the others
/// fail with "database is locked" and are retried, so no money is lost
/// (requests may fail for good instead). (On
/// the servers `--no-locks` does lose updates, but how many depends on
/// timing, so no test asserts it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_locks_sqlite_serialises_writers_itself() {
    let options = options();
    let (db, file) = sqlite("unlocked", &options).await;
    let report = run(db, false, &options).await;
    // No money is lost; whether some requests fail for good (busy after
    // every attempt) depends on timing, so that check is not asserted.
    let money_checks: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.name != "every request answered")
        .collect();
    assert!(money_checks.iter().all(|c| c.held), "{report}");
    assert!(report.to_string().contains("WITHOUT locks"), "{report}");
    remove_sqlite(&file);
}
