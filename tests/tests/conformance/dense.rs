//! Protected entities in SeaORM's dense format (`#[sea_orm::model]`), on
//! every backend: their tables are SeaORM's (`Schema` of `Table`), their
//! flat writes run with a proof, `Entity::load()` reads them back nested,
//! and a write the proof does not cover, `delete_by_<unique key>` included,
//! is `NotCovered` and writes nothing.
//!
//! The tables are created from the entities and seeded with user 2's rows
//! (`bob`, account 20 `main`, resource 200); the tests write with a
//! write-lock proof on user 1, which covers none of them.

use hierlock::proof::UserLevel;
use hierlock::sea_orm::{
    ActiveValue::Set, ConnectionTrait, DatabaseTransaction, Schema, Statement,
};
use hierlock::{Error, ErrorKind, Locked, Locker, hierlocked};
use hierlock_tests::{Backend, Fixture};

#[hierlock::protected(level = user, user = id)]
pub mod user {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hld_users")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        #[sea_orm(unique)]
        pub email: String,
        #[sea_orm(has_many)]
        pub accounts: HasMany<super::account::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

#[hierlock::protected(level = account, user = user_id, account = id)]
pub mod account {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hld_accounts")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        #[sea_orm(unique_key = "owner_name")]
        pub user_id: i64,
        #[sea_orm(unique_key = "owner_name")]
        pub name: String,
        #[sea_orm(belongs_to, from = "user_id", to = "id")]
        pub user: HasOne<super::user::Entity>,
        #[sea_orm(has_many)]
        pub resources: HasMany<super::resource::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
pub mod resource {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hld_resources")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub account_id: i64,
        pub balance: i64,
        #[sea_orm(belongs_to, from = "account_id", to = "id")]
        pub account: HasOne<super::account::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// PostgreSQL and PostgreSQL-with-buckets share a server and so the tables:
/// the tests take turns (and so do the backends' two tests).
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Every row, as the tests compare them: users (id, email), accounts
/// (id, user, name), resources (id, user, account, balance).
#[derive(Debug, PartialEq)]
struct Contents {
    users: Vec<(i64, String)>,
    accounts: Vec<(i64, i64, String)>,
    resources: Vec<(i64, i64, i64, i64)>,
}

/// A fixture whose three tables are created afresh from the entities
/// (`Schema::create_table_from_entity` of their `Table`) and seeded with
/// user 2's rows.
async fn seeded(backend: Backend) -> (Fixture, tokio::sync::MutexGuard<'static, ()>) {
    let turn = TURN.lock().await;
    let fx = Fixture::new(backend, "hld_dense", 1000).await;
    for table in ["hld_resources", "hld_accounts", "hld_users"] {
        fx.exec(&format!("DROP TABLE IF EXISTS {table}")).await;
    }
    let db_backend = fx.db.get_database_backend();
    let schema = Schema::new(db_backend);
    for statement in [
        db_backend.build(&schema.create_table_from_entity(user::Table)),
        db_backend.build(&schema.create_table_from_entity(account::Table)),
        db_backend.build(&schema.create_table_from_entity(resource::Table)),
    ] {
        fx.db
            .execute_raw(statement.clone())
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    fx.exec("INSERT INTO hld_users (id, email) VALUES (2, 'bob@example.com')")
        .await;
    fx.exec("INSERT INTO hld_accounts (id, user_id, name) VALUES (20, 2, 'main')")
        .await;
    fx.exec("INSERT INTO hld_resources (id, user_id, account_id, balance) VALUES (200, 2, 20, 5)")
        .await;
    (fx, turn)
}

async fn contents(fx: &Fixture) -> Contents {
    let rows = async |sql: &str| {
        fx.db
            .query_all_raw(Statement::from_string(
                fx.db.get_database_backend(),
                sql.to_owned(),
            ))
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    };
    let users = rows("SELECT id, email FROM hld_users ORDER BY id")
        .await
        .iter()
        .map(|r| {
            (
                r.try_get("", "id").unwrap(),
                r.try_get("", "email").unwrap(),
            )
        })
        .collect();
    let accounts = rows("SELECT id, user_id, name FROM hld_accounts ORDER BY id")
        .await
        .iter()
        .map(|r| {
            (
                r.try_get("", "id").unwrap(),
                r.try_get("", "user_id").unwrap(),
                r.try_get("", "name").unwrap(),
            )
        })
        .collect();
    let resources = rows("SELECT id, user_id, account_id, balance FROM hld_resources ORDER BY id")
        .await
        .iter()
        .map(|r| {
            (
                r.try_get("", "id").unwrap(),
                r.try_get("", "user_id").unwrap(),
                r.try_get("", "account_id").unwrap(),
                r.try_get("", "balance").unwrap(),
            )
        })
        .collect();
    Contents {
        users,
        accounts,
        resources,
    }
}

fn seed() -> Contents {
    Contents {
        users: vec![(2, "bob@example.com".to_owned())],
        accounts: vec![(20, 2, "main".to_owned())],
        resources: vec![(200, 2, 20, 5)],
    }
}

/// Run `body` with a write-lock proof on user 1, on `txn`.
#[hierlocked(user = 1, locker = locker)]
async fn as_user_1<T>(
    locker: &Locker,
    txn: &DatabaseTransaction,
    body: impl AsyncFnOnce(&Locked<'_, UserLevel>) -> T,
) -> hierlock::Result<T> {
    Ok(body(&lock).await)
}

#[track_caller]
fn assert_not_covered<T: std::fmt::Debug>(outcome: Result<T, Error>, what: &str) {
    match outcome {
        Err(e) => assert_eq!(e.kind(), ErrorKind::NotCovered, "{what}: {e}"),
        Ok(v) => panic!("{what}: expected NotCovered, got Ok({v:?})"),
    }
}

pub async fn dense_protected_flat_writes_with_a_proof(backend: Backend) {
    let (fx, _turn) = seeded(backend).await;
    let txn = fx.begin().await;
    as_user_1(&fx.locker, &txn, async |lock| {
        user::Entity::insert(user::ActiveModel {
            id: Set(1),
            email: Set("alice@example.com".to_owned()),
        })
        .exec(lock)
        .await
        .expect("insert user 1");
        let main = account::Entity::insert(account::ActiveModel {
            id: Set(10),
            user_id: Set(1),
            name: Set("main".to_owned()),
        })
        .exec(lock)
        .await
        .expect("insert account 10");
        account::Entity::insert(account::ActiveModel {
            id: Set(11),
            user_id: Set(1),
            name: Set("spare".to_owned()),
        })
        .exec(lock)
        .await
        .expect("insert account 11");
        resource::Entity::insert(resource::ActiveModel {
            id: Set(100),
            user_id: Set(1),
            account_id: Set(10),
            balance: Set(0),
        })
        .exec(lock)
        .await
        .expect("insert resource 100");
        let mut renamed = account::ActiveModel::from(main);
        renamed.name = Set("savings".to_owned());
        account::Entity::update(renamed)
            .exec(lock)
            .await
            .expect("update account 10");
        resource::Entity::update_many()
            .filter(resource::COLUMN.account_id.eq(10))
            .set(resource::ActiveModel {
                balance: Set(7),
                ..Default::default()
            })
            .exec(lock)
            .await
            .expect("update_many of account 10's resources");

        // The dense reads, on the proof's transaction.
        let alice = user::Entity::load()
            .filter_by_email("alice@example.com")
            .with(account::Table)
            .with((account::Table, resource::Table))
            .one(lock.txn())
            .await
            .expect("load")
            .expect("alice");
        let accounts: Vec<(&str, usize)> = alice
            .accounts
            .iter()
            .map(|a| (a.name.as_str(), a.resources.len()))
            .collect();
        assert_eq!(accounts, [("savings", 1), ("spare", 0)]);
        let found = account::Entity::find_by_owner_name((1, "spare".to_owned()))
            .one(lock.txn())
            .await
            .expect("find_by_owner_name");
        assert_eq!(found.map(|a| a.id), Some(11));

        // `delete_by_<unique key>` of a covered row deletes it.
        let deleted = account::Entity::delete_by_owner_name((1, "spare".to_owned()))
            .exec(lock)
            .await
            .expect("delete_by_owner_name of a covered row");
        assert_eq!(deleted, 1);
        let deleted = account::Entity::delete_by_owner_name((1, "none".to_owned()))
            .exec(lock)
            .await
            .expect("delete_by_owner_name of no row");
        assert_eq!(deleted, 0);
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    let mut expected = seed();
    expected
        .users
        .insert(0, (1, "alice@example.com".to_owned()));
    expected.accounts.insert(0, (10, 1, "savings".to_owned()));
    expected.resources.insert(0, (100, 1, 10, 7));
    assert_eq!(contents(&fx).await, expected);
}

pub async fn dense_protected_uncovered_writes_are_not_covered(backend: Backend) {
    let (fx, _turn) = seeded(backend).await;
    let txn = fx.begin().await;
    as_user_1(&fx.locker, &txn, async |lock| {
        let outcome = account::Entity::insert(account::ActiveModel {
            id: Set(21),
            user_id: Set(2),
            name: Set("spare".to_owned()),
        })
        .exec(lock)
        .await;
        assert_not_covered(outcome, "insert of user 2's account");
        let bobs = account::Entity::find_by_id(20)
            .one(lock.txn())
            .await
            .expect("read account 20")
            .expect("account 20");
        let mut renamed = account::ActiveModel::from(bobs);
        renamed.name = Set("taken".to_owned());
        assert_not_covered(
            account::Entity::update(renamed).exec(lock).await,
            "update of user 2's account",
        );
        assert_not_covered(
            resource::Entity::delete_by_id(200).exec(lock).await,
            "delete of user 2's resource",
        );
        // `delete_by_<unique key>`, single and composite, of user 2's rows.
        assert_not_covered(
            user::Entity::delete_by_email("bob@example.com")
                .exec(lock)
                .await,
            "delete_by_email of user 2",
        );
        assert_not_covered(
            account::Entity::delete_by_owner_name((2, "main".to_owned()))
                .exec(lock)
                .await,
            "delete_by_owner_name of user 2's account",
        );
        // Through `Table`, the same protected delete.
        assert_not_covered(
            account::Table::delete_by_owner_name((2, "main".to_owned()))
                .exec(lock)
                .await,
            "Table::delete_by_owner_name of user 2's account",
        );
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(contents(&fx).await, seed(), "nothing written");
}
