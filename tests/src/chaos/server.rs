//! The servers a chaos run can target, and how to reach each: the
//! workload's URL (pgbouncer's, where it is in front) and the server's own,
//! for seeding, checks and kills.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use hierlock::{Config, PostgresLocks};
use sea_orm::{ConnectOptions, Database, DatabaseConnection, DbErr};

/// Where the workload runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Server {
    /// MariaDB, bucket rows.
    MariaDb,
    /// MySQL 9, bucket rows.
    MySql,
    /// PostgreSQL, advisory locks.
    Postgres,
    /// PostgreSQL, the bucket table.
    PostgresBuckets,
    /// PostgreSQL through pgbouncer in transaction mode, advisory locks.
    Pgbouncer,
    /// The chaos run's own MariaDB (`tests/clusters/instances.sh`), which
    /// it crashes.
    MariaDbOwn,
    /// The chaos run's own MySQL 9, which it crashes.
    MySqlOwn,
    /// The chaos run's own PostgreSQL, advisory locks, which it crashes.
    PostgresOwn,
    /// The MySQL Group Replication group (`tests/clusters/group-replication.sh`),
    /// single-primary, reached through a router to its primary; the run
    /// kills the primary.
    GroupReplication,
}

impl Server {
    /// Every target, in the order a full run visits them.
    pub const ALL: [Server; 9] = [
        Server::MariaDb,
        Server::MySql,
        Server::Postgres,
        Server::PostgresBuckets,
        Server::Pgbouncer,
        Server::MariaDbOwn,
        Server::MySqlOwn,
        Server::PostgresOwn,
        Server::GroupReplication,
    ];

    /// The name the command line takes and the table prints.
    pub fn name(self) -> &'static str {
        match self {
            Server::MariaDb => "mariadb",
            Server::MySql => "mysql",
            Server::Postgres => "postgres",
            Server::PostgresBuckets => "postgres-buckets",
            Server::Pgbouncer => "pgbouncer",
            Server::MariaDbOwn => "mariadb-own",
            Server::MySqlOwn => "mysql-own",
            Server::PostgresOwn => "postgres-own",
            Server::GroupReplication => "group-replication",
        }
    }

    /// The Group Replication members' URLs, for the group; `None` for the
    /// other targets.
    pub fn group_members(self) -> Option<Vec<String>> {
        (self == Server::GroupReplication)
            .then(|| crate::cluster::urls("HIERLOCK_GROUP_URLS", [3330, 3331, 3332], "members"))
    }

    /// For the chaos run's own servers, the name `instances.sh crash`
    /// takes; `None` for the shared ones, which are never crashed.
    pub fn own_instance(self) -> Option<&'static str> {
        match self {
            Server::MariaDbOwn => Some("mariadb"),
            Server::MySqlOwn => Some("mysql"),
            Server::PostgresOwn => Some("postgres"),
            _ => None,
        }
    }

    /// The target named `name`.
    pub fn parse(name: &str) -> Option<Server> {
        Server::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Server connections the target has for every client, if fewer than
    /// the clients may ask for: pgbouncer's pool (`default_pool_size` in
    /// `tests/clusters/pgbouncer.sh`).
    pub fn server_pool(self) -> Option<usize> {
        match self {
            Server::Pgbouncer => Some(20),
            _ => None,
        }
    }

    /// The server's own URL (the environment's, as in the rest of the suite).
    pub fn direct_url(self) -> String {
        let (var, default) = match self {
            Server::MariaDb => ("HIERLOCK_MARIADB_URL", "mysql://root@127.0.0.1:3306/test"),
            Server::MySql => ("HIERLOCK_MYSQL_URL", "mysql://root@127.0.0.1:3307/test"),
            Server::Postgres | Server::PostgresBuckets | Server::Pgbouncer => (
                "HIERLOCK_POSTGRES_URL",
                "postgres://postgres@127.0.0.1:5432/test",
            ),
            // Reached through the run's router; the first member's URL
            // names the user and database.
            Server::GroupReplication => ("HIERLOCK_GROUP_URL", "mysql://root@127.0.0.1:3330/test"),
            Server::MariaDbOwn => (
                "HIERLOCK_OWN_MARIADB_URL",
                "mysql://root@127.0.0.1:3340/test",
            ),
            Server::MySqlOwn => ("HIERLOCK_OWN_MYSQL_URL", "mysql://root@127.0.0.1:3341/test"),
            Server::PostgresOwn => (
                "HIERLOCK_OWN_POSTGRES_URL",
                "postgres://postgres@127.0.0.1:5440/test",
            ),
        };
        std::env::var(var).unwrap_or_else(|_| default.to_owned())
    }

    /// The URL the workload's pools connect to.
    pub fn workload_url(self) -> String {
        match self {
            Server::Pgbouncer => std::env::var("HIERLOCK_PGBOUNCER_URL")
                .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:6432/test".to_owned()),
            _ => self.direct_url(),
        }
    }

    /// The address of [`Server::workload_url`], for a proxy in front of it.
    ///
    /// # Panics
    /// If the URL names no resolvable `host:port`.
    pub fn workload_addr(self) -> SocketAddr {
        let url = self.workload_url();
        let host_port = host_port(&url);
        host_port
            .to_socket_addrs()
            .ok()
            .and_then(|mut addrs| addrs.next())
            .unwrap_or_else(|| panic!("cannot resolve {host_port}"))
    }

    /// The workload's URL with its port replaced by `port` (a proxy's).
    pub fn workload_url_via(self, port: u16) -> String {
        let url = self.workload_url();
        let host_port = host_port(&url);
        url.replacen(host_port, &format!("127.0.0.1:{port}"), 1)
    }

    /// The locker's configuration: the bank example's, with PostgreSQL's
    /// lock kind for this target.
    ///
    /// # Panics
    /// Never with the bank's constants.
    pub fn config(self) -> Config {
        let config = hierlock_examples::bank::config().expect("the bank's configuration");
        match self {
            Server::PostgresBuckets => config.with_postgres_locks(PostgresLocks::BucketTable),
            _ => config,
        }
    }

    /// A pool on the server itself, not through pgbouncer: seeding, checks,
    /// kills and probes.
    ///
    /// # Errors
    /// The server is unreachable.
    pub async fn connect_direct(self, max_connections: u32) -> Result<DatabaseConnection, DbErr> {
        let direct = match self {
            Server::Pgbouncer => Server::Postgres,
            other => other,
        };
        direct
            .connect(&self.direct_url(), max_connections, None)
            .await
    }

    /// A pool on `url` (this target's workload or a proxy in front of it)
    /// of at most `max_connections`; with `lease`, the MySQL family's
    /// session lease on every connection.
    ///
    /// # Errors
    /// The server is unreachable.
    pub async fn connect(
        self,
        url: &str,
        max_connections: u32,
        lease: Option<Duration>,
    ) -> Result<DatabaseConnection, DbErr> {
        let mut options = ConnectOptions::new(url.to_owned());
        options
            .max_connections(max_connections)
            .min_connections(0)
            .connect_timeout(Duration::from_secs(5))
            .acquire_timeout(Duration::from_secs(30))
            .sqlx_logging(false);
        if let Some(lease) = lease {
            options.map_sqlx_mysql_pool_opts(move |pool| hierlock::lease::mysql_pool(pool, lease));
        }
        if self == Server::Pgbouncer {
            // pgbouncer (≤ 1.20) in transaction mode: see docs/topologies.md.
            options.map_sqlx_postgres_opts(|pg| {
                pg.extra_float_digits(None).statement_cache_capacity(0)
            });
        }
        Database::connect(options).await
    }
}

/// The `host:port` of a `scheme://user@host:port/db` URL.
fn host_port(url: &str) -> &str {
    url.split('@')
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no host:port in {url}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxy_port_replaces_the_servers() {
        assert_eq!(
            host_port("postgres://postgres@127.0.0.1:6432/test"),
            "127.0.0.1:6432"
        );
        for server in Server::ALL {
            assert_eq!(Server::parse(server.name()), Some(server));
            assert!(server.workload_url_via(1234).contains("127.0.0.1:1234/"));
        }
    }
}
