//! The compile-time guarantee: lock [proofs](proof) and the
//! [protected](protect) writes that demand them.

pub mod proof;
pub(crate) mod protect;
pub(crate) mod guard;
pub(crate) mod dense;
