//! The cluster under test: its members and HAProxy, the script that kills,
//! partitions and heals it, bucket tables provisioned on the leader.

use std::time::Duration;

use hierlock::{Config, Locker, PostgresLocks};
use hierlock_migration::Provision;
use hierlock_tests::cluster::{self, Exclusive};
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbBackend,
    Statement, TransactionTrait,
};

/// The members' URLs from `HIERLOCK_PATRONI_URLS` (comma-separated, in
/// `patroni.sh` order), else the local cluster's.
pub fn urls() -> Vec<String> {
    let urls = std::env::var("HIERLOCK_PATRONI_URLS").unwrap_or_else(|_| {
        [5450, 5451, 5452]
            .map(|port| format!("postgres://postgres@127.0.0.1:{port}/test"))
            .join(",")
    });
    let urls: Vec<String> = urls.split(',').map(|u| u.trim().to_owned()).collect();
    assert_eq!(urls.len(), 3, "HIERLOCK_PATRONI_URLS must name 3 members");
    urls
}

/// HAProxy's leader port (`HIERLOCK_PATRONI_HAPROXY_URL`).
pub fn haproxy_url() -> String {
    std::env::var("HIERLOCK_PATRONI_HAPROXY_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5460/test".to_owned())
}

/// Tests run one at a time: they kill and partition the leader.
static CLUSTER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Hold while a test uses the cluster.
pub async fn exclusive() -> Exclusive {
    cluster::exclusive(&CLUSTER, "127.0.0.1:4597").await
}

/// A pool on a member (1-based, as `patroni.sh` numbers them), or on
/// HAProxy (`number` 0).
#[derive(Clone)]
pub struct Node {
    pub number: usize,
    pub db: DatabaseConnection,
}

impl Node {
    /// Connect to member `number` (0: HAProxy).
    ///
    /// # Panics
    /// If it is unreachable: the cluster is required, never skipped.
    pub async fn connect(number: usize) -> Node {
        Node::try_connect(number).await.unwrap_or_else(|e| {
            panic!(
                "cannot reach Patroni member {number}: {e} \
                 (start the cluster with tests/clusters/patroni.sh start)"
            )
        })
    }

    /// Connect to member `number` (0: HAProxy), which may be down.
    ///
    /// # Errors
    /// If it is unreachable.
    pub async fn try_connect(number: usize) -> Result<Node, sea_orm::DbErr> {
        let url = if number == 0 {
            haproxy_url()
        } else {
            urls()[number - 1].clone()
        };
        let mut options = ConnectOptions::new(url.clone());
        options
            .max_connections(8)
            .min_connections(0)
            .connect_timeout(Duration::from_secs(3))
            .acquire_timeout(Duration::from_secs(3))
            .sqlx_logging(false);
        let db = Database::connect(options).await?;
        Ok(Node { number, db })
    }

    /// HAProxy's leader port.
    pub async fn haproxy() -> Node {
        Node::connect(0).await
    }

    /// The current leader, connected directly.
    pub async fn leader() -> Node {
        Node::connect(leader()).await
    }

    /// A locker on this node with `config`.
    pub async fn locker(&self, config: &Config) -> hierlock::Result<Locker> {
        Locker::connect(&self.db, config.clone()).await
    }

    /// Begin a transaction here.
    pub async fn begin(&self) -> DatabaseTransaction {
        self.db.begin().await.expect("begin")
    }

    /// Run `sql` (autocommit).
    pub async fn execute(&self, sql: &str) {
        self.db
            .execute_raw(Statement::from_string(DbBackend::Postgres, sql))
            .await
            .unwrap_or_else(|e| panic!("{sql} on member {}: {e}", self.number));
    }

    /// An integer that `sql` selects (`int8`).
    pub async fn scalar(&self, sql: &str) -> Result<i64, sea_orm::DbErr> {
        let row = self
            .db
            .query_one_raw(Statement::from_string(DbBackend::Postgres, sql))
            .await?
            .expect("one row");
        row.try_get_by_index::<i64>(0)
            .map_err(|e| sea_orm::DbErr::Custom(e.to_string()))
    }

    /// Wait (at most 30 s) until this member's PostgreSQL no longer runs as
    /// the primary it was: down, or back as a hot standby. Its postmaster
    /// exits only after every backend has, so a statement sent after this
    /// cannot meet a backend that a fast shutdown has yet to reach (the
    /// shutdown signals one backend after another: the first one's error
    /// can reach a client before the last one is told).
    pub async fn wait_until_demoted(&self) {
        let number = self.number;
        let check = async {
            loop {
                let Ok(node) = Node::try_connect(number).await else {
                    return;
                };
                let standby = node.scalar("SELECT pg_is_in_recovery()::int8").await;
                node.db.close().await.ok();
                if !matches!(standby, Ok(0)) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(30), check)
            .await
            .unwrap_or_else(|_| panic!("member {number} still runs as the primary after 30 s"));
    }

    /// Wait (at most 10 s) until backend `pid` waits for a lock here.
    pub async fn wait_until_blocked(&self, pid: i64) {
        let sql = format!(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = {pid} AND wait_event_type = 'Lock'"
        );
        hierlock_tests::bounded(&format!("backend {pid} waiting for a lock"), async {
            while self.scalar(&sql).await.expect("pg_stat_activity") == 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
    }
}

/// The backend pid `txn` runs on.
pub async fn backend_pid(txn: &DatabaseTransaction) -> i64 {
    txn.query_one_raw(Statement::from_string(
        DbBackend::Postgres,
        "SELECT pg_backend_pid()::int8 AS id",
    ))
    .await
    .expect("pg_backend_pid")
    .expect("one row")
    .try_get("", "id")
    .expect("id column")
}

/// Run `patroni.sh` with `args`: its standard output, trimmed; its output
/// goes to the test's output (shown when the test fails).
///
/// # Errors
/// If the script failed.
pub fn script(args: &[&str]) -> Result<String, String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/clusters/patroni.sh");
    let started = std::time::Instant::now();
    let out = std::process::Command::new("bash")
        .arg(path)
        .args(args)
        .output()
        .map_err(|e| format!("running {path}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    eprintln!(
        "{path} {} ({:.1} s):\n{stdout}\n{}",
        args.join(" "),
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!("{path} {} failed", args.join(" ")))
    }
}

/// `script(args)` from async code, panicking on failure.
pub fn run(args: &[&str]) -> String {
    tokio::task::block_in_place(|| script(args)).unwrap_or_else(|e| panic!("{e}"))
}

/// The number of the member that leads now.
pub fn leader() -> usize {
    let out = tokio::task::block_in_place(|| script(&["leader"])).expect("a leader");
    out.parse().unwrap_or_else(|_| panic!("leader: {out:?}"))
}

/// Heal the cluster (a leader, two streaming replicas, asynchronous
/// replication) when dropped, even when the test failed.
pub struct Restore;

impl Restore {
    /// Heal now, and check that it worked.
    ///
    /// # Panics
    /// If `patroni.sh heal` fails.
    pub fn now(self) {
        std::mem::forget(self);
        run(&["heal"]);
        run(&["sync", "off"]);
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if let Err(e) = script(&["heal"]).and_then(|_| script(&["sync", "off"])) {
            eprintln!("{e}");
        }
    }
}

/// Advisory locks in a namespace of the test's own.
pub fn advisory(namespace: u16) -> Config {
    Config::default().with_postgres_locks(PostgresLocks::Advisory { namespace })
}

/// The bucket table `hl_pat_<test>`.
pub fn buckets(test: &str) -> Config {
    Config::default()
        .with_table(&format!("hl_pat_{test}"))
        .expect("test table names are identifiers")
        .with_bucket_space(64)
        .expect("a valid bucket space")
        .with_postgres_locks(PostgresLocks::BucketTable)
}

/// Create and fill `config`'s bucket table on the leader, and wait until
/// both replicas have it.
pub async fn provision(config: &Config) {
    let leader = Node::leader().await;
    for name in [config.table().to_string(), config.table().meta()] {
        leader
            .execute(&format!("DROP TABLE IF EXISTS {name}"))
            .await;
    }
    Provision::new(config.clone())
        .run(&leader.db)
        .await
        .unwrap_or_else(|e| panic!("provisioning {} on the leader: {e}", config.table()));
    caught_up(&leader).await;
}

/// Wait (at most 10 s) until every replica has replayed what `leader` has
/// written so far.
pub async fn caught_up(leader: &Node) {
    let sql = "SELECT count(*) FROM pg_stat_replication \
               WHERE replay_lsn >= pg_current_wal_lsn() AND state = 'streaming'";
    let lsn_now = leader
        .scalar("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::int8")
        .await
        .expect("wal lsn");
    let sql = sql.replace(
        "pg_current_wal_lsn()",
        &format!("'0/0'::pg_lsn + {lsn_now}"),
    );
    hierlock_tests::bounded("the replicas to catch up", async {
        while leader.scalar(&sql).await.expect("pg_stat_replication") < 2 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}
