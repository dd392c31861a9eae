//! A protected dense entity whose relation fields name plain dense entities
//! (a `has_many` and a nullable `belongs_to`), on every backend: its nested
//! save under a proof writes the plain rows with the protected one, checking
//! only the protected row (a plain row needs no lock); a protected row the
//! proof does not cover refuses the save, nothing of it written; the loader
//! reads the plain rows back through the fields, and a plain entity reads
//! the protected rows through its `Related` impl; a cascade delete under the
//! proof deletes the plain children with it.

use hierlock::ErrorKind;
use hierlock::sea_orm::{
    ActiveModelTrait,
    ActiveValue::{NotSet, Set},
    ColumnTrait, DatabaseTransaction, EntityLoaderTrait, EntityTrait, QueryFilter, QueryOrder,
    Schema, TransactionTrait,
};
use hierlock_tests::{Backend, Fixture};

use crate::dense::nested_error;
use crate::support::{as_user, count, recreate_tables};

#[hierlock::protected(level = account, user = user_id, account = id)]
pub mod account {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlp_accounts")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub name: String,
        pub currency_id: Option<i64>,
        #[sea_orm(has_many)]
        pub notes: HasMany<super::note::Entity>,
        #[sea_orm(belongs_to, from = "currency_id", to = "id")]
        pub currency: BelongsTo<Option<super::currency::Entity>>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// Plain: relates to the protected account with an impl, not a field.
pub mod note {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlp_notes")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        pub account_id: i64,
        pub text: String,
    }

    impl Related<super::account::Entity> for Entity {
        fn to() -> RelationDef {
            Entity::belongs_to(super::account::Entity)
                .from(Column::AccountId)
                .to(super::account::Column::Id)
                .into()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// Plain, the parent of protected accounts (as `sea-orm-cli` writes the
/// back-reference of their nullable foreign key).
pub mod currency {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlp_currencies")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub code: String,
        #[sea_orm(has_many)]
        pub accounts: HasMany<super::account::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn fixture(backend: Backend) -> Fixture {
    let fx = Fixture::new(backend, "hlp_dense", 1000).await;
    let schema = Schema::new(fx.db.get_database_backend());
    recreate_tables(
        &fx,
        &["hlp_notes", "hlp_accounts", "hlp_currencies"],
        vec![
            schema.create_table_from_entity(currency::Entity),
            schema.create_table_from_entity(account::Entity),
            schema.create_table_from_entity(note::Entity),
        ],
    )
    .await;
    fx
}

fn new_account(id: i64, user_id: i64) -> account::ActiveModel {
    account::ActiveModel {
        id: Set(id),
        user_id: Set(user_id),
        name: Set(format!("account {id}")),
        currency_id: NotSet,
    }
}

fn new_note(text: &str) -> note::ActiveModel {
    note::ActiveModel {
        id: NotSet,
        account_id: NotSet,
        text: Set(text.to_owned()),
    }
}

pub async fn dense_protected_fields_to_plain_entities_save_load_and_delete(backend: Backend) {
    let _turn = TURN.lock().await;
    let fx = fixture(backend).await;

    // Account 10 of user 1 with two notes and a currency, in one nested
    // insert under user 1's proof.
    let txn = fx.db.begin().await.expect("begin");
    as_user(&fx.locker, &txn, 1, async |lock| {
        account::NestedActiveModel::from(new_account(10, 1))
            .add_note(new_note("first"))
            .add_note(new_note("second"))
            .set_currency(currency::ActiveModel {
                id: Set(5),
                code: Set("EUR".to_owned()),
            })
            .insert(lock)
            .await
    })
    .await
    .expect("the proof")
    .expect("the nested insert");
    txn.commit().await.expect("commit");

    // Another user's account with a note, under user 1's proof: refused,
    // and neither row written.
    let txn = fx.db.begin().await.expect("begin");
    let outcome = as_user(&fx.locker, &txn, 1, async |lock| {
        account::NestedActiveModel::from(new_account(20, 2))
            .add_note(new_note("not mine"))
            .insert(lock)
            .await
    })
    .await
    .expect("the proof");
    nested_error(
        outcome,
        ErrorKind::NotCovered,
        "user 2's account under user 1's proof",
    );
    txn.rollback().await.expect("rollback");
    assert_eq!(count(&fx, account::Entity).await, 1);
    assert_eq!(
        count(&fx, note::Entity).await,
        2,
        "the refused save's note is not written"
    );

    // The loader reads the plain rows through the protected entity's fields.
    let loaded = account::Entity::load()
        .with(note::Entity)
        .with(currency::Entity)
        .filter_by_id(10)
        .one(&fx.db)
        .await
        .expect("load account 10")
        .expect("account 10");
    let mut texts: Vec<&str> = loaded.notes.iter().map(|n| n.text.as_str()).collect();
    texts.sort();
    assert_eq!(texts, ["first", "second"]);
    assert_eq!(loaded.currency_id, Some(5));
    assert_eq!(
        loaded.currency.as_ref().map(|c| c.code.as_str()),
        Some("EUR"),
        "the currency is loaded"
    );

    // The plain side reads the protected rows through its `Related` impl.
    let notes = note::Entity::find()
        .order_by_asc(note::Column::Id)
        .find_also_related(account::Entity)
        .all(&fx.db)
        .await
        .expect("notes with their account");
    assert!(
        notes
            .iter()
            .all(|(_, a)| a.as_ref().is_some_and(|a| a.id == 10))
    );

    // A cascade delete under the proof takes the plain children with it.
    let txn = fx.db.begin().await.expect("begin");
    let deleted = as_user(&fx.locker, &txn, 1, async |lock| {
        let row = account::Entity::find_by_id(10)
            .one(lock.txn())
            .await?
            .expect("account 10");
        row.cascade_delete(lock).await
    })
    .await
    .expect("the proof")
    .expect("the cascade delete");
    txn.commit().await.expect("commit");
    assert_eq!(deleted.rows_affected, 3, "the account and its two notes");
    assert_eq!(count(&fx, note::Entity).await, 0);
    assert_eq!(
        count(&fx, currency::Entity).await,
        1,
        "a belongs_to parent stays"
    );
}

/// A plain parent's nested save that would unlink its protected children
/// (`Replace` of its `has_many`: SeaORM clears their foreign key): refused
/// with no proof, nothing changed; done with the proof.
pub async fn dense_plain_parent_unlinks_protected_children_only_with_a_proof(backend: Backend) {
    let _turn = TURN.lock().await;
    let fx = fixture(backend).await;
    let txn = fx.db.begin().await.expect("begin");
    currency::ActiveModel {
        id: Set(1),
        code: Set("EUR".into()),
    }
    .insert(&txn)
    .await
    .expect("a currency");
    as_user(
        &fx.locker,
        &txn,
        1,
        async |lock| -> Result<(), hierlock::Error> {
            for id in [10, 11] {
                let mut row = new_account(id, 1);
                row.currency_id = Set(Some(1));
                account::Entity::insert(row).exec(lock).await?;
            }
            Ok(())
        },
    )
    .await
    .expect("the proof")
    .expect("user 1's accounts");
    txn.commit().await.expect("commit");
    let unlink =
        async |conn: &DatabaseTransaction,
               lock: Option<&hierlock::Locked<'_, hierlock::proof::UserLevel>>| {
            let loaded = currency::Entity::load()
                .with(account::Entity)
                .filter_by_id(1)
                .one(conn)
                .await
                .expect("load currency 1")
                .expect("currency 1");
            assert_eq!(
                loaded.accounts.len(),
                2,
                "the loader reads the protected children"
            );
            let mut am = currency::ActiveModelEx::from(loaded);
            am.accounts
                .replace_all(Vec::<account::NestedActiveModel>::new());
            match lock {
                Some(lock) => am.save(lock).await.map(drop),
                None => am.save(conn).await.map(drop),
            }
        };
    let linked = async || {
        account::Entity::find()
            .filter(account::Column::CurrencyId.eq(1))
            .all(&fx.db)
            .await
            .expect("accounts")
            .len()
    };

    let txn = fx.db.begin().await.expect("begin");
    let refused = unlink(&txn, None).await;
    let e = nested_error(refused, ErrorKind::Misuse, "unlinking with no proof");
    assert!(e.to_string().contains("hlp_accounts"), "{e}");
    txn.rollback().await.expect("rollback");
    assert_eq!(linked().await, 2, "the refused save changed nothing");

    let txn = fx.db.begin().await.expect("begin");
    as_user(&fx.locker, &txn, 1, async |lock| {
        unlink(&txn, Some(lock)).await
    })
    .await
    .expect("the proof")
    .expect("unlinked under the proof");
    txn.commit().await.expect("commit");
    assert_eq!(linked().await, 0, "both accounts unlinked");
}
