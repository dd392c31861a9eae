//! Ending a lock statement's server-side wait from another connection.
//!
//! A lock statement that waits holds its connection until the server answers.
//! When the acquisition gives up (its deadline passed) or its future is
//! dropped (a cancelled request, `tokio::time::timeout`, `select!`), the wait
//! must end on the server too, or the statement still takes its locks later
//! and the pooled connection stays busy until the server's own timeout.
//!
//! The [`Canceller`] asks the server to interrupt the statement, from a side
//! connection of its own (one, opened with the options of the user's pool,
//! so that a pool exhausted by waiters can still cancel them).
//!
//! # A cancellation reaches its own statement, or nothing
//!
//! The servers interrupt a *connection* (MySQL's `KILL`, PostgreSQL's
//! `pg_cancel_backend`), not a statement. By the time a cancellation
//! arrives, the statement it was issued for may have been answered and its
//! connection handed to another task by the pool (or, through pgbouncer, its
//! server backend to another client). So every statement that may wait ends
//! with a [`Fence`]: after taking its locks, it takes a lock of its own,
//! unique to the statement (MySQL's `GET_LOCK`, a PostgreSQL advisory lock),
//! and cannot succeed while somebody else holds it. The canceller takes the
//! fence first, then interrupts: while it holds the fence the statement
//! cannot succeed, and sqlx hands a connection to another task only after a
//! successful answer (an error closes it), so the connection is still the
//! acquisition's and the interruption lands on the statement it was issued
//! for. If the fence is taken already, the statement has its locks: there
//! is nothing to cancel.
//!
//! On PostgreSQL the check also names the statement's transaction (its id,
//! assigned and read in the transaction before it waits), and its fence is
//! held until that transaction ends; on the MySQL family the connection
//! keeps it after the statement, and its next wait lets it go once no
//! cancellation of the statement can still reach the server ([`kept`]).
//! Where the server refuses
//! `GET_LOCK` (some MariaDB Galera releases), the fence is a mark in the
//! statement's text, which the check looks for (see `server::mysql_kill` for
//! what that leaves).
//!
//! # What is interrupted
//!
//! At a deadline, the statement (MariaDB's `KILL QUERY ID`, MySQL's `KILL
//! QUERY`, `pg_cancel_backend`): it fails (MySQL 1317, PostgreSQL 57014),
//! the acquisition reads that answer itself, and its transaction is left as
//! after a lock timeout.
//!
//! A *dropped* acquisition ends its session (`KILL CONNECTION`,
//! `pg_terminate_backend`): its transaction is gone with the request, and
//! the server frees its locks at once. A statement cancel is not enough
//! there: sqlx pings a returned connection, and one whose owed answer is an
//! error is closed from the client side, which was measured to leave a TLS
//! connection's pool slot taken past 5 s (PostgreSQL); a connection the
//! server closed is freed at once. The same session end serves an
//! acquisition whose connection stopped answering.
//!
//! Cancellations queue for the side connection, and a task of its own sends
//! them, all that are waiting in one round trip ([`queue`]): a burst of
//! waiters reaching one deadline costs a round trip, not one each.

// Built with SQLite alone, no server can be asked: what serves the servers
// is never used.
#![cfg_attr(
    not(any(feature = "mysql", feature = "postgres")),
    allow(dead_code, unreachable_code, unused_imports, unused_variables)
)]

mod kept;
mod queue;
mod server;

use std::sync::Arc;

use sea_orm::{DatabaseConnection, Statement};

use queue::{Queue, Request, Side};

use crate::backend::fence::Fence;
use crate::backend::waiter::Waiter;

/// How long each step of a cancellation may take before it is given up:
/// connecting the side connection, and each batch it sends (a few round
/// trips on a healthy network). Past it the side connection is dropped and
/// opened again for the next batch; the statement then ends with the
/// server's own timeout, or with the lease.
pub(crate) const CANCEL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// What a cancellation ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// The waiting statement.
    Statement,
    /// The whole session: the acquisition's future was dropped, or its
    /// connection stopped answering; the server frees its locks at once.
    Session,
}

/// Interrupts lock statements of one database from a side connection.
#[derive(Clone, Debug)]
pub(crate) struct Canceller {
    /// `None` where the server cannot be asked (SQLite runs in-process; a
    /// mock or proxy connection has no connect options).
    queue: Option<Arc<Queue>>,
}

/// What a canceller needs to know of a MySQL-family server, beyond its
/// connection options (the caller detected it: see `Dialect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MySqlServer {
    /// MariaDB, which ends one statement by its query id (`KILL QUERY ID`);
    /// MySQL ends whatever a connection runs (`KILL QUERY`).
    pub(crate) mariadb: bool,
    /// Whether it takes `GET_LOCK` (some Galera releases refuse it: the
    /// fence is then a mark in the statement's text).
    pub(crate) get_lock: bool,
}

impl Canceller {
    /// A canceller for `db` (on the MySQL family, a `server` as described),
    /// whose side connection is opened on first use.
    pub(crate) fn new(db: &DatabaseConnection, server: MySqlServer) -> Canceller {
        Canceller {
            queue: Side::of(db, server).map(Queue::new),
        }
    }

    /// The fence of the next statement that may wait, where a statement can
    /// be cancelled.
    pub(crate) fn next_fence(&self) -> Option<Fence> {
        let queue = self.queue.as_ref()?;
        Some(Fence::next(queue.side().locking_fences()))
    }

    /// The fences `waiter`'s connection kept from its earlier statements
    /// that its next statement that waits lets go, after taking its own
    /// (MySQL family; see [`kept`]).
    pub(crate) fn releasable(&self, waiter: Waiter) -> Vec<Fence> {
        match &self.queue {
            Some(queue) if queue.side().keeps_fences() => queue.releasable(waiter.connection),
            _ => Vec::new(),
        }
    }

    /// `fence` stays taken on `waiter`'s connection after its statement,
    /// until the connection's next statement that waits lets it go (MySQL
    /// family; see [`kept`]).
    pub(crate) fn keep(&self, waiter: Waiter, fence: Fence) {
        if let Some(queue) = self.queue.as_ref().filter(|q| q.side().keeps_fences()) {
            queue.keep(waiter.connection, fence);
        }
    }

    /// Open the side connection, in the background, if it is not open: an
    /// acquisition is about to wait, and a cancellation should not have to
    /// connect first (a new connection costs 50–100 ms with TLS).
    pub(crate) fn warm(&self) {
        if let Some(queue) = &self.queue {
            queue.submit(None);
        }
    }

    /// Whether a statement can be cancelled here (a server that can be
    /// asked, from a side connection).
    pub(crate) fn can_cancel(&self) -> bool {
        self.queue.is_some()
    }

    /// The statement that reads what a [`Waiter`] needs from the server, run
    /// in the acquisition's transaction before it may wait: the connection's
    /// id, and on PostgreSQL the transaction's id (assigned if it has none).
    pub(crate) fn waiter_statement(&self) -> Option<Statement> {
        Some(self.queue.as_ref()?.side().waiter_statement())
    }

    /// End the statement fenced by `fence` (or its session), if it still
    /// runs, and wait until the server was asked. Failures are logged: the
    /// statement then ends with the server's own lock-wait timeout, or with
    /// the lease.
    pub(crate) async fn cancel(&self, waiter: Waiter, fence: Fence, end: End) {
        let Some(queue) = &self.queue else { return };
        let (request, asked) = Request::answered(waiter, fence, end);
        if queue.submit(Some(request)) {
            // The queue's task bounds each step by CANCEL_TIMEOUT; this only
            // guards against a task that could not be started.
            let _ = tokio::time::timeout(3 * CANCEL_TIMEOUT, asked).await;
        }
    }

    /// [`cancel`](Self::cancel), without waiting: for code that cannot await
    /// (a dropped future's guard).
    pub(crate) fn cancel_in_background(&self, waiter: Waiter, fence: Fence, end: End) {
        if let Some(queue) = &self.queue {
            queue.submit(Some(Request::unanswered(waiter, fence, end)));
        }
    }

    /// End the session of the statement fenced by `fence` when the guard is
    /// dropped before [`CancelOnDrop::disarm`].
    pub(crate) fn arm(&self, waiter: Waiter, fence: Fence) -> CancelOnDrop {
        CancelOnDrop {
            canceller: Some(self.clone()),
            waiter,
            fence,
        }
    }
}

/// Ends the session of a lock statement whose future is dropped while it
/// waits (see the module's docs).
#[must_use]
pub(crate) struct CancelOnDrop {
    canceller: Option<Canceller>,
    waiter: Waiter,
    fence: Fence,
}

impl CancelOnDrop {
    /// The statement finished: nothing to cancel.
    pub(crate) fn disarm(mut self) {
        self.canceller = None;
    }

    /// Cancel the statement now, and wait until the server was asked.
    pub(crate) async fn cancel_now(mut self) {
        if let Some(canceller) = self.canceller.take() {
            canceller
                .cancel(self.waiter, self.fence, End::Statement)
                .await;
        }
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(canceller) = self.canceller.take() {
            canceller.cancel_in_background(self.waiter, self.fence, End::Session);
        }
    }
}
