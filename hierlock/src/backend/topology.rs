//! Where the locks would live: servers on which locks exclude nothing are
//! refused at [`Locker::connect`](crate::Locker::connect), with a typed
//! error that says why, rather than giving a silent wrong answer.
//!
//! - **Galera** (MariaDB multi-primary, `wsrep_on`): row locks are not
//!   replicated, so two nodes grant the same lock at once (measured: a
//!   session on node 2 took a plan held on node 1 in 1 ms). Refused unless
//!   every lock-taking transaction is routed to one node and the
//!   configuration says so ([`Config::with_galera_single_writer`]).
//! - **Read-only servers and replicas** (`@@read_only`, `@@super_read_only`,
//!   a read-only session, a running replication thread on MariaDB,
//!   PostgreSQL in recovery): a lock taken there excludes nothing on the
//!   primary, and PostgreSQL refuses advisory locks on a hot standby.
//!
//! - **Distributed SQL engines** behind MySQL's or PostgreSQL's protocol
//!   (TiDB, Vitess, CockroachDB, YugabyteDB), told by their version string:
//!   their locks do not exclude as hierlock needs.
//!
//! Two queries per [`Locker`](crate::Locker), at connect.

use std::fmt;

use sea_orm::{ConnectionTrait, QueryResult, Statement};

use crate::backend::dialect::Dialect;
use crate::config::Config;
use crate::error::{Error, Result};

/// The deployment a [`Locker`](crate::Locker) found at connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Topology {
    /// One server that takes writes (or SQLite).
    Single,
    /// A Galera cluster of `nodes` nodes, used with
    /// [`Config::with_galera_single_writer`]: exclusion holds only while
    /// every lock-taking transaction runs on one node.
    GaleraSingleWriter {
        /// `wsrep_cluster_size` at connect.
        nodes: u32,
    },
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Topology::Single => f.write_str("a single writable server"),
            Topology::GaleraSingleWriter { nodes } => write!(
                f,
                "a Galera cluster of {nodes} node(s), every lock-taking transaction on one node"
            ),
        }
    }
}

/// What the server says about itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Facts {
    pub(crate) read_only: bool,
    pub(crate) super_read_only: bool,
    pub(crate) session_read_only: bool,
    pub(crate) replicating: bool,
    pub(crate) in_recovery: bool,
    /// `Some(size)` on a Galera node (`wsrep_on`).
    pub(crate) galera_nodes: Option<u32>,
}

/// Ask the server what it is, and refuse what locks cannot work on.
///
/// # Errors
/// [`Error::UnsafeTopology`] for a Galera node (unless opted in), a
/// read-only server, a replica or a standby; [`Error::Database`] if the
/// server cannot be asked.
pub(crate) async fn check(
    db: &impl ConnectionTrait,
    dialect: Dialect,
    version: Option<&str>,
    config: &Config,
) -> Result<Topology> {
    // First, before queries such an engine may not answer: a distributed
    // SQL engine behind a MySQL or PostgreSQL protocol (docs/topologies.md,
    // "Distributed SQL"), told apart by its version string.
    if let Some(version) = version
        && let Some(reason) = distributed_engine(version)
    {
        return Err(Error::UnsafeTopology {
            reason: format!(
                "this server is {reason} (version {version:?}); see docs/topologies.md"
            ),
        });
    }
    let facts = facts(db, dialect).await?;
    judge(dialect, facts, config.galera_single_writer())
}

/// Why an engine with this version string is refused, if it is one.
pub(crate) fn distributed_engine(version: &str) -> Option<&'static str> {
    let lower = version.to_ascii_lowercase();
    if lower.contains("tidb") {
        Some(
            "TiDB: its shared row locks are an error by default and no-ops under \
             tidb_enable_noop_functions, so hierlock's ancestor locks would not exclude",
        )
    } else if lower.contains("vitess") {
        Some(
            "Vitess: row locks hold per shard, and the bucket table's placement, cancellation \
             and lock views are not known to hierlock",
        )
    } else if lower.contains("cockroachdb") {
        Some(
            "CockroachDB: its advisory lock functions are not real locks, and FOR SHARE \
             does not lock under SERIALIZABLE",
        )
    } else if version.contains("-YB-") {
        Some(
            "YugabyteDB: without wait queues conflicting locks abort instead of waiting, and \
             advisory locks are missing from older versions",
        )
    } else {
        None
    }
}

async fn facts(db: &impl ConnectionTrait, dialect: Dialect) -> Result<Facts> {
    let backend = dialect.backend();
    let sql = match dialect {
        Dialect::Sqlite => return Ok(Facts::default()),
        Dialect::MariaDb => {
            "SELECT CAST(@@GLOBAL.read_only AS SIGNED) AS read_only, \
             CAST(@@SESSION.tx_read_only AS SIGNED) AS session_read_only, \
             CAST(@@GLOBAL.wsrep_on AS SIGNED) AS wsrep_on, \
             CAST(COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
                  WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE'), '0') AS SIGNED) AS cluster_size, \
             CAST(COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
                  WHERE VARIABLE_NAME = 'SLAVES_RUNNING'), '0') AS SIGNED) AS replicating"
        }
        // `wsrep_on` exists on MySQL only in Galera builds (Percona XtraDB
        // Cluster): read it where it may be missing.
        Dialect::MySql => {
            "SELECT CAST(@@GLOBAL.read_only AS SIGNED) AS read_only, \
             CAST(@@GLOBAL.super_read_only AS SIGNED) AS super_read_only, \
             CAST(@@SESSION.transaction_read_only AS SIGNED) AS session_read_only, \
             CAST(COALESCE((SELECT VARIABLE_VALUE = 'ON' FROM performance_schema.global_variables \
                  WHERE VARIABLE_NAME = 'wsrep_on'), 0) AS SIGNED) AS wsrep_on, \
             CAST(COALESCE((SELECT VARIABLE_VALUE FROM performance_schema.global_status \
                  WHERE VARIABLE_NAME = 'wsrep_cluster_size'), '0') AS SIGNED) AS cluster_size"
        }
        Dialect::Postgres => {
            "SELECT pg_is_in_recovery()::int::int8 AS in_recovery, \
             (current_setting('transaction_read_only') = 'on')::int::int8 AS session_read_only"
        }
    };
    let row = db
        .query_one_raw(Statement::from_string(backend, sql))
        .await
        .map_err(|e| Error::database("asking the server about its topology", e))?;
    let Some(row) = row else {
        return Ok(Facts::default());
    };
    let flag = |column: &str| get(&row, column).is_some_and(|v| v != 0);
    let galera = flag("wsrep_on").then(|| {
        get(&row, "cluster_size")
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0)
    });
    Ok(Facts {
        read_only: flag("read_only"),
        super_read_only: flag("super_read_only"),
        session_read_only: flag("session_read_only"),
        replicating: flag("replicating"),
        in_recovery: flag("in_recovery"),
        galera_nodes: galera,
    })
}

fn get(row: &QueryResult, column: &str) -> Option<i64> {
    row.try_get::<Option<i64>>("", column).ok().flatten()
}

/// The verdict on `facts`.
pub(crate) fn judge(
    dialect: Dialect,
    facts: Facts,
    galera_single_writer: bool,
) -> Result<Topology> {
    let refuse = |reason: String| Err(Error::UnsafeTopology { reason });
    if facts.in_recovery {
        return refuse(format!(
            "this {dialect:?} server is a hot standby (pg_is_in_recovery()): advisory and row locks \
             taken there exclude nothing on the primary; connect the locker to the primary"
        ));
    }
    if facts.replicating {
        return refuse(format!(
            "this {dialect:?} server is a replica (a replication thread is running): locks taken \
             there exclude nothing on the primary; connect the locker to the primary"
        ));
    }
    let read_only = [
        (facts.super_read_only, "@@super_read_only"),
        (facts.read_only, "@@read_only"),
        (
            facts.session_read_only,
            "the session is read-only (transaction_read_only)",
        ),
    ]
    .into_iter()
    .find_map(|(set, name)| set.then_some(name));
    if let Some(name) = read_only {
        return refuse(format!(
            "this {dialect:?} server is read-only ({name}): it is a replica or a server being \
             failed over, and locks taken there exclude nothing on the primary; connect the locker \
             to the primary"
        ));
    }
    match facts.galera_nodes {
        None => Ok(Topology::Single),
        Some(nodes) if galera_single_writer => Ok(Topology::GaleraSingleWriter { nodes }),
        Some(nodes) => refuse(format!(
            "this {dialect:?} server is a Galera node (wsrep_on, {nodes} node(s) in the cluster): \
             Galera does not replicate row locks, so two transactions on two nodes both get the \
             same lock and neither waits; route every lock-taking transaction to one node (a \
             single-writer proxy setup) and say so with Config::with_galera_single_writer()"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn refused(facts: Facts) -> String {
        let err = judge(Dialect::MariaDb, facts, false).expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::UnsafeTopology);
        assert!(!err.is_retryable());
        err.to_string()
    }

    #[test]
    fn each_unsafe_fact_is_refused_with_its_reason() {
        let galera = Facts {
            galera_nodes: Some(3),
            ..Facts::default()
        };
        assert!(refused(galera).contains("Galera node (wsrep_on, 3 node(s)"));
        assert!(
            refused(Facts {
                read_only: true,
                ..Facts::default()
            })
            .contains("@@read_only")
        );
        assert!(
            refused(Facts {
                super_read_only: true,
                read_only: true,
                ..Facts::default()
            })
            .contains("@@super_read_only")
        );
        assert!(
            refused(Facts {
                replicating: true,
                ..Facts::default()
            })
            .contains("replica")
        );
        assert!(
            refused(Facts {
                in_recovery: true,
                ..Facts::default()
            })
            .contains("hot standby")
        );
    }

    #[test]
    fn distributed_engines_are_told_by_their_version() {
        for (version, engine) in [
            ("8.0.11-TiDB-v7.5.0", "TiDB"),
            ("8.0.30-Vitess", "Vitess"),
            (
                "CockroachDB CCL v23.1.11 (x86_64-pc-linux-gnu)",
                "CockroachDB",
            ),
            (
                "PostgreSQL 11.2-YB-2.20.0.0-b0 on x86_64-pc-linux-gnu",
                "YugabyteDB",
            ),
        ] {
            let reason = distributed_engine(version).expect(version);
            assert!(reason.starts_with(engine), "{version}: {reason}");
        }
        for version in [
            "10.11.19-MariaDB-0+deb12u1",
            "9.7.4-2",
            "PostgreSQL 15.20 (Debian 15.20-0+deb12u1) on x86_64-pc-linux-gnu",
        ] {
            assert_eq!(distributed_engine(version), None, "{version}");
        }
    }

    #[test]
    fn a_single_writable_server_and_an_opted_in_galera_are_accepted() {
        assert_eq!(
            judge(Dialect::MySql, Facts::default(), false).expect("single"),
            Topology::Single
        );
        let galera = Facts {
            galera_nodes: Some(3),
            ..Facts::default()
        };
        assert_eq!(
            judge(Dialect::MariaDb, galera, true).expect("opted in"),
            Topology::GaleraSingleWriter { nodes: 3 }
        );
        // A read-only Galera node is refused even when opted in.
        let read_only_galera = Facts {
            read_only: true,
            ..galera
        };
        assert!(judge(Dialect::MariaDb, read_only_galera, true).is_err());
    }
}
