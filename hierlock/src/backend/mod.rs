//! What hierlock knows of each server: the SQL it accepts
//! ([`dialect`]), what its error codes mean ([`classify`]), how a waiting
//! statement is interrupted ([`cancel`]) and where its locks would not
//! exclude ([`topology`]).

pub(crate) mod cancel;
pub(crate) mod classify;
pub(crate) mod dialect;
pub(crate) mod topology;
