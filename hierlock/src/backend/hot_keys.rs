//! Keys another transaction held a moment ago, so that an acquisition on
//! them skips the try that would fail.
//!
//! On the MySQL family an acquisition that may wait first sends its plan
//! with `NOWAIT`: uncontended, that is the whole acquisition, one round
//! trip. When the try fails, the acquisition reads its connection's id (so
//! that a cancellation finds the statement) and sends the statement that
//! waits, with its fence. On a hot key the try fails nearly every time, one
//! statement spent for nothing while the key is wanted. So a failed try
//! marks the plan's exclusive keys, and for [`HOT_FOR`] after, a plan with a
//! marked exclusive key goes straight to the waiting path. Nothing else
//! changes: it is the path a failed try takes, with the same statements
//! after it. A key that cools down costs, for at most [`HOT_FOR`], the two
//! round trips of the waiting path in place of the one of the try.
//!
//! The marks are timestamps in a fixed table indexed by a hash of the key
//! (a cold key that shares a slot with a hot one is taken as hot: the same
//! waiting path, no other effect), shared by the clones of a `Locker`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::model::plan::{LockMode, PlannedLock};

/// How long a key stays hot after a failed try.
pub(crate) const HOT_FOR: Duration = Duration::from_millis(500);

/// Slots of the table (a power of two).
const SLOTS: usize = 4096;

/// The last failed try on each slot's keys (see the module docs).
pub(crate) struct HotKeys {
    /// Milliseconds since `epoch`, plus one, of the last failed try; 0: none.
    slots: Box<[AtomicU64]>,
    epoch: Instant,
}

impl std::fmt::Debug for HotKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HotKeys").finish_non_exhaustive()
    }
}

impl HotKeys {
    pub(crate) fn new() -> Self {
        HotKeys {
            slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            epoch: Instant::now(),
        }
    }

    /// Whether one of `locks`' exclusive keys had a failed try within
    /// [`HOT_FOR`].
    pub(crate) fn any_hot(&self, locks: &[PlannedLock]) -> bool {
        let now = self.now();
        let hot_for = HOT_FOR.as_millis() as u64;
        exclusive(locks).any(|slot| {
            let marked = self.slots[slot].load(Ordering::Relaxed);
            marked != 0 && now.saturating_sub(marked) < hot_for
        })
    }

    /// A try of `locks` failed: mark their exclusive keys.
    pub(crate) fn mark(&self, locks: &[PlannedLock]) {
        let now = self.now();
        for slot in exclusive(locks) {
            self.slots[slot].store(now, Ordering::Relaxed);
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
    }
}

/// The slots of `locks`' exclusive keys.
fn exclusive(locks: &[PlannedLock]) -> impl Iterator<Item = usize> + '_ {
    locks
        .iter()
        .filter(|l| l.mode == LockMode::Exclusive)
        .map(|l| {
            let key = (l.key.level as u64) << 56 ^ l.key.slot as u64;
            // Fibonacci hashing: the top bits of a multiplicative hash.
            (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::level::Level;
    use crate::model::plan::LockKey;

    fn lock(slot: i64, mode: LockMode) -> PlannedLock {
        PlannedLock {
            key: LockKey::node(Level::Resource, slot),
            mode,
        }
    }

    #[test]
    fn a_failed_try_marks_its_exclusive_keys_for_a_while() {
        let hot = HotKeys::new();
        let plan = [lock(1, LockMode::Shared), lock(2, LockMode::Exclusive)];
        assert!(!hot.any_hot(&plan));
        hot.mark(&plan);
        assert!(hot.any_hot(&plan));
        assert!(hot.any_hot(&[lock(2, LockMode::Exclusive)]));
        // A shared key is not marked, and no other key is hot.
        assert!(!hot.any_hot(&[lock(1, LockMode::Exclusive)]));
        assert!(!hot.any_hot(&[lock(3, LockMode::Exclusive)]));
        // Marked long ago: cold again.
        let slot = exclusive(&plan).next().expect("a slot");
        hot.slots[slot].store(1, Ordering::Relaxed);
        std::thread::sleep(HOT_FOR + Duration::from_millis(10));
        assert!(!hot.any_hot(&plan));
    }
}
