//! The fences a connection keeps between its statements (MySQL family).
//!
//! A MySQL-family fence is a session lock (`GET_LOCK`), which `COMMIT` does
//! not end. Let go by a statement of its own right after the grant, it
//! would cost a round trip while the acquisition holds its locks: a third
//! of a hot row's hold where round trips dominate. So the fence stays
//! taken, and the connection's next statement that waits lets it go, in
//! the branch that takes its own fence: a connection keeps at most the
//! fence of its last wait between requests, a lock nobody else asks for.
//!
//! A fence is let go only once no cancellation of its statement can still
//! reach the server: a cancellation that found it free would take the
//! statement for one that has not reached its fence, and end the session,
//! which by then runs another request (an acquisition dropped as its
//! statement was granted, its connection reused before the cancellation
//! ran). Those fences stay kept until their cancellation has run, or, if
//! its round trip failed or timed out (the server may still run it), until
//! [`UNSETTLED_GRACE`] has passed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::backend::fence::Fence;

/// How long the fences of a cancellation whose round trip failed stay
/// kept: the server may run a statement its client gave up on, but not
/// this much later (a cancellation takes no lock that waits).
pub(super) const UNSETTLED_GRACE: Duration = Duration::from_secs(60);

/// The most connections whose fences are remembered. Past it the
/// connection that kept a fence longest ago is forgotten (most likely one
/// that has closed, whose fences went with it; else its fences stay taken
/// until it closes: locks nobody else asks for).
const MAX_CONNECTIONS: usize = 4096;

/// The fences kept on each connection (by the server's id of it), and the
/// cancellations that may still reach a fence.
#[derive(Debug, Default)]
pub(super) struct Kept {
    /// Each connection's fences, and when it last kept one (a count).
    by_connection: HashMap<i64, (u64, Vec<Fence>)>,
    /// How many fences were kept so far: the clock of those stamps.
    kept: u64,
    /// Fences of cancellations being sent.
    in_flight: Vec<Fence>,
    /// Fences of cancellations whose round trip failed, and when it did.
    unsettled: Vec<(Fence, Instant)>,
}

impl Kept {
    /// `fence` stays taken on `connection` after its statement.
    pub(super) fn keep(&mut self, connection: i64, fence: Fence) {
        if !fence.locks() {
            return;
        }
        if self.by_connection.len() >= MAX_CONNECTIONS && !self.by_connection.contains_key(&connection) {
            let oldest = self.by_connection.iter().min_by_key(|(_, (at, _))| *at).map(|(c, _)| *c);
            if let Some(oldest) = oldest {
                self.by_connection.remove(&oldest);
            }
        }
        self.kept += 1;
        let entry = self.by_connection.entry(connection).or_default();
        entry.0 = self.kept;
        entry.1.push(fence);
    }

    /// The fences kept on `connection` that its next statement may let go:
    /// those no cancellation can still reach (`queued`: whether one waits
    /// for the side connection). The others stay kept.
    pub(super) fn releasable(&mut self, connection: i64, queued: impl Fn(Fence) -> bool) -> Vec<Fence> {
        let now = Instant::now();
        self.unsettled.retain(|(_, at)| now.duration_since(*at) < UNSETTLED_GRACE);
        let Some((at, kept)) = self.by_connection.remove(&connection) else {
            return Vec::new();
        };
        let reachable = |fence: &Fence| {
            queued(*fence) || self.in_flight.contains(fence) || self.unsettled.iter().any(|(f, _)| f == fence)
        };
        let (stay, go): (Vec<Fence>, Vec<Fence>) = kept.into_iter().partition(reachable);
        if !stay.is_empty() {
            self.by_connection.insert(connection, (at, stay));
        }
        go
    }

    /// A batch of cancellations (their fences) is being sent.
    pub(super) fn sending(&mut self, fences: impl IntoIterator<Item = Fence>) {
        self.in_flight = fences.into_iter().collect();
    }

    /// The batch being sent was answered (`settled`), or its round trip
    /// failed: the server may still run it.
    pub(super) fn sent(&mut self, settled: bool) {
        let now = Instant::now();
        let fences = std::mem::take(&mut self.in_flight);
        if !settled {
            self.unsettled.extend(fences.into_iter().map(|f| (f, now)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_is_let_go_once_no_cancellation_can_reach_it() {
        let (a, b, c) = (Fence::next(true), Fence::next(true), Fence::next(true));
        let mut kept = Kept::default();
        kept.keep(7, a);
        kept.keep(7, b);
        kept.keep(8, c);
        // `a`'s cancellation waits for the side connection: `b` only.
        assert_eq!(kept.releasable(7, |f| f == a), vec![b]);
        // Being sent: still kept.
        kept.sending([a]);
        assert_eq!(kept.releasable(7, |_| false), Vec::<Fence>::new());
        // Answered: let go.
        kept.sent(true);
        assert_eq!(kept.releasable(7, |_| false), vec![a]);
        assert_eq!(kept.releasable(7, |_| false), Vec::<Fence>::new());
        // A round trip that failed keeps its fences for the grace.
        kept.sending([c]);
        kept.sent(false);
        assert_eq!(kept.releasable(8, |_| false), Vec::<Fence>::new());
        kept.unsettled[0].1 = Instant::now().checked_sub(UNSETTLED_GRACE).expect("an earlier instant");
        assert_eq!(kept.releasable(8, |_| false), vec![c]);
    }

    #[test]
    fn past_the_most_connections_the_one_that_kept_longest_ago_is_forgotten() {
        let mut kept = Kept::default();
        for connection in 0..MAX_CONNECTIONS as i64 {
            kept.keep(connection, Fence::next(true));
        }
        // Connection 0 keeps again: connection 1 is now the oldest.
        kept.keep(0, Fence::next(true));
        let newest = Fence::next(true);
        kept.keep(-1, newest);
        assert_eq!(kept.by_connection.len(), MAX_CONNECTIONS);
        assert!(kept.releasable(1, |_| false).is_empty(), "forgotten");
        assert_eq!(kept.releasable(0, |_| false).len(), 2);
        assert_eq!(kept.releasable(-1, |_| false), vec![newest]);
    }

    #[test]
    fn a_mark_is_not_kept() {
        let mut kept = Kept::default();
        kept.keep(7, Fence::next(false));
        assert!(kept.releasable(7, |_| false).is_empty());
    }
}
