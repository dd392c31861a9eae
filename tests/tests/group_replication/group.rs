//! The group under test: its members, a bucket table on it, lock-wait
//! polling, the script that changes its mode, kills and restores members.

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

/// The members' URLs, in `group-replication.sh` order (member 1 first).
pub fn urls() -> Vec<String> {
    cluster::urls("HIERLOCK_GROUP_URLS", [3330, 3331, 3332], "members")
}

/// Tests run one at a time: they switch modes and kill the primary.
static GROUP: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Hold while a test uses the group.
pub async fn exclusive() -> Exclusive {
    cluster::exclusive(&GROUP, "127.0.0.1:4598").await
}

/// A pool on one member (1-based, as `group-replication.sh` numbers them).
pub struct Member {
    pub number: usize,
    pub db: DatabaseConnection,
}

impl Member {
    /// Connect to member `number`.
    ///
    /// # Panics
    /// If the member is unreachable: the group is required, never skipped.
    pub async fn connect(number: usize) -> Member {
        let url = urls()[number - 1].clone();
        Member::connect_to(number, &url).await
    }

    /// Connect to member `number` at `url` (another user's, say).
    ///
    /// # Panics
    /// If the member is unreachable.
    pub async fn connect_to(number: usize, url: &str) -> Member {
        let mut options = ConnectOptions::new(url.to_owned());
        options
            .max_connections(8)
            .min_connections(1)
            .connect_timeout(Duration::from_secs(10))
            .sqlx_logging(false);
        let db = Database::connect(options).await.unwrap_or_else(|e| {
            panic!(
                "cannot reach Group Replication member {number} at {url}: {e} \
                 (start the group with tests/clusters/group-replication.sh start)"
            )
        });
        Member { number, db }
    }

    /// A locker on this member with `config`.
    pub async fn locker(&self, config: &Config) -> hierlock::Result<Locker> {
        Locker::connect(&self.db, config.clone()).await
    }

    /// Begin a transaction on this member.
    pub async fn begin(&self) -> DatabaseTransaction {
        self.db.begin().await.expect("begin")
    }

    /// Run `sql` (autocommit).
    pub async fn execute(&self, sql: &str) {
        self.db
            .execute_raw(Statement::from_string(DbBackend::MySql, sql))
            .await
            .unwrap_or_else(|e| panic!("{sql} on member {}: {e}", self.number));
    }

    /// An integer that `sql` selects.
    pub async fn scalar(&self, sql: &str) -> i64 {
        let row = self
            .db
            .query_one_raw(Statement::from_string(DbBackend::MySql, sql))
            .await
            .unwrap_or_else(|e| panic!("{sql} on member {}: {e}", self.number))
            .expect("one row");
        row.try_get_by_index::<i64>(0).expect("an integer")
    }

    /// Whether connection `id` waits for a row lock on this member.
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
}

/// Run `group-replication.sh` with `args`; its output goes to the test's
/// output (shown when the test fails).
///
/// # Errors
/// If the script failed.
pub fn script(args: &[&str]) -> Result<(), String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/clusters/group-replication.sh");
    let started = std::time::Instant::now();
    let out = std::process::Command::new("bash")
        .arg(path)
        .args(args)
        .output()
        .map_err(|e| format!("running {path}: {e}"))?;
    eprintln!(
        "{path} {} ({:.1} s):\n{}{}",
        args.join(" "),
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{path} {} failed", args.join(" ")))
    }
}

/// Put the group back as every test expects it (3 ONLINE members,
/// single-primary, member 1 the primary) when dropped, even when the test
/// failed: restarts and rejoins a killed member, switches the mode back.
pub struct Restore;

impl Restore {
    /// Restore now, and check that it worked.
    ///
    /// # Panics
    /// If `group-replication.sh start` fails.
    pub fn now(self) {
        std::mem::forget(self);
        tokio::task::block_in_place(|| script(&["start"])).unwrap_or_else(|e| panic!("{e}"));
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if let Err(e) = script(&["start"]) {
            eprintln!("{e}");
        }
    }
}

/// Switch the group to multi-primary mode until the returned guard is
/// dropped (or [`Restore::now`]).
///
/// # Panics
/// If the switch fails.
pub fn multi_primary() -> Restore {
    let restore = Restore;
    tokio::task::block_in_place(|| script(&["mode", "multi"])).unwrap_or_else(|e| panic!("{e}"));
    restore
}

/// The configuration of a test's bucket table `hl_gr_<test>`.
pub fn config(test: &str) -> Config {
    Config::default()
        .with_table(&format!("hl_gr_{test}"))
        .expect("test table names are identifiers")
        .with_bucket_space(BUCKET_SPACE)
        .expect("a valid bucket space")
}

/// Create and fill `config`'s bucket table on member 1 (the primary, in
/// single-primary mode), and wait until members `others` have applied it.
pub async fn provision(config: &Config, others: &[usize]) {
    let primary = Member::connect(1).await;
    let table = config.table().to_string();
    for name in [table.clone(), config.table().meta()] {
        primary
            .execute(&format!("DROP TABLE IF EXISTS {name}"))
            .await;
    }
    Provision::new(config.clone())
        .run(&primary.db)
        .await
        .unwrap_or_else(|e| panic!("provisioning {table} on member 1: {e}"));
    for &number in others {
        caught_up(&primary, &Member::connect(number).await).await;
    }
}

/// Wait (at most 8 s) until `member` has applied every transaction `from`
/// has: secondaries apply the group's transactions asynchronously.
///
/// # Panics
/// If it has not by then.
pub async fn caught_up(from: &Member, member: &Member) {
    let row = from
        .db
        .query_one_raw(Statement::from_string(
            DbBackend::MySql,
            "SELECT @@GLOBAL.gtid_executed AS g",
        ))
        .await
        .expect("gtid_executed")
        .expect("one row");
    let executed: String = row.try_get("", "g").expect("gtid_executed column");
    let timed_out = member
        .scalar(&format!(
            "SELECT CAST(WAIT_FOR_EXECUTED_GTID_SET('{executed}', 8) AS SIGNED)"
        ))
        .await;
    assert_eq!(
        timed_out, 0,
        "member {} did not apply member {}'s transactions within 8 s",
        member.number, from.number
    );
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
