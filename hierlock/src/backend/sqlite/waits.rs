//! The lock waits of SQLite acquisitions in progress, as hierlock's busy
//! handler sees them.
//!
//! SQLite calls a connection's busy handler while a statement waits for the
//! database lock, and the handler decides whether to wait on. It knows
//! neither the acquisition's deadline nor whether its future was dropped. So
//! an acquisition registers its wait here under a token, which its lock
//! statement carries ([`super::watched_write_lock`]); the handler finds the
//! token of the statement that waits and asks [`verdict`]. The registration
//! is removed when the acquisition ends, also when its future is dropped
//! mid-wait: the handler then gives up at its next call, within one
//! [`STEP`]. Other statements wait as the connection's busy timeout.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The longest sleep between two tries of the lock: how late a dropped
/// acquisition's wait ends, and a deadline is kept.
pub(crate) const STEP: Duration = Duration::from_millis(5);

/// How long an acquisition's lock statement may wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Limit {
    /// Not at all (`Wait::NoWait`).
    Now,
    /// Until this instant (`Wait::Timeout`: one deadline for the acquisition).
    Until(Instant),
    /// As long as the connection's busy timeout (`Wait::Block`).
    BusyTimeout,
}

/// The waits of acquisitions in progress, by token.
static WAITS: Mutex<BTreeMap<i64, Limit>> = Mutex::new(BTreeMap::new());

static NEXT_TOKEN: AtomicI64 = AtomicI64::new(1);

fn waits() -> MutexGuard<'static, BTreeMap<i64, Limit>> {
    // The map is never left half-changed: a panic elsewhere does not matter.
    WAITS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One acquisition's registered wait; dropping it ends the wait.
#[derive(Debug)]
#[must_use = "the wait ends when the registration is dropped"]
pub(crate) struct Registration {
    token: i64,
}

impl Registration {
    /// Register a wait of at most `limit`.
    pub(crate) fn new(limit: Limit) -> Registration {
        let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
        waits().insert(token, limit);
        Registration { token }
    }

    /// What the lock statement carries.
    pub(crate) fn token(&self) -> i64 {
        self.token
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        waits().remove(&self.token);
    }
}

/// The statement waiting on a connection, as the busy handler found it.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Waiter {
    /// Not a lock statement (or the wait is not a statement's: a prepare,
    /// a checkpoint).
    Other,
    /// hierlock's lock statement, with its token (`None`: unreadable, as
    /// when SQLite is out of memory).
    Lock(Option<i64>),
}

/// What the busy handler does next.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Stop waiting: the statement fails with `SQLITE_BUSY`.
    GiveUp,
    /// Sleep this long, then try the lock again.
    Sleep(Duration),
}

/// Whether `waiter`, which has waited `waited`, waits on, on a connection
/// whose busy timeout is `busy_timeout`.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) fn verdict(waiter: Waiter, waited: Duration, busy_timeout: Duration) -> Verdict {
    let limit = match waiter {
        // Not registered: the acquisition ended, or its future was dropped.
        Waiter::Lock(Some(token)) => waits().get(&token).copied(),
        Waiter::Lock(None) | Waiter::Other => Some(Limit::BusyTimeout),
    };
    decide(limit, waited, busy_timeout, Instant::now())
}

/// [`verdict`] for a wait of `limit` (`None`: no longer wanted), at `now`.
fn decide(limit: Option<Limit>, waited: Duration, busy_timeout: Duration, now: Instant) -> Verdict {
    let left = match limit {
        None | Some(Limit::Now) => Duration::ZERO,
        Some(Limit::Until(deadline)) => deadline.saturating_duration_since(now),
        Some(Limit::BusyTimeout) => busy_timeout.saturating_sub(waited),
    };
    if left.is_zero() {
        Verdict::GiveUp
    } else {
        Verdict::Sleep(left.min(STEP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

    #[test]
    fn other_statements_wait_as_the_busy_timeout() {
        let at = |ms| verdict(Waiter::Other, Duration::from_millis(ms), BUSY_TIMEOUT);
        assert_eq!(at(0), Verdict::Sleep(STEP));
        assert_eq!(at(4_998), Verdict::Sleep(Duration::from_millis(2)));
        assert_eq!(at(5_000), Verdict::GiveUp);
        let no_timeout = verdict(Waiter::Other, Duration::ZERO, Duration::ZERO);
        assert_eq!(no_timeout, Verdict::GiveUp);
    }

    #[test]
    fn a_lock_statement_waits_as_its_registration_says_until_it_is_dropped() {
        let block = Registration::new(Limit::BusyTimeout);
        let waiter = Waiter::Lock(Some(block.token()));
        assert_eq!(verdict(waiter, Duration::ZERO, BUSY_TIMEOUT), Verdict::Sleep(STEP));
        assert_eq!(verdict(waiter, BUSY_TIMEOUT, BUSY_TIMEOUT), Verdict::GiveUp);
        drop(block);
        // The acquisition was dropped: give up, whatever the busy timeout.
        assert_eq!(verdict(waiter, Duration::ZERO, BUSY_TIMEOUT), Verdict::GiveUp);

        let no_wait = Registration::new(Limit::Now);
        let waiter = Waiter::Lock(Some(no_wait.token()));
        assert_eq!(verdict(waiter, Duration::ZERO, BUSY_TIMEOUT), Verdict::GiveUp);
    }

    #[test]
    fn a_deadline_is_kept_to_the_step_whatever_the_busy_timeout() {
        let now = Instant::now();
        let until = Some(Limit::Until(now + Duration::from_millis(3)));
        let long_ago = Duration::from_secs(60);
        assert_eq!(
            decide(until, long_ago, BUSY_TIMEOUT, now),
            Verdict::Sleep(Duration::from_millis(3))
        );
        let later = now + Duration::from_millis(3);
        assert_eq!(decide(until, Duration::ZERO, BUSY_TIMEOUT, later), Verdict::GiveUp);
        let far = Some(Limit::Until(now + Duration::from_secs(60)));
        assert_eq!(decide(far, Duration::ZERO, BUSY_TIMEOUT, now), Verdict::Sleep(STEP));
    }

    #[test]
    fn an_unreadable_token_waits_as_the_busy_timeout() {
        let at = |ms| verdict(Waiter::Lock(None), Duration::from_millis(ms), BUSY_TIMEOUT);
        assert_eq!(at(0), Verdict::Sleep(STEP));
        assert_eq!(at(5_000), Verdict::GiveUp);
    }
}
