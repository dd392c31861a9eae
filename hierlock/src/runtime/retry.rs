//! Running lock-taking work in a transaction, again on retryable failures:
//! [`retry`] and its [`RetryPolicy`].

use std::time::Duration;

use sea_orm::{DatabaseConnection, DatabaseTransaction, DbErr, TransactionTrait};
use tokio::time::Instant;

use crate::backend::classify::{classify, is_connection_lost, is_pool_timeout};
use crate::config::{DEFAULT_ANSWER_TIMEOUT, valid_answer_timeout};
use crate::error::{Error, Result, no_answer_source};

/// How [`retry`] retries: at most `max_attempts` runs, waiting a jittered,
/// exponentially growing backoff between them, all within an optional
/// deadline.
///
/// The n-th wait is a random duration in `[b/2, b]`, with
/// `b = min(max_backoff, first_backoff × 2ⁿ⁻¹)`: contenders that failed
/// together do not come back together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    max_attempts: u32,
    first_backoff: Duration,
    max_backoff: Duration,
    deadline: Option<Duration>,
    answer_timeout: Duration,
}

impl Default for RetryPolicy {
    /// 5 attempts; backoffs from 10 ms, at most 1 s; no deadline; each
    /// `BEGIN`, `ROLLBACK` and `COMMIT` answered within
    /// [`DEFAULT_ANSWER_TIMEOUT`] (30 s).
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            first_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_secs(1),
            deadline: None,
            answer_timeout: DEFAULT_ANSWER_TIMEOUT,
        }
    }
}

impl RetryPolicy {
    /// Run the work at most `attempts` times (at least once).
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Back off `first` after the first failure, doubling up to `max`.
    pub fn with_backoff(mut self, first: Duration, max: Duration) -> Self {
        self.first_backoff = first;
        self.max_backoff = max.max(first);
        self
    }

    /// Finish within `budget` from the call, whatever the network does: every
    /// attempt's `BEGIN`, work, `ROLLBACK` and `COMMIT` end by then. An
    /// attempt still unanswered at the deadline (a dead network, a hung
    /// server, or just slow work) is abandoned: its transaction is dropped
    /// without waiting (the server rolls it back when the statement ends or
    /// the session does; on a silent network, when the lease runs out: see
    /// [`Config::with_lease`](crate::Config::with_lease)), and [`retry`]
    /// returns a lost connection (for `hierlock::Error`,
    /// [`ErrorKind::ConnectionLost`](crate::ErrorKind::ConnectionLost) with
    /// [`TxnState::Lost`](crate::TxnState::Lost); during COMMIT with
    /// [`TxnState::CommitUnknown`](crate::TxnState::CommitUnknown)). No
    /// backoff runs past the deadline: the last failure is returned instead.
    pub fn with_deadline(mut self, budget: Duration) -> Self {
        self.deadline = Some(budget);
        self
    }

    /// How long each attempt's `BEGIN`, `ROLLBACK` and `COMMIT` may go
    /// unanswered (default [`DEFAULT_ANSWER_TIMEOUT`], 30 s), deadline or
    /// not: a silent network never answers. Past it the step is abandoned
    /// as with the deadline: `BEGIN` fails the attempt with a lost
    /// connection (retryable), an unanswered `ROLLBACK` after a failed
    /// attempt is given up (the server rolls back when the session ends, or
    /// at the lease), and a `COMMIT` is a lost commit
    /// ([`TxnState::CommitUnknown`](crate::TxnState::CommitUnknown)). The
    /// work itself is bounded by its own calls and by the deadline.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] if `timeout` is zero or over
    /// [`MAX_TIMEOUT`](crate::MAX_TIMEOUT).
    pub fn with_answer_timeout(mut self, timeout: Duration) -> Result<Self> {
        self.answer_timeout = valid_answer_timeout(timeout)?;
        Ok(self)
    }

    /// See [`RetryPolicy::with_answer_timeout`].
    pub fn answer_timeout(&self) -> Duration {
        self.answer_timeout
    }

    /// The deadline (see [`RetryPolicy::with_deadline`]), if any.
    pub fn deadline(&self) -> Option<Duration> {
        self.deadline
    }

    /// How many times the work runs at most.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The wait after failed attempt `attempt` (1-based).
    fn backoff(&self, attempt: u32) -> Duration {
        let doubled = self
            .first_backoff
            .saturating_mul(1u32 << (attempt - 1).min(20));
        let cap = doubled.min(self.max_backoff);
        cap / 2 + cap.mul_f64(fastrand::f64() / 2.0)
    }
}

/// An error [`retry`] can judge: whether running the whole transaction again,
/// on a new transaction, may succeed.
///
/// Implemented for [`hierlock::Error`](Error) and SeaORM's `DbErr`;
/// implement it for your error type by delegating to the one it wraps.
pub trait Retryable {
    /// Whether a new attempt may succeed.
    fn is_retryable(&self) -> bool;

    /// The error [`retry`] returns when the connection ended during COMMIT,
    /// so that whether the transaction committed is unknown (it is not
    /// retried). By default `Self::from(err)`; for [`hierlock::Error`](Error)
    /// it is [`Error::from_commit`]'s [`ErrorKind::ConnectionLost`] with
    /// [`TxnState::CommitUnknown`], which is not retryable.
    ///
    /// [`ErrorKind::ConnectionLost`]: crate::ErrorKind::ConnectionLost
    /// [`TxnState::CommitUnknown`]: crate::TxnState::CommitUnknown
    fn from_lost_commit(err: DbErr) -> Self
    where
        Self: From<DbErr> + Sized,
    {
        Self::from(err)
    }
}

impl Retryable for Error {
    fn is_retryable(&self) -> bool {
        Error::is_retryable(self)
    }

    fn from_lost_commit(err: DbErr) -> Self {
        Error::from_commit(err)
    }
}

impl Retryable for DbErr {
    /// Lock conflicts of the transaction's own statements (timeouts,
    /// deadlocks, as [`conflict_kind`](crate::conflict_kind) classifies
    /// them), lost connections, and a pool with no connection to hand out.
    fn is_retryable(&self) -> bool {
        classify(self).is_some() || is_connection_lost(self) || is_pool_timeout(self)
    }
}

/// Run `work` in a new transaction of `db` and commit it; if it fails with a
/// [retryable](Retryable) error (a lock timeout, a deadlock, a lost
/// connection), roll back, back off as `policy` says and run it again on a
/// new transaction.
///
/// `work` is an async closure (`async |txn| { .. }`): it may borrow from its
/// surroundings and from the transaction. This is the way to run lock-taking
/// work: `#[hierlocked]` methods and
/// [`Locker::acquire`](crate::Locker::acquire) take their locks on the
/// attempt's transaction, and each attempt starts from nothing.
///
/// ```no_run
/// use hierlock::{Locker, RetryPolicy, Target, retry};
/// use hierlock::sea_orm::DatabaseConnection;
///
/// # async fn demo(db: DatabaseConnection, locker: Locker) -> hierlock::Result<()> {
/// let policy = RetryPolicy::default();
/// let total = retry(&db, &policy, async |txn| {
///     locker.acquire(txn, [Target::account("u1", "a1").write()]).await?;
///     // … reads and writes on `txn` …
///     Ok::<_, hierlock::Error>(42)
/// })
/// .await?;
/// # Ok(()) }
/// ```
///
/// In a spawned task (`tokio::spawn` needs a `Send` future), write the work
/// as `async move |txn| ..`: for a closure that borrows its captures
/// (`async |txn| ..`) rustc cannot yet prove the future `Send` for every
/// transaction lifetime ("implementation of `Send` is not general enough");
/// moving the captures into the closure avoids it, and the closure still
/// runs once per attempt.
///
/// # Errors
/// The work's error when it is not retryable or the last attempt failed;
/// `E::from(DbErr)` when the transaction cannot begin or commit. A commit
/// that a cluster's certification rolled back (Group Replication's 3101, or
/// 1180 with engine error 149) is retried like a deadlock. A connection lost
/// *during* the commit is not retried: whether the commit took effect is
/// unknown ([`Retryable::from_lost_commit`]; for `hierlock::Error`,
/// [`TxnState::CommitUnknown`](crate::TxnState::CommitUnknown)); make the
/// work idempotent to retry it yourself.
pub async fn retry<T, E, F>(
    db: &DatabaseConnection,
    policy: &RetryPolicy,
    mut work: F,
) -> Result<T, E>
where
    F: AsyncFnMut(&DatabaseTransaction) -> Result<T, E>,
    E: Retryable + From<DbErr>,
{
    let deadline = policy.deadline.map(|budget| Deadline {
        at: Instant::now() + budget,
        budget,
    });
    let mut attempt = 1;
    loop {
        let failure: E = match run_once(db, &mut work, deadline, policy.answer_timeout).await {
            Ok(value) => return Ok(value),
            Err(Attempt::Commit(err)) => return Err(E::from_lost_commit(err)),
            Err(Attempt::Failed(err)) => err,
        };
        if !failure.is_retryable() || attempt >= policy.max_attempts {
            return Err(failure);
        }
        let wait = policy.backoff(attempt);
        if deadline.is_some_and(|deadline| Instant::now() + wait >= deadline.at) {
            return Err(failure);
        }
        tracing::debug!(
            attempt,
            ?wait,
            "hierlock::retry: retryable failure, backing off"
        );
        tokio::time::sleep(wait).await;
        attempt += 1;
    }
}

/// How one attempt failed.
enum Attempt<E> {
    /// Before or during the work (retryable if `E` says so).
    Failed(E),
    /// The commit failed with the connection gone: its outcome is unknown.
    Commit(DbErr),
}

/// When [`retry`] gives up waiting, and the budget it was given (for messages).
#[derive(Clone, Copy)]
struct Deadline {
    at: Instant,
    budget: Duration,
}

impl Deadline {
    /// What a step unanswered at the deadline returns: a lost connection.
    fn passed(self, doing: &str) -> DbErr {
        no_answer_source(format_args!(
            "{doing}: no answer within retry's deadline of {:?}; the attempt's transaction is abandoned",
            self.budget
        ))
    }
}

/// `step`, or, if the deadline passes first, the lost connection that
/// leaves (the step is dropped).
async fn within<F: Future>(
    deadline: Option<Deadline>,
    doing: &str,
    step: F,
) -> Result<F::Output, DbErr> {
    match deadline {
        None => Ok(step.await),
        Some(deadline) => tokio::time::timeout_at(deadline.at, step)
            .await
            .map_err(|_elapsed| deadline.passed(doing)),
    }
}

/// [`within`] for one statement of the attempt's own (`BEGIN`, `ROLLBACK`,
/// `COMMIT`): also bounded by the answer timeout.
async fn answered<F: Future>(
    deadline: Option<Deadline>,
    answer_timeout: Duration,
    doing: &str,
    step: F,
) -> Result<F::Output, DbErr> {
    let bounded = tokio::time::timeout(answer_timeout, step);
    match within(deadline, doing, bounded).await? {
        Ok(output) => Ok(output),
        Err(_elapsed) => Err(no_answer_source(format_args!(
            "{doing}: no answer within retry's answer timeout of {answer_timeout:?}; \
             the attempt's transaction is abandoned"
        ))),
    }
}

async fn run_once<T, E, F>(
    db: &DatabaseConnection,
    work: &mut F,
    deadline: Option<Deadline>,
    answer_timeout: Duration,
) -> Result<T, Attempt<E>>
where
    F: AsyncFnMut(&DatabaseTransaction) -> Result<T, E>,
    E: Retryable + From<DbErr>,
{
    let failed = |err: DbErr| Attempt::Failed(E::from(err));
    let txn = answered(deadline, answer_timeout, "beginning", db.begin())
        .await
        .and_then(|begun| begun)
        .map_err(failed)?;
    // Past the deadline the transaction is dropped, which rolls it back
    // without waiting.
    let value = match within(deadline, "running the work", work(&txn)).await {
        Ok(Ok(value)) => value,
        Ok(Err(err)) => {
            // A failed rollback (the connection is gone) changes nothing:
            // the server rolls back a transaction whose connection closed.
            let _ = answered(deadline, answer_timeout, "rolling back", txn.rollback()).await;
            return Err(Attempt::Failed(err));
        }
        Err(lost) => return Err(failed(lost)),
    };
    match answered(deadline, answer_timeout, "committing", txn.commit()).await {
        Ok(Ok(())) => Ok(value),
        Ok(Err(err)) if is_connection_lost(&err) => Err(Attempt::Commit(err)),
        Ok(Err(err)) => Err(failed(err)),
        Err(lost) => Err(Attempt::Commit(lost)),
    }
}

impl From<DbErr> for Error {
    /// A failed statement of the caller's own, typed like hierlock's: a lock
    /// conflict as [`Error::LockTimeout`] / [`Error::Deadlock`] /
    /// [`Error::WouldBlock`], a lost connection as
    /// [`Error::ConnectionLost`], anything else as [`Error::Database`].
    ///
    /// The error of a protected nested save (`am.save(&lock)`, whose
    /// signature is SeaORM's) is hierlock's own, back as it was:
    /// [`Error::NotCovered`] for a row outside the proof, etc.
    fn from(err: DbErr) -> Self {
        match crate::guarantee::dense::take_carried(err) {
            Ok(error) => error,
            Err(err) => Error::from_statement("running a statement of the transaction", err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoffs_grow_jittered_and_capped() {
        let policy = RetryPolicy::default()
            .with_backoff(Duration::from_millis(10), Duration::from_millis(60));
        for _ in 0..100 {
            let first = policy.backoff(1);
            assert!(first >= Duration::from_millis(5) && first <= Duration::from_millis(10));
            let third = policy.backoff(3);
            assert!(third >= Duration::from_millis(20) && third <= Duration::from_millis(40));
            let tenth = policy.backoff(10);
            assert!(tenth >= Duration::from_millis(30) && tenth <= Duration::from_millis(60));
        }
        assert_eq!(
            RetryPolicy::default().with_max_attempts(0).max_attempts(),
            1
        );
    }
}
