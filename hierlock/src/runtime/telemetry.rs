//! What an acquisition reports to the `metrics` facade, for Prometheus or any
//! other exporter the application installs (nothing is recorded without one).
//!
//! - `hierlock_acquisitions_total{level, outcome}`: acquisitions by the level
//!   of their most specific target and how they ended: `locked`, or the
//!   error kind (`would_block`, `lock_timeout`, `deadlock`,
//!   `connection_lost`, …);
//! - `hierlock_acquisition_seconds{level}`: how long acquisitions took,
//!   waits included (a histogram).

use std::time::Duration;

use crate::error::{ErrorKind, Result};
use crate::model::level::Level;

/// Record one acquisition.
pub(crate) fn record(level: Level, outcome: &Result<()>, took: Duration) {
    let outcome = match outcome {
        Ok(()) => "locked",
        Err(err) => kind_label(err.kind()),
    };
    metrics::counter!(
        "hierlock_acquisitions_total",
        "level" => level.name(),
        "outcome" => outcome
    )
    .increment(1);
    metrics::histogram!("hierlock_acquisition_seconds", "level" => level.name())
        .record(took.as_secs_f64());
}

fn kind_label(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::EmptyId => "empty_id",
        ErrorKind::InvalidConfig => "invalid_config",
        ErrorKind::NotProvisioned => "not_provisioned",
        ErrorKind::ConfigMismatch => "config_mismatch",
        ErrorKind::WouldBlock => "would_block",
        ErrorKind::LockTimeout => "lock_timeout",
        ErrorKind::Deadlock => "deadlock",
        ErrorKind::NotCovered => "not_covered",
        ErrorKind::Conflict => "conflict",
        ErrorKind::Misuse => "misuse",
        ErrorKind::UnsafeTopology => "unsafe_topology",
        ErrorKind::ConnectionLost => "connection_lost",
        ErrorKind::PoolTimeout => "pool_timeout",
        ErrorKind::Database => "database",
    }
}
