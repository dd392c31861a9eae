//! A crate cannot forge a lock proof by implementing `WriteProof` on its own
//! type around a transaction (or a read proof).

use hierlock::proof::AccountLevel;
use hierlock::{LockSet, Locked, WriteProof};

struct Forged<'t>(Locked<'t, AccountLevel, hierlock::proof::Read>);

impl WriteProof<AccountLevel> for Forged<'_> {
    fn lock_set(&self) -> &LockSet<'_> {
        self.0.lock_set()
    }
}

fn main() {}
