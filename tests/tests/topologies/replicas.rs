//! `Locker::connect` on replicas, read-only servers and hot standbys: refused
//! with `ErrorKind::UnsafeTopology` and the reason; their primaries accepted.
//!
//! Each test has its own bucket table (or advisory namespace), so they run in
//! parallel; none changes a server's state (the read-only case has its own
//! server, a replica whose replication is stopped).

use std::time::Duration;

use hierlock::{Config, ErrorKind, Locker, PostgresLocks, Topology};
use hierlock_migration::Provision;
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};

use crate::support::{Server, advisory_config, bucket_config, connect, exec, query_i64, within};

/// Drop `config`'s tables on `primary`, provision them again, and wait until
/// `replica` holds every bucket row: the replica then differs from its
/// primary only in what it is, not in what it holds.
async fn provision_and_replicate(
    primary: &DatabaseConnection,
    replica: &DatabaseConnection,
    config: &Config,
) {
    for table in [config.table().to_string(), config.table().meta()] {
        exec(primary, &format!("DROP TABLE IF EXISTS {table}")).await;
    }
    let report = within(
        30,
        "provisioning",
        Provision::new(config.clone()).run(primary),
    )
    .await
    .unwrap_or_else(|e| panic!("provisioning {} on the primary: {e}", config.table()));
    assert!(report.total_rows > 0);
    let count = format!("SELECT COUNT(*) FROM {}", config.table());
    let backend = replica.get_database_backend();
    within(20, "the bucket table to reach the replica", async {
        loop {
            // The table may not exist there yet.
            let rows = replica
                .query_one_raw(Statement::from_string(backend, &count))
                .await
                .ok()
                .flatten()
                .and_then(|row| row.try_get_by_index::<i64>(0).ok());
            if rows == Some(i64::try_from(report.total_rows).expect("row count")) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

/// `Locker::connect` on `db` fails with `UnsafeTopology` naming `reason`.
async fn assert_refused(db: &DatabaseConnection, config: Config, reason: &str) {
    let err = within(10, "Locker::connect", Locker::connect(db, config))
        .await
        .expect_err("locks there would exclude nothing on the primary: refused");
    assert_eq!(err.kind(), ErrorKind::UnsafeTopology, "{err}");
    assert!(!err.is_retryable(), "{err}");
    assert!(err.to_string().contains(reason), "{reason:?} not in: {err}");
    eprintln!("refused: {err}");
}

async fn mariadb_slaves_running(db: &DatabaseConnection) -> i64 {
    query_i64(
        db,
        "SELECT CAST(VARIABLE_VALUE AS SIGNED) FROM information_schema.GLOBAL_STATUS \
         WHERE VARIABLE_NAME = 'SLAVES_RUNNING'",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mariadb_replica_is_refused_and_its_primary_accepted() {
    let primary = connect(Server::MariaDbPrimary).await;
    let replica = connect(Server::MariaDbReplica).await;
    assert_eq!(
        mariadb_slaves_running(&replica).await,
        1,
        "{:?} must be a running replica (tests/clusters/replicas.sh start)",
        Server::MariaDbReplica
    );
    let config = bucket_config("mariadb_replica");
    provision_and_replicate(&primary, &replica, &config).await;

    let locker = within(
        10,
        "Locker::connect",
        Locker::connect(&primary, config.clone()),
    )
    .await
    .expect("the primary takes locks");
    assert_eq!(locker.topology(), Topology::Single);
    // The replica is also --read-only: the replication thread is the reason given.
    assert_refused(
        &replica,
        config,
        "a replica (a replication thread is running)",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_mariadb_server_is_refused() {
    let read_only = connect(Server::MariaDbReadOnly).await;
    assert_eq!(
        query_i64(&read_only, "SELECT CAST(@@GLOBAL.read_only AS SIGNED)").await,
        1
    );
    assert_eq!(
        mariadb_slaves_running(&read_only).await,
        0,
        "{:?} must not replicate: this test is about @@read_only alone",
        Server::MariaDbReadOnly
    );
    assert_refused(
        &read_only,
        bucket_config("mariadb_read_only"),
        "read-only (@@read_only)",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_hot_standby_is_refused_and_its_primary_accepted() {
    let primary = connect(Server::PostgresPrimary).await;
    let standby = connect(Server::PostgresStandby).await;
    assert_eq!(
        query_i64(&primary, "SELECT pg_is_in_recovery()::int::int8").await,
        0
    );
    assert_eq!(
        query_i64(&standby, "SELECT pg_is_in_recovery()::int::int8").await,
        1
    );
    let config = advisory_config();
    let locker = within(
        10,
        "Locker::connect",
        Locker::connect(&primary, config.clone()),
    )
    .await
    .expect("the primary takes locks");
    assert_eq!(locker.topology(), Topology::Single);
    assert_refused(&standby, config, "a hot standby (pg_is_in_recovery())").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_hot_standby_is_refused_with_the_bucket_table_too() {
    let primary = connect(Server::PostgresPrimary).await;
    let standby = connect(Server::PostgresStandby).await;
    let config = bucket_config("pg_standby").with_postgres_locks(PostgresLocks::BucketTable);
    provision_and_replicate(&primary, &standby, &config).await;
    within(
        10,
        "Locker::connect",
        Locker::connect(&primary, config.clone()),
    )
    .await
    .expect("the primary takes locks");
    assert_refused(&standby, config, "a hot standby (pg_is_in_recovery())").await;
}

/// A locker whose pool reached the primary, used on a transaction that
/// reaches a hot standby (its server demoted by a failover since, or a
/// pool pointed at a member directly): PostgreSQL grants advisory locks on
/// a standby, where they exclude nothing on the primary, so the
/// acquisition must fail, its connection ended, before anything runs under
/// such a lock; whether it would wait (the probe) or not (`NoWait`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advisory_locks_on_a_postgres_hot_standby_are_not_granted() {
    let primary = connect(Server::PostgresPrimary).await;
    let standby = connect(Server::PostgresStandby).await;
    let locker = within(
        10,
        "Locker::connect",
        Locker::connect(&primary, advisory_config()),
    )
    .await
    .expect("the primary takes locks");
    let sessions = Sessions {
        own: "SELECT pg_backend_pid()::int8",
        count: "SELECT COUNT(*)::int8 FROM pg_stat_activity WHERE pid = ",
    };
    assert_no_lock_granted(&locker, &standby, sessions, "hot standby").await;
}

/// How to name a connection's session, and count the sessions by that
/// name (the name appended).
struct Sessions {
    own: &'static str,
    count: &'static str,
}

/// `locker`'s acquisitions on a transaction of `db` (blocking and
/// `NoWait`) are `ConnectionLost` naming `reason`, retryable, the
/// transaction lost, and their connection is ended so that the pool opens
/// a new one.
async fn assert_no_lock_granted(
    locker: &Locker,
    db: &DatabaseConnection,
    sessions: Sessions,
    reason: &str,
) {
    use hierlock::sea_orm::TransactionTrait;
    use hierlock::{Target, TxnState, Wait};

    for wait in [Wait::Block, Wait::NoWait] {
        let txn = db.begin().await.expect("begin");
        let id = query_i64(&txn, sessions.own).await;
        let target = Target::account("u1", "a1").write();
        let err = within(10, "an acquisition", async {
            locker.acquire_with(&txn, [target], wait).await
        })
        .await
        .map(drop)
        .expect_err("no lock is granted there");
        assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
        assert_eq!(err.txn_state(), TxnState::Lost);
        assert!(err.is_retryable());
        assert!(err.to_string().contains(reason), "{err}");
        drop(txn);
        // The session ends just after it answers: give it a moment.
        let gone = format!("{}{id}", sessions.count);
        within(5, "the connection to end", async {
            while query_i64(db, &gone).await != 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
    }
}

/// A locker whose pool reached the primary, used on a transaction that
/// reaches a plain read-only MariaDB server (a replica without
/// `super_read_only`, reached after a failover behind a router): root, as
/// most services connect, takes row locks there (`SUPER` passes
/// `@@read_only`), which exclude nothing on the primary; the acquisition
/// must fail, its connection ended, whether it would wait or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_locks_on_a_read_only_mariadb_server_are_not_granted() {
    use hierlock::sea_orm::TransactionTrait;

    let primary = connect(Server::MariaDbPrimary).await;
    let read_only = connect(Server::MariaDbReadOnly).await;
    let config = bucket_config("mariadb_ro_grant");
    // Provisioned on both: the read-only server is not replicating, and
    // root may still write there.
    for db in [&primary, &read_only] {
        for table in [config.table().to_string(), config.table().meta()] {
            exec(db, &format!("DROP TABLE IF EXISTS {table}")).await;
        }
        within(30, "provisioning", Provision::new(config.clone()).run(db))
            .await
            .unwrap_or_else(|e| panic!("provisioning {}: {e}", config.table()));
    }
    let locker = within(
        10,
        "Locker::connect",
        Locker::connect(&primary, config.clone()),
    )
    .await
    .expect("the primary takes locks");
    // The server grants root the row locks hierlock's statement takes.
    let txn = read_only.begin().await.expect("begin");
    let granted = query_i64(
        &txn,
        &format!(
            "SELECT COUNT(*) FROM (SELECT level FROM {} LIMIT 1 FOR UPDATE) AS t",
            config.table()
        ),
    )
    .await;
    assert_eq!(granted, 1, "root locks rows on a read-only server");
    drop(txn);
    let sessions = Sessions {
        own: "SELECT CAST(CONNECTION_ID() AS SIGNED)",
        count: "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ",
    };
    assert_no_lock_granted(&locker, &read_only, sessions, "read-only (@@read_only)").await;
}
