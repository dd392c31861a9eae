//! Shared helpers for hierlock's conformance suite.
//!
//! Every test gets its own lock space on a real server — its own bucket table
//! (MySQL, MariaDB), its own advisory namespace (PostgreSQL) or its own file
//! (SQLite) — so tests run in parallel. Servers are read from environment
//! variables with this machine's defaults; an unreachable server fails the
//! test, it never skips it.

use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

pub mod chaos;
pub mod cluster;
mod proxy;
pub mod storm;

pub use proxy::Proxy;

use hierlock::{Config, Locker, PostgresLocks, SubtreeReads};
use hierlock_migration::Provision;
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbBackend,
    Statement, TransactionTrait,
};

/// A server the suite runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// MariaDB (InnoDB) bucket rows.
    MariaDb,
    /// MySQL 8+ (InnoDB) bucket rows.
    MySql,
    /// PostgreSQL advisory locks.
    Postgres,
    /// PostgreSQL with the bucket table instead of advisory locks.
    PostgresBuckets,
    /// SQLite's database-wide write lock, on a pool with hierlock's busy
    /// handler (`hierlock::sqlite::connect`): lock waits end with their
    /// acquisition.
    Sqlite,
    /// SQLite on a pool without hierlock's busy handler: lock waits are set
    /// through `PRAGMA busy_timeout`.
    SqliteWithoutHandler,
}

/// What a backend promises: the one place this is declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Promise {
    /// Exactly the hierarchy rule: requests conflict iff one write covers the other's node.
    Exact,
    /// Every two acquisitions conflict (one database-wide write lock).
    Coarse,
}

impl Backend {
    /// The promise this backend keeps.
    pub fn promise(self) -> Promise {
        if self.is_sqlite() {
            Promise::Coarse
        } else {
            Promise::Exact
        }
    }

    /// Whether this is SQLite, with or without hierlock's busy handler.
    pub fn is_sqlite(self) -> bool {
        matches!(self, Backend::Sqlite | Backend::SqliteWithoutHandler)
    }

    /// Whether the server shows lock waits in a view the suite can poll.
    pub fn has_lock_wait_view(self) -> bool {
        !self.is_sqlite()
    }

    fn url(self) -> String {
        let (var, default) = match self {
            Backend::MariaDb => ("HIERLOCK_MARIADB_URL", "mysql://root@127.0.0.1:3306/test"),
            Backend::MySql => ("HIERLOCK_MYSQL_URL", "mysql://root@127.0.0.1:3307/test"),
            Backend::Postgres | Backend::PostgresBuckets => (
                "HIERLOCK_POSTGRES_URL",
                "postgres://postgres@127.0.0.1:5432/test",
            ),
            Backend::Sqlite | Backend::SqliteWithoutHandler => return String::new(),
        };
        std::env::var(var).unwrap_or_else(|_| default.to_owned())
    }
}

/// One test's database, lock space and locker.
pub struct Fixture {
    /// The backend.
    pub backend: Backend,
    /// A pool with room for several concurrent transactions.
    pub db: DatabaseConnection,
    /// The locker for this test's lock space.
    pub locker: Locker,
    /// The configuration the locker was made with.
    pub config: Config,
    /// Where [`Fixture::db`] connects.
    url: String,
}

/// Advisory namespaces handed out to PostgreSQL tests, one each.
static NEXT_NAMESPACE: AtomicU16 = AtomicU16::new(0x7100);

impl Fixture {
    /// A fresh lock space named after `test`, with `bucket_space` buckets per level.
    ///
    /// # Panics
    /// If the server is unreachable or provisioning fails: a required server
    /// that is down fails the suite.
    pub async fn new(backend: Backend, test: &str, bucket_space: u32) -> Fixture {
        Fixture::with_subtree_reads(backend, test, bucket_space, SubtreeReads::Off).await
    }

    /// [`Fixture::new`] in the lock layout `subtree_reads` (provisioned with
    /// its stripe levels on the bucket table).
    ///
    /// # Panics
    /// As [`Fixture::new`].
    pub async fn with_subtree_reads(
        backend: Backend,
        test: &str,
        bucket_space: u32,
        subtree_reads: SubtreeReads,
    ) -> Fixture {
        let table = format!("hl_{}_{}", short(backend), test);
        let mut config = Config::default()
            .with_table(&table)
            .expect("test table names are identifiers")
            .with_bucket_space(bucket_space)
            .expect("test bucket spaces are valid")
            .with_subtree_reads(subtree_reads);
        let url = match backend {
            _ if backend.is_sqlite() => sqlite_url(&sqlite_path(backend, test)),
            _ => backend.url(),
        };
        let db = connect(backend, &url, MAX_CONNECTIONS).await;
        match backend {
            Backend::MariaDb | Backend::MySql | Backend::PostgresBuckets => {
                if backend == Backend::PostgresBuckets {
                    config = config.with_postgres_locks(PostgresLocks::BucketTable);
                }
                drop_tables(&db, &config).await;
                Provision::new(config.clone())
                    .run(&db)
                    .await
                    .unwrap_or_else(|e| panic!("provisioning {table} on {backend:?}: {e}"));
            }
            Backend::Postgres => {
                let namespace = NEXT_NAMESPACE.fetch_add(1, Ordering::Relaxed);
                config = config.with_postgres_locks(PostgresLocks::Advisory { namespace });
            }
            Backend::Sqlite | Backend::SqliteWithoutHandler => {}
        }
        let locker = Locker::connect(&db, config.clone())
            .await
            .unwrap_or_else(|e| panic!("connecting a locker on {backend:?}: {e}"));
        Fixture {
            backend,
            db,
            locker,
            config,
            url,
        }
    }

    /// The lock space `Fixture::new(backend, test, ..)` made, reached again
    /// on a new pool (for a test whose first pool is gone with its runtime).
    ///
    /// # Panics
    /// If the server is unreachable or the locker cannot connect.
    pub async fn reconnect(backend: Backend, test: &str, config: Config) -> Fixture {
        let url = match backend {
            _ if backend.is_sqlite() => sqlite_url_of(&sqlite_path(backend, test)),
            _ => backend.url(),
        };
        let db = connect(backend, &url, MAX_CONNECTIONS).await;
        let locker = Locker::connect(&db, config.clone())
            .await
            .unwrap_or_else(|e| panic!("connecting a locker on {backend:?}: {e}"));
        Fixture {
            backend,
            db,
            locker,
            config,
            url,
        }
    }

    /// The server's address, for a [`Proxy`] in front of it.
    ///
    /// # Panics
    /// On SQLite, which has no server.
    pub fn server_addr(&self) -> std::net::SocketAddr {
        let url = self.backend.url();
        let host_port = url
            .split('@')
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("no host:port in {url}"));
        std::net::ToSocketAddrs::to_socket_addrs(host_port)
            .ok()
            .and_then(|mut addrs| addrs.next())
            .unwrap_or_else(|| panic!("cannot resolve {host_port}"))
    }

    /// A new pool and locker for this lock space, connected through `proxy`.
    ///
    /// # Panics
    /// If the server is unreachable through the proxy.
    pub async fn through(&self, proxy: &Proxy) -> (DatabaseConnection, Locker) {
        self.through_with(proxy, self.config.clone(), None).await
    }

    /// [`Fixture::through`] with a locker configured as `config` (this lock
    /// space's table and namespace, other settings of the test's own) and,
    /// on the MySQL family, `lease` set on every connection of the pool with
    /// `hierlock::lease::mysql_pool`.
    ///
    /// # Panics
    /// If the server is unreachable through the proxy.
    pub async fn through_with(
        &self,
        proxy: &Proxy,
        config: Config,
        lease: Option<Duration>,
    ) -> (DatabaseConnection, Locker) {
        self.through_pool(proxy, config, lease, MAX_CONNECTIONS)
            .await
    }

    /// [`Fixture::through_with`], the pool of at most `max_connections`.
    ///
    /// # Panics
    /// If the server is unreachable through the proxy.
    pub async fn through_pool(
        &self,
        proxy: &Proxy,
        config: Config,
        lease: Option<Duration>,
        max_connections: u32,
    ) -> (DatabaseConnection, Locker) {
        let url = self.backend.url();
        let direct = self.server_addr();
        let url = url.replacen(
            &format!(":{}/", direct.port()),
            &format!(":{}/", proxy.port()),
            1,
        );
        let db = connect_with(self.backend, &url, max_connections, lease).await;
        let locker = Locker::connect(&db, config)
            .await
            .unwrap_or_else(|e| panic!("connecting a locker through the proxy: {e}"));
        (db, locker)
    }

    /// A new pool and locker for this lock space with `lease`: in the
    /// locker's configuration, and on the MySQL family set on every
    /// connection of the pool with `hierlock::lease::mysql_pool`.
    pub async fn leased(&self, lease: Duration) -> (DatabaseConnection, Locker) {
        let config = self
            .config
            .clone()
            .with_lease(lease)
            .expect("a valid lease");
        let db = connect_with(self.backend, &self.url, MAX_CONNECTIONS, Some(lease)).await;
        let locker = Locker::connect(&db, config)
            .await
            .unwrap_or_else(|e| panic!("connecting a leased locker: {e}"));
        (db, locker)
    }

    /// Where [`Fixture::db`] connects.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Another pool of at most `max_connections` on this test's database,
    /// built as [`Fixture::db`] was (on SQLite, with hierlock's busy handler
    /// or not): with one connection, its transactions all run on one
    /// connection.
    ///
    /// # Panics
    /// If the server is unreachable.
    pub async fn another_pool(&self, max_connections: u32) -> DatabaseConnection {
        connect(self.backend, &self.url, max_connections).await
    }

    /// Begin a transaction (the server's default isolation).
    pub async fn begin(&self) -> DatabaseTransaction {
        self.db.begin().await.expect("begin")
    }

    /// Run `sql` outside any transaction.
    pub async fn exec(&self, sql: &str) {
        self.db
            .execute_raw(Statement::from_string(self.db.get_database_backend(), sql))
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// The server-side id of the connection `txn` runs on (0 on SQLite).
    pub async fn connection_id(&self, txn: &DatabaseTransaction) -> i64 {
        if self.backend.is_sqlite() {
            return 0;
        }
        storm::connection_id(txn).await
    }

    /// Whether connection `id` is waiting for a lock, from the server's own views.
    pub async fn is_waiting(&self, id: i64) -> bool {
        self.waiting_among(&[id]).await > 0
    }

    /// How many of the connections `ids` wait for a lock, from one read of
    /// the server's lock-wait view.
    async fn waiting_among(&self, ids: &[i64]) -> usize {
        let backend = self.db.get_database_backend();
        // InnoDB serves INNODB_TRX from one server-wide cache, refreshed only
        // when it has not been read for 100 ms: reads from concurrent tests
        // must be spaced so that every read refreshes it.
        let _turn = match backend {
            DbBackend::MySql => Some(innodb_trx_turn().await),
            _ => None,
        };
        let list = ids
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let sql = match backend {
            DbBackend::Postgres => format!(
                "SELECT COUNT(DISTINCT pid)::int8 AS n FROM pg_locks WHERE pid IN ({list}) AND NOT granted"
            ),
            DbBackend::MySql => format!(
                "SELECT CAST(COUNT(*) AS SIGNED) AS n FROM information_schema.INNODB_TRX \
                 WHERE trx_mysql_thread_id IN ({list}) AND trx_state = 'LOCK WAIT'"
            ),
            _ => panic!("{:?} has no lock-wait view", self.backend),
        };
        let row = self
            .db
            .query_one_raw(Statement::from_string(backend, sql))
            .await
            .expect("lock-wait view")
            .expect("one row");
        let waiting: i64 = row.try_get("", "n").expect("count");
        usize::try_from(waiting).expect("a count")
    }

    /// Wait until every connection of `ids` waits for a lock; panics after
    /// 10 s.
    pub async fn wait_until_all_blocked(&self, ids: &[i64]) {
        let poll = async {
            while self.waiting_among(ids).await < ids.len() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), poll)
            .await
            .unwrap_or_else(|_| panic!("connections {ids:?} never all waited for a lock"));
    }

    /// Wait until connection `id` waits for a lock; panics after 10 s, so a
    /// bug fails fast instead of hanging.
    pub async fn wait_until_blocked(&self, id: i64) {
        let poll = async {
            while !self.is_waiting(id).await {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), poll)
            .await
            .unwrap_or_else(|_| panic!("connection {id} never waited for a lock"));
    }
}

/// The last read of INNODB_TRX in this process, for spacing reads.
static INNODB_TRX_LAST_READ: tokio::sync::Mutex<Option<Instant>> =
    tokio::sync::Mutex::const_new(None);

/// Wait for this process's turn to read INNODB_TRX: at least 110 ms after
/// the previous read, so that the server refreshes its cache for this one.
async fn innodb_trx_turn() -> InnoDbTrxTurn {
    let last = INNODB_TRX_LAST_READ.lock().await;
    if let Some(at) = *last {
        let since = at.elapsed();
        if since < INNODB_TRX_SPACING {
            tokio::time::sleep(INNODB_TRX_SPACING - since).await;
        }
    }
    InnoDbTrxTurn(last)
}

const INNODB_TRX_SPACING: Duration = Duration::from_millis(110);

/// Held while reading INNODB_TRX; records the read's time when dropped.
struct InnoDbTrxTurn(tokio::sync::MutexGuard<'static, Option<Instant>>);

impl Drop for InnoDbTrxTurn {
    fn drop(&mut self) {
        *self.0 = Some(Instant::now());
    }
}

/// Await `fut` for at most 10 s: every wait in the suite is bounded.
pub async fn bounded<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within 10 s"))
}

/// Room for several concurrent transactions.
const MAX_CONNECTIONS: u32 = 12;

async fn connect(backend: Backend, url: &str, max_connections: u32) -> DatabaseConnection {
    connect_with(backend, url, max_connections, None).await
}

async fn connect_with(
    backend: Backend,
    url: &str,
    max_connections: u32,
    lease: Option<Duration>,
) -> DatabaseConnection {
    let mut options = ConnectOptions::new(url.to_owned());
    options
        .max_connections(max_connections)
        .min_connections(1)
        .connect_timeout(Duration::from_secs(10))
        .sqlx_logging(false);
    if let Some(lease) = lease {
        options.map_sqlx_mysql_pool_opts(move |pool| hierlock::lease::mysql_pool(pool, lease));
    }
    let connected = match backend {
        Backend::Sqlite => hierlock::sqlite::connect(options).await,
        _ => Database::connect(options).await,
    };
    connected.unwrap_or_else(|e| {
        panic!("cannot reach {url}: {e} (the suite needs this server; see README)")
    })
}

async fn drop_tables(db: &DatabaseConnection, config: &Config) {
    let backend = db.get_database_backend();
    for table in [config.table().to_string(), config.table().meta()] {
        let sql = format!("DROP TABLE IF EXISTS {table}");
        db.execute_raw(Statement::from_string(backend, sql))
            .await
            .expect("drop test table");
    }
}

/// A fresh SQLite file at `path`.
fn sqlite_url(path: &std::path::Path) -> String {
    let _ = std::fs::remove_file(path);
    sqlite_url_of(path)
}

fn sqlite_path(backend: Backend, test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join("hierlock-tests");
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(format!(
        "{test}-{}-{}.db",
        short(backend),
        std::process::id()
    ))
}

fn sqlite_url_of(path: &std::path::Path) -> String {
    format!("sqlite://{}?mode=rwc", path.display())
}

fn short(backend: Backend) -> &'static str {
    match backend {
        Backend::MariaDb => "maria",
        Backend::MySql => "my",
        Backend::Postgres => "pg",
        Backend::PostgresBuckets => "pgb",
        Backend::Sqlite => "lite",
        Backend::SqliteWithoutHandler => "litenh",
    }
}
