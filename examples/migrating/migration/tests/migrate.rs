//! The migrated entities at work on SQLite: the migrations up, locked writes
//! of the protected entities and plain writes of the others, reads through
//! every relation, and the migrations down.

use hierlock::sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, Database, DatabaseConnection, EntityTrait,
    ModelTrait, PaginatorTrait, QueryFilter, TransactionTrait,
};
use hierlock::{Config, Locker};
use hierlock_migrating_entity::prelude::{Account, Resource};
use hierlock_migrating_entity::{account, note, resource, tag, user};
use hierlock_migrating_migration::Migrator;
use sea_orm_migration::MigratorTrait;

/// A fresh SQLite file in the temporary directory.
async fn database(name: &str) -> DatabaseConnection {
    let path = std::env::temp_dir().join(format!(
        "hierlock-migrating-{name}-{}.sqlite",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    Database::connect(format!("sqlite://{}?mode=rwc", path.display()))
        .await
        .expect("SQLite opens")
}

/// The service code: protected writes, each under the lock of a
/// `#[hierlocked]` function (`docs/migrating.md` shows this module).
mod service {
    use hierlock::sea_orm::{ActiveValue::Set, DatabaseTransaction, DbErr};
    use hierlock::{Locker, hierlocked};
    use hierlock_migrating_entity::{account, resource, user};

    /// A new user with one account and one resource, under the user's lock.
    #[hierlocked(user = user_id, locker = locker)]
    pub async fn sign_up(
        locker: &Locker,
        txn: &DatabaseTransaction,
        user_id: i32,
        account_id: i32,
        resource_id: i32,
    ) -> Result<(), DbErr> {
        user::Entity::insert(user::ActiveModel {
            id: Set(user_id),
            name: Set("Ada".to_owned()),
        })
        .exec(&lock)
        .await?;
        account::Entity::insert(account::ActiveModel {
            id: Set(account_id),
            user_id: Set(user_id),
            name: Set("main".to_owned()),
        })
        .exec(&lock)
        .await?;
        resource::Entity::insert(resource::ActiveModel {
            id: Set(resource_id),
            user_id: Set(user_id),
            account_id: Set(account_id),
            balance: Set(0),
        })
        .exec(&lock)
        .await?;
        Ok(())
    }

    /// Add to a resource's balance, under the resource's lock.
    #[hierlocked(user = user_id, account = account_id, resource = resource_id, locker = locker)]
    pub async fn deposit(
        locker: &Locker,
        txn: &DatabaseTransaction,
        user_id: i32,
        account_id: i32,
        resource_id: i32,
        amount: i64,
    ) -> Result<i64, DbErr> {
        let row = resource::Entity::find_by_id(resource_id)
            .one(txn)
            .await?
            .ok_or(DbErr::RecordNotFound("resource".to_owned()))?;
        let mut row = row.into_active_model();
        row.balance = Set(*row.balance.as_ref() + amount);
        let row = resource::Entity::update(row).exec(&lock).await?;
        Ok(row.balance)
    }
}

#[tokio::test]
async fn the_migrated_entities_migrate_write_and_relate() {
    let db = database("up").await;
    Migrator::up(&db, None).await.expect("migrations up");
    // Provisions nothing more on SQLite: the migration wrote its metadata.
    let locker = Locker::connect(&db, Config::default())
        .await
        .expect("locker");

    let txn = db.begin().await.expect("begin");
    service::sign_up(&locker, &txn, 1, 10, 100)
        .await
        .expect("sign up");
    txn.commit().await.expect("commit");

    let txn = db.begin().await.expect("begin");
    let balance = service::deposit(&locker, &txn, 1, 10, 100, 25)
        .await
        .expect("deposit");
    txn.commit().await.expect("commit");
    assert_eq!(balance, 25);

    // Plain entities are written as SeaORM writes them.
    note::ActiveModel {
        account_id: Set(10),
        text: Set("opened".to_owned()),
        ..Default::default()
    }
    .insert(&db)
    .await
    .expect("plain compact insert");
    tag::ActiveModel {
        resource_id: Set(100),
        label: Set("savings".to_owned()),
        ..Default::default()
    }
    .insert(&db)
    .await
    .expect("plain dense insert");

    // The prelude's names are the protected entities: reads as before.
    assert_eq!(Account::find().count(&db).await.expect("count"), 1);
    assert_eq!(
        Resource::find_by_id(100)
            .one(&db)
            .await
            .expect("read")
            .map(|r| r.balance),
        Some(25)
    );

    // Relations between protected entities, as generated.
    let accounts = user::Entity::find()
        .find_with_related(account::Entity)
        .all(&db)
        .await
        .expect("user → accounts");
    assert_eq!(accounts.len(), 1);
    assert_eq!(accounts[0].1.len(), 1);
    let resources = account::Entity::find_related::<resource::Entity>()
        .all(&db)
        .await
        .expect("account → resources");
    assert_eq!(resources.len(), 1);
    let owner = resources[0]
        .find_related(account::Entity)
        .one(&db)
        .await
        .expect("resource → account");
    assert_eq!(owner.map(|a| a.id), Some(10));

    // Protected ↔ plain, both ways, compact and dense.
    let notes = account::Entity::find_related::<note::Entity>()
        .all(&db)
        .await
        .expect("account → notes");
    assert_eq!(notes.len(), 1);
    let with_account = note::Entity::find()
        .find_also_related(account::Entity)
        .all(&db)
        .await
        .expect("note → account");
    assert_eq!(with_account[0].1.as_ref().map(|a| a.id), Some(10));
    let tags = resource::Entity::find()
        .find_with_related(tag::Entity)
        .all(&db)
        .await
        .expect("resource → tags");
    assert_eq!(tags[0].1.len(), 1);
    let tagged = tag::Entity::find()
        .find_also_related(resource::Entity)
        .filter(tag::Column::Label.eq("savings"))
        .all(&db)
        .await
        .expect("tag → resource");
    assert_eq!(tagged[0].1.as_ref().map(|r| r.id), Some(100));

    Migrator::down(&db, None).await.expect("migrations down");
}
