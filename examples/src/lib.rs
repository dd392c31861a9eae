//! The logic behind hierlock's runnable examples, kept in a library so that
//! the tests in `tests/` run exactly what the examples run.
//!
//! See `examples/README.md` for the list, in learning order.

pub mod bank;
pub mod bench;
pub mod service;
