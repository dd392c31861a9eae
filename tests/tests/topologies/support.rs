//! Servers of the topology tests, and the few helpers both modules use.

use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use hierlock::{Config, PostgresLocks};
use sea_orm::sqlx::postgres::PgConnectOptions;
use sea_orm::{ConnectOptions, ConnectionTrait, Database, DatabaseConnection, Statement};

/// One server of the topology tests: an environment variable and its default.
#[derive(Clone, Copy, Debug)]
pub enum Server {
    /// MariaDB primary (`tests/clusters/replicas.sh`).
    MariaDbPrimary,
    /// MariaDB replica of the primary, replicating, `--read-only`.
    MariaDbReplica,
    /// MariaDB replica whose replication is stopped, `--read-only`.
    MariaDbReadOnly,
    /// PostgreSQL 15 primary (`tests/clusters/replicas.sh`).
    PostgresPrimary,
    /// PostgreSQL 15 hot standby of the primary.
    PostgresStandby,
    /// pgbouncer, transaction pooling (`tests/clusters/pgbouncer.sh`).
    Pgbouncer,
    /// The PostgreSQL server behind pgbouncer, reached directly.
    PostgresBehindPgbouncer,
}

impl Server {
    pub fn url(self) -> String {
        let (var, default) = match self {
            Server::MariaDbPrimary => (
                "HIERLOCK_MARIADB_PRIMARY_URL",
                "mysql://root@127.0.0.1:3308/test",
            ),
            Server::MariaDbReplica => (
                "HIERLOCK_MARIADB_REPLICA_URL",
                "mysql://root@127.0.0.1:3309/test",
            ),
            Server::MariaDbReadOnly => (
                "HIERLOCK_MARIADB_READ_ONLY_URL",
                "mysql://root@127.0.0.1:3310/test",
            ),
            Server::PostgresPrimary => (
                "HIERLOCK_POSTGRES_PRIMARY_URL",
                "postgres://postgres@127.0.0.1:5434/test",
            ),
            Server::PostgresStandby => (
                "HIERLOCK_POSTGRES_STANDBY_URL",
                "postgres://postgres@127.0.0.1:5435/test",
            ),
            Server::Pgbouncer => (
                "HIERLOCK_PGBOUNCER_URL",
                "postgres://postgres@127.0.0.1:6432/test",
            ),
            Server::PostgresBehindPgbouncer => (
                "HIERLOCK_POSTGRES_URL",
                "postgres://postgres@127.0.0.1:5432/test",
            ),
        };
        std::env::var(var).unwrap_or_else(|_| default.to_owned())
    }
}

/// A pool on `server` with room for contention, connected within 10 s.
///
/// # Panics
/// If the server cannot be reached: the suite needs it.
pub async fn connect(server: Server) -> DatabaseConnection {
    try_connect(server, 8, |options| options)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "cannot reach {server:?} at {}: {e} (start it with tests/clusters/*.sh start)",
                server.url()
            )
        })
}

/// A pool of at most `max_connections` on `server`, whose sqlx options `map` adjusts.
pub async fn try_connect(
    server: Server,
    max_connections: u32,
    map: impl Fn(PgConnectOptions) -> PgConnectOptions + Send + Sync + 'static,
) -> Result<DatabaseConnection, sea_orm::DbErr> {
    try_connect_url(&server.url(), max_connections, map).await
}

/// [`try_connect`] to a URL.
pub async fn try_connect_url(
    url: &str,
    max_connections: u32,
    map: impl Fn(PgConnectOptions) -> PgConnectOptions + Send + Sync + 'static,
) -> Result<DatabaseConnection, sea_orm::DbErr> {
    let mut options = ConnectOptions::new(url);
    options
        .max_connections(max_connections)
        .min_connections(0)
        .connect_timeout(Duration::from_secs(10))
        .acquire_timeout(Duration::from_secs(10))
        .sqlx_logging(false)
        .map_sqlx_postgres_opts(map);
    Database::connect(options).await
}

/// Await `fut` for at most `secs` seconds: every wait here is bounded.
pub async fn within<T>(secs: u64, what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {secs} s"))
}

/// One `i64` column of the first row of `sql`.
pub async fn query_i64(db: &impl ConnectionTrait, sql: &str) -> i64 {
    let row = db
        .query_one_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .unwrap_or_else(|| panic!("{sql}: no row"));
    row.try_get_by_index::<i64>(0)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Run `sql`, which returns nothing.
pub async fn exec(db: &impl ConnectionTrait, sql: &str) {
    db.execute_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Advisory namespaces of this binary, one per test: far from the
/// conformance suite's (0x7100 upwards), which may run on the same server.
static NEXT_NAMESPACE: AtomicU16 = AtomicU16::new(0x7E00);

/// A configuration with this test's own advisory namespace.
pub fn advisory_config() -> Config {
    let namespace = NEXT_NAMESPACE.fetch_add(1, Ordering::Relaxed);
    Config::default().with_postgres_locks(PostgresLocks::Advisory { namespace })
}

/// A configuration with this test's own bucket table `hl_topo_<test>`.
pub fn bucket_config(test: &str) -> Config {
    Config::default()
        .with_table(&format!("hl_topo_{test}"))
        .expect("test table names are identifiers")
        .with_bucket_space(100)
        .expect("a valid bucket space")
}
