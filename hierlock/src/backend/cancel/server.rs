//! The server-side steps of a cancellation: name the waiting statement's
//! connection, take its fence, check, interrupt, let the fence go.

use super::{End, Request};
use crate::backend::waiter::Waiter;

/// Lets go of every fence the side connection holds (it holds nothing else).
#[cfg(feature = "mysql")]
pub(super) const MYSQL_RELEASE_FENCES: &str = "DO RELEASE_ALL_LOCKS()";

/// One cancellation on the MySQL family, as statements for one round trip:
/// take the fence without waiting; if it was free, the statement has not
/// succeeded and cannot while the fence is held (a fence kept after its
/// statement is let go by a later wait only once no cancellation of it can
/// still arrive: see `kept`), so its connection is still the acquisition's:
/// kill the statement (or the connection); let the fence go.
///
/// The connection needs no other check. At a deadline the acquisition
/// itself waits for the cancellation before it sends anything else. After
/// a drop, sqlx gives the connection back to its pool only once the
/// statement's answer was a success; an error closes it.
///
/// With a mark for a fence (a Galera release that refuses `GET_LOCK`), the
/// kill is prepared only if the
/// connection still runs the marked statement, so the statement is named
/// exactly (MariaDB's `KILL QUERY ID`), but a session end can reach a
/// statement started on the connection between the check and the kill, in
/// the same round trip: Galera is opted into (single writer) and such a
/// statement needs the client to have read the answer and sent a new one in
/// between.
#[cfg(feature = "mysql")]
pub(super) fn mysql_kill(request: &Request, mariadb: bool) -> String {
    let Waiter { connection, .. } = request.waiter;
    let fence = request.fence;
    // MariaDB kills one statement by its query id; MySQL what a connection
    // runs (a kill that reaches an idle connection does nothing). A
    // connection is ended whatever it does: its statement may not have
    // reached the server yet.
    let (kill, running) = match (request.end, mariadb) {
        (End::Session, _) => ("'KILL CONNECTION ', ID", ""),
        (End::Statement, true) => ("'KILL QUERY ID ', QUERY_ID", " AND INFO IS NOT NULL"),
        (End::Statement, false) => ("'KILL QUERY ', ID", " AND INFO IS NOT NULL"),
    };
    let name = fence.mysql_name();
    let check = format!(
        "(SELECT CONCAT({kill}) FROM information_schema.PROCESSLIST WHERE ID = {connection}{running}{} LIMIT 1)",
        if fence.locks() {
            String::new()
        } else {
            format!(" AND INFO LIKE '%{name}%'")
        }
    );
    let (take, release) = if fence.locks() {
        (
            format!("IF(GET_LOCK('{name}', 0) = 1, {check}, NULL)"),
            format!("DO RELEASE_LOCK('{name}'); "),
        )
    } else {
        (check, String::new())
    };
    format!(
        "SET @hierlock_kill = COALESCE({take}, 'DO 0'); \
         PREPARE hierlock_kill FROM @hierlock_kill; \
         EXECUTE hierlock_kill; DEALLOCATE PREPARE hierlock_kill; {release}"
    )
}

/// How long a PostgreSQL session end waits for its backend to exit, in
/// milliseconds.
#[cfg(feature = "postgres")]
const EXIT_WAIT_MS: u64 = 2000;

/// Every cancellation of `batch` on PostgreSQL, as one transaction in one
/// round trip: take the fences that are free (a statement that holds its
/// fence has its locks), then signal each backend whose fence this
/// transaction holds and that still runs a statement of the transaction the
/// cancellation was issued for, then let the fences go. `pg_stat_activity`
/// is first read in the second statement, after the fences are held.
///
/// The transaction is named by its id (`backend_xid`), not by its start
/// (`xact_start`): a fence is also free once its statement succeeded and
/// the transaction ended, and PostgreSQL releases a transaction's locks
/// before it clears `xact_start` (both at `COMMIT` and `ROLLBACK`, which may
/// take a while between the two: it unlinks the files of the relations the
/// transaction dropped or created), but after it clears the transaction's
/// id. A check by start time, in that window, ended the backend of the
/// request that got the connection next.
///
/// A session end waits (up to [`EXIT_WAIT_MS`]) for the backend to exit
/// before the fence goes: a backend acts on the signal at its next
/// interrupt check, and one granted its fence before that could still
/// answer its statement (`pg_terminate_backend` with a timeout:
/// PostgreSQL 14 and later).
#[cfg(feature = "postgres")]
pub(super) fn postgres_cancel(batch: &[Request]) -> String {
    let rows: Vec<String> = batch
        .iter()
        .map(|r| {
            let Waiter {
                connection,
                transaction,
            } = r.waiter;
            let (high, low) = r.fence.postgres_keys();
            format!(
                "({connection}, {transaction}::int8, {high}, {low}, {})",
                r.end == End::Session
            )
        })
        .collect();
    let keys = format!(
        "(VALUES {}) AS k(pid, xact, high, low, session)",
        rows.join(", ")
    );
    format!(
        "BEGIN; \
         SELECT count(*) FROM {keys} WHERE pg_try_advisory_xact_lock(k.high, k.low); \
         SELECT CASE WHEN k.session THEN pg_terminate_backend(a.pid, {EXIT_WAIT_MS}) \
         ELSE pg_cancel_backend(a.pid) END \
         FROM pg_stat_activity AS a JOIN {keys} ON a.pid = k.pid \
         WHERE a.backend_xid::text::int8 = k.xact % 4294967296 \
         AND a.state = 'active' \
         AND EXISTS (SELECT 1 FROM pg_locks AS l WHERE l.pid = pg_backend_pid() \
         AND l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted \
         AND l.classid = k.high::oid AND l.objid = k.low::oid); \
         COMMIT"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::fence::Fence;

    /// A late cancellation (its statement granted, the request dropped
    /// just after) reaching a backend whose transaction is ending: the fence
    /// is free again, and PostgreSQL still shows the transaction's start
    /// while its `ROLLBACK` unlinks the files of the relations it created.
    /// The cancellation must see that the transaction is over and end
    /// nothing: the next request on that connection is somebody else's.
    #[cfg(feature = "postgres")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_fence_freed_by_its_transactions_end_ends_nothing() {
        use sea_orm::sqlx::{AssertSqlSafe, Connection, Executor, PgConnection, Row};
        use std::time::{Duration, Instant};

        const RELATIONS: usize = 4000;
        let url = std::env::var("HIERLOCK_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
        let connect = || async {
            PgConnection::connect(&url)
                .await
                .unwrap_or_else(|e| panic!("PostgreSQL at {url} is required: {e}"))
        };
        let (mut waiting, mut side, mut watch) = (connect().await, connect().await, connect().await);

        // The acquisition's transaction, named as hierlock names it, with
        // its fence taken (its lock statement succeeded).
        waiting.execute("BEGIN").await.expect("begin");
        let named = format!("SELECT {}", crate::backend::waiter::postgres_columns(None));
        let row = waiting.fetch_one(AssertSqlSafe(named)).await.expect("waiter");
        let waiter = Waiter {
            connection: row.get("id"),
            transaction: row.get("xact"),
        };
        let creates: String = (0..RELATIONS)
            .map(|i| format!("CREATE TABLE hierlock_fence_test_{i} (x int); "))
            .collect();
        waiting.execute(AssertSqlSafe(creates)).await.expect("create");
        let fence = Fence::next(true);
        let (high, low) = fence.postgres_keys();
        let take = format!("SELECT pg_advisory_xact_lock_shared({high}, {low})");
        waiting.execute(AssertSqlSafe(take)).await.expect("fence");

        // Its end, and the cancellation arriving once the fence is free but
        // the backend still shows the transaction.
        let rollback = tokio::spawn(async move {
            let ended = waiting.execute("ROLLBACK").await.map(drop);
            let next = waiting.execute("SELECT 1").await.map(drop);
            (ended, next)
        });
        let window = format!(
            "SELECT count(*) AS held, \
             (SELECT count(*) FROM pg_stat_activity WHERE pid = {pid} AND state = 'active' \
              AND xact_start IS NOT NULL) AS shown \
             FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 \
             AND classid = {high}::oid AND objid = {low}::oid",
            pid = waiter.connection
        );
        let started = Instant::now();
        loop {
            let row = watch.fetch_one(AssertSqlSafe(window.clone())).await.expect("watch");
            let (held, shown): (i64, i64) = (row.get("held"), row.get("shown"));
            if held == 0 {
                assert_eq!(
                    shown, 1,
                    "the ROLLBACK ended before the check ran: raise RELATIONS to widen the window"
                );
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "the fence stayed taken");
        }
        let request = Request::unanswered(waiter, fence, super::End::Session);
        side.execute(AssertSqlSafe(postgres_cancel(std::slice::from_ref(&request))))
            .await
            .expect("cancel");

        let (ended, next) = rollback.await.expect("the waiting connection's task");
        ended.expect("the transaction ends as its client asked");
        next.expect("the connection serves its next request");
    }

}
