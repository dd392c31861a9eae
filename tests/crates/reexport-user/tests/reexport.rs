//! The repository reached through the re-export runs: it locks and writes
//! on SQLite.

use hierlock_layout_reexport::hl;
use hierlock_layout_reexport_user::{Wallets, wallet};
use hl::sea_orm::{ConnectionTrait, Database, Schema, TransactionTrait};

#[tokio::test]
async fn the_reexported_attributes_lock_and_write() {
    let path = std::env::temp_dir().join(format!(
        "hierlock-layout-reexport-{}.sqlite",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    let db = Database::connect(format!("sqlite://{}?mode=rwc", path.display()))
        .await
        .expect("SQLite opens");
    let table = Schema::new(db.get_database_backend()).create_table_from_entity(wallet::Table);
    db.execute(&table).await.expect("table created");
    let wallets = Wallets {
        locker: hl::Locker::connect(&db, hl::Config::default())
            .await
            .expect("locker"),
    };

    let txn = db.begin().await.expect("begin");
    let opened = wallets.open(&txn, 1, 7).await.expect("open");
    txn.commit().await.expect("commit");
    let found = wallet::Entity::find_by_id(7).one(&db).await.expect("read");
    assert_eq!(found, Some(opened));
    let _ = std::fs::remove_file(&path);
}
