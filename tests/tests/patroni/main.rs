//! hierlock on a real Patroni cluster: one etcd, three PostgreSQL 15
//! members, HAProxy in front routing to the leader by Patroni's REST health
//! check (`GET /primary`).
//!
//! The leader is accepted (directly and through HAProxy; `Topology::Single`),
//! the replicas are refused as hot standbys, with advisory locks and with the
//! bucket table. A failover — `kill -9` of the leader's Patroni and
//! postmaster, or the leader cut from etcd while clients still reach it — is
//! typed errors on the old leader (`ConnectionLost`, `CommitUnknown` for a
//! COMMIT in flight), and `retry` through HAProxy completes on the new
//! leader; the old leader stops granting locks before the new one starts.
//!
//! The cluster: `tests/clusters/patroni.sh start` (as root; `tests/run` does
//! it), members on `HIERLOCK_PATRONI_URLS` (comma-separated, default
//! `postgres://postgres@127.0.0.1:5450/test,…:5451/test,…:5452/test`),
//! HAProxy on `HIERLOCK_PATRONI_HAPROXY_URL` (default
//! `postgres://postgres@127.0.0.1:5460/test`). An unreachable cluster fails
//! the tests. The failover tests run the script (kill, partition, heal), so
//! they need the cluster it started, on this machine.
//!
//! The tests run one at a time, also across processes
//! (`patroni::exclusive` holds 127.0.0.1:4597).

mod exclusion;
mod failover;
mod no_leader;
mod patroni;
mod topology;
