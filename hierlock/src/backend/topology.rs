//! Where the locks would live: servers on which locks exclude nothing are
//! refused at [`Locker::connect`](crate::Locker::connect), with a typed
//! error that says why, rather than giving a silent wrong answer.
//!
//! - **Galera** (MariaDB multi-primary, `wsrep_on`): row locks are not
//!   replicated, so two nodes grant the same lock at once (measured: a
//!   session on node 2 took a plan held on node 1 in 1 ms). Refused unless
//!   every lock-taking transaction is routed to one node and the
//!   configuration says so ([`Config::with_galera_single_writer`]).
//! - **MySQL Group Replication** (InnoDB Cluster) in multi-primary mode
//!   (`group_replication_single_primary_mode = OFF`, or more than one ONLINE
//!   PRIMARY): row locks are per member, so two members grant the same lock
//!   (measured on MySQL 9.7: a write lock held on member 1 did not stop
//!   member 2). Refused unless every lock-taking transaction is routed to one
//!   member ([`Config::with_group_replication_single_writer`]). In
//!   single-primary mode the primary is accepted and the secondaries refused,
//!   as is a member that is not ONLINE.
//! - **Read-only servers and replicas** (`@@read_only`, `@@super_read_only`,
//!   a read-only session, a running replication thread on MariaDB,
//!   PostgreSQL in recovery): a lock taken there excludes nothing on the
//!   primary, and PostgreSQL refuses advisory locks on a hot standby.
//!
//! - **Distributed SQL engines** behind MySQL's or PostgreSQL's protocol
//!   (TiDB, Vitess, CockroachDB, YugabyteDB), told by their version string:
//!   their locks do not exclude as hierlock needs.
//!
//! Two queries per [`Locker`](crate::Locker), at connect (three on a Group
//! Replication member).

use std::fmt;

use sea_orm::{ConnectionTrait, QueryResult, Statement};

use crate::backend::classify::is_connection_lost;
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
    /// A member of a MySQL Group Replication group (InnoDB Cluster) that
    /// takes writes: the primary of a single-primary group, or a member of a
    /// multi-primary group used with
    /// [`Config::with_group_replication_single_writer`] (exclusion holds
    /// only while every lock-taking transaction runs on one member).
    GroupReplication {
        /// The group's mode.
        mode: GroupMode,
        /// ONLINE members at connect; `None` when the locker's user may not
        /// read `performance_schema.replication_group_members`.
        members: Option<u32>,
        /// This member's role (`None` as for `members`): always
        /// [`MemberRole::Primary`] for an accepted member.
        role: Option<MemberRole>,
    },
}

/// The mode of a MySQL Group Replication group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GroupMode {
    /// One member takes writes (`group_replication_single_primary_mode = ON`).
    SinglePrimary,
    /// Every member takes writes.
    MultiPrimary,
}

/// A Group Replication member's `MEMBER_ROLE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemberRole {
    /// Takes writes.
    Primary,
    /// Read-only, applying the primary's transactions.
    Secondary,
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Topology::Single => f.write_str("a single writable server"),
            Topology::GaleraSingleWriter { nodes } => write!(
                f,
                "a Galera cluster of {nodes} node(s), every lock-taking transaction on one node"
            ),
            Topology::GroupReplication {
                mode,
                members,
                role,
            } => {
                let name = match mode {
                    GroupMode::SinglePrimary => "single-primary",
                    GroupMode::MultiPrimary => "multi-primary",
                };
                write!(f, "a MySQL Group Replication group ({name}")?;
                match members {
                    Some(n) => write!(f, ", {n} ONLINE member(s)")?,
                    None => f.write_str(", members not readable")?,
                }
                match role {
                    Some(MemberRole::Primary) => f.write_str("), this member PRIMARY")?,
                    Some(MemberRole::Secondary) => f.write_str("), this member SECONDARY")?,
                    None => f.write_str(")")?,
                }
                if *mode == GroupMode::MultiPrimary {
                    f.write_str(", every lock-taking transaction on one member")?;
                }
                Ok(())
            }
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
    /// On a MySQL server with Group Replication configured (the plugin
    /// loaded, `group_replication_group_name` set).
    pub(crate) group: Option<GroupFacts>,
}

/// What a Group Replication member says about its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GroupFacts {
    /// `@@group_replication_single_primary_mode`.
    pub(crate) single_primary: bool,
    /// `performance_schema.replication_group_members`, if the user may read it.
    pub(crate) members: Option<Members>,
}

/// The group as `performance_schema.replication_group_members` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Members {
    /// Members in state ONLINE.
    pub(crate) online: u32,
    /// ONLINE members whose role is PRIMARY.
    pub(crate) online_primaries: u32,
    /// This member's state.
    pub(crate) state: MemberState,
    /// This member's role, when it is in the group.
    pub(crate) role: Option<MemberRole>,
}

/// This server's `MEMBER_STATE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemberState {
    /// ONLINE: a member of the group.
    Online,
    /// OFFLINE or no row: Group Replication is not running here.
    NotRunning,
    /// RECOVERING, ERROR or UNREACHABLE: joining, or failed.
    NotOnline,
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
    judge(dialect, facts, config)
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
        // Cluster), Group Replication's variables only with its plugin
        // loaded: read them where they may be missing (as every user may).
        Dialect::MySql => {
            "SELECT CAST(@@GLOBAL.read_only AS SIGNED) AS read_only, \
             CAST(@@GLOBAL.super_read_only AS SIGNED) AS super_read_only, \
             CAST(@@SESSION.transaction_read_only AS SIGNED) AS session_read_only, \
             CAST(COALESCE((SELECT VARIABLE_VALUE = 'ON' FROM performance_schema.global_variables \
                  WHERE VARIABLE_NAME = 'wsrep_on'), 0) AS SIGNED) AS wsrep_on, \
             CAST(COALESCE((SELECT VARIABLE_VALUE FROM performance_schema.global_status \
                  WHERE VARIABLE_NAME = 'wsrep_cluster_size'), '0') AS SIGNED) AS cluster_size, \
             CAST(COALESCE((SELECT VARIABLE_VALUE <> '' FROM performance_schema.global_variables \
                  WHERE VARIABLE_NAME = 'group_replication_group_name'), 0) AS SIGNED) AS gr_configured, \
             CAST(COALESCE((SELECT VARIABLE_VALUE = 'ON' FROM performance_schema.global_variables \
                  WHERE VARIABLE_NAME = 'group_replication_single_primary_mode'), 1) AS SIGNED) \
                  AS gr_single_primary"
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
    let group = if flag("gr_configured") {
        Some(GroupFacts {
            single_primary: flag("gr_single_primary"),
            members: members(db).await?,
        })
    } else {
        None
    };
    Ok(Facts {
        read_only: flag("read_only"),
        super_read_only: flag("super_read_only"),
        session_read_only: flag("session_read_only"),
        replicating: flag("replicating"),
        in_recovery: flag("in_recovery"),
        galera_nodes: galera,
        group,
    })
}

/// The group as this member sees it; `None` when the user may not read
/// `performance_schema.replication_group_members` (it needs `SELECT` on it,
/// unlike the variables read above).
async fn members(db: &impl ConnectionTrait) -> Result<Option<Members>> {
    const SQL: &str = "SELECT \
        CAST(COUNT(CASE WHEN MEMBER_STATE = 'ONLINE' THEN 1 END) AS SIGNED) AS online, \
        CAST(COUNT(CASE WHEN MEMBER_STATE = 'ONLINE' AND MEMBER_ROLE = 'PRIMARY' THEN 1 END) \
             AS SIGNED) AS online_primaries, \
        MAX(CASE WHEN MEMBER_ID = @@server_uuid THEN MEMBER_STATE END) AS state, \
        MAX(CASE WHEN MEMBER_ID = @@server_uuid THEN MEMBER_ROLE END) AS role \
        FROM performance_schema.replication_group_members";
    let row = match db
        .query_one_raw(Statement::from_string(db.get_database_backend(), SQL))
        .await
    {
        Ok(Some(row)) => row,
        Ok(None) => return Ok(None),
        Err(e) if is_connection_lost(&e) => {
            return Err(Error::database("asking the server about its group", e));
        }
        // Most likely 1142 (no SELECT on the table): judged from the
        // variables alone. A failed statement leaves a MySQL transaction as
        // it was.
        Err(e) => {
            tracing::debug!(error = %e, "hierlock: replication_group_members is not readable");
            return Ok(None);
        }
    };
    let text = |column: &str| row.try_get::<Option<String>>("", column).ok().flatten();
    let count = |column: &str| get(&row, column).and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
    Ok(Some(Members {
        online: count("online"),
        online_primaries: count("online_primaries"),
        state: match text("state").as_deref() {
            Some("ONLINE") => MemberState::Online,
            None | Some("OFFLINE") => MemberState::NotRunning,
            Some(_) => MemberState::NotOnline,
        },
        role: match text("role").as_deref() {
            Some("PRIMARY") => Some(MemberRole::Primary),
            Some("SECONDARY") => Some(MemberRole::Secondary),
            _ => None,
        },
    }))
}

fn get(row: &QueryResult, column: &str) -> Option<i64> {
    row.try_get::<Option<i64>>("", column).ok().flatten()
}

/// The verdict on `facts`.
pub(crate) fn judge(dialect: Dialect, facts: Facts, config: &Config) -> Result<Topology> {
    let refuse = |reason: String| Err(Error::UnsafeTopology { reason });
    if facts.in_recovery {
        return refuse(format!(
            "this {dialect} server is a hot standby (pg_is_in_recovery()): advisory and row locks \
             taken there exclude nothing on the primary; connect the locker to the primary"
        ));
    }
    if facts.replicating {
        return refuse(format!(
            "this {dialect} server is a replica (a replication thread is running): locks taken \
             there exclude nothing on the primary; connect the locker to the primary"
        ));
    }
    // Before the read-only checks, which would refuse a secondary less
    // precisely.
    let group = match facts.group {
        Some(group) => group_topology(group, config.group_replication_single_writer())?,
        None => None,
    };
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
            "this {dialect} server is read-only ({name}): it is a replica or a server being \
             failed over, and locks taken there exclude nothing on the primary; connect the locker \
             to the primary"
        ));
    }
    if let Some(group) = group {
        return Ok(group);
    }
    match facts.galera_nodes {
        None => Ok(Topology::Single),
        Some(nodes) if config.galera_single_writer() => Ok(Topology::GaleraSingleWriter { nodes }),
        Some(nodes) => refuse(format!(
            "this {dialect} server is a Galera node (wsrep_on, {nodes} node(s) in the cluster): \
             Galera does not replicate row locks, so two transactions on two nodes both get the \
             same lock and neither waits; route every lock-taking transaction to one node (a \
             single-writer proxy setup) and say so with Config::with_galera_single_writer()"
        )),
    }
}

/// The verdict on a Group Replication member: `Ok(None)` when Group
/// Replication is not running on it (a standalone server as far as locks go).
fn group_topology(group: GroupFacts, single_writer: bool) -> Result<Option<Topology>> {
    let refuse = |reason: String| Err(Error::UnsafeTopology { reason });
    let multi_primary = |members: Option<Members>| {
        !group.single_primary || members.is_some_and(|m| m.online_primaries > 1)
    };
    let Some(members) = group.members else {
        // The membership is not readable: the mode is the configured one.
        if multi_primary(None) && !single_writer {
            return refuse(multi_primary_reason(
                "group_replication_single_primary_mode = OFF; its members are not readable: \
                 SELECT on performance_schema.replication_group_members would show them",
            ));
        }
        return Ok(Some(Topology::GroupReplication {
            mode: mode_of(multi_primary(None)),
            members: None,
            role: None,
        }));
    };
    match members.state {
        MemberState::NotRunning => return Ok(None),
        MemberState::NotOnline => {
            return refuse(
                "this MySQL server is a Group Replication member that is not ONLINE (RECOVERING, \
                 ERROR or UNREACHABLE in performance_schema.replication_group_members): it is \
                 joining or has left the group, and locks taken there exclude nothing on the \
                 group's primary; connect the locker to the primary"
                    .to_owned(),
            );
        }
        MemberState::Online => {}
    }
    let multi = multi_primary(Some(members));
    if multi && !single_writer {
        return refuse(multi_primary_reason(&format!(
            "{} ONLINE member(s), {} of them PRIMARY",
            members.online, members.online_primaries
        )));
    }
    if !multi && members.role != Some(MemberRole::Primary) {
        return refuse(format!(
            "this MySQL server is a SECONDARY of a single-primary Group Replication group ({} \
             ONLINE member(s)): it is read-only, and locks taken there exclude nothing on the \
             primary; connect the locker to the primary (MEMBER_ROLE = 'PRIMARY' in \
             performance_schema.replication_group_members, or a router's read-write port)",
            members.online
        ));
    }
    Ok(Some(Topology::GroupReplication {
        mode: mode_of(multi),
        members: Some(members.online),
        role: members.role,
    }))
}

fn mode_of(multi_primary: bool) -> GroupMode {
    if multi_primary {
        GroupMode::MultiPrimary
    } else {
        GroupMode::SinglePrimary
    }
}

fn multi_primary_reason(detail: &str) -> String {
    format!(
        "this MySQL server is a member of a multi-primary Group Replication group ({detail}): row \
         locks are not replicated, so two transactions on two members both get the same lock \
         and neither waits (conflicting writes then fail certification at COMMIT); run the \
         group in single-primary mode and connect the locker to the primary, or route every \
         lock-taking transaction to one member and say so with \
         Config::with_group_replication_single_writer()"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn refused(facts: Facts) -> String {
        let err = judge(Dialect::MariaDb, facts, &Config::default()).expect_err("refused");
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
            judge(Dialect::MySql, Facts::default(), &Config::default()).expect("single"),
            Topology::Single
        );
        let galera = Facts {
            galera_nodes: Some(3),
            ..Facts::default()
        };
        let opted_in = Config::default().with_galera_single_writer();
        assert_eq!(
            judge(Dialect::MariaDb, galera, &opted_in).expect("opted in"),
            Topology::GaleraSingleWriter { nodes: 3 }
        );
        // A read-only Galera node is refused even when opted in.
        let read_only_galera = Facts {
            read_only: true,
            ..galera
        };
        assert!(judge(Dialect::MariaDb, read_only_galera, &opted_in).is_err());
    }

    fn member(online: u32, online_primaries: u32, state: MemberState, role: MemberRole) -> Facts {
        Facts {
            group: Some(GroupFacts {
                single_primary: online_primaries <= 1,
                members: Some(Members {
                    online,
                    online_primaries,
                    state,
                    role: Some(role),
                }),
            }),
            ..Facts::default()
        }
    }

    fn group_refusal(facts: Facts) -> String {
        let err = judge(Dialect::MySql, facts, &Config::default()).expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::UnsafeTopology);
        assert!(!err.is_retryable());
        err.to_string()
    }

    #[test]
    fn group_replication_accepts_only_the_primary_of_a_single_primary_group() {
        use MemberRole::*;
        use MemberState::*;
        let primary = member(3, 1, Online, Primary);
        assert_eq!(
            judge(Dialect::MySql, primary, &Config::default()).expect("the primary"),
            Topology::GroupReplication {
                mode: GroupMode::SinglePrimary,
                members: Some(3),
                role: Some(Primary),
            }
        );
        // A secondary is refused as one, before its super_read_only says so.
        let secondary = Facts {
            super_read_only: true,
            read_only: true,
            ..member(3, 1, Online, Secondary)
        };
        assert!(group_refusal(secondary).contains("SECONDARY of a single-primary"));
        assert!(group_refusal(member(3, 1, NotOnline, Primary)).contains("not ONLINE"));
        // Group Replication stopped: a standalone server.
        assert_eq!(
            judge(Dialect::MySql, member(0, 0, NotRunning, Primary), &Config::default())
                .expect("standalone"),
            Topology::Single
        );
    }

    #[test]
    fn multi_primary_group_replication_is_refused_unless_opted_in() {
        use MemberRole::*;
        use MemberState::*;
        let multi = member(3, 3, Online, Primary);
        let reason = group_refusal(multi);
        assert!(reason.contains("multi-primary Group Replication group (3 ONLINE member(s), 3 of them PRIMARY)"), "{reason}");
        assert!(reason.contains("with_group_replication_single_writer"), "{reason}");
        // Told by the mode alone, and by the primaries alone.
        let by_mode = Facts {
            group: Some(GroupFacts {
                single_primary: false,
                members: Some(Members { online: 1, online_primaries: 1, state: Online, role: Some(Primary) }),
            }),
            ..Facts::default()
        };
        group_refusal(by_mode);
        let by_primaries = Facts {
            group: Some(GroupFacts {
                single_primary: true,
                ..multi.group.expect("a group")
            }),
            ..Facts::default()
        };
        group_refusal(by_primaries);
        // Members not readable: the configured mode decides.
        let unreadable = |single_primary| Facts {
            group: Some(GroupFacts { single_primary, members: None }),
            ..Facts::default()
        };
        assert!(group_refusal(unreadable(false)).contains("not readable"));
        assert_eq!(
            judge(Dialect::MySql, unreadable(true), &Config::default()).expect("single-primary"),
            Topology::GroupReplication { mode: GroupMode::SinglePrimary, members: None, role: None }
        );
        let opted_in = Config::default().with_group_replication_single_writer();
        assert_eq!(
            judge(Dialect::MySql, multi, &opted_in).expect("opted in"),
            Topology::GroupReplication {
                mode: GroupMode::MultiPrimary,
                members: Some(3),
                role: Some(Primary),
            }
        );
        // A read-only member is refused even when opted in.
        let read_only = Facts { super_read_only: true, ..multi };
        assert!(judge(Dialect::MySql, read_only, &opted_in).is_err());
    }
}
