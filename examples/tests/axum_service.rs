//! The `axum_service` example over real HTTP: the service listens on
//! 127.0.0.1:0, hyper's client sends it concurrent deposits and transfers,
//! and every balance must come out exactly as the answered requests say;
//! a lock held elsewhere makes a request answer 503 with `Retry-After`.
//!
//! SQLite needs nothing; the servers are the suite's (`HIERLOCK_MARIADB_URL`,
//! `HIERLOCK_MYSQL_URL`, `HIERLOCK_POSTGRES_URL`, same defaults as
//! `tests/run`). A server that cannot be reached fails its test. Each test
//! works in a database (MySQL family), schema (PostgreSQL) or file (SQLite)
//! of its own.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use hierlock::sea_orm::{ConnectionTrait, Database, DatabaseConnection, TransactionTrait};
use hierlock::{Locker, PostgresLocks, RetryPolicy, Target};
use hierlock_examples::service::{self, App};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode, header};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// A running service and a client for it.
struct Running {
    base: String,
    client: HttpClient,
    db: DatabaseConnection,
    locker: Locker,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Running {
    /// Send `body` (if any) to `path`; the status, `Retry-After` and JSON body.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Option<String>, Value) {
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        let request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(bytes)))
            .expect("a request");
        let response = tokio::time::timeout(Duration::from_secs(60), self.client.request(request))
            .await
            .expect("an answer within 60 s")
            .expect("an HTTP answer");
        let status = response.status();
        let retry_after = response
            .headers()
            .get(header::RETRY_AFTER)
            .map(|v| v.to_str().expect("ASCII").to_owned());
        let body = response.into_body().collect().await.expect("a body");
        let json = serde_json::from_slice(&body.to_bytes()).unwrap_or(Value::Null);
        (status, retry_after, json)
    }

    /// `PUT` an account's resources.
    async fn open(&self, user: i64, account: i64, resources: &[(i64, i64)]) {
        let resources: Vec<Value> = resources
            .iter()
            .map(|&(id, balance)| json!({ "id": id, "balance": balance }))
            .collect();
        let (status, _, body) = self
            .send(
                Method::PUT,
                &format!("/accounts/{user}/{account}"),
                Some(json!({ "resources": resources })),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    /// `GET` an account's balances, by resource.
    async fn balances(&self, user: i64, account: i64) -> BTreeMap<i64, i64> {
        let (status, _, body) = self
            .send(Method::GET, &format!("/accounts/{user}/{account}"), None)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .map(|r| {
                (
                    r["id"].as_i64().expect("id"),
                    r["balance"].as_i64().expect("balance"),
                )
            })
            .collect()
    }
}

/// Start the service on `url` (whose tables it creates), locks waiting at
/// most `lock_wait`, in advisory `namespace` on PostgreSQL (one per test:
/// the tests share a database there).
async fn start(url: &str, namespace: u16, lock_wait: Duration, policy: RetryPolicy) -> Running {
    let db = service::connect(url, 16).await.expect("connecting");
    let config = service::config(lock_wait)
        .expect("the configuration")
        .with_postgres_locks(PostgresLocks::Advisory { namespace });
    let locker = service::prepare(&db, config).await.expect("preparing");
    let app = App::new(db.clone(), locker.clone(), policy);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let base = format!("http://{}", listener.local_addr().expect("an address"));
    let server = tokio::spawn(service::serve(listener, app));
    let client = Client::builder(TokioExecutor::new()).build_http();
    Running {
        base,
        client,
        db,
        locker,
        server,
    }
}

fn server_url(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_owned())
}

/// A URL on `base`'s server, in a database or schema of the test's own.
async fn isolated(base: &str, test: &str) -> String {
    let admin = Database::connect(base)
        .await
        .unwrap_or_else(|e| panic!("{base} is unreachable (start it or set its URL): {e}"));
    let name = format!("hierlock_axum_test_{test}");
    let (statement, url) = if base.starts_with("postgres") {
        let separator = if base.contains('?') { '&' } else { '?' };
        (
            format!("CREATE SCHEMA IF NOT EXISTS {name}"),
            format!("{base}{separator}options=-c%20search_path%3D{name}"),
        )
    } else {
        let (server, _database) = base.rsplit_once('/').expect("a URL with a database");
        (
            format!("CREATE DATABASE IF NOT EXISTS {name}"),
            format!("{server}/{name}"),
        )
    };
    admin
        .execute_unprepared(&statement)
        .await
        .expect("creating the test's schema");
    admin.close().await.expect("closing");
    url
}

/// A new SQLite file of the test's own (removed with its WAL on drop).
struct SqliteFile(PathBuf);

impl SqliteFile {
    fn new(test: &str) -> Self {
        let file = std::env::temp_dir().join(format!(
            "hierlock-axum-test-{test}-{}.db",
            std::process::id()
        ));
        let file = SqliteFile(file);
        file.remove();
        file
    }

    fn url(&self) -> String {
        format!("sqlite://{}?mode=rwc", self.0.display())
    }

    fn remove(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = self.0.as_os_str().to_owned();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for SqliteFile {
    fn drop(&mut self) {
        self.remove();
    }
}

/// What the concurrent test sends: deposits anywhere, transfers both ways
/// between the resources of account 1/1.
#[derive(Clone, Copy, Debug)]
enum Call {
    Deposit { user: i64, id: i64, amount: i64 },
    Transfer { from: i64, to: i64, amount: i64 },
}

/// Account 1/1's resources, and account 2/1's.
const ACCOUNT_1: [i64; 4] = [1, 2, 3, 4];
const ACCOUNT_2: [i64; 2] = [11, 12];
const OPENING: i64 = 1_000;

fn calls(n: usize) -> Vec<Call> {
    // A fixed pseudo-random sequence (a linear congruential generator).
    let mut state: u64 = 11;
    let mut next = move |below: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        i64::try_from((state >> 33) % below).expect("small")
    };
    (0..n)
        .map(|i| match i % 3 {
            0 => {
                let from = ACCOUNT_1[next(4) as usize];
                let to = ACCOUNT_1[(ACCOUNT_1.iter().position(|&r| r == from).expect("in")
                    + 1
                    + next(3) as usize)
                    % 4];
                Call::Transfer {
                    from,
                    to,
                    amount: 1 + next(5),
                }
            }
            1 => Call::Deposit {
                user: 2,
                id: ACCOUNT_2[next(2) as usize],
                amount: 1 + next(9),
            },
            _ => Call::Deposit {
                user: 1,
                id: ACCOUNT_1[next(4) as usize],
                amount: 1 + next(9),
            },
        })
        .collect()
}

/// 150 requests at once; every one answered 200, and every balance is the
/// opening plus the answered deposits and transfers: no update lost.
async fn no_request_is_lost(url: &str) {
    let running = std::sync::Arc::new(
        start(url, 0x5E4F, Duration::from_secs(5), RetryPolicy::default()).await,
    );
    running.open(1, 1, &ACCOUNT_1.map(|id| (id, OPENING))).await;
    running.open(2, 1, &ACCOUNT_2.map(|id| (id, OPENING))).await;

    let calls = calls(150);
    let mut tasks = Vec::new();
    for call in calls.clone() {
        let running = running.clone();
        tasks.push(tokio::spawn(async move {
            let (path, body) = match call {
                Call::Deposit { user, id, amount } => (
                    format!("/accounts/{user}/1/resources/{id}/deposit"),
                    json!({ "amount": amount }),
                ),
                Call::Transfer { from, to, amount } => (
                    "/accounts/1/1/transfer".to_owned(),
                    json!({ "from": from, "to": to, "amount": amount }),
                ),
            };
            running.send(Method::POST, &path, Some(body)).await
        }));
    }
    let mut expected: BTreeMap<i64, i64> = ACCOUNT_1
        .iter()
        .chain(&ACCOUNT_2)
        .map(|&id| (id, OPENING))
        .collect();
    for (call, task) in calls.iter().zip(tasks) {
        let (status, _, body) = task.await.expect("the request task");
        assert_eq!(status, StatusCode::OK, "{call:?}: {body}");
        match *call {
            Call::Deposit { id, amount, .. } => *expected.entry(id).or_default() += amount,
            Call::Transfer { from, to, amount } => {
                *expected.entry(from).or_default() -= amount;
                *expected.entry(to).or_default() += amount;
            }
        }
    }
    let mut found = running.balances(1, 1).await;
    found.extend(running.balances(2, 1).await);
    assert_eq!(
        found, expected,
        "every balance as the answered requests say"
    );
    let total: i64 = found.values().sum();
    let deposited: i64 = calls
        .iter()
        .map(|c| match c {
            Call::Deposit { amount, .. } => *amount,
            Call::Transfer { .. } => 0,
        })
        .sum();
    assert_eq!(total, OPENING * 6 + deposited, "money conserved");
}

/// A lock on account 1/1 held by another transaction: a deposit into one of
/// its resources waits 200 ms per attempt, twice, then answers 503 with
/// `Retry-After`; once the holder commits, the same request succeeds.
async fn a_held_lock_answers_503(url: &str) {
    let policy = RetryPolicy::default().with_max_attempts(2);
    let running = start(url, 0x5E50, Duration::from_millis(200), policy).await;
    running.open(1, 1, &[(1, OPENING)]).await;

    let holder = running.db.begin().await.expect("a transaction");
    running
        .locker
        .acquire(&holder, [Target::account(1i64, 1i64).write()])
        .await
        .expect("holding account 1/1");
    let deposit = || {
        running.send(
            Method::POST,
            "/accounts/1/1/resources/1/deposit",
            Some(json!({ "amount": 7 })),
        )
    };
    let (status, retry_after, body) = deposit().await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert_eq!(body["kind"], "lock_timeout", "{body}");

    holder.commit().await.expect("releasing");
    let (status, retry_after, body) = deposit().await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(retry_after, None);
    assert_eq!(body["balance"], OPENING + 7, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_loses_no_request() {
    let file = SqliteFile::new("concurrent");
    no_request_is_lost(&file.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mariadb_loses_no_request() {
    let base = server_url("HIERLOCK_MARIADB_URL", "mysql://root@127.0.0.1:3306/test");
    no_request_is_lost(&isolated(&base, "concurrent").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mysql_loses_no_request() {
    let base = server_url("HIERLOCK_MYSQL_URL", "mysql://root@127.0.0.1:3307/test");
    no_request_is_lost(&isolated(&base, "concurrent").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_loses_no_request() {
    let base = server_url(
        "HIERLOCK_POSTGRES_URL",
        "postgres://postgres@127.0.0.1:5432/test",
    );
    no_request_is_lost(&isolated(&base, "concurrent").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_held_lock_answers_503_with_retry_after() {
    let file = SqliteFile::new("held");
    a_held_lock_answers_503(&file.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mariadb_held_lock_answers_503_with_retry_after() {
    let base = server_url("HIERLOCK_MARIADB_URL", "mysql://root@127.0.0.1:3306/test");
    a_held_lock_answers_503(&isolated(&base, "held").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_held_lock_answers_503_with_retry_after() {
    let base = server_url(
        "HIERLOCK_POSTGRES_URL",
        "postgres://postgres@127.0.0.1:5432/test",
    );
    a_held_lock_answers_503(&isolated(&base, "held").await).await;
}
