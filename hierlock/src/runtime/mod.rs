//! Taking locks at run time: [acquisition](acquire) on the caller's
//! transaction, [handles](handle) that own theirs, the [retry] loop, and what
//! an acquisition reports ([`telemetry`]).

pub(crate) mod acquire;
pub(crate) mod handle;
pub(crate) mod retry;
pub(crate) mod telemetry;
