//! sea-orm-cli 2.0.4's compact output, as a user adopts it
//! (`tests/crates/sea-orm-cli-compact`: the hierarchy's five entities under
//! `#[protected]`, nothing else changed), on every backend: the tables are
//! created from the generated entities, the protected rows are written with
//! a proof (and a row the proof does not cover is refused, nothing written),
//! the plain neighbours with SeaORM's own writes, and the reads across the
//! boundary (`find_also_related`, `find_related`, `load_one`) return the
//! related rows.

use hierlock::ErrorKind;
use hierlock::sea_orm::{
    ActiveModelTrait, ActiveValue::Set, EntityTrait, LoaderTrait, ModelTrait, QueryOrder, Schema,
    TransactionTrait,
};
use hierlock_layout_sea_orm_cli_compact::{
    accounts, audit_log, invoices, line_items, memberships, project_tags, projects, tags, users,
};
use hierlock_tests::{Backend, Fixture};

use crate::support::{as_user, assert_kind, recreate_tables};

/// The tables have the generator's names: one test at a time per server.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The generated schema, created afresh from the generated entities.
async fn create_tables(fx: &Fixture) {
    let schema = Schema::new(fx.db.get_database_backend());
    recreate_tables(
        fx,
        &[
            "audit_log",
            "project_tags",
            "tags",
            "memberships",
            "line_items",
            "invoices",
            "projects",
            "accounts",
            "users",
        ],
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
