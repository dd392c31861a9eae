//! A storm of dropped waiters on a hot lock, and what the requests after it
//! see: the bystander test of cancellation.
//!
//! Eight requests wait for one lock and are dropped together (a gateway
//! timeout cancels them); the holder commits at once; eight fresh requests
//! then take the same lock on the same pool, which hands them the dropped
//! requests' connections as soon as sqlx has them back. Anything the
//! dropped requests' cancellations send must reach only their own
//! statements: a fresh request that fails was hit by somebody else's fault.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use hierlock::{Locker, Target, Wait};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement, TransactionTrait};

/// What the fresh requests of every round saw.
#[derive(Debug, Default)]
pub struct StormOutcome {
    /// Fresh requests that took the lock and committed.
    pub committed: usize,
    /// Fresh requests that failed, by error kind.
    pub failed: BTreeMap<String, usize>,
}

impl StormOutcome {
    pub fn failures(&self) -> usize {
        self.failed.values().sum()
    }

    /// Panic unless every fresh request of `rounds` × `width` committed;
    /// `what` names the setting in the message.
    pub fn assert_no_bystander_failed(&self, rounds: usize, width: usize, what: &str) {
        assert_eq!(
            self.failures(),
            0,
            "{what}: fresh requests were hit by other requests' cancellations: {self:?}"
        );
        assert_eq!(self.committed, rounds * width, "{what}: {self:?}");
    }
}

/// Run `rounds` rounds of `width` dropped waiters on `pool` (of `width`
/// connections) then `width` fresh requests on `fresh` (the same pool, or
/// another client of the same server or proxy), for one lock held in turn
/// by a transaction of `holders`. `blocked(ids)` returns once every
/// connection with one of these server ids waits for a lock (read from the
/// server's own views).
pub async fn dropped_waiters_then_fresh_requests<B, F>(
    locker: &Locker,
    pool: &DatabaseConnection,
    fresh: &DatabaseConnection,
    holders: &DatabaseConnection,
    rounds: usize,
    width: usize,
    blocked: B,
) -> StormOutcome
where
    B: Fn(Vec<i64>) -> F,
    F: Future<Output = ()>,
{
    let hot = Target::resource("u1", "a1", "r1").write();
    let mut outcome = StormOutcome::default();
    for round in 0..rounds {
        let holder = holders.begin().await.expect("begin the holder");
        locker
            .acquire(&holder, [hot.clone()])
            .await
            .expect("the holder's lock is uncontended");

        // The waiters, dropped together once the server shows each waiting.
        let (ids, mut ids_rx) = tokio::sync::mpsc::unbounded_channel();
        let waiters = futures::future::join_all((0..width).map(|_| {
            let ids = ids.clone();
            let hot = hot.clone();
            async move {
                let txn = pool.begin().await.expect("begin a waiter");
                ids.send(connection_id(&txn).await)
                    .expect("the round listens");
                let outcome = locker.acquire_with(&txn, [hot], Wait::Block).await;
                // Granted while held, or ended by a cancellation meant for
                // an earlier round's request: either is a failure.
                panic!("round {round}: a waiter ended before it was dropped: {outcome:?}");
            }
        }));
        let all_blocked = async {
            let mut all = Vec::with_capacity(width);
            for _ in 0..width {
                all.push(ids_rx.recv().await.expect("a waiter's id"));
            }
            blocked(all).await;
        };
        tokio::select! {
            _ = waiters => unreachable!("the waiters never end by themselves"),
            () = all_blocked => {}
        }
        holder.commit().await.expect("commit the holder");

        // The fresh requests, on the connections the waiters leave (or
        // those of another client).
        let requests = futures::future::join_all((0..width).map(|_| {
            let hot = hot.clone();
            async move {
                let txn = fresh.begin().await.map_err(hierlock::Error::from)?;
                locker
                    .acquire_with(&txn, [hot], Wait::Timeout(Duration::from_secs(10)))
                    .await?;
                txn.commit().await.map_err(hierlock::Error::from)
            }
        }));
        let results = tokio::time::timeout(Duration::from_secs(60), requests)
            .await
            .unwrap_or_else(|_| panic!("round {round}: the fresh requests did not end in 60 s"));
        for result in results {
            match result {
                Ok(()) => outcome.committed += 1,
                Err(err) => {
                    eprintln!("round {round}: a fresh request failed: {err}");
                    *outcome
                        .failed
                        .entry(format!("{:?}", err.kind()))
                        .or_default() += 1;
                }
            }
        }
    }
    outcome
}

/// The server's id of the connection `conn` runs on.
///
/// # Panics
/// If the server does not answer with it.
pub async fn connection_id(conn: &impl ConnectionTrait) -> i64 {
    try_connection_id(conn).await.expect("connection id")
}

/// [`connection_id`], or the error that kept the server from giving it (the
/// backend's id through pgbouncer).
///
/// # Errors
/// The query failed, or returned no row.
pub async fn try_connection_id(conn: &impl ConnectionTrait) -> Result<i64, sea_orm::DbErr> {
    let backend = conn.get_database_backend();
    let sql = match backend {
        DbBackend::Postgres => "SELECT pg_backend_pid()::int8 AS id",
        _ => "SELECT CAST(CONNECTION_ID() AS SIGNED) AS id",
    };
    let row = conn
        .query_one_raw(Statement::from_string(backend, sql))
        .await?
        .ok_or_else(|| sea_orm::DbErr::RecordNotFound("the connection's id".into()))?;
    row.try_get("", "id")
}
