//! hierlock's quick start, as the README shows it: provision a small lock
//! table, connect, lock a resource on a transaction, and read, check and
//! write its row under the lock.
//!
//! ```text
//! cargo run -p hierlock --example quickstart                  # SQLite in the temp dir, no setup
//! DATABASE_URL=mysql://root@127.0.0.1:3306/test cargo run -p hierlock --example quickstart
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo run -p hierlock --example quickstart
//! ```
//!
//! You will see the server and the balance, 10 more on every run:
//! `MariaDB: resource 100 of account 10 of user 1 now has 10`.
//! `hierlock/tests/quickstart.rs` checks that the README shows this file and
//! runs it on every server of the test suite.

use hierlock::sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ConnectionTrait, Database, EntityTrait, Schema,
    TransactionTrait,
};
use hierlock::{Config, Locker, Target};
use hierlock_migration::Provision;

mod resource {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "quickstart_resources")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub balance: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // SQLite unless DATABASE_URL names MySQL, MariaDB or PostgreSQL.
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| {
        let file = std::env::temp_dir().join("hierlock-quickstart.db");
        format!("sqlite://{}?mode=rwc", file.display())
    });
    run(&url).await
}

pub async fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let db = if url.starts_with("sqlite:") {
        hierlock::sqlite::connect(url).await? // lock waits that end with their future
    } else {
        Database::connect(url).await?
    };

    // The lock table, small for trying (a no-op once done; on PostgreSQL and
    // SQLite only the configuration is recorded), then the locker.
    let config = Config::default()
        .with_table("quickstart_lock_buckets")?
        .with_bucket_space(10_000)?;
    Provision::new(config.clone()).run(&db).await?;
    let locker = Locker::connect(&db, config).await?;

    // The application's own table.
    let mut table =
        Schema::new(db.get_database_backend()).create_table_from_entity(resource::Entity);
    db.execute(table.if_not_exists()).await?;

    let txn = db.begin().await?;
    // Shared locks on User(1) and Account(1/10), exclusive on Resource(1/10/100),
    // whose row may not exist yet: no other transaction locking it (or its
    // account, or its user) gets past its `acquire` until this one ends.
    locker
        .acquire(&txn, [Target::resource(1, 10, 100).write()])
        .await?;
    let found = resource::Entity::find_by_id(100).one(&txn).await?;
    let balance = found.as_ref().map_or(0, |row| row.balance) + 10;
    let row = resource::ActiveModel {
        id: Set(100),
        balance: Set(balance),
    };
    match found {
        Some(_) => row.update(&txn).await?,
        None => row.insert(&txn).await?,
    };
    txn.commit().await?; // the locks go with the commit

    println!(
        "{}: resource 100 of account 10 of user 1 now has {balance}",
        locker.dialect()
    );
    Ok(())
}
