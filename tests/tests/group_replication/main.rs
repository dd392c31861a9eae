//! hierlock on a real 3-member MySQL Group Replication group (issue 20).
//!
//! Group Replication does not replicate row locks: each member's InnoDB
//! grants its own. In multi-primary mode two members grant the same lock, so
//! `Locker::connect` refuses every member unless
//! `Config::with_group_replication_single_writer()` says every lock-taking
//! transaction runs on one member; in single-primary mode the primary is
//! accepted, its locks exclude, the secondaries are refused, and a failover
//! (`kill -9` of the primary) is typed errors and a new primary ~20 s later.
//! Certification failures at COMMIT (3101, 1180 with engine error 149) are
//! retryable deadlocks.
//!
//! The group: `tests/clusters/group-replication.sh start` (as root;
//! `tests/run` does it), members on `HIERLOCK_GROUP_URLS` (comma-separated,
//! default `mysql://root@127.0.0.1:3330/test,…:3331/test,…:3332/test`), member
//! 1 the primary. An unreachable group fails the tests. The tests that switch
//! the group to multi-primary, kill the primary and restore the group run the
//! script, so they need the group it started, on this machine.
//!
//! The tests run one at a time, also across processes (`group::exclusive`
//! holds 127.0.0.1:4598): they change the group's mode and membership.

mod classification;
mod exclusion;
mod failover;
mod group;
mod topology;
