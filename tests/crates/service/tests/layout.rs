//! The service's repository on SQLite: it writes the entities of its
//! upstream crate and its own, and a proof for another user writes nothing.

use hierlock::sea_orm::{
    ConnectionTrait, Database, DatabaseConnection, EntityTrait, ModelTrait, PaginatorTrait, Schema,
    TransactionTrait,
};
use hierlock::{Config, ErrorKind, Locker};
use hierlock_layout_entities::{account, audit, resource, user};
use hierlock_layout_service::{Accounts, ServiceError, limit, note, tag};

/// A fresh SQLite file in the temporary directory, with every table.
async fn database(name: &str) -> DatabaseConnection {
    let path = std::env::temp_dir().join(format!(
        "hierlock-layout-{name}-{}.sqlite",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    let db = Database::connect(format!("sqlite://{}?mode=rwc", path.display()))
        .await
        .expect("SQLite opens");
    let schema = Schema::new(db.get_database_backend());
    for table in [
        schema.create_table_from_entity(user::Table),
        schema.create_table_from_entity(account::Table),
        schema.create_table_from_entity(resource::Table),
        schema.create_table_from_entity(audit::Entity),
        schema.create_table_from_entity(limit::Table),
        schema.create_table_from_entity(tag::Entity),
        schema.create_table_from_entity(note::Entity),
    ] {
        db.execute(&table).await.expect("table created");
    }
    db
}

async fn repository(db: &DatabaseConnection) -> Accounts {
    // Provisions SQLite's metadata row (`hierlock::schema::ensure_sqlite`).
    let locker = Locker::connect(db, Config::default())
        .await
        .expect("locker");
    Accounts { locker }
}

#[tokio::test]
async fn the_repository_writes_upstream_and_own_entities() {
    let db = database("writes").await;
    let repo = repository(&db).await;

    let txn = db.begin().await.expect("begin");
    repo.open(&txn, 1, 10, 100).await.expect("open");
    txn.commit().await.expect("commit");

    let row = resource::Entity::find_by_id(100)
        .one(&db)
        .await
        .expect("read")
        .expect("the resource was written");
    assert_eq!((row.user_id, row.account_id, row.balance), (1, 10, 100));
    assert_eq!(user::Entity::find().count(&db).await.expect("count"), 1);
    assert_eq!(limit::Entity::find().count(&db).await.expect("count"), 1);
    assert_eq!(note::Entity::find().count(&db).await.expect("count"), 1);

    // Relations across the crates, both ways.
    let account = account::Entity::find_by_id(10)
        .one(&db)
        .await
        .expect("read")
        .expect("the account was written");
    let audits = account
        .find_related(audit::Entity)
        .all(&db)
        .await
        .expect("protected → plain");
    assert_eq!(audits.len(), 1);
    let tags = tag::Entity::find()
        .find_also_related(resource::Table)
        .all(&db)
        .await
        .expect("plain → protected");
    assert_eq!(tags.len(), 1);
    assert_eq!(tags[0].1.as_ref().map(|r| r.id), Some(100));

    let txn = db.begin().await.expect("begin");
    let updated = repo
        .set_balance(&txn, 1, 10, row, 42)
        .await
        .expect("update");
    txn.commit().await.expect("commit");
    assert_eq!(updated.balance, 42);

    // The row read with its lock (`rows = ..`), then written.
    let txn = db.begin().await.expect("begin");
    let deposited = repo.deposit(&txn, 1, 10, 100, 8).await.expect("deposit");
    txn.commit().await.expect("commit");
    assert_eq!(deposited.balance, 50);
    let txn = db.begin().await.expect("begin");
    let missing = repo.deposit(&txn, 1, 10, 101, 8).await;
    assert!(matches!(missing, Err(ServiceError::Db(_))), "{missing:?}");
}

#[tokio::test]
async fn a_proof_for_another_user_writes_nothing() {
    let db = database("not-covered").await;
    let repo = repository(&db).await;
    let txn = db.begin().await.expect("begin");
    repo.open(&txn, 1, 10, 100).await.expect("open");
    txn.commit().await.expect("commit");
    let row = resource::Entity::find_by_id(100)
        .one(&db)
        .await
        .expect("read")
        .expect("the resource was written");

    // User 2's account 20 lock does not cover user 1's resource.
    let txn = db.begin().await.expect("begin");
    let err = repo
        .set_balance(&txn, 2, 20, row, 0)
        .await
        .expect_err("not covered");
    txn.rollback().await.expect("rollback");
    match err {
        ServiceError::Lock(e) => assert_eq!(e.kind(), ErrorKind::NotCovered, "{e}"),
        other => panic!("expected NotCovered, got {other}"),
    }
    let row = resource::Entity::find_by_id(100)
        .one(&db)
        .await
        .expect("read")
        .expect("still there");
    assert_eq!(row.balance, 100);
}

#[tokio::test]
async fn uuid_ids_name_the_node_of_their_text() {
    let db = database("uuid").await;
    let repo = repository(&db).await;
    let session = uuid::Uuid::from_u128(0x67e5_5044_10b1_426f_9247_bb68_0e5f_e0c8);
    let txn = db.begin().await.expect("begin");
    let same = repo
        .session_covers(&txn, session, "67e55044-10b1-426f-9247-bb680e5fe0c8")
        .await
        .expect("lock");
    let other = repo
        .session_covers(&txn, session, "67E55044-10B1-426F-9247-BB680E5FE0C8")
        .await
        .expect("lock");
    txn.rollback().await.expect("rollback");
    assert!(
        same,
        "the UUID locks the node of its hyphenated lowercase text"
    );
    assert!(!other, "and not the node of another spelling");
}
