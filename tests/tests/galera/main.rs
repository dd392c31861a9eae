//! hierlock on a real 3-node MariaDB Galera cluster (issue 13).
//!
//! Galera does not replicate row locks: each node's InnoDB grants its own.
//! These tests show what that means for hierlock and that `Locker::connect`
//! says so: a Galera node is refused by default, accepted with
//! `Config::with_galera_single_writer()`, locks exclude each other on one
//! node and not across nodes, and a writer node that dies is
//! `ErrorKind::ConnectionLost` for its clients.
//!
//! The cluster: `tests/clusters/galera.sh start` (as root; `tests/run` does it),
//! nodes on `HIERLOCK_GALERA_URLS` (comma-separated, default
//! `mysql://root@127.0.0.1:3320/test,…:3321/test,…:3322/test`). An unreachable
//! cluster fails the tests. The failover test kills the last node with
//! `kill -9` and brings it back with `galera.sh restart-node`, so it needs the
//! cluster that script started, on this machine.
//!
//! The tests run one at a time, also across processes (`cluster::exclusive`
//! holds 127.0.0.1:4599): the failover test shrinks the cluster that the
//! others count, and two runs would share its tables.

mod cluster;
mod exclusion;
mod failover;
mod topology;
