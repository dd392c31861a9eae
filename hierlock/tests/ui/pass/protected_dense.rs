//! `#[protected]` on entities in SeaORM's dense format (`#[sea_orm::model]`,
//! as `sea-orm-cli generate entity --entity-format dense` writes them): a
//! small blog-style schema, every entity protected with one attribute.
//! SeaORM's dense reads compile as in plain SeaORM (`find_by_<unique key>`,
//! `COLUMN`, `Entity::load().with(..)`, relations through `Table`), and
//! the rows are written flat, one proof-gated statement each, or with
//! SeaORM's nested writes under the proof (`NestedActiveModel`,
//! `.insert(&lock)` / `.save(&lock)`, `.delete(&lock)`). `main`
//! checks that protecting the entities leaves their schema unchanged:
//! `Schema::create_table_from_entity(x::Table)` gives the SQL of the same
//! entity unprotected, and SeaORM's entity registry syncs the same tables.
#![deny(warnings)]
#![allow(dead_code)]

use hierlock::proof::{AccountLevel, UserLevel};
use hierlock::sea_orm::{
    ActiveValue::{NotSet, Set},
    ColumnTrait, DatabaseTransaction, DbBackend, DbErr, DeleteResult, EntityTrait, ModelTrait,
    QueryFilter, Schema,
};
use hierlock::{Locked, Locker, hierlocked};

/// The schema: user -> profile (has_one), user -> user (self_ref: manager
/// and reports), user -> account -> resource
/// (has_many / belongs_to), resource <-> tag through the junction
/// `resource_tag`, unique keys `user.email`, `tag.label` and
/// `account.(user_id, name)`. Written once, protected (`blog!(protected)`)
/// or plain (`blog!(plain)`, for the schema check). Each attribute is
/// written whole in the arm that passes it on: `#[protected]` resolves the
/// names it generates at the attribute's tokens, and its ID fields are
/// among them.
macro_rules! blog {
    (protected) => {
        blog!(@modules
            [#[hierlock::protected(level = user, user = id)]]
            [#[hierlock::protected(level = user, user = user_id)]]
            [#[hierlock::protected(level = account, user = user_id, account = id)]]
            [#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]]
            [#[hierlock::protected(level = user, user = user_id)]]
            [#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = resource_id)]]
        );
    };
    (plain) => {
        blog!(@modules
            [] [] [] [] [] []
        );
    };
    (@modules
        [$($user:tt)*] [$($profile:tt)*] [$($account:tt)*]
        [$($resource:tt)*] [$($tag:tt)*] [$($resource_tag:tt)*]
    ) => {
        $($user)*
        pub mod user {
            use hierlock::sea_orm::entity::prelude::*;

            #[sea_orm::model]
            #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
            #[sea_orm(table_name = "dense_users")]
            pub struct Model {
                #[sea_orm(primary_key, auto_increment = false)]
                pub id: i64,
                #[sea_orm(unique)]
                pub email: String,
                pub name: String,
                pub manager_id: Option<i64>,
                #[sea_orm(
                    self_ref,
                    relation_enum = "Manager",
                    relation_reverse = "Reports",
                    from = "manager_id",
                    to = "id"
                )]
                pub manager: BelongsTo<Option<Entity>>,
                #[sea_orm(self_ref, relation_enum = "Reports", relation_reverse = "Manager")]
                pub reports: HasMany<Entity>,
                #[sea_orm(has_one)]
                pub profile: HasOne<super::profile::Entity>,
                #[sea_orm(has_many)]
                pub accounts: HasMany<super::account::Entity>,
            }

            impl ActiveModelBehavior for ActiveModel {}
        }

        $($profile)*
        pub mod profile {
            use hierlock::sea_orm::entity::prelude::*;

            #[sea_orm::model]
            #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
            #[sea_orm(table_name = "dense_profiles")]
            pub struct Model {
                #[sea_orm(primary_key, auto_increment = false)]
                pub id: i64,
                #[sea_orm(unique)]
                pub user_id: i64,
                pub bio: String,
                #[sea_orm(belongs_to, from = "user_id", to = "id")]
                pub user: HasOne<super::user::Entity>,
            }

            impl ActiveModelBehavior for ActiveModel {}
        }

        $($account)*
        pub mod account {
            use hierlock::sea_orm::entity::prelude::*;

            #[sea_orm::model]
            #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
            #[sea_orm(table_name = "dense_accounts")]
            pub struct Model {
                #[sea_orm(primary_key, auto_increment = false)]
                pub id: i64,
                #[sea_orm(unique_key = "owner_name")]
                pub user_id: i64,
                #[sea_orm(unique_key = "owner_name")]
                pub name: String,
                #[sea_orm(belongs_to, from = "user_id", to = "id", on_delete = "Cascade")]
                pub user: HasOne<super::user::Entity>,
                #[sea_orm(has_many)]
                pub resources: HasMany<super::resource::Entity>,
            }

            impl ActiveModelBehavior for ActiveModel {}
        }

        $($resource)*
        pub mod resource {
            use hierlock::sea_orm::entity::prelude::*;

            #[sea_orm::model]
            #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
            #[sea_orm(table_name = "dense_resources")]
            pub struct Model {
                #[sea_orm(primary_key, auto_increment = false)]
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

        $($tag)*
        pub mod tag {
            use hierlock::sea_orm::entity::prelude::*;

            #[sea_orm::model]
            #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
            #[sea_orm(table_name = "dense_tags")]
            pub struct Model {
                #[sea_orm(primary_key, auto_increment = false)]
                pub id: i64,
                pub user_id: i64,
                #[sea_orm(unique)]
                pub label: String,
                #[sea_orm(has_many, via = "resource_tag")]
                pub resources: HasMany<super::resource::Entity>,
            }

            impl ActiveModelBehavior for ActiveModel {}
        }

        $($resource_tag)*
        pub mod resource_tag {
            use hierlock::sea_orm::entity::prelude::*;

            #[sea_orm::model]
            #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
            #[sea_orm(table_name = "dense_resource_tags")]
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
    };
}

blog!(protected);

/// A plain dense entity beside the protected ones: it relates to a
/// protected entity with an `impl Related` naming its `Table`, not with a
/// relation field (which would need SeaORM's `ActiveModelEx` of the
/// protected side).
pub mod note {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "dense_notes")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        pub account_id: i64,
        pub text: String,
    }

    impl Related<super::account::Table> for Entity {
        fn to() -> RelationDef {
            Entity::belongs_to(super::account::Table)
                .from(Column::AccountId)
                .to(super::account::Column::Id)
                .into()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// The same entities, unprotected.
mod plain {
    blog!(plain);
}

/// SeaORM's dense reads, through the facades.
async fn reads(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    // Unique keys, single and composite, and typed columns.
    let alice: Option<user::Model> = user::Entity::find_by_email("alice@example.com")
        .one(txn)
        .await?;
    account::Entity::find_by_owner_name((1, "main".to_owned()))
        .one(txn)
        .await?;
    tag::Entity::find_by_label("red").one(txn).await?;
    user::Entity::find()
        .filter(user::COLUMN.email.eq("alice@example.com"))
        .filter(user::Entity::COLUMN.name.contains("ali"))
        .all(txn)
        .await?;
    user::Entity::find_by_id(1).one(txn).await?;

    // Relations name the other side's `Table`.
    user::Entity::find_related::<account::Table>()
        .all(txn)
        .await?;
    let _: Vec<(user::Model, Vec<account::Model>)> = user::Entity::find()
        .find_with_related(account::Table)
        .all(txn)
        .await?;
    if let Some(alice) = &alice {
        let _: Vec<account::Model> = alice.find_related(account::Table).all(txn).await?;
        let _: Option<profile::Model> = alice.find_related(profile::Table).one(txn).await?;
    }
    let _: Vec<(resource::Model, Vec<tag::Model>)> = resource::Entity::find()
        .find_with_related(tag::Table)
        .all(txn)
        .await?;

    // `has_one` / `has_many` relations keep their plain variant names.
    let _: [user::Relation; 2] = [user::Relation::Account, user::Relation::Profile];
    let _ = hierlock::sea_orm::RelationTrait::def(&account::Relation::Resource);
    // The dense loader: nested reads into `ModelEx`.
    let loaded: Option<user::ModelEx> = user::Entity::load()
        .filter_by_email("alice@example.com")
        .with(profile::Table)
        .with(account::Table)
        .with((account::Table, resource::Table))
        .one(txn)
        .await?;
    if let Some(user) = loaded {
        let _: Option<&profile::ModelEx> = user.profile.as_ref();
        for account in user.accounts.iter() {
            let _: &str = &account.name;
            let _ = account.resources.len();
        }
        // A loaded row, flat again.
        let _: user::Model = user.into();
    }
    let _: Vec<resource::ModelEx> = resource::Entity::load().with(tag::Table).all(txn).await?;
    // The plain dense entity, with the protected one it relates to; and
    // its own dense writes, which do not reach the protected rows.
    let _: Vec<(note::Model, Option<account::Model>)> = note::Entity::find()
        .find_also_related(account::Table)
        .all(txn)
        .await?;
    note::ActiveModel::builder()
        .set_account_id(10)
        .set_text("plain")
        .insert(txn)
        .await?;
    // Self-references.
    let _: Vec<user::ModelEx> = user::Entity::load()
        .with(user::Relation::Manager)
        .with(user::Relation::Reports)
        .all(txn)
        .await?;
    let _ = user::Relation::Account;
    let _ = resource::Relation::Account;
    Ok(())
}

/// The writes: flat, one statement per row, each with the proof.
#[hierlocked(user = 1, locker = locker)]
async fn writes(locker: &Locker, txn: &DatabaseTransaction) -> Result<(), hierlock::Error> {
    user::Entity::insert(user::ActiveModel {
        id: Set(1),
        email: Set("alice@example.com".to_owned()),
        name: Set("Alice".to_owned()),
        manager_id: Set(None),
    })
    .exec(&lock)
    .await?;
    profile::Entity::insert(profile::ActiveModel {
        id: Set(1),
        user_id: Set(1),
        bio: Set("hello".to_owned()),
    })
    .exec(&lock)
    .await?;
    let main = account::Entity::insert(account::ActiveModel {
        id: Set(10),
        user_id: Set(1),
        name: Set("main".to_owned()),
    })
    .exec(&lock)
    .await?;
    resource::Entity::insert(resource::ActiveModel {
        id: Set(100),
        user_id: Set(1),
        account_id: Set(10),
        balance: Set(0),
    })
    .exec(&lock)
    .await?;
    tag::Entity::insert(tag::ActiveModel {
        id: Set(1000),
        user_id: Set(1),
        label: Set("red".to_owned()),
    })
    .exec(&lock)
    .await?;
    resource_tag::Entity::insert(resource_tag::ActiveModel {
        resource_id: Set(100),
        tag_id: Set(1000),
        user_id: Set(1),
        account_id: Set(10),
    })
    .exec(&lock)
    .await?;
    // A row read back (or loaded) is updated and deleted flat, too.
    let mut renamed: account::ActiveModel = main.into();
    renamed.name = Set("savings".to_owned());
    account::Entity::update(renamed).exec(&lock).await?;
    let _: u64 = resource_tag::Entity::delete_many()
        .filter(resource_tag::Column::ResourceId.eq(100))
        .exec(&lock)
        .await?;
    // `delete_by_<unique key>` is a protected delete.
    let _: u64 = tag::Entity::delete_by_label("red").exec(&lock).await?;
    let _: u64 = account::Entity::delete_by_owner_name((1, "savings".to_owned()))
        .exec(&lock)
        .await?;
    let _: u64 = user::Entity::delete_by_email("alice@example.com")
        .exec(&lock)
        .await?;
    Ok(())
}

/// SeaORM's nested writes, with the proof in place of the connection:
/// every row they write is checked against it (`?` gives hierlock's error
/// back from SeaORM's `DbErr`).
#[hierlocked(user = 1, locker = locker)]
async fn nested_writes(locker: &Locker, txn: &DatabaseTransaction) -> Result<(), hierlock::Error> {
    // A new tree: the user, its profile, an account and its resource.
    let alice: user::ModelEx = user::NestedActiveModel::from(user::ActiveModel {
        id: Set(1),
        email: Set("alice@example.com".to_owned()),
        name: Set("Alice".to_owned()),
        manager_id: Set(None),
    })
    .set_profile(profile::ActiveModel {
        id: Set(1),
        user_id: Set(1),
        bio: Set("hello".to_owned()),
    })
    .add_account(
        account::NestedActiveModel::from(account::ActiveModel {
            id: Set(10),
            user_id: Set(1),
            name: Set("main".to_owned()),
        })
        .add_resource(resource::ActiveModel {
            id: Set(100),
            user_id: Set(1),
            account_id: NotSet,
            balance: Set(0),
        }),
    )
    .insert(&lock)
    .await?;
    // A loaded tree, changed and saved.
    let loaded: Option<account::ModelEx> = account::Entity::load()
        .filter_by_owner_name((1, "main".to_owned()))
        .with(resource::Table)
        .one(lock.txn())
        .await?;
    if let Some(loaded) = loaded {
        let mut am = account::NestedActiveModel::from(loaded);
        am.name = Set("savings".to_owned());
        let _: account::NestedActiveModel = am.save(&lock).await?;
    }
    // Deep deletes, each row checked.
    let _: DeleteResult = alice.delete(&lock).await?;
    if let Some(row) = account::Entity::find_by_id(10).one(lock.txn()).await? {
        let _: DeleteResult = row.cascade_delete(&lock).await?;
    }
    Ok(())
}

/// A helper with a proof of the entity's level.
async fn rename(
    lock: &Locked<'_, AccountLevel>,
    row: account::Model,
    name: &str,
) -> hierlock::Result<account::Model> {
    let mut am = account::ActiveModel::from(row);
    am.name = Set(name.to_owned());
    account::Entity::update(am).exec(lock).await
}

async fn remove_user(lock: &Locked<'_, UserLevel>, row: user::Model) -> hierlock::Result<u64> {
    user::Entity::delete(row).exec(lock).await
}

/// `create_table_from_entity` of each protected entity's `Table` against
/// the same entity unprotected, on every backend.
fn schema_is_unchanged() {
    fn sql<E: EntityTrait>(backend: DbBackend, entity: E) -> String {
        backend
            .build(&Schema::new(backend).create_table_from_entity(entity))
            .to_string()
    }
    for backend in [DbBackend::MySql, DbBackend::Postgres, DbBackend::Sqlite] {
        let pairs = [
            (sql(backend, user::Table), sql(backend, plain::user::Entity)),
            (
                sql(backend, profile::Table),
                sql(backend, plain::profile::Entity),
            ),
            (
                sql(backend, account::Table),
                sql(backend, plain::account::Entity),
            ),
            (
                sql(backend, resource::Table),
                sql(backend, plain::resource::Entity),
            ),
            (sql(backend, tag::Table), sql(backend, plain::tag::Entity)),
            (
                sql(backend, resource_tag::Table),
                sql(backend, plain::resource_tag::Entity),
            ),
        ];
        for (protected, plain) in pairs {
            assert_eq!(protected, plain, "{backend:?}");
        }
    }
    // The foreign keys are there, under the tables' own names.
    let sql = sql(DbBackend::Postgres, resource_tag::Table);
    assert!(sql.contains(r#"REFERENCES "dense_tags""#), "{sql}");
}

/// SeaORM's entity registry (`db.get_schema_registry(prefix).sync(&db)`,
/// features `entity-registry` and `schema-sync`) creates the same tables
/// for the protected entities as for the same entities unprotected: each
/// set synced into an empty SQLite database, the two schemas are equal.
fn registry_schema_is_unchanged() {
    use hierlock::sea_orm::{ConnectOptions, ConnectionTrait, Database, Statement};

    async fn synced(prefix: &str) -> Vec<(String, Option<String>)> {
        let mut options = ConnectOptions::new("sqlite::memory:");
        options.max_connections(1);
        let db = Database::connect(options)
            .await
            .expect("an SQLite database");
        db.get_schema_registry(prefix)
            .sync(&db)
            .await
            .unwrap_or_else(|e| panic!("sync of {prefix}: {e}"));
        db.query_all_raw(Statement::from_string(
            DbBackend::Sqlite,
            "SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
        ))
        .await
        .expect("the schema")
        .iter()
        .map(|row| {
            (
                row.try_get("", "name").unwrap(),
                row.try_get("", "sql").unwrap(),
            )
        })
        .collect()
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        // The sealed modules `#[protected]` generates sit beside their
        // facades, as `__hierlock_<module>`.
        let protected = synced(&format!("{}::__hierlock_", module_path!())).await;
        let plain = synced(&format!("{}::plain::", module_path!())).await;
        let tables = protected
            .iter()
            .filter(|(name, _)| name.starts_with("dense_"))
            .count();
        assert_eq!(
            tables, 6,
            "every protected entity is registered: {protected:?}"
        );
        assert_eq!(protected, plain);
    });
}

fn main() {
    let _ = (reads, writes, nested_writes, rename, remove_user);
    schema_is_unchanged();
    registry_schema_is_unchanged();
}
