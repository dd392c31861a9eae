//! Failures inside a protected write are typed as acquisition's: a row-lock
//! wait the server gave up is `LockTimeout` (retryable), and
//! `hierlock::retry` runs the transaction again until it lands.

use std::time::Duration;

use hierlock::sea_orm::sea_query::Expr;
use hierlock::sea_orm::{
    ActiveValue::Set, ActiveValue::Unchanged, ColumnTrait, ConnectionTrait, ExprTrait, Statement,
    TransactionTrait,
};
use hierlock::{Error, ErrorKind, RetryPolicy, retry};
use hierlock_tests::{Backend, Fixture, bounded};

use crate::support::as_account;

#[hierlock::protected(
    level = resource,
    user = user_id,
    account = account_id,
    resource = id,
    version = version
)]
pub mod counter {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlt_counter")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: String,
        pub account_id: String,
        pub hits: i64,
        pub version: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

/// The tests share the table, and PostgreSQL's two backends a server.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn fresh_table(fx: &Fixture) {
    fx.exec("DROP TABLE IF EXISTS hlt_counter").await;
    fx.exec(
        "CREATE TABLE hlt_counter (id BIGINT NOT NULL PRIMARY KEY, user_id VARCHAR(16) NOT NULL, \
         account_id VARCHAR(16) NOT NULL, hits BIGINT NOT NULL, version BIGINT NOT NULL)",
    )
    .await;
    fx.exec("INSERT INTO hlt_counter VALUES (1, 'u1', 'a1', 0, 0), (2, 'u1', 'a1', 0, 0)")
        .await;
}

#[track_caller]
fn assert_lock_timeout<T: std::fmt::Debug>(outcome: Result<T, Error>, what: &str) {
    match outcome {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::LockTimeout, "{what}: {e}");
            assert!(e.is_retryable(), "{what}: {e} is retryable");
        }
        Ok(v) => panic!("{what}: expected LockTimeout, got Ok({v:?})"),
    }
}

/// A protected write waiting on a row another writer (not a lock user)
/// holds gets the server's lock wait timeout as `LockTimeout`, retryable.
/// Servers only: on SQLite the proof holds the database's write lock.
pub async fn a_row_lock_wait_in_a_protected_write_is_a_lock_timeout(backend: Backend) {
    let _turn = TURN.lock().await;
    let fx = Fixture::new(backend, "hlt_counter", 1000).await;
    fresh_table(&fx).await;
    let holder = fx.begin().await;
    holder
        .execute_raw(Statement::from_string(
            fx.db.get_database_backend(),
            "SELECT id FROM hlt_counter WHERE id IN (1, 2) FOR UPDATE",
        ))
        .await
        .expect("hold rows 1 and 2");
    // A pool of its own, whose session wait is short (MySQL family) or
    // whose transactions set one (PostgreSQL).
    let db = fx.another_pool(1).await;
    let short_wait = match backend {
        Backend::MariaDb | Backend::MySql => {
            db.execute_unprepared("SET SESSION innodb_lock_wait_timeout = 1")
                .await
                .expect("short lock wait");
            None
        }
        _ => Some("SET LOCAL lock_timeout = '300ms'"),
    };
    for write in ["update", "delete_by_id", "update_many", "exec_versioned"] {
        let txn = db.begin().await.expect("begin");
        if let Some(sql) = short_wait {
            txn.execute_unprepared(sql).await.expect("short lock wait");
        }
        let outcome = bounded(
            write,
            as_account(&fx.locker, &txn, "u1", "a1", async |lock| match write {
                "update" => counter::Entity::update(counter::ActiveModel {
                    id: Set(1),
                    user_id: Set("u1".to_owned()),
                    account_id: Set("a1".to_owned()),
                    hits: Set(1),
                    ..Default::default()
                })
                .exec(lock)
                .await
                .map(drop),
                "delete_by_id" => counter::Entity::delete_by_id(1).exec(lock).await.map(drop),
                "update_many" => counter::Entity::update_many()
                    .filter(counter::Column::UserId.eq("u1"))
                    .col_expr(
                        counter::Column::Hits,
                        Expr::col(counter::Column::Hits).add(1),
                    )
                    .exec(lock)
                    .await
                    .map(drop),
                _ => counter::Entity::update(counter::ActiveModel {
                    id: Unchanged(2),
                    hits: Set(1),
                    version: Unchanged(0),
                    ..Default::default()
                })
                .exec_versioned(&txn)
                .await
                .map(drop),
            }),
        )
        .await
        .expect("locks");
        assert_lock_timeout(outcome, write);
        txn.rollback().await.expect("rollback");
    }
    holder.rollback().await.expect("release the rows");
}

/// Tasks incrementing one row through `retry` with optimistic versions:
/// every increment lands once (stale versions and busy or timed-out waits
/// are retried).
pub async fn versioned_increments_through_retry_all_land(backend: Backend) {
    const TASKS: i64 = 4;
    const EACH: i64 = 10;
    let _turn = TURN.lock().await;
    let fx = Fixture::new(backend, "hlt_counter", 1000).await;
    fresh_table(&fx).await;
    let policy = RetryPolicy::default()
        .with_max_attempts(1_000)
        .with_backoff(Duration::from_millis(1), Duration::from_millis(20));
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let db = fx.db.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..EACH {
                retry(&db, &policy, async |txn| {
                    let row = counter::Entity::find_by_id(1)
                        .one(txn)
                        .await?
                        .ok_or_else(|| hierlock::sea_orm::DbErr::RecordNotFound("row 1".into()))?;
                    let hits = row.hits + 1;
                    let mut row: counter::ActiveModel = row.into();
                    row.hits = Set(hits);
                    counter::Entity::update(row).exec_versioned(txn).await?;
                    Ok::<_, Error>(())
                })
                .await
                .expect("an increment lands");
            }
        }));
    }
    for task in tasks {
        bounded("the incrementing tasks", task).await.expect("task");
    }
    let row = counter::Entity::find_by_id(1)
        .one(&fx.db)
        .await
        .expect("read")
        .expect("row 1");
    assert_eq!((row.hits, row.version), (TASKS * EACH, TASKS * EACH));
}
