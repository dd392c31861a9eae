//! # axum_service: hierlock in a web service
//!
//! An axum HTTP service over accounts' resources. Each request runs in one
//! request-scoped transaction through `hierlock::retry`; the handlers call
//! `#[hierlocked]` repository methods, which take their locks on that
//! transaction before their bodies run and alone can write the
//! `#[protected]` table. Failures map to statuses:
//!
//! | failure | status |
//! |---|---|
//! | lock not taken in time (`LockTimeout`, `WouldBlock`), deadlock after every retry, connection lost | 503 with `Retry-After: 1` |
//! | not enough money | 409 |
//! | no such resource in the account | 404 |
//! | a non-positive amount, a transfer to the same resource | 400 |
//! | a proof not covering its write (`NotCovered`), `Misuse`, anything else | 500 |
//!
//! A lock not taken in time is 503, not 409: the request is fine and will
//! succeed once the holder commits, which is what 503 with `Retry-After`
//! tells clients and proxies; 409 is what a retry cannot fix.
//!
//! The code is in `examples/src/service/`; `examples/tests/axum_service.rs`
//! sends it concurrent requests over HTTP and checks that no deposit is lost.
//!
//! ## Run it
//!
//! ```text
//! cargo run -p hierlock-examples --example axum_service      # SQLite in the temp dir, no setup
//! DATABASE_URL=mysql://root@127.0.0.1:3306/test cargo run -p hierlock-examples --example axum_service
//! ```
//!
//! and in another terminal:
//!
//! ```text
//! curl -X PUT localhost:3000/accounts/1/1 -H 'content-type: application/json' \
//!      -d '{"resources":[{"id":1,"balance":100},{"id":2,"balance":0}]}'
//! curl -X POST localhost:3000/accounts/1/1/resources/1/deposit -H 'content-type: application/json' -d '{"amount":5}'
//! curl -X POST localhost:3000/accounts/1/1/transfer -H 'content-type: application/json' -d '{"from":1,"to":2,"amount":30}'
//! curl localhost:3000/accounts/1/1
//! ```
//!
//! ## What you will see
//!
//! `listening on http://127.0.0.1:3000`; the requests answer with JSON
//! (`{"id":1,"balance":105}`, then `{"resources":[{"id":1,"balance":75},{"id":2,"balance":30}]}`),
//! and a transfer of more than the balance with `409 {"kind":"insufficient_funds",…}`.
//! The table is `svc_resources`; on MySQL and MariaDB the service provisions
//! its own bucket table, `svc_lock_buckets`, on its first start.

use std::time::Duration;

use clap::Parser;
use hierlock::RetryPolicy;
use hierlock_examples::service::{self, App};

/// An axum service whose handlers lock with hierlock.
#[derive(Debug, Parser)]
struct Args {
    /// Database to run on [default: an SQLite file in the temp dir]
    #[arg(long, env = "DATABASE_URL")]
    database_url: Option<String>,
    /// Address to listen on
    #[arg(long, default_value = "127.0.0.1:3000")]
    listen: String,
    /// Longest wait for a request's locks, in milliseconds (then 503)
    #[arg(long, default_value_t = 2_000)]
    lock_wait_ms: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args = Args::parse();
    let url = args.database_url.unwrap_or_else(|| {
        let file = std::env::temp_dir().join("hierlock-axum-service.db");
        format!("sqlite://{}?mode=rwc", file.display())
    });
    let db = service::connect(&url, 16).await?;
    let config = service::config(Duration::from_millis(args.lock_wait_ms))?;
    let locker = service::prepare(&db, config).await?;
    let app = App::new(db, locker, RetryPolicy::default());

    let listener = tokio::net::TcpListener::bind(&args.listen).await?;
    println!("listening on http://{}", listener.local_addr()?);
    service::serve(listener, app).await?;
    Ok(())
}
