//! Connect, provision, lock and write on the one backend this build has.
#![cfg(any(feature = "mysql", feature = "postgres", feature = "sqlite"))]

use hierlock::sea_orm::{
    ConnectionTrait, Database, DatabaseConnection, EntityLoaderTrait, TransactionTrait,
};
use hierlock::{Config, Locker};
use hierlock_packaging::{account, coin, fill, open, wallet};

/// Provision, connect, open an account under its lock, read it back.
async fn smoke(url: &str) {
    let db = Database::connect(url).await.expect("connect");
    let config = Config::default()
        .with_table("hierlock_packaging_buckets")
        .unwrap()
        .with_bucket_space(64)
        .unwrap();
    hierlock_migration::Provision::new(config.clone())
        .run(&db)
        .await
        .expect("provision");
    recreate(
        &db,
        "hierlock_packaging_accounts",
        "id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL, balance BIGINT NOT NULL",
    )
    .await;
    let locker = Locker::connect(&db, config).await.expect("locker");

    let txn = db.begin().await.unwrap();
    open(&locker, &txn, 7, 70, 100).await.expect("locked write");
    txn.commit().await.unwrap();

    let found = account::Entity::find_by_id(70).one(&db).await.unwrap();
    assert_eq!(found.map(|a| (a.user_id, a.balance)), Some((7, 100)));

    // The dense format: a wallet and its coins in one nested insert.
    recreate(
        &db,
        "hierlock_packaging_wallets",
        "id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL",
    )
    .await;
    recreate(
        &db,
        "hierlock_packaging_coins",
        "id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL, wallet_id BIGINT NOT NULL",
    )
    .await;
    let txn = db.begin().await.unwrap();
    let saved = fill(&locker, &txn, 7, 71, &[710, 711])
        .await
        .expect("nested insert");
    txn.commit().await.unwrap();
    assert_eq!(saved.coins.len(), 2);
    let loaded = wallet::Entity::load()
        .filter_by_id(71)
        .with(coin::Entity)
        .one(&db)
        .await
        .unwrap()
        .expect("the wallet");
    let mut coins: Vec<(i64, i64, i64)> = loaded
        .coins
        .iter()
        .map(|c| (c.id, c.user_id, c.wallet_id))
        .collect();
    coins.sort();
    assert_eq!(coins, [(710, 7, 71), (711, 7, 71)]);
}

/// Drop `table` if it exists and create it with `columns`.
async fn recreate(db: &DatabaseConnection, table: &str, columns: &str) {
    db.execute_unprepared(&format!("DROP TABLE IF EXISTS {table}"))
        .await
        .unwrap();
    db.execute_unprepared(&format!("CREATE TABLE {table} ({columns})"))
        .await
        .unwrap();
}

#[cfg(any(feature = "mysql", feature = "postgres"))]
fn server_url(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| panic!("{var} must name the test server"))
}

#[cfg(feature = "mysql")]
#[tokio::test]
async fn mysql_alone_connects_locks_and_writes() {
    smoke(&server_url("HIERLOCK_MARIADB_URL")).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_alone_connects_locks_and_writes() {
    smoke(&server_url("HIERLOCK_POSTGRES_URL")).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_alone_connects_locks_and_writes() {
    let dir = std::env::temp_dir().join(format!("hierlock-packaging-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("app.db");
    smoke(&format!("sqlite://{}?mode=rwc", file.display())).await;
    std::fs::remove_dir_all(&dir).ok();
}
