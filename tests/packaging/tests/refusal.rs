//! A driver compiled in by the application's own SeaORM, not by hierlock.
#![cfg(feature = "sqlite-driver-not-hierlocks")]

use hierlock::sea_orm::Database;
use hierlock::{Config, Dialect, ErrorKind, Locker};

/// SQLite's driver is there (the application's SeaORM), hierlock's `sqlite`
/// feature is not: its lock conflicts would pass for other errors, so
/// hierlock refuses the connection, naming the feature.
#[tokio::test]
async fn a_driver_hierlock_was_not_built_for_is_refused() {
    let db = Database::connect("sqlite::memory:").await.expect("connect");
    let err = Locker::connect(&db, Config::default())
        .await
        .expect_err("hierlock without `sqlite` must refuse SQLite");
    assert_eq!(err.kind(), ErrorKind::InvalidConfig, "{err}");
    assert!(
        err.to_string().contains("without its `sqlite` feature"),
        "{err}"
    );
    let err = Dialect::detect(&db).await.expect_err("detect");
    assert_eq!(err.kind(), ErrorKind::InvalidConfig, "{err}");
}
