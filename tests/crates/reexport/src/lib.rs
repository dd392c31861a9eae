//! A platform crate that re-exports hierlock (as `hl`), so that the crates
//! built on it do not depend on hierlock themselves: they write
//! `crate = ::hierlock_layout_reexport::hl` in both attributes
//! (see `tests/crates/reexport-user`).

pub use hierlock as hl;
