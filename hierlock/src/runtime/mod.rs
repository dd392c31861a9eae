//! Taking locks at run time: [acquisition](acquire) on the caller's
//! transaction (with the rows it protects: [`reading`]), [handles](handle) that own theirs, the [retry] loop, and what
//! an acquisition reports ([`telemetry`]).

pub(crate) mod acquire;
pub(crate) mod handle;
pub(crate) mod reading;
pub(crate) mod retry;
pub(crate) mod telemetry;
