//! Protected entities in SeaORM's dense format (`#[sea_orm::model]`), on
//! every backend: their tables are SeaORM's (`Schema` of `Table`), their
//! flat writes run with a proof, `Entity::load()` reads them back nested,
//! and a write the proof does not cover, `delete_by_<unique key>` included,
//! is `NotCovered` and writes nothing.
//!
//! SeaORM's nested save of a protected entity runs with the proof
//! (`NestedActiveModel::..save(&lock)`): a covered tree is written whole,
//! with the statements SeaORM's own nested save sends; a row outside the
//! proof is `NotCovered` and nothing of the save is written; the shapes
//! hierlock cannot prove are `Misuse`, nothing written.
//!
//! The tables are created from the entities and seeded with user 2's rows
//! (`bob`, account 20 `main`, resource 200); the tests write with a
//! write-lock proof on user 1, which covers none of them. Accounts have an
//! auto-increment key, and so have resources (a nested `save` inserts a
//! row whose key is not set and updates one whose key is, as SeaORM's;
//! a tree of new rows with their keys set is written with `insert`).

use hierlock::proof::UserLevel;
use hierlock::sea_orm::{
    ActiveValue::{NotSet, Set},
    ConnectionTrait, DatabaseTransaction, DbErr, EntityTrait, QueryResult, Schema, Statement,
    TransactionTrait,
};
use hierlock::{Error, ErrorKind, Locked, Locker, hierlocked};
use hierlock_tests::{Backend, Fixture};

use crate::support::{as_account, recreate_tables};
use crate::write_statements::{Counter, counted_pool};

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
        #[sea_orm(has_one)]
        pub profile: HasOne<super::profile::Entity>,
        #[sea_orm(self_ref, via = "user_follower", from = "User", to = "Follower")]
        pub followers: HasMany<Entity>,
        #[sea_orm(self_ref, via = "user_follower", reverse)]
        pub following: HasMany<Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// A user's one profile (`has_one`).
#[hierlock::protected(level = user, user = user_id)]
pub mod profile {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hld_profiles")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        #[sea_orm(unique)]
        pub user_id: i64,
        pub bio: String,
        #[sea_orm(belongs_to, from = "user_id", to = "id")]
        pub user: HasOne<super::user::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// The self-referencing junction: a follow sits at the followed user's
/// node.
#[hierlock::protected(level = user, user = user_id)]
pub mod user_follower {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hld_user_followers")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub user_id: i64,
        #[sea_orm(primary_key, auto_increment = false)]
        pub follower_id: i64,
        #[sea_orm(belongs_to, from = "user_id", to = "id")]
        pub user: BelongsTo<super::user::Entity>,
        #[sea_orm(
            belongs_to,
            relation_enum = "Follower",
            from = "follower_id",
            to = "id"
        )]
        pub follower: BelongsTo<super::user::Entity>,
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
        #[sea_orm(primary_key)]
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
        #[sea_orm(primary_key)]
        pub id: i64,
        pub user_id: i64,
        pub account_id: i64,
        pub balance: i64,
        #[sea_orm(belongs_to, from = "account_id", to = "id")]
        pub account: HasOne<super::account::Entity>,
        #[sea_orm(has_many, via = "resource_tag")]
        pub tags: HasMany<super::tag::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// A user's labels, linked to resources through `resource_tag`.
#[hierlock::protected(level = user, user = user_id)]
pub mod tag {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hld_tags")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub label: String,
        #[sea_orm(has_many, via = "resource_tag")]
        pub resources: HasMany<super::resource::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// The junction: a link belongs to its resource's node.
#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = resource_id)]
pub mod resource_tag {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hld_resource_tags")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub resource_id: i64,
        #[sea_orm(primary_key, auto_increment = false)]
        pub tag_id: i64,
        // Defaults: SeaORM's own nested save (the baseline the statements
        // are counted against) sets only a link's foreign keys.
        #[sea_orm(default_value = 0)]
        pub user_id: i64,
        #[sea_orm(default_value = 0)]
        pub account_id: i64,
        #[sea_orm(belongs_to, from = "resource_id", to = "id")]
        pub resource: HasOne<super::resource::Entity>,
        #[sea_orm(belongs_to, from = "tag_id", to = "id")]
        pub tag: HasOne<super::tag::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// The same tables as plain SeaORM dense entities: the baseline of the
/// nested saves' statements.
mod plain {
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

    pub mod account {
        use hierlock::sea_orm::entity::prelude::*;

        #[sea_orm::model]
        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "hld_accounts")]
        pub struct Model {
            #[sea_orm(primary_key)]
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

    pub mod resource {
        use hierlock::sea_orm::entity::prelude::*;

        #[sea_orm::model]
        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "hld_resources")]
        pub struct Model {
            #[sea_orm(primary_key)]
            pub id: i64,
            pub user_id: i64,
            pub account_id: i64,
            pub balance: i64,
            #[sea_orm(belongs_to, from = "account_id", to = "id")]
            pub account: HasOne<super::account::Entity>,
            #[sea_orm(has_many, via = "resource_tag")]
            pub tags: HasMany<super::tag::Entity>,
        }

        impl ActiveModelBehavior for ActiveModel {}
    }

    pub mod tag {
        use hierlock::sea_orm::entity::prelude::*;

        #[sea_orm::model]
        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "hld_tags")]
        pub struct Model {
            #[sea_orm(primary_key, auto_increment = false)]
            pub id: i64,
            pub user_id: i64,
            pub label: String,
            #[sea_orm(has_many, via = "resource_tag")]
            pub resources: HasMany<super::resource::Entity>,
        }

        impl ActiveModelBehavior for ActiveModel {}
    }

    pub mod resource_tag {
        use hierlock::sea_orm::entity::prelude::*;

        #[sea_orm::model]
        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "hld_resource_tags")]
        pub struct Model {
            #[sea_orm(primary_key, auto_increment = false)]
            pub resource_id: i64,
            #[sea_orm(primary_key, auto_increment = false)]
            pub tag_id: i64,
            pub user_id: i64,
            pub account_id: i64,
            #[sea_orm(belongs_to, from = "resource_id", to = "id")]
            pub resource: HasOne<super::resource::Entity>,
            #[sea_orm(belongs_to, from = "tag_id", to = "id")]
            pub tag: HasOne<super::tag::Entity>,
        }

        impl ActiveModelBehavior for ActiveModel {}
    }
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
pub(crate) async fn seeded(backend: Backend) -> (Fixture, tokio::sync::MutexGuard<'static, ()>) {
    let turn = TURN.lock().await;
    let fx = Fixture::new(backend, "hld_dense", 1000).await;
    let schema = Schema::new(fx.db.get_database_backend());
    recreate_tables(
        &fx,
        &[
            "hld_profiles",
            "hld_user_followers",
            "hld_resource_tags",
            "hld_tags",
            "hld_resources",
            "hld_accounts",
            "hld_users",
        ],
        vec![
            schema.create_table_from_entity(user::Entity),
            schema.create_table_from_entity(account::Entity),
            schema.create_table_from_entity(resource::Entity),
            schema.create_table_from_entity(tag::Entity),
            schema.create_table_from_entity(resource_tag::Entity),
            schema.create_table_from_entity(user_follower::Entity),
            schema.create_table_from_entity(profile::Entity),
        ],
    )
    .await;
    fx.exec("INSERT INTO hld_users (id, email) VALUES (2, 'bob@example.com')")
        .await;
    fx.exec("INSERT INTO hld_accounts (id, user_id, name) VALUES (20, 2, 'main')")
        .await;
    fx.exec("INSERT INTO hld_resources (id, user_id, account_id, balance) VALUES (200, 2, 20, 5)")
        .await;
    (fx, turn)
}

/// The rows `sql` reads on the fixture's pool.
pub(crate) async fn query_rows(fx: &Fixture, sql: &str) -> Vec<QueryResult> {
    fx.db
        .query_all_raw(Statement::from_string(
            fx.db.get_database_backend(),
            sql.to_owned(),
        ))
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// A stored user, as the active model a nested save links or saves again.
pub(crate) async fn stored_user(lock: &Locked<'_, UserLevel>, id: i64) -> user::ActiveModel {
    user::Entity::find_by_id(id)
        .one(lock.txn())
        .await
        .expect("read a user")
        .expect("the user")
        .into()
}

async fn contents(fx: &Fixture) -> Contents {
    let rows = async |sql: &str| query_rows(fx, sql).await;
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
pub(crate) async fn as_user_1<T>(
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

/// A new account of user 1 (`id` 0: left to the server).
pub(crate) fn new_account(id: i64, name: &str) -> account::ActiveModel {
    account::ActiveModel {
        id: if id == 0 { NotSet } else { Set(id) },
        user_id: Set(1),
        name: Set(name.to_owned()),
    }
}

/// A new resource of user `user` (`id` 0: left to the server; its account
/// left to the nested save).
pub(crate) fn new_resource(id: i64, user: i64, balance: i64) -> resource::ActiveModel {
    resource::ActiveModel {
        id: if id == 0 { NotSet } else { Set(id) },
        user_id: Set(user),
        account_id: NotSet,
        balance: Set(balance),
    }
}

/// The hierlock error a nested save returned.
#[track_caller]
pub(crate) fn nested_error<T: std::fmt::Debug>(
    outcome: Result<T, DbErr>,
    kind: ErrorKind,
    what: &str,
) -> Error {
    match outcome {
        Err(e) => {
            let e = Error::from(e);
            assert_eq!(e.kind(), kind, "{what}: {e}");
            e
        }
        Ok(v) => panic!("{what}: expected {kind:?}, got Ok({v:?})"),
    }
}

pub async fn dense_nested_save_under_a_proof_writes_every_row(backend: Backend) {
    let (fx, _turn) = seeded(backend).await;
    let txn = fx.begin().await;
    let auto = as_user_1(&fx.locker, &txn, async |lock| {
        // A new user with a new account (explicit key) and its resources,
        // and a second account whose key the server gives: its resource's
        // `account_id` is known only after the account's INSERT.
        let saved = user::NestedActiveModel::from(user::ActiveModel {
            id: Set(1),
            email: Set("alice@example.com".to_owned()),
        })
        .add_account(
            account::NestedActiveModel::from(new_account(10, "main"))
                .add_resource(new_resource(100, 1, 1))
                .add_resource(new_resource(101, 1, 2)),
        )
        .add_account(
            account::NestedActiveModel::from(new_account(0, "auto"))
                .add_resource(new_resource(0, 1, 3)),
        )
        .insert(lock)
        .await
        .expect("nested insert of user 1's tree");
        let auto = saved
            .accounts
            .iter()
            .find_map(|a| (a.name == "auto").then_some(a.id))
            .expect("the auto account");

        // An existing account, renamed, with one more resource: `save`
        // updates the account and inserts the resource (its key not set).
        let main = account::Entity::find_by_id(10)
            .one(lock.txn())
            .await
            .expect("read account 10")
            .expect("account 10");
        let mut renamed = account::ActiveModel::from(main);
        renamed.name = Set("savings".to_owned());
        account::NestedActiveModel::from(renamed)
            .add_resource(new_resource(0, 1, 4))
            .save(lock)
            .await
            .expect("nested save of account 10");

        // A deep delete: account 11 and its resource, each row checked.
        account::NestedActiveModel::from(new_account(11, "closing"))
            .add_resource(new_resource(0, 1, 9))
            .insert(lock)
            .await
            .expect("nested insert of account 11");
        let closing = account::Entity::find_by_id(11)
            .one(lock.txn())
            .await
            .expect("read account 11")
            .expect("account 11");
        let deleted = closing
            .cascade_delete(lock)
            .await
            .expect("cascade_delete of account 11");
        assert_eq!(deleted.rows_affected, 2, "the account and its resource");

        // `Replace` of the auto account's resources: the ones left out are
        // found by the save and deleted, each checked.
        let loaded = account::Entity::load()
            .filter_by_owner_name((1, "auto".to_owned()))
            .with(resource::Table)
            .one(lock.txn())
            .await
            .expect("load")
            .expect("the auto account");
        let mut replaced = account::NestedActiveModel::from(loaded);
        replaced
            .resources
            .replace_all([resource::NestedActiveModel::from(new_resource(0, 1, 5))]);
        replaced
            .save(lock)
            .await
            .expect("Replace of the auto account's resources");
        auto
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    let rows = contents(&fx).await;
    assert_eq!(
        rows.users,
        [
            (1, "alice@example.com".to_owned()),
            (2, "bob@example.com".to_owned())
        ]
    );
    let mut accounts = vec![
        (10, 1, "savings".to_owned()),
        (20, 2, "main".to_owned()),
        (auto, 1, "auto".to_owned()),
    ];
    accounts.sort();
    assert_eq!(rows.accounts, accounts);
    // (user, account, balance) of each resource: the auto account's first
    // resource (balance 3) was replaced by the one of balance 5.
    let mut resources: Vec<(i64, i64, i64)> = rows
        .resources
        .iter()
        .map(|&(_, user, account, balance)| (user, account, balance))
        .collect();
    resources.sort();
    let mut expected = vec![(1, 10, 1), (1, 10, 2), (1, 10, 4), (1, auto, 5), (2, 20, 5)];
    expected.sort();
    assert_eq!(resources, expected);
    assert!(rows.resources.iter().any(|r| r.0 == 100) && rows.resources.iter().any(|r| r.0 == 101));
}

pub async fn dense_nested_save_outside_the_proof_writes_nothing(backend: Backend) {
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
        // The second resource names user 2: the account and the first
        // resource are written, then the save stops and rolls back.
        let outcome = account::NestedActiveModel::from(new_account(12, "spare"))
            .add_resource(new_resource(105, 1, 1))
            .add_resource(new_resource(106, 2, 1))
            .insert(lock)
            .await;
        let e = nested_error(outcome, ErrorKind::NotCovered, "a resource of user 2");
        let text = e.to_string();
        assert!(
            text.contains("hld_resources") && text.contains("106"),
            "the error names the row: {text}"
        );
        // Re-parenting user 2's resource 200 into user 1's account (an
        // update of its `account_id`): the stored row is outside the proof.
        account::Entity::insert(new_account(10, "main"))
            .exec(lock)
            .await
            .expect("insert account 10");
        let main = account::Entity::find_by_id(10)
            .one(lock.txn())
            .await
            .expect("read account 10")
            .expect("account 10");
        let bobs = resource::Entity::find_by_id(200)
            .one(lock.txn())
            .await
            .expect("read resource 200")
            .expect("resource 200");
        let outcome = account::NestedActiveModel::from(account::ActiveModel::from(main))
            .add_resource(resource::ActiveModel::from(bobs))
            .save(lock)
            .await;
        nested_error(
            outcome,
            ErrorKind::NotCovered,
            "re-parenting user 2's resource",
        );
        // A deep delete of user 2's account: its resource is the first row
        // deleted, and refused.
        let bobs_account = account::Entity::find_by_id(20)
            .one(lock.txn())
            .await
            .expect("read account 20")
            .expect("account 20");
        let outcome = bobs_account.cascade_delete(lock).await;
        nested_error(
            outcome,
            ErrorKind::NotCovered,
            "cascade_delete of user 2's account",
        );
        // A tree of user 2 altogether.
        let outcome = user::NestedActiveModel::from(user::ActiveModel {
            id: Set(3),
            email: Set("carol@example.com".to_owned()),
        })
        .insert(lock)
        .await;
        nested_error(outcome, ErrorKind::NotCovered, "user 3");
    })
    .await
    .expect("locks");
    // The transaction goes on after the refusals, and commits.
    txn.commit().await.expect("commit");
    let mut expected = seed();
    expected
        .users
        .insert(0, (1, "alice@example.com".to_owned()));
    expected.accounts.insert(0, (10, 1, "main".to_owned()));
    assert_eq!(contents(&fx).await, expected, "nothing of the nested saves");
}

pub async fn dense_nested_save_refuses_what_it_cannot_prove(backend: Backend) {
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
        account::Entity::insert(new_account(10, "main"))
            .exec(lock)
            .await
            .expect("insert account 10");
        // SeaORM fills a child's key to its parent, not the grandparent's
        // ID: a resource without `user_id` is refused before its INSERT.
        let mut orphan = new_resource(107, 1, 1);
        orphan.user_id = NotSet;
        let outcome = account::NestedActiveModel::from(new_account(14, "orphans"))
            .add_resource(orphan)
            .insert(lock)
            .await;
        let e = nested_error(outcome, ErrorKind::Misuse, "a resource without user_id");
        let text = e.to_string();
        assert!(
            text.contains("user_id") && text.contains("exec(&lock)"),
            "names the field and the flat write: {text}"
        );
    })
    .await
    .expect("locks");
    // A row above the proof's level: an account proof saving the account's
    // user through the account.
    as_account(&fx.locker, &txn, "1", "10", async |lock| {
        let main = account::Entity::find_by_id(10)
            .one(lock.txn())
            .await
            .expect("read account 10")
            .expect("account 10");
        let mut renamed = account::ActiveModel::from(main);
        renamed.name = Set("savings".to_owned());
        let outcome = account::NestedActiveModel::from(renamed)
            .set_user(user::ActiveModel {
                id: Set(1),
                email: Set("alice@example.org".to_owned()),
            })
            .save(lock)
            .await;
        let e = nested_error(
            outcome,
            ErrorKind::Misuse,
            "the user above an account proof",
        );
        assert!(e.to_string().contains("above the proof"), "{e}");
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    let mut expected = seed();
    expected
        .users
        .insert(0, (1, "alice@example.com".to_owned()));
    expected.accounts.insert(0, (10, 1, "main".to_owned()));
    assert_eq!(contents(&fx).await, expected, "nothing of the nested saves");
}

/// A new resource of user 3, for SeaORM's own nested saves.
fn plain_resource(id: i64, balance: i64) -> plain::resource::ActiveModel {
    plain::resource::ActiveModel {
        id: if id == 0 { NotSet } else { Set(id) },
        user_id: Set(3),
        account_id: NotSet,
        balance: Set(balance),
    }
}

/// (shape, SeaORM's statements, hierlock's) for each nested save counted.
type Costs = Vec<(&'static str, u64, u64)>;

/// The server's own counters of one session's writes by kind, where it has
/// them: the MySQL family's `Com_*` (statements by kind, savepoints
/// included); PostgreSQL's rows inserted, updated and deleted by the
/// transaction (`pg_stat_xact_user_tables`); none on SQLite.
async fn server_counts(txn: &DatabaseTransaction, backend: Backend) -> Vec<i64> {
    let db_backend = txn.get_database_backend();
    let sql = match backend {
        Backend::MariaDb | Backend::MySql => {
            "SHOW SESSION STATUS WHERE Variable_name IN ('Com_insert', 'Com_update', \
             'Com_delete', 'Com_select', 'Com_savepoint', 'Com_release_savepoint', \
             'Com_rollback_to_savepoint')"
        }
        Backend::Postgres | Backend::PostgresBuckets => {
            "SELECT COALESCE(SUM(n_tup_ins), 0)::bigint AS ins, \
             COALESCE(SUM(n_tup_upd), 0)::bigint AS upd, \
             COALESCE(SUM(n_tup_del), 0)::bigint AS del FROM pg_stat_xact_user_tables \
             WHERE relname IN ('hld_users', 'hld_accounts', 'hld_resources', 'hld_tags', \
             'hld_resource_tags')"
        }
        _ => return Vec::new(),
    };
    let rows = txn
        .query_all_raw(Statement::from_string(db_backend, sql.to_owned()))
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    match backend {
        Backend::MariaDb | Backend::MySql => {
            let mut named: Vec<(String, i64)> = rows
                .iter()
                .map(|row| {
                    let name: String = row.try_get_by_index(0).expect("a name");
                    let value: String = row.try_get_by_index(1).expect("a value");
                    (name, value.parse().expect("a count"))
                })
                .collect();
            named.sort();
            named.into_iter().map(|(_, value)| value).collect()
        }
        _ => ["ins", "upd", "del"]
            .iter()
            .map(|column| rows[0].try_get("", column).expect("a count"))
            .collect(),
    }
}

/// `run(1)` after a warm-up `run(0)` (statements prepared once per
/// connection): the statements it sent, and the server's counters of it.
async fn measured<T>(
    txn: &DatabaseTransaction,
    counter: &Counter,
    backend: Backend,
    mut run: impl AsyncFnMut(i64) -> T,
) -> (u64, Vec<i64>) {
    run(0).await;
    let server_before = server_counts(txn, backend).await;
    let before = counter.now(txn).await;
    run(1).await;
    let after = counter.now(txn).await;
    let server_after = server_counts(txn, backend).await;
    let server = server_after
        .iter()
        .zip(&server_before)
        .map(|(a, b)| a - b)
        .collect();
    (counter.between(before, after), server)
}

pub async fn dense_nested_save_sends_the_statements_seaorms_own_sends(backend: Backend) {
    let (fx, _turn) = seeded(backend).await;
    let (db, counter) = counted_pool(&fx, backend).await;
    let txn = db.begin().await.expect("begin");
    // User 3 for SeaORM's own saves (no lock needed), user 1 for hierlock's.
    plain::user::ActiveModel {
        id: Set(3),
        email: Set("carol@example.com".to_owned()),
    }
    .into_ex()
    .insert(&txn)
    .await
    .expect("user 3");
    let (costs, servers) = as_user_1(&fx.locker, &txn, async |lock| {
        user::Entity::insert(user::ActiveModel {
            id: Set(1),
            email: Set("alice@example.com".to_owned()),
        })
        .exec(lock)
        .await
        .expect("insert user 1");
        let mut costs = Costs::new();
        let mut servers = Vec::new();
        // A new account with two new resources.
        let seaorm = measured(&txn, &counter, backend, async |i| {
            plain::account::ActiveModel {
                id: Set(30 + i),
                user_id: Set(3),
                name: Set(format!("a{i}")),
            }
            .into_ex()
            .add_resource(plain_resource(300 + 10 * i, 1))
            .add_resource(plain_resource(301 + 10 * i, 2))
            .insert(&txn)
            .await
            .expect("SeaORM's nested save");
        })
        .await;
        let protected = measured(&txn, &counter, backend, async |i| {
            account::NestedActiveModel::from(new_account(10 + i, &format!("a{i}")))
                .add_resource(new_resource(100 + 10 * i, 1, 1))
                .add_resource(new_resource(101 + 10 * i, 1, 2))
                .insert(lock)
                .await
                .expect("hierlock's nested save");
        })
        .await;
        costs.push((
            "insert: new account with 2 new resources",
            seaorm.0,
            protected.0,
        ));
        servers.push((
            "insert: new account with 2 new resources",
            seaorm.1,
            protected.1,
        ));
        // An existing account renamed, with one more resource.
        let seaorm = measured(&txn, &counter, backend, async |i| {
            let row = plain::account::Entity::find_by_id(30 + i)
                .one(&txn)
                .await
                .expect("read")
                .expect("the account");
            let mut am = plain::account::ActiveModel::from(row);
            am.name = Set(format!("b{i}"));
            am.into_ex()
                .add_resource(plain_resource(0, 3))
                .save(&txn)
                .await
                .expect("SeaORM's nested save");
        })
        .await;
        let protected = measured(&txn, &counter, backend, async |i| {
            let row = account::Entity::find_by_id(10 + i)
                .one(lock.txn())
                .await
                .expect("read")
                .expect("the account");
            let mut am = account::ActiveModel::from(row);
            am.name = Set(format!("b{i}"));
            account::NestedActiveModel::from(am)
                .add_resource(new_resource(0, 1, 3))
                .save(lock)
                .await
                .expect("hierlock's nested save");
        })
        .await;
        costs.push((
            "save: account renamed, 1 new resource",
            seaorm.0,
            protected.0,
        ));
        servers.push((
            "save: account renamed, 1 new resource",
            seaorm.1,
            protected.1,
        ));
        // A new resource linked to two stored tags (`via`).
        for id in [30, 31] {
            plain::tag::ActiveModel {
                id: Set(id),
                user_id: Set(3),
                label: Set(format!("t{id}")),
            }
            .into_ex()
            .insert(&txn)
            .await
            .expect("a tag of user 3");
        }
        for id in [10, 11] {
            tag::Entity::insert(tag::ActiveModel {
                id: Set(id),
                user_id: Set(1),
                label: Set(format!("t{id}")),
            })
            .exec(lock)
            .await
            .expect("a tag of user 1");
        }
        let seaorm = measured(&txn, &counter, backend, async |i| {
            let mut new = plain_resource(400 + i, 1);
            new.account_id = Set(30);
            let mut am = new.into_ex();
            for id in [30, 31] {
                let tag = plain::tag::Entity::find_by_id(id)
                    .one(&txn)
                    .await
                    .expect("read")
                    .expect("the tag");
                am = am.add_tag(plain::tag::ActiveModel::from(tag));
            }
            am.insert(&txn).await.expect("SeaORM's nested save");
        })
        .await;
        let protected = measured(&txn, &counter, backend, async |i| {
            let mut new = new_resource(120 + i, 1, 1);
            new.account_id = Set(10);
            let mut am = resource::NestedActiveModel::from(new);
            for id in [10, 11] {
                let tag = tag::Entity::find_by_id(id)
                    .one(lock.txn())
                    .await
                    .expect("read")
                    .expect("the tag");
                am = am.add_tag(tag::ActiveModel::from(tag));
            }
            am.insert(lock).await.expect("hierlock's nested save");
        })
        .await;
        costs.push((
            "insert: new resource linked to 2 tags",
            seaorm.0,
            protected.0,
        ));
        servers.push((
            "insert: new resource linked to 2 tags",
            seaorm.1,
            protected.1,
        ));
        (costs, servers)
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    eprintln!("{backend:?}: statements per nested save (SeaORM's own, hierlock's)");
    for (shape, seaorm, protected) in &costs {
        eprintln!("  {shape:<44} {seaorm} {protected}");
    }
    for (shape, seaorm, protected) in &costs {
        assert_eq!(
            protected, seaorm,
            "{backend:?}: `{shape}` sent {protected} statements where SeaORM's own sends {seaorm}"
        );
        assert!(*seaorm >= 3, "{backend:?}: `{shape}` counted {seaorm}");
    }
    // The server's own counters: the same statements by kind (MySQL
    // family, savepoints included), the same rows written (PostgreSQL).
    for (shape, seaorm, protected) in &servers {
        eprintln!("  {shape:<44} server: {seaorm:?} {protected:?}");
        assert_eq!(
            protected, seaorm,
            "{backend:?}: `{shape}`, the server's counters"
        );
    }
    let rows = contents(&fx).await;
    assert_eq!(
        rows.resources.len(),
        1 + 2 * 8,
        "every row written: {rows:?}"
    );
}
