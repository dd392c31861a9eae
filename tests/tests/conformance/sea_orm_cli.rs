//! sea-orm-cli 2.0.4's output, as a user adopts it, on every backend.
//!
//! Compact (`tests/crates/sea-orm-cli-compact`: the hierarchy's five
//! entities under `#[protected]`, nothing else changed): the tables are
//! created from the generated entities, the protected rows are written with
//! a proof (and a row the proof does not cover is refused, nothing written),
//! the plain neighbours with SeaORM's own writes, and the reads across the
//! boundary (`find_also_related`, `find_related`, `load_one`) return the
//! related rows.
//!
//! Dense (`tests/crates/sea-orm-cli-dense`: the same five under
//! `#[protected]`, nothing else changed, every relation field across the
//! boundary kept): a protected account's nested insert with its plain
//! audit entries and tags, a project linked to tags through the plain
//! junction, and a plain entry's nested insert carrying a new account, all
//! under a proof; another user's account refused with nothing written;
//! with no proof, a nested insert that reaches a protected row refused with
//! nothing written, one that carries a loaded row unchanged written; and
//! the loaders reading across the boundary both ways.

use hierlock::ErrorKind;
use hierlock::sea_orm::{
    ActiveModelTrait, ActiveValue::Set, EntityTrait, LoaderTrait, ModelTrait, QueryOrder, Schema,
    TransactionTrait,
};
use hierlock_layout_sea_orm_cli_compact::{
    accounts, audit_log, invoices, line_items, memberships, project_tags, projects, tags, users,
};
use hierlock_layout_sea_orm_cli_dense as dense;
use hierlock_tests::{Backend, Fixture};

use crate::support::{as_user, assert_kind, count, recreate_tables};

/// The schema's tables, children first (the order to drop them in).
const GENERATED_TABLES: &[&str] = &[
    "audit_log",
    "project_tags",
    "tags",
    "memberships",
    "line_items",
    "invoices",
    "projects",
    "accounts",
    "users",
];

/// The tables have the generator's names: one test at a time per server.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The generated schema, created afresh from the generated entities.
async fn create_tables(fx: &Fixture) {
    let schema = Schema::new(fx.db.get_database_backend());
    recreate_tables(
        fx,
        GENERATED_TABLES,
        vec![
            schema.create_table_from_entity(users::Entity),
            schema.create_table_from_entity(accounts::Entity),
            schema.create_table_from_entity(projects::Entity),
            schema.create_table_from_entity(invoices::Entity),
            schema.create_table_from_entity(line_items::Entity),
            schema.create_table_from_entity(memberships::Entity),
            schema.create_table_from_entity(tags::Entity),
            schema.create_table_from_entity(project_tags::Entity),
            schema.create_table_from_entity(audit_log::Entity),
        ],
    )
    .await;
}

pub async fn sea_orm_cli_compact_output_writes_and_reads_across_the_boundary(backend: Backend) {
    let _turn = TURN.lock().await;
    let fx = Fixture::new(backend, "socli", 1000).await;
    create_tables(&fx).await;

    // User 1's tree, written with a proof on user 1; the plain rows beside
    // it with SeaORM's own writes.
    let txn = fx.db.begin().await.expect("begin");
    as_user(
        &fx.locker,
        &txn,
        1,
        async |lock| -> Result<(), hierlock::Error> {
            users::Entity::insert(users::ActiveModel {
                id: Set(1),
                name: Set("ann".into()),
            })
            .exec(lock)
            .await?;
            accounts::Entity::insert(accounts::ActiveModel {
                id: Set(10),
                user_id: Set(1),
                name: Set("main".into()),
                balance: Set(5),
            })
            .exec(lock)
            .await?;
            projects::Entity::insert(projects::ActiveModel {
                id: Set(100),
                user_id: Set(1),
                account_id: Set(10),
                title: Set("roof".into()),
            })
            .exec(lock)
            .await?;
            invoices::Entity::insert(invoices::ActiveModel {
                id: Set(200),
                user_id: Set(1),
                account_id: Set(10),
                total: Set(0),
            })
            .exec(lock)
            .await?;
            line_items::Entity::insert_many([1, 2].map(|id| line_items::ActiveModel {
                id: Set(id),
                user_id: Set(1),
                account_id: Set(10),
                invoice_id: Set(200),
                amount: Set(3),
            }))
            .exec(lock)
            .await?;
            let mut account: accounts::ActiveModel = accounts::Entity::find_by_id(10)
                .one(lock.txn())
                .await?
                .expect("account 10")
                .into();
            account.balance = Set(6);
            accounts::Entity::update(account).exec(lock).await?;
            Ok(())
        },
    )
    .await
    .expect("the proof")
    .expect("user 1's writes");
    memberships::ActiveModel {
        user_id: Set(1),
        account_id: Set(10),
        role: Set("owner".into()),
    }
    .insert(&txn)
    .await
    .expect("a membership");
    tags::ActiveModel {
        id: Set(7),
        account_id: Set(10),
        label: Set("vip".into()),
    }
    .insert(&txn)
    .await
    .expect("a tag");
    for (id, actor) in [(1, Some(1)), (2, None)] {
        audit_log::ActiveModel {
            id: Set(id),
            actor_id: Set(actor),
            account_id: Set(10),
            message: Set(format!("entry {id}")),
        }
        .insert(&txn)
        .await
        .expect("an audit entry");
    }
    txn.commit().await.expect("commit");

    // Another user's account, under user 1's proof: refused, nothing written.
    let txn = fx.db.begin().await.expect("begin");
    let outcome = as_user(&fx.locker, &txn, 1, async |lock| {
        accounts::Entity::insert(accounts::ActiveModel {
            id: Set(20),
            user_id: Set(2),
            name: Set("other".into()),
            balance: Set(0),
        })
        .exec(lock)
        .await
    })
    .await
    .expect("the proof");
    assert_kind(
        outcome,
        ErrorKind::NotCovered,
        "user 2's account under user 1's proof",
    );
    txn.rollback().await.expect("rollback");

    // Reads across the boundary, in both directions.
    let entries = audit_log::Entity::find()
        .order_by_asc(audit_log::Column::Id)
        .find_also_related(accounts::Entity)
        .all(&fx.db)
        .await
        .expect("audit entries with their account");
    assert_eq!(entries.len(), 2);
    for (entry, account) in &entries {
        let account = account.as_ref().expect("each entry's account is loaded");
        assert_eq!((entry.account_id, account.id, account.balance), (10, 10, 6));
    }
    let entries: Vec<audit_log::Model> = entries.into_iter().map(|(entry, _)| entry).collect();
    let actors = entries
        .load_one(users::Entity, &fx.db)
        .await
        .expect("the entries' actors");
    let actors: Vec<Option<i64>> = actors.iter().map(|u| u.as_ref().map(|u| u.id)).collect();
    assert_eq!(actors, [Some(1), None], "a nullable actor loads as None");
    let account = accounts::Entity::find_by_id(10)
        .one(&fx.db)
        .await
        .expect("read")
        .expect("account 10");
    let labels: Vec<String> = account
        .find_related(tags::Entity)
        .all(&fx.db)
        .await
        .expect("the account's tags")
        .into_iter()
        .map(|t| t.label)
        .collect();
    assert_eq!(labels, ["vip"]);
    let members = accounts::Entity::find_related::<memberships::Entity>()
        .all(&fx.db)
        .await
        .expect("memberships of accounts");
    assert_eq!(members.len(), 1);
    let items = invoices::Entity::find_by_id(200)
        .find_with_related(line_items::Entity)
        .all(&fx.db)
        .await
        .expect("the invoice with its items");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].1.len(), 2);
    let others = accounts::Entity::find()
        .all(&fx.db)
        .await
        .expect("accounts");
    assert_eq!(others.len(), 1, "the refused insert wrote nothing");
}

pub async fn sea_orm_cli_dense_output_nested_writes_and_loads_across_the_boundary(
    backend: Backend,
) {
    use hierlock::sea_orm::{ActiveValue::NotSet, EntityLoaderTrait, IntoActiveModel};

    let _turn = TURN.lock().await;
    let fx = Fixture::new(backend, "socli_dense", 1000).await;
    let schema = Schema::new(fx.db.get_database_backend());
    recreate_tables(
        &fx,
        GENERATED_TABLES,
        vec![
            schema.create_table_from_entity(dense::users::Entity),
            schema.create_table_from_entity(dense::accounts::Entity),
            schema.create_table_from_entity(dense::projects::Entity),
            schema.create_table_from_entity(dense::invoices::Entity),
            schema.create_table_from_entity(dense::line_items::Entity),
            schema.create_table_from_entity(dense::memberships::Entity),
            schema.create_table_from_entity(dense::tags::Entity),
            schema.create_table_from_entity(dense::project_tags::Entity),
            schema.create_table_from_entity(dense::audit_log::Entity),
        ],
    )
    .await;
    let account = |id: i64, user_id: i64| dense::accounts::ActiveModel {
        id: Set(id),
        user_id: Set(user_id),
        name: Set(format!("account {id}")),
        balance: Set(0),
    };
    let entry = |id: i64| dense::audit_log::ActiveModel {
        id: Set(id),
        actor_id: Set(Some(1)),
        account_id: NotSet,
        message: Set(format!("entry {id}")),
    };
    let tag = |id: i64, account_id: i64| dense::tags::ActiveModel {
        id: Set(id),
        account_id: Set(account_id),
        label: Set(format!("tag {id}")),
    };

    let txn = fx.db.begin().await.expect("begin");
    as_user(
        &fx.locker,
        &txn,
        1,
        async |lock| -> Result<(), hierlock::Error> {
            dense::users::Entity::insert(dense::users::ActiveModel {
                id: Set(1),
                name: Set("ann".into()),
            })
            .exec(lock)
            .await?;
            // A protected account with its plain audit entries and tag, in one
            // nested insert: the account checked, SeaORM filling the plain rows'
            // foreign keys.
            dense::accounts::NestedActiveModel::from(account(10, 1))
                .add_audit_log(entry(1))
                .add_audit_log(entry(2))
                .add_tag(dense::tags::ActiveModel {
                    id: Set(7),
                    account_id: NotSet,
                    label: Set("vip".into()),
                })
                .insert(lock)
                .await?;
            // A protected project linked to a new plain tag and the stored
            // one through the plain junction `project_tags`.
            let vip = dense::tags::Entity::find_by_id(7)
                .one(lock.txn())
                .await?
                .expect("tag 7");
            dense::projects::NestedActiveModel::from(dense::projects::ActiveModel {
                id: Set(100),
                user_id: Set(1),
                account_id: Set(10),
                title: Set("launch".into()),
            })
            .add_tag(tag(8, 10))
            .add_tag(IntoActiveModel::into_active_model(vip))
            .insert(lock)
            .await?;
            // A plain audit entry's nested insert carrying a new protected
            // account, given the proof: the account is checked against it.
            dense::audit_log::ActiveModelEx::from(entry(3))
                .set_accounts(dense::accounts::NestedActiveModel::from(account(11, 1)))
                .insert(lock)
                .await?;
            Ok(())
        },
    )
    .await
    .expect("the proof")
    .expect("user 1's writes");
    // The plain membership junction, with SeaORM's own insert.
    dense::memberships::ActiveModel {
        user_id: Set(1),
        account_id: Set(10),
        role: Set("owner".into()),
    }
    .insert(&txn)
    .await
    .expect("a membership");
    txn.commit().await.expect("commit");

    // Another user's account with an audit entry, under user 1's proof:
    // refused, and nothing of the nested insert written.
    let txn = fx.db.begin().await.expect("begin");
    let outcome = as_user(&fx.locker, &txn, 1, async |lock| {
        dense::accounts::NestedActiveModel::from(account(20, 2))
            .add_audit_log(entry(4))
            .insert(lock)
            .await
    })
    .await
    .expect("the proof");
    crate::dense::nested_error(outcome, ErrorKind::NotCovered, "user 2's account");
    // The same through a plain entry's nested insert.
    let outcome = as_user(&fx.locker, &txn, 1, async |lock| {
        dense::audit_log::ActiveModelEx::from(entry(5))
            .set_accounts(dense::accounts::NestedActiveModel::from(account(21, 2)))
            .insert(lock)
            .await
    })
    .await
    .expect("the proof");
    crate::dense::nested_error(outcome, ErrorKind::NotCovered, "user 2's account, nested");
    txn.rollback().await.expect("rollback");

    // With no proof: a plain entry's nested insert carrying a new account,
    // and a protected nested insert given the proof's transaction, are
    // refused when they reach the protected row; nothing is written.
    let txn = fx.db.begin().await.expect("begin");
    let outcome = dense::audit_log::ActiveModelEx::from(entry(6))
        .set_accounts(dense::accounts::NestedActiveModel::from(account(12, 1)))
        .insert(&txn)
        .await;
    let refused = crate::dense::nested_error(outcome, ErrorKind::Misuse, "no proof, plain save");
    assert!(
        refused.to_string().contains("`accounts`") && refused.to_string().contains(".save(&lock)"),
        "names the row and the way: {refused}"
    );
    let outcome = as_user(&fx.locker, &txn, 1, async |lock| {
        dense::accounts::NestedActiveModel::from(account(13, 1))
            .add_audit_log(entry(7))
            .insert(lock.txn())
            .await
    })
    .await
    .expect("the proof");
    crate::dense::nested_error(outcome, ErrorKind::Misuse, "the proof's transaction");
    txn.commit().await.expect("commit");
    assert_eq!(
        count(&fx, dense::accounts::Entity).await,
        2,
        "accounts 10 and 11 only"
    );
    assert_eq!(
        count(&fx, dense::audit_log::Entity).await,
        3,
        "entries 1 to 3 only"
    );

    // A plain entry that carries its loaded account unchanged saves with no
    // proof: SeaORM writes the entry and leaves the account alone.
    let loaded = dense::audit_log::Entity::load()
        .with(dense::accounts::Entity)
        .filter_by_id(3)
        .one(&fx.db)
        .await
        .expect("load entry 3")
        .expect("entry 3");
    let mut changed = dense::audit_log::ActiveModelEx::from(loaded);
    changed.message = Set("entry 3, edited".into());
    changed
        .update(&fx.db)
        .await
        .expect("the plain entry's save");

    // The loaders read across the boundary both ways: the plain entries'
    // accounts, the protected account's plain rows, the tags' projects and
    // the project's tags through the plain junction, the user's accounts
    // through the plain membership.
    let entries = dense::audit_log::Entity::load()
        .with(dense::accounts::Entity)
        .order_by_asc(dense::audit_log::Column::Id)
        .all(&fx.db)
        .await
        .expect("audit entries with their account");
    let seen: Vec<(i64, Option<i64>, &str)> = entries
        .iter()
        .map(|e| (e.id, e.accounts.as_ref().map(|a| a.id), e.message.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            (1, Some(10), "entry 1"),
            (2, Some(10), "entry 2"),
            (3, Some(11), "entry 3, edited")
        ],
    );
    let loaded = dense::accounts::Entity::load()
        .with(dense::audit_log::Entity)
        .with(dense::tags::Entity)
        .filter_by_id(10)
        .one(&fx.db)
        .await
        .expect("load account 10")
        .expect("account 10");
    assert_eq!(loaded.audit_logs.len(), 2);
    let mut labels: Vec<&str> = loaded.tags.iter().map(|t| t.label.as_str()).collect();
    labels.sort_unstable();
    assert_eq!(labels, ["tag 8", "vip"]);
    let project = dense::projects::Entity::load()
        .with(dense::tags::Entity)
        .filter_by_id(100)
        .one(&fx.db)
        .await
        .expect("load project 100")
        .expect("project 100");
    let mut linked: Vec<i64> = project.tags.iter().map(|t| t.id).collect();
    linked.sort_unstable();
    assert_eq!(linked, [7, 8], "both tags linked through project_tags");
    let tag = dense::tags::Entity::load()
        .with(dense::projects::Entity)
        .filter_by_id(8)
        .one(&fx.db)
        .await
        .expect("load tag 8")
        .expect("tag 8");
    assert_eq!(tag.projects.iter().map(|p| p.id).collect::<Vec<_>>(), [100]);
    let user = dense::users::Entity::load()
        .with(dense::accounts::Entity)
        .filter_by_id(1)
        .one(&fx.db)
        .await
        .expect("load user 1")
        .expect("user 1");
    assert_eq!(
        user.accounts.iter().map(|a| a.id).collect::<Vec<_>>(),
        [10],
        "the account through the membership"
    );
}
