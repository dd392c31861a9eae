//! hierlock on deployments other than one writable server (issue 13).
//!
//! - `replicas`: `Locker::connect` refuses a MariaDB replica, a read-only
//!   MariaDB server and a PostgreSQL hot standby with
//!   `ErrorKind::UnsafeTopology`, and accepts their primaries.
//! - `pgbouncer`: through pgbouncer in transaction mode (with the settings
//!   docs/topologies.md documents), locks block, time out, are cancelled and
//!   commit and roll back with their transaction; without those settings the
//!   connection fails, and the tests say how.
//!
//! The servers come from `tests/clusters/replicas.sh start` and
//! `tests/clusters/pgbouncer.sh start`; their URLs can be overridden with the
//! environment variables in `support`. An unreachable server fails the test,
//! it never skips it.

mod pgbouncer;
mod replicas;
mod support;
