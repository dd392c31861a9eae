//! The Galera cluster under test: its nodes, a bucket table on it, lock-wait
//! polling, and killing and reviving a node.

use std::time::Duration;

use hierlock::{Config, Locker};
use hierlock_migration::Provision;
use hierlock_tests::bounded;
use hierlock_tests::cluster::{self, Exclusive};
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbBackend,
    Statement, TransactionTrait,
};

/// Buckets per level: small, so provisioning replicates in a blink.
const BUCKET_SPACE: u32 = 64;

/// The nodes' URLs, in `galera.sh` order (node 1 first).
pub fn urls() -> Vec<String> {
    cluster::urls("HIERLOCK_GALERA_URLS", [3320, 3321, 3322], "nodes")
}

/// Tests run one at a time: the failover test takes a node away.
static CLUSTER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Hold while a test uses the cluster.
pub async fn exclusive() -> Exclusive {
    cluster::exclusive(&CLUSTER, "127.0.0.1:4599").await
}

/// A pool on one node (1-based, as `galera.sh` numbers them).
pub struct Node {
    pub number: usize,
    pub db: DatabaseConnection,
}

impl Node {
    /// Connect to node `number`.
    ///
    /// # Panics
    /// If the node is unreachable: the cluster is required, never skipped.
    pub async fn connect(number: usize) -> Node {
        let url = &urls()[number - 1];
        let mut options = ConnectOptions::new(url.clone());
        options
            .max_connections(8)
            .min_connections(1)
            .connect_timeout(Duration::from_secs(10))
            .sqlx_logging(false);
        let db = Database::connect(options).await.unwrap_or_else(|e| {
            panic!(
                "cannot reach Galera node {number} at {url}: {e} \
                 (start the cluster with tests/clusters/galera.sh start)"
            )
        });
        Node { number, db }
    }

    /// A locker on this node with `config`.
    pub async fn locker(&self, config: &Config) -> hierlock::Result<Locker> {
        Locker::connect(&self.db, config.clone()).await
    }

    /// Begin a transaction on this node.
    pub async fn begin(&self) -> DatabaseTransaction {
        self.db.begin().await.expect("begin")
    }

    async fn scalar(&self, sql: &str) -> i64 {
        let row = self
            .db
            .query_one_raw(Statement::from_string(DbBackend::MySql, sql))
            .await
            .unwrap_or_else(|e| panic!("{sql} on node {}: {e}", self.number))
            .expect("one row");
        row.try_get_by_index::<i64>(0).expect("an integer")
    }

    /// `wsrep_cluster_size` as this node sees it.
    pub async fn cluster_size(&self) -> i64 {
        self.scalar(
            "SELECT CAST(VARIABLE_VALUE AS SIGNED) FROM information_schema.GLOBAL_STATUS \
             WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE'",
        )
        .await
    }

    /// Whether connection `id` waits for a row lock on this node.
    ///
    /// InnoDB refreshes INNODB_TRX only when it was not read for 100 ms:
    /// callers poll more slowly than that, and tests run one at a time.
    pub async fn is_waiting(&self, id: i64) -> bool {
        let sql = format!(
            "SELECT CAST(COUNT(*) AS SIGNED) FROM information_schema.INNODB_TRX \
             WHERE trx_mysql_thread_id = {id} AND trx_state = 'LOCK WAIT'"
        );
        self.scalar(&sql).await > 0
    }

    /// Wait (at most 10 s) until connection `id` waits for a lock.
    pub async fn wait_until_blocked(&self, id: i64) {
        bounded(&format!("connection {id} waiting for a lock"), async {
            while !self.is_waiting(id).await {
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
        })
        .await;
    }

    /// Kill this node's server process with SIGKILL, as a crash would; the
    /// returned guard brings it back when dropped.
    ///
    /// # Panics
    /// If the node's pid file cannot be read (the cluster is not the local
    /// `galera.sh` one) or `kill` fails.
    pub async fn kill(&self) -> Killed {
        let pid_file = self
            .db
            .query_one_raw(Statement::from_string(
                DbBackend::MySql,
                "SELECT @@GLOBAL.pid_file AS f",
            ))
            .await
            .expect("pid_file")
            .expect("one row")
            .try_get::<String>("", "f")
            .expect("pid_file column");
        let pid = std::fs::read_to_string(&pid_file)
            .unwrap_or_else(|e| panic!("reading node {}'s {pid_file}: {e}", self.number));
        let status = std::process::Command::new("kill")
            .args(["-9", pid.trim()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -9 {} failed", pid.trim());
        Killed {
            number: self.number,
        }
    }
}

/// `galera.sh restart-node N`: join node `number` again by SST. Its output
/// goes to the test's output (shown when the test fails).
///
/// # Errors
/// If the script failed.
pub fn restart_node(number: usize) -> Result<(), String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/clusters/galera.sh");
    let started = std::time::Instant::now();
    let out = std::process::Command::new("bash")
        .args([script, "restart-node", &number.to_string()])
        .output()
        .map_err(|e| format!("running {script}: {e}"))?;
    eprintln!(
        "{script} restart-node {number} ({:.1} s):\n{}{}",
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{script} restart-node {number} failed"))
    }
}

/// A node killed by [`Node::kill`]; dropping this brings it back, even when
/// the test failed, so that the next test and the next run find 3 nodes.
pub struct Killed {
    number: usize,
}

impl Killed {
    /// Bring the node back now and check that it rejoined.
    ///
    /// # Panics
    /// If `galera.sh restart-node` fails.
    pub fn revive(self) {
        let number = self.number;
        std::mem::forget(self);
        restart_node(number).unwrap_or_else(|e| panic!("{e}"));
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        if let Err(e) = restart_node(self.number) {
            eprintln!("{e}");
        }
    }
}

/// The configuration of a test's bucket table `hl_galera_<test>`.
pub fn config(test: &str) -> Config {
    Config::default()
        .with_table(&format!("hl_galera_{test}"))
        .expect("test table names are identifiers")
        .with_bucket_space(BUCKET_SPACE)
        .expect("a valid bucket space")
}

/// Create and fill `config`'s bucket table from node 1, and wait until every
/// node has applied it (Galera applies other nodes' writes asynchronously).
pub async fn provision(config: &Config) {
    let node1 = Node::connect(1).await;
    let table = config.table().to_string();
    for name in [table.clone(), config.table().meta()] {
        node1
            .db
            .execute_raw(Statement::from_string(
                DbBackend::MySql,
                format!("DROP TABLE IF EXISTS {name}"),
            ))
            .await
            .expect("drop test table");
    }
    Provision::new(config.clone())
        .run(&node1.db)
        .await
        .unwrap_or_else(|e| panic!("provisioning {table} on Galera node 1: {e}"));
    // Galera applies in commit order: once a node accepts a locker, it has
    // the whole table, up to the metadata row marked complete.
    let accepting = config.clone().with_galera_single_writer();
    for number in 1..=3 {
        let node = Node::connect(number).await;
        let mut last = None;
        let ready = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match node.locker(&accepting).await {
                    Ok(_) => return,
                    Err(e) => last = Some(e),
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        assert!(
            ready.is_ok(),
            "{table} never became usable on node {number}: {last:?}"
        );
    }
}

/// The server-side id of the connection `txn` runs on.
pub async fn connection_id(txn: &DatabaseTransaction) -> i64 {
    txn.query_one_raw(Statement::from_string(
        DbBackend::MySql,
        "SELECT CAST(CONNECTION_ID() AS SIGNED) AS id",
    ))
    .await
    .expect("connection id")
    .expect("one row")
    .try_get("", "id")
    .expect("id column")
}
