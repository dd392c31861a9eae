//! `live_locks` and `hierlock inspect` against the real servers: a holder
//! and a waiter made here are shown with their level, bucket (or advisory
//! key) and mode, and mapped back to the node they lock.

use std::process::Command;
use std::time::Duration;

use hierlock::{
    Config, KeyKind, Keyspace, Level, LockKey, LockMode, Locker, PostgresLocks, SubtreeReads,
    Target, Wait,
};
use hierlock_migration::{LiveLock, LiveLocks, LockState, Provision, live_locks};
use sea_orm::{
    ConnectionTrait, Database, DatabaseConnection, DbBackend, Statement, TransactionTrait,
};

const SPACE: u32 = 50;

struct Server {
    name: &'static str,
    url: String,
    postgres_locks: Option<PostgresLocks>,
}

fn servers() -> Vec<Server> {
    let url = |var: &str, default: &str| std::env::var(var).unwrap_or_else(|_| default.to_owned());
    let postgres = url(
        "HIERLOCK_POSTGRES_URL",
        "postgres://postgres@127.0.0.1:5432/test",
    );
    vec![
        Server {
            name: "mariadb",
            url: url("HIERLOCK_MARIADB_URL", "mysql://root@127.0.0.1:3306/test"),
            postgres_locks: None,
        },
        Server {
            name: "mysql",
            url: url("HIERLOCK_MYSQL_URL", "mysql://root@127.0.0.1:3307/test"),
            postgres_locks: None,
        },
        Server {
            name: "postgres-bucket-table",
            url: postgres.clone(),
            postgres_locks: Some(PostgresLocks::BucketTable),
        },
        Server {
            name: "postgres-advisory",
            url: postgres,
            postgres_locks: Some(PostgresLocks::default()),
        },
    ]
}

fn config(server: &Server) -> Config {
    let config = Config::default()
        .with_table(&format!("hl_live_locks_{}", server.name.replace('-', "_")))
        .and_then(|c| c.with_bucket_space(SPACE))
        .and_then(|c| c.with_wait(Wait::Timeout(Duration::from_secs(30))))
        .expect("valid");
    match server.postgres_locks {
        Some(locks) => config.with_postgres_locks(locks),
        None => config,
    }
}

/// `config` with advisory keys in `namespace`, if it uses advisory locks:
/// they are server-wide, and the scenarios run at the same time, so each
/// reports (and waits on) keys of its own only.
fn own_advisory_namespace(config: Config, namespace: u16) -> Config {
    match config.postgres_locks() {
        PostgresLocks::Advisory { .. } => {
            config.with_postgres_locks(PostgresLocks::Advisory { namespace })
        }
        _ => config,
    }
}

async fn connect(url: &str) -> DatabaseConnection {
    Database::connect(url)
        .await
        .unwrap_or_else(|e| panic!("{url} is unreachable ({e}): the suite needs it"))
}

async fn connection_id(txn: &impl ConnectionTrait) -> i64 {
    let sql = match txn.get_database_backend() {
        DbBackend::Postgres => "SELECT pg_backend_pid()::int8 AS id",
        _ => "SELECT CAST(CONNECTION_ID() AS SIGNED) AS id",
    };
    let row = txn
        .query_one_raw(Statement::from_string(txn.get_database_backend(), sql))
        .await
        .expect("connection id")
        .expect("one row");
    row.try_get("", "id").expect("id")
}

/// Read the live locks until `waiter` shows as waiting (InnoDB refreshes its
/// lock views at most every 100 ms); panics after 10 s.
async fn until_waiting(
    db: &DatabaseConnection,
    config: &Config,
    nodes: &[Target],
    waiter: i64,
) -> LiveLocks {
    let poll = async {
        loop {
            let locks = live_locks(db, config, nodes).await.expect("live locks");
            // The lock views and the wait views are read by two queries: a
            // wait can show in the first before the second names its
            // blocker (seen once on MySQL 9). Wait for both.
            if locks
                .waiters()
                .any(|l| l.session == waiter && !l.blocked_by.is_empty())
            {
                return locks;
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), poll)
        .await
        .unwrap_or_else(|_| panic!("session {waiter} never showed as waiting, with its blocker"))
}

fn lock_of(locks: &LiveLocks, session: i64, state: LockState, key: LockKey) -> &LiveLock {
    locks
        .locks
        .iter()
        .find(|l| l.session == session && l.state == state && l.key == key)
        .unwrap_or_else(|| panic!("no {state:?} lock of session {session} on {key:?} in\n{locks}"))
}

/// One transaction holds Resource(u1/a1/r1) for writing, a second waits for
/// it: both are shown on the resource's key, mapped to that node, and the
/// key is the hottest.
#[tokio::test]
async fn a_holder_and_a_waiter_are_shown_and_mapped_to_their_node() {
    for server in servers() {
        let name = server.name;
        let db = connect(&server.url).await;
        let config = config(&server);
        for table in [config.table().to_string(), config.table().meta()] {
            db.execute_unprepared(&format!("DROP TABLE IF EXISTS {table}"))
                .await
                .expect("drop");
        }
        Provision::new(config.clone())
            .run(&db)
            .await
            .expect("provision");
        let locker = Locker::connect(&db, config.clone()).await.expect("locker");
        let target = Target::resource("u1", "a1", "r1");
        let ids = target.path().to_vec();
        let key = locker.keyspace().key_of(Level::Resource, &ids);

        let holder_txn = db.begin().await.expect("begin");
        let holder = connection_id(&holder_txn).await;
        locker
            .acquire(&holder_txn, [target.clone().write()])
            .await
            .expect("the holder locks");
        let waiter_txn = db.begin().await.expect("begin");
        let waiter = connection_id(&waiter_txn).await;
        let waiting = tokio::spawn({
            let (locker, target) = (locker.clone(), target.clone());
            async move {
                let acquired = locker
                    .acquire(&waiter_txn, [target.write()])
                    .await
                    .map(|_| ());
                waiter_txn.rollback().await.expect("rollback");
                acquired
            }
        });

        let nodes = [target.clone()];
        let locks = until_waiting(&db, &config, &nodes, waiter).await;
        let waiting_lock = lock_of(&locks, waiter, LockState::Waiting, key);
        assert_eq!(
            waiting_lock.mode,
            Some(LockMode::Exclusive),
            "{name}\n{locks}"
        );
        assert_eq!(waiting_lock.nodes, nodes, "{name}\n{locks}");
        assert!(waiting_lock.waited.is_some(), "{name}\n{locks}");
        assert!(waiting_lock.blocked_by.contains(&holder), "{name}\n{locks}");
        let held = lock_of(&locks, holder, LockState::Held, key);
        assert_eq!(held.nodes, nodes, "{name}\n{locks}");
        // PostgreSQL does not say in which mode a row is held.
        let holder_mode = match server.postgres_locks {
            Some(PostgresLocks::BucketTable) => None,
            _ => Some(LockMode::Exclusive),
        };
        assert_eq!(held.mode, holder_mode, "{name}\n{locks}");
        assert_eq!(locks.hottest[0].key, key, "{name}\n{locks}");
        assert_eq!(locks.hottest[0].waiters, 1, "{name}\n{locks}");
        // Where every held lock is listed, the ancestors' shared locks are
        // mapped to the ancestors.
        if name == "mysql" || name == "postgres-advisory" {
            let user_key = locker.keyspace().key_of(Level::User, &ids[..1]);
            let user = lock_of(&locks, holder, LockState::Held, user_key);
            assert_eq!(user.mode, Some(LockMode::Shared), "{name}\n{locks}");
            assert_eq!(user.nodes, [Target::user("u1")], "{name}\n{locks}");
        }
        if let Keyspace::Buckets { space, .. } = locks.keyspace {
            assert_eq!(space, SPACE, "{name}: the space is the table's");
        }

        let json = inspect_command(&server, &config, &["--json", "u1/a1/r1"]);
        let report: serde_json::Value = serde_json::from_str(&json).expect("JSON");
        let shown = |session: i64, state: &str| {
            report["locks"].as_array().expect("locks").iter().any(|l| {
                l["session"] == session
                    && l["state"] == state
                    && l["key"]["level"] == "resource"
                    && l["key"]["slot"] == key.slot
                    && l["nodes"] == serde_json::json!(["u1/a1/r1"])
            })
        };
        assert!(shown(holder, "held"), "{name}: {json}");
        assert!(shown(waiter, "waiting"), "{name}: {json}");
        let table = inspect_command(&server, &config, &["u1/a1/r1"]);
        assert!(table.contains("hottest:"), "{name}: {table}");
        assert!(table.contains("Resource(u1/a1/r1)"), "{name}: {table}");

        holder_txn.rollback().await.expect("rollback");
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("the waiter is granted once the holder is gone")
            .expect("join")
            .expect("the waiter locks");
    }
}

/// With subtree reads, a writer of Resource(u1/a1/r1) holds one stripe of
/// its account exclusively and a subtree reader of the account waits for it:
/// both are shown on that stripe key, as a stripe of the account level (in
/// the report, its text and its JSON).
#[tokio::test]
async fn a_held_stripe_and_its_waiter_are_shown_as_a_stripe() {
    for server in servers() {
        let name = server.name;
        let db = connect(&server.url).await;
        let config = config(&server)
            .with_table(&format!("hl_live_stripes_{}", name.replace('-', "_")))
            .expect("valid")
            .with_subtree_reads(SubtreeReads::striped(4).expect("4 stripes"));
        let config = own_advisory_namespace(config, 0x57e1);
        for table in [config.table().to_string(), config.table().meta()] {
            db.execute_unprepared(&format!("DROP TABLE IF EXISTS {table}"))
                .await
                .expect("drop");
        }
        Provision::new(config.clone())
            .run(&db)
            .await
            .expect("provision");
        let locker = Locker::connect(&db, config.clone()).await.expect("locker");
        let resource = Target::resource("u1", "a1", "r1");
        let account = Target::account("u1", "a1");
        let plan = locker
            .plan(&[resource.clone().write()])
            .expect("the writer's plan");
        let stripe = plan
            .locks()
            .iter()
            .find(|l| l.key.kind == KeyKind::Stripe && l.key.level == Level::Account)
            .expect("a write takes a stripe of its account")
            .key;

        let holder_txn = db.begin().await.expect("begin");
        let holder = connection_id(&holder_txn).await;
        locker
            .acquire(&holder_txn, [resource.clone().write()])
            .await
            .expect("the writer locks");
        let waiter_txn = db.begin().await.expect("begin");
        let waiter = connection_id(&waiter_txn).await;
        let waiting = tokio::spawn({
            let (locker, account) = (locker.clone(), account.clone());
            async move {
                let acquired = locker
                    .acquire(&waiter_txn, [account.read_subtree()])
                    .await
                    .map(|_| ());
                waiter_txn.rollback().await.expect("rollback");
                acquired
            }
        });

        let locks = until_waiting(&db, &config, &[], waiter).await;
        let waiting_lock = lock_of(&locks, waiter, LockState::Waiting, stripe);
        assert_eq!(waiting_lock.mode, Some(LockMode::Shared), "{name}\n{locks}");
        assert!(waiting_lock.blocked_by.contains(&holder), "{name}\n{locks}");
        lock_of(&locks, holder, LockState::Held, stripe);
        let text = locks.to_string();
        assert!(
            text.lines()
                .any(|l| l.contains("waiting") && l.contains("account stripe")),
            "{name}: the waiter's row names the stripe\n{text}"
        );

        let json = inspect_command(&server, &config, &["--json"]);
        let report: serde_json::Value = serde_json::from_str(&json).expect("JSON");
        let shown = |session: i64, state: &str| {
            report["locks"].as_array().expect("locks").iter().any(|l| {
                l["session"] == session
                    && l["state"] == state
                    && l["key"]["level"] == "account"
                    && l["key"]["kind"] == "stripe"
                    && l["key"]["slot"] == stripe.slot
            })
        };
        assert!(shown(holder, "held"), "{name}: {json}");
        assert!(shown(waiter, "waiting"), "{name}: {json}");
        let table = inspect_command(&server, &config, &[]);
        assert!(table.contains("account stripe"), "{name}: {table}");

        holder_txn.rollback().await.expect("rollback");
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("the reader is granted once the writer is gone")
            .expect("join")
            .expect("the reader locks");
    }
}

/// `hierlock inspect` on `server`, its standard output.
fn inspect_command(server: &Server, config: &Config, args: &[&str]) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hierlock"));
    command.args([
        "inspect",
        "--database-url",
        &server.url,
        "--table",
        config.table().as_str(),
    ]);
    match config.postgres_locks() {
        PostgresLocks::BucketTable => {
            command.args(["--postgres-locks", "bucket-table"]);
        }
        PostgresLocks::Advisory { namespace } => {
            command.args(["--advisory-namespace", &namespace.to_string()]);
        }
        _ => {}
    }
    let out = command.args(args).output().expect("run hierlock");
    assert!(
        out.status.success(),
        "{}: {}",
        server.name,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Nothing held: an empty report, not an error (and on MariaDB, whose view
/// shows only waits, the same).
#[tokio::test]
async fn no_locks_is_an_empty_report() {
    for server in servers() {
        let db = connect(&server.url).await;
        let config = config(&server)
            .with_table(&format!(
                "hl_live_locks_idle_{}",
                server.name.replace('-', "_")
            ))
            .expect("valid");
        let config = own_advisory_namespace(config, 0x1d1e);
        Provision::new(config.clone())
            .run(&db)
            .await
            .expect("provision");
        let locks = live_locks(&db, &config, &[Target::user("u1")])
            .await
            .expect("live locks");
        assert!(locks.locks.is_empty(), "{}\n{locks}", server.name);
        assert!(locks.to_string().contains("no hierlock locks"), "{locks}");
    }
}
