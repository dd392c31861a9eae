//! The fence of a statement that may wait: a lock unique to the statement,
//! which it takes after its locks and a cancellation takes before it
//! interrupts (see [`cancel`](super::cancel)). The statements of each server
//! take it; the cancellation's own steps are in `cancel`.

/// A lock unique to one statement that may wait, taken by that statement
/// after its locks and by a cancellation before it checks and interrupts
/// (see [`cancel`](super::cancel)).
///
/// Some MariaDB Galera releases refuse `GET_LOCK` (1235, "GET_LOCK in
/// cluster"): there the fence is only a mark in the statement's text, which
/// the cancellation's check looks for in `PROCESSLIST`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Fence {
    token: u64,
    /// Whether the statement takes a lock (else: marks its text).
    locks: bool,
}

impl Fence {
    /// A fence no other statement of this process gets, and another
    /// process only by chance (62 random bits): a random start, then a
    /// counter. `locks`: a lock, or only a mark (where `GET_LOCK` is refused).
    pub(crate) fn next(locks: bool) -> Fence {
        use std::hash::{BuildHasher, Hasher};
        use std::sync::OnceLock;
        use std::sync::atomic::{AtomicU64, Ordering};
        static START: OnceLock<u64> = OnceLock::new();
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let start = *START.get_or_init(|| {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u32(std::process::id());
            hasher.finish()
        });
        let token = start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed));
        Fence {
            token: token & ((1 << 62) - 1),
            locks,
        }
    }

    /// Whether the statement takes the fence as a lock (everywhere but on a
    /// server that refuses `GET_LOCK`).
    pub(crate) fn locks(self) -> bool {
        self.locks
    }

    /// MySQL and MariaDB: the name of its `GET_LOCK` lock (at most 64
    /// characters), or of its mark in the statement's text.
    pub(crate) fn mysql_name(self) -> String {
        format!("hierlock_fence_{:016x}", self.token)
    }

    /// PostgreSQL: its advisory lock's two `int4` keys (a lock space apart
    /// from hierlock's own `bigint` keys), each non-negative.
    pub(crate) fn postgres_keys(self) -> (i32, i32) {
        let half = |bits: u64| i32::try_from(bits & 0x7fff_ffff).unwrap_or_default();
        (half(self.token >> 31), half(self.token))
    }
}

/// What a statement that may wait does with fences: takes its own after
/// its locks, then, on the MySQL family, lets go of those its connection
/// kept from earlier statements, which no cancellation can reach any more
/// (see `cancel::kept`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fencing {
    pub(crate) own: Fence,
    pub(crate) releasing: Vec<Fence>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_are_distinct_and_fit_their_servers() {
        let fences: Vec<Fence> = (0..1000).map(|_| Fence::next(true)).collect();
        let distinct: std::collections::HashSet<_> = fences.iter().collect();
        assert_eq!(distinct.len(), fences.len());
        let keys: std::collections::HashSet<_> = fences.iter().map(|f| f.postgres_keys()).collect();
        assert_eq!(keys.len(), fences.len(), "PostgreSQL's keys are distinct too");
        for fence in fences {
            assert!(fence.mysql_name().len() <= 64);
            let (high, low) = fence.postgres_keys();
            assert!(high >= 0 && low >= 0);
        }
    }
}
