//! What hierlock knows of each server: which one it is and the SQL it gets
//! ([`dialect`], with the statements of [`mysql`], [`postgres`] and
//! [`sqlite`]), what its error codes mean ([`classify`]), how a waiting
//! statement is interrupted ([`cancel`], with the [`fence`] each such
//! statement takes and the [`waiter`] that names it; on SQLite, in its busy handler) and
//! where its locks would not exclude ([`topology`]).

pub(crate) mod bucket_rows;
pub(crate) mod cancel;
pub(crate) mod classify;
pub(crate) mod dialect;
pub(crate) mod fence;
pub(crate) mod mysql;
pub(crate) mod postgres;
pub(crate) mod row_read;
pub(crate) mod run;
pub(crate) mod sqlite;
pub(crate) mod topology;
pub(crate) mod waiter;
