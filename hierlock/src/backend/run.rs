//! One acquisition in progress on one connection: [`Run`] sends its lock
//! statements, bounds their waits by its deadline (cancelling a waiting
//! statement on the server), and types their failures with what they left
//! in the transaction. Each backend's way of taking a plan drives a `Run`.

use std::time::Duration;

use sea_orm::{ConnectionTrait, DbErr, QueryResult, Statement};
use tokio::time::Instant;

use super::cancel::{CancelOnDrop, Canceller};
use super::fence::Fencing;
use super::row_read::RowRead;
use super::waiter::Waiter;
use super::classify::{
    Conflict, classify, is_missing_table, is_read_only, lock_memory_full_hint,
};
use super::dialect::Dialect;
use crate::config::Wait;
use crate::error::{Error, Result, TxnState};
use crate::model::target::Request;

const SAVEPOINT: &str = "hierlock_acquire";

/// How long past the deadline a statement the server bounds itself is
/// given to answer before hierlock cancels it: the server ends its wait at
/// the deadline, and its answer is one trip away.
const SERVER_BOUND_GRACE: Duration = Duration::from_millis(100);

/// How long to wait for a lock statement interrupted at its deadline to end.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// One acquisition in progress on one connection.
pub(crate) struct Run<'c, C> {
    pub(crate) conn: &'c C,
    pub(crate) dialect: Dialect,
    pub(crate) wait: Wait,
    /// When a [`Wait::Timeout`] acquisition gives up, whatever it is doing.
    pub(crate) deadline: Option<Instant>,
    /// What was asked for: described only when an error needs it.
    requests: &'c [Request],
    /// How many locks the plan takes.
    locks: usize,
    pub(crate) statements: usize,
    /// The canceller, and the connection as the server names it, for
    /// statements that may wait.
    cancel: Option<(Canceller, Waiter)>,
    /// A failed no-wait attempt may have left a prefix of the plan locked.
    pub(crate) holds_prefix: bool,
    /// The lease to set for the transaction in its lock statements
    /// (PostgreSQL; see [`Config::with_lease`](crate::Config::with_lease)).
    pub(crate) lease: Option<Duration>,
    /// A read to send in the plan's last lock statement (see `row_read`),
    /// and the rows it returned.
    pub(crate) read: Option<RowRead>,
    pub(crate) read_rows: Vec<QueryResult>,
}

impl<'c, C: ConnectionTrait> Run<'c, C> {
    /// An acquisition of `requests`' plan (`locks` locks) on `conn`,
    /// waiting as `wait` says until `deadline`, setting `lease` where the
    /// server takes it in a lock statement.
    pub(crate) fn new(
        conn: &'c C,
        dialect: Dialect,
        wait: Wait,
        deadline: Option<Instant>,
        requests: &'c [Request],
        locks: usize,
        lease: Option<Duration>,
    ) -> Self {
        Run {
            conn,
            dialect,
            wait,
            deadline,
            requests,
            locks,
            statements: 0,
            cancel: None,
            holds_prefix: false,
            lease,
            read: None,
            read_rows: Vec::new(),
        }
    }

    /// The fence for the next lock statement, if it may wait and can be
    /// cancelled (see `cancel`), with the fences its connection kept from
    /// earlier statements, for it to let go: the statement builder puts
    /// them in the statement, and [`Run::query`] is given them with it.
    pub(crate) fn fence(&self) -> Option<Fencing> {
        let (canceller, waiter) = self.cancel.as_ref()?;
        Some(Fencing {
            own: canceller.next_fence()?,
            releasing: canceller.releasable(*waiter),
        })
    }

    /// Run one lock statement; classify its failure. `partial` says whether
    /// locks of this acquisition may already be held when it fails.
    ///
    /// A statement with a `fence` is cancelled on the server if its future
    /// is dropped (its session ended), and when the deadline passes (the
    /// statement interrupted).
    pub(crate) async fn query(
        &mut self,
        stmt: Statement,
        partial: bool,
        fence: Option<Fencing>,
    ) -> Result<Vec<QueryResult>> {
        self.query_bounded(stmt, partial, fence, false).await
    }

    /// [`Run::query`] of a statement whose waits the server ends at the
    /// deadline itself (`server_bound`: PostgreSQL's `lock_timeout`, see
    /// `postgres::bounded`): its own answer is awaited [`SERVER_BOUND_GRACE`]
    /// past the deadline before hierlock cancels it.
    pub(crate) async fn query_bounded(
        &mut self,
        stmt: Statement,
        partial: bool,
        fence: Option<Fencing>,
        server_bound: bool,
    ) -> Result<Vec<QueryResult>> {
        self.statements += 1;
        tracing::trace!(sql = %stmt.sql, "hierlock lock statement");
        let guard: Option<CancelOnDrop> = match (&self.cancel, &fence) {
            (Some((canceller, waiter)), Some(fence)) => {
                // The fence outlives the statement on the MySQL family, to
                // be let go by the connection's next wait (see `cancel`).
                canceller.keep(*waiter, fence.own);
                Some(canceller.arm(*waiter, fence.own))
            }
            _ => None,
        };
        let statement = self.conn.query_all_raw(stmt);
        // Only a statement that can be cancelled is given up at the deadline
        // (SQLite's wait ends in its busy handler, or with its busy timeout,
        // set to the time left).
        let grace = if server_bound {
            SERVER_BOUND_GRACE
        } else {
            Duration::ZERO
        };
        let deadline = self.deadline.filter(|_| guard.is_some()).map(|d| d + grace);
        let outcome = match deadline {
            None => statement.await,
            Some(deadline) => match tokio::time::timeout_at(deadline, statement).await {
                Ok(outcome) => outcome,
                Err(_elapsed) => {
                    // Kept again before anything is awaited, so that a drop
                    // meanwhile forgets none of them.
                    self.still_kept(fence);
                    if let Some(guard) = guard {
                        guard.cancel_now().await;
                    }
                    self.drain().await;
                    return Err(self.deadline_passed(true));
                }
            },
        };
        if let Some(guard) = guard {
            guard.disarm();
        }
        if outcome.is_err() {
            self.still_kept(fence);
        }
        match outcome {
            Err(e) if is_read_only(&e) => Err(self.demoted(e).await),
            outcome => outcome.map_err(|e| self.conflict(e, partial)),
        }
    }

    /// A statement that failed may not have let go of the fences it was to
    /// release: they stay kept, for the connection's next wait (letting go
    /// of a fence that is not held does nothing).
    fn still_kept(&self, fence: Option<Fencing>) {
        if let (Some((canceller, waiter)), Some(fence)) = (&self.cancel, fence) {
            for kept in fence.releasing {
                canceller.keep(*waiter, kept);
            }
        }
    }

    /// The server refused a lock statement because it is read-only now (see
    /// [`is_read_only`]): the connection no longer reaches the primary, and
    /// the pool would hand it out again (it answers its ping). End its
    /// session, so that the pool drops it and the next transaction opens a
    /// new connection (through a router, to the new primary), and report a
    /// lost connection: retryable, the transaction gone.
    async fn demoted(&self, err: DbErr) -> Error {
        self.end_on_read_only(err, "the server is read-only").await
    }

    /// PostgreSQL granted advisory locks on a hot standby (see
    /// `postgres::STANDBY_COLUMN`): as [`Run::demoted`].
    pub(crate) async fn on_standby(&self) -> Error {
        let source = DbErr::Custom("pg_is_in_recovery() is true".into());
        self.end_on_read_only(source, "the server is a hot standby").await
    }

    /// A MySQL-family server granted row locks while read-only (a user with
    /// `SUPER`; see `mysql::READ_ONLY_COLUMN`): as [`Run::demoted`].
    pub(crate) async fn on_read_only_server(&self) -> Error {
        let source = DbErr::Custom("@@read_only is 1".into());
        self.end_on_read_only(source, "the server is read-only (@@read_only)")
            .await
    }

    /// End this connection's session and report it lost: its server no
    /// longer takes the primary's locks (`why`).
    async fn end_on_read_only(&self, err: DbErr, why: &str) -> Error {
        let end = match self.dialect {
            Dialect::Postgres => "SELECT pg_terminate_backend(pg_backend_pid())",
            _ => "KILL CONNECTION_ID()",
        };
        let stmt = Statement::from_string(self.dialect.backend(), end);
        // Its answer is the end of the connection: an error, or none.
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, self.conn.execute_raw(stmt)).await;
        Error::ConnectionLost {
            doing: format!(
                "acquiring {}: {why} (a replica, or a primary demoted since this \
                 connection was opened), so its locks would not exclude the primary's; \
                 hierlock ended this connection so that the pool opens a new one",
                self.what()
            ),
            txn_state: TxnState::Lost,
            source: err,
        }
    }

    /// `write Resource(u1/a1/r1), read User(u2)`, for messages.
    pub(crate) fn what(&self) -> String {
        describe_requests(self.requests)
    }

    /// Read what the interrupted statement left on the connection (its
    /// error: MySQL 1317, PostgreSQL 57014), so that the transaction's next
    /// statement gets its own answer. Bounded: if the cancellation did not
    /// reach the server, the statement ends with the server's own timeout.
    pub(crate) async fn drain(&self) {
        let ping = Statement::from_string(self.dialect.backend(), "SELECT 1");
        let drained = tokio::time::timeout(DRAIN_TIMEOUT, self.conn.execute_raw(ping)).await;
        if drained.is_err() {
            tracing::warn!(
                "hierlock: an interrupted lock statement did not end; its connection stays busy"
            );
        }
    }

    /// Learn how the server names the connection (its id; on PostgreSQL
    /// also its transaction's id), so that a statement that waits can be
    /// cancelled: one round trip, for acquisitions that may wait on a server
    /// that can cancel.
    pub(crate) async fn prepare_cancel(&mut self, canceller: &Canceller) -> Result<()> {
        if self.wait == Wait::NoWait {
            return Ok(());
        }
        let Some(stmt) = canceller.waiter_statement() else {
            return Ok(());
        };
        let row = self
            .conn
            .query_one_raw(stmt)
            .await
            .map_err(|e| Error::database(format!("acquiring {}", self.what()), e))?;
        self.named(canceller, row.as_ref())
    }

    /// [`prepare_cancel`](Self::prepare_cancel) with the names read by a
    /// statement already sent (a row with the columns of
    /// [`waiter`](super::waiter)): no round trip of its own.
    pub(crate) fn named(&mut self, canceller: &Canceller, row: Option<&QueryResult>) -> Result<()> {
        if self.wait == Wait::NoWait || !canceller.can_cancel() {
            return Ok(());
        }
        // The side connection opens while the statement that waits is sent.
        canceller.warm();
        // The statement returns one row; without it there is nothing to name.
        let Some(row) = row else { return Ok(()) };
        let waiter = Waiter::from_row(row)
            .map_err(|e| Error::database(format!("acquiring {}", self.what()), e))?;
        self.cancel = Some((canceller.clone(), waiter));
        Ok(())
    }

    /// The wait of the next lock statement: the time left before the
    /// deadline (the server's own limit where it has one per statement;
    /// hierlock cancels the statement at the deadline in any case).
    /// `partial`: earlier statements of this acquisition may hold locks.
    pub(crate) fn statement_wait(&self, partial: bool) -> Result<Wait> {
        let Some(deadline) = self.deadline.filter(|_| self.wait != Wait::NoWait) else {
            return Ok(self.wait);
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.deadline_passed(partial));
        }
        Ok(Wait::Timeout(left))
    }

    /// The deadline of a [`Wait::Timeout`] passed. `partial`: locks of this
    /// acquisition may be held (on the MySQL family a statement interrupted
    /// at the deadline may have been granted just before).
    pub(crate) fn deadline_passed(&self, partial: bool) -> Error {
        let txn_state = match self.dialect {
            // The attempt runs in a savepoint, rolled back by `close_savepoint`.
            Dialect::Postgres => TxnState::Aborted,
            _ if partial => TxnState::PartiallyLocked,
            _ => TxnState::Unchanged,
        };
        Error::LockTimeout {
            what: self.what(),
            waited: match self.wait {
                Wait::Timeout(d) => Some(d),
                _ => None,
            },
            txn_state,
            source: None,
        }
    }

    /// Run a bookkeeping statement (timeouts, savepoints).
    pub(crate) async fn exec(&self, stmt: Statement, doing: &str) -> Result<()> {
        self.conn
            .execute_raw(stmt)
            .await
            .map(drop)
            .map_err(|e| Error::database(doing, e))
    }

    pub(crate) fn conflict(&self, err: DbErr, partial: bool) -> Error {
        let what = self.what();
        let family = self.dialect.is_mysql_family();
        let busy_state = match self.dialect {
            // Outside a savepoint, any error aborts a PostgreSQL transaction.
            Dialect::Postgres => TxnState::Aborted,
            _ if partial => TxnState::PartiallyLocked,
            _ => TxnState::Unchanged,
        };
        match classify(&err) {
            Some(Conflict::NoWait) => Error::WouldBlock {
                what,
                txn_state: busy_state,
                source: Some(err),
            },
            Some(Conflict::Busy) if self.wait == Wait::NoWait => Error::WouldBlock {
                what,
                txn_state: busy_state,
                source: Some(err),
            },
            Some(Conflict::Busy) => Error::LockTimeout {
                what,
                waited: match self.wait {
                    Wait::Timeout(d) => Some(d),
                    _ => None,
                },
                txn_state: busy_state,
                source: Some(err),
            },
            Some(Conflict::Deadlock) => Error::Deadlock {
                what,
                txn_state: if family {
                    TxnState::RolledBack
                } else {
                    TxnState::Aborted
                },
                source: err,
            },
            // The table was dropped (or never created on this schema) after
            // `Locker::connect` checked it.
            None if is_missing_table(&err)
                && self.read.as_ref().is_none_or(|read| read.misses_lock_table(&err)) =>
            {
                Error::NotProvisioned {
                    what: format!("the lock table for {what} ({err})"),
                    row: None,
                    txn_state: busy_state,
                }
            }
            None => match lock_memory_full_hint(&err) {
                Some(hint) => Error::database_in(
                    format!("acquiring {} locks ({what}): {hint}", self.locks),
                    err,
                    busy_state,
                ),
                None => Error::database_in(format!("acquiring {what}"), err, busy_state),
            },
        }
    }

    pub(crate) fn savepoint_statement(&self, verb: &str) -> Statement {
        Statement::from_string(self.dialect.backend(), format!("{verb} {SAVEPOINT}"))
    }

    /// End the attempt's savepoint: keep its locks on success; on failure roll
    /// back to it, which also releases any lock the attempt took, so the
    /// transaction is left exactly as it was.
    pub(crate) async fn close_savepoint(&mut self, outcome: Result<()>) -> Result<()> {
        match outcome {
            Ok(()) => {
                self.exec(
                    self.savepoint_statement("RELEASE SAVEPOINT"),
                    "releasing the savepoint",
                )
                .await
            }
            // The connection is gone (or hierlock ended it): nothing to
            // roll back, and a statement on it would only wait or fail.
            Err(err) if err.txn_state() == TxnState::Lost => Err(err),
            Err(err) => {
                self.exec(
                    self.savepoint_statement("ROLLBACK TO SAVEPOINT"),
                    "rolling back to the savepoint",
                )
                .await?;
                self.exec(
                    self.savepoint_statement("RELEASE SAVEPOINT"),
                    "releasing the savepoint",
                )
                .await?;
                Err(err.with_txn_state(TxnState::Unchanged))
            }
        }
    }
}

/// `write Resource(u1/a1/r1), read User(u2)`, shortened after a few.
pub(crate) fn describe_requests(requests: &[Request]) -> String {
    const SHOWN: usize = 4;
    let mut text: Vec<String> = requests
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect();
    if requests.len() > SHOWN {
        text.push(format!("and {} more", requests.len() - SHOWN));
    }
    text.join(", ")
}
