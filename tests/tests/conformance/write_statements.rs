//! What a protected write costs in statements: exactly what SeaORM's own
//! write of the same row sends, for every single-row write by primary key;
//! at most two statements for a filtered write, whatever the number of rows.
//!
//! Each write is counted beside SeaORM's own call of the same kind, on a
//! plain (unprotected) entity of the same table, in the same transaction.
//! The MySQL family is counted by the server (`Questions` in the session's
//! status, the readings' own cost taken off); PostgreSQL and SQLite, which
//! have no per-session counter, by the statements SeaORM hands the driver
//! (its metric callback). Every write is run once before it is counted, so
//! that statements prepared once per connection are not counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hierlock::Locked;
use hierlock::proof::AccountLevel;
use hierlock::sea_orm::sea_query::{Expr, OnConflict};
use hierlock::sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction,
    EntityTrait, ExprTrait, IntoActiveModel, TransactionTrait,
};
use hierlock_tests::{Backend, Fixture};

use crate::support::{as_account, session_questions};

const TABLE: &str = "hlp_counted";

/// The table as a protected entity without a version.
#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
pub mod counted {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlp_counted")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: String,
        pub account_id: String,
        pub balance: i64,
        pub version: i32,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

/// The same table as a protected entity with a version.
#[hierlock::protected(
    level = resource,
    user = user_id,
    account = account_id,
    resource = id,
    version = version
)]
pub mod versioned {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlp_counted")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: String,
        pub account_id: String,
        pub balance: i64,
        pub version: i32,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

/// The same table as a plain SeaORM entity: the baseline.
pub mod plain {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlp_counted")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: String,
        pub account_id: String,
        pub balance: i64,
        pub version: i32,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The tests share the table name on each server (and PostgreSQL's two
/// backends a server): they take turns.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Counts the statements one connection sends.
pub(crate) enum Counter {
    /// The server's `Questions` of the session, less `reading` per reading.
    Server { reading: u64 },
    /// The statements SeaORM hands the driver.
    Client(Arc<AtomicU64>),
}

impl Counter {
    pub(crate) async fn now(&self, txn: &DatabaseTransaction) -> u64 {
        match self {
            Counter::Server { .. } => session_questions(txn).await,
            Counter::Client(sent) => sent.load(Ordering::SeqCst),
        }
    }

    /// The statements sent between two readings `before` and `after`.
    pub(crate) fn between(&self, before: u64, after: u64) -> u64 {
        match self {
            Counter::Server { reading } => after - before - reading,
            Counter::Client(_) => after - before,
        }
    }
}

/// A pool of one connection whose statements `counter` counts.
pub(crate) async fn counted_pool(fx: &Fixture, backend: Backend) -> (DatabaseConnection, Counter) {
    let mut db = fx.another_pool(1).await;
    if matches!(backend, Backend::MariaDb | Backend::MySql) {
        let txn = db.begin().await.expect("begin");
        let (first, second) = (session_questions(&txn).await, session_questions(&txn).await);
        txn.rollback().await.expect("rollback");
        return (
            db,
            Counter::Server {
                reading: second - first,
            },
        );
    }
    let sent = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&sent);
    db.set_metric_callback(move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
    });
    (db, Counter::Client(sent))
}

/// A row of u1/a1 to insert.
fn new_row(id: i64) -> plain::Model {
    plain::Model {
        id,
        user_id: "u1".to_owned(),
        account_id: "a1".to_owned(),
        balance: id,
        version: 0,
    }
}

fn to_counted(row: plain::Model) -> counted::Model {
    counted::Model {
        id: row.id,
        user_id: row.user_id,
        account_id: row.account_id,
        balance: row.balance,
        version: row.version,
    }
}

fn to_versioned(row: plain::Model) -> versioned::Model {
    versioned::Model {
        id: row.id,
        user_id: row.user_id,
        account_id: row.account_id,
        balance: row.balance,
        version: row.version,
    }
}

/// What each kind of write cost: (write, SeaORM's statements, hierlock's).
type Costs = Vec<(&'static str, u64, u64)>;

pub async fn protected_writes_send_the_statements_seaorms_own_writes_send(backend: Backend) {
    let _turn = TURN.lock().await;
    let fx = Fixture::new(backend, TABLE, 1000).await;
    fx.exec(&format!("DROP TABLE IF EXISTS {TABLE}")).await;
    fx.exec(&format!(
        "CREATE TABLE {TABLE} (id BIGINT NOT NULL PRIMARY KEY, user_id VARCHAR(16) NOT NULL, \
         account_id VARCHAR(16) NOT NULL, balance BIGINT NOT NULL, version INTEGER NOT NULL)"
    ))
    .await;
    let (db, counter) = counted_pool(&fx, backend).await;
    let txn = db.begin().await.expect("begin");
    let costs = as_account(&fx.locker, &txn, "u1", "a1", async |lock| {
        single_row_writes(&txn, &counter, lock).await
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");

    let supports_returning = db.support_returning();
    eprintln!("{backend:?}: statements per write (SeaORM's own, hierlock's)");
    for (write, seaorm, protected) in &costs {
        eprintln!("  {write:<48} {seaorm} {protected}");
    }
    for (write, seaorm, protected) in &costs {
        assert_eq!(
            protected, seaorm,
            "{backend:?}: `{write}` sent {protected} statements where SeaORM's own sends {seaorm}"
        );
    }
    // Absolute counts, so that SeaORM sending more would not hide a change.
    let expected_update = if supports_returning { 1 } else { 2 };
    for (write, _, protected) in &costs {
        let expected = match *write {
            w if w.contains("without_returning") || w.starts_with("delete_by_id") => 1,
            // With the read of the row.
            w if w.starts_with("delete(model)") => 2,
            _ => expected_update,
        };
        assert_eq!(*protected, expected, "{backend:?}: `{write}`");
    }
}

/// Count `run(1)` after a warm-up `run(0)`.
pub(crate) async fn counted<T>(
    txn: &DatabaseTransaction,
    counter: &Counter,
    mut run: impl AsyncFnMut(i64) -> T,
) -> u64 {
    run(0).await;
    let before = counter.now(txn).await;
    run(1).await;
    let after = counter.now(txn).await;
    counter.between(before, after)
}

async fn single_row_writes(
    txn: &DatabaseTransaction,
    counter: &Counter,
    lock: &Locked<'_, AccountLevel>,
) -> Costs {
    let mut costs = Costs::new();
    let read = async |id: i64| {
        plain::Entity::find_by_id(id)
            .one(txn)
            .await
            .expect("read")
            .expect("the row")
    };
    let seaorm = counted(txn, counter, async |i| {
        plain::Entity::insert(new_row(100 + i).into_active_model())
            .exec_with_returning(txn)
            .await
            .expect("SeaORM insert")
    })
    .await;
    let protected = counted(txn, counter, async |i| {
        counted::Entity::insert(counted::ActiveModel::from(to_counted(new_row(200 + i))))
            .exec(lock)
            .await
            .expect("protected insert")
    })
    .await;
    costs.push(("insert .exec(&lock)", seaorm, protected));

    let seaorm = counted(txn, counter, async |i| {
        plain::Entity::insert(new_row(110 + i).into_active_model())
            .exec_without_returning(txn)
            .await
            .expect("SeaORM insert")
    })
    .await;
    let protected = counted(txn, counter, async |i| {
        counted::Entity::insert(counted::ActiveModel::from(to_counted(new_row(210 + i))))
            .exec_without_returning(lock)
            .await
            .expect("protected insert")
    })
    .await;
    costs.push(("insert .exec_without_returning(&lock)", seaorm, protected));

    // Updates of a row read from the database, the main recipe.
    costs.push((
        "update .exec(&lock)",
        update_cost(txn, counter, Update::SeaOrm).await,
        update_cost(txn, counter, Update::Protected(lock)).await,
    ));
    costs.push((
        "update .exec_without_returning(&lock)",
        update_cost(txn, counter, Update::SeaOrmWithoutReturning).await,
        update_cost(txn, counter, Update::ProtectedWithoutReturning(lock)).await,
    ));
    costs.push((
        "update .exec(&lock), versioned",
        update_cost(txn, counter, Update::SeaOrm).await,
        update_cost(txn, counter, Update::Versioned(lock)).await,
    ));
    costs.push((
        "update .exec_versioned(&txn)",
        update_cost(txn, counter, Update::SeaOrm).await,
        update_cost(txn, counter, Update::WithoutProof).await,
    ));

    let upsert = |id: i64| {
        let mut row = new_row(id).into_active_model();
        row.balance = Set(-id);
        row
    };
    let seaorm = counted(txn, counter, async |i| {
        plain::Entity::insert(upsert(100 + i))
            .on_conflict(
                OnConflict::column(plain::Column::Id)
                    .update_column(plain::Column::Balance)
                    .to_owned(),
            )
            .exec_without_returning(txn)
            .await
            .expect("SeaORM upsert")
    })
    .await;
    let protected = counted(txn, counter, async |i| {
        counted::Entity::insert(counted::ActiveModel::from(to_counted(new_row(200 + i))))
            .on_conflict_update([counted::Column::Balance])
            .exec_without_returning(lock)
            .await
            .expect("protected upsert")
    })
    .await;
    costs.push(("upsert .exec_without_returning(&lock)", seaorm, protected));

    let seaorm = counted(txn, counter, async |i| {
        let row = read(110 + i).await.into_active_model();
        plain::Entity::delete(row)
            .exec(txn)
            .await
            .expect("SeaORM delete")
    })
    .await;
    let protected = counted(txn, counter, async |i| {
        let row: counted::Model = counted::Entity::find_by_id(210 + i)
            .one(txn)
            .await
            .expect("read")
            .expect("the row");
        counted::Entity::delete(counted::ActiveModel::from(row))
            .exec(lock)
            .await
            .expect("protected delete")
    })
    .await;
    // Both counts include the read of the row.
    costs.push(("delete(model) .exec(&lock)", seaorm, protected));

    let seaorm = counted(txn, counter, async |i| {
        plain::Entity::delete_by_id(100 + i)
            .exec(txn)
            .await
            .expect("SeaORM delete")
    })
    .await;
    let protected = counted(txn, counter, async |i| {
        counted::Entity::delete_by_id(200 + i)
            .exec(lock)
            .await
            .expect("protected delete")
    })
    .await;
    costs.push(("delete_by_id .exec(&lock)", seaorm, protected));
    costs
}

/// The update counted by [`update_cost`].
#[derive(Clone, Copy)]
enum Update<'l, 'p> {
    SeaOrm,
    SeaOrmWithoutReturning,
    Protected(&'p Locked<'l, AccountLevel>),
    ProtectedWithoutReturning(&'p Locked<'l, AccountLevel>),
    Versioned(&'p Locked<'l, AccountLevel>),
    WithoutProof,
}

/// The statements of one update of row 1 after it was read (the read is
/// not counted), once warmed up.
async fn update_cost(txn: &DatabaseTransaction, counter: &Counter, update: Update<'_, '_>) -> u64 {
    let mut sent = 0;
    for round in 0..2 {
        let row = plain::Entity::find_by_id(1)
            .one(txn)
            .await
            .expect("read")
            .unwrap_or_else(|| new_row(1));
        if round == 0
            && plain::Entity::find_by_id(1)
                .one(txn)
                .await
                .expect("read")
                .is_none()
        {
            plain::Entity::insert(row.clone().into_active_model())
                .exec_without_returning(txn)
                .await
                .expect("seed row 1");
        }
        let before = counter.now(txn).await;
        let balance = row.balance + 1;
        let balance = Set(balance);
        match update {
            Update::SeaOrm | Update::SeaOrmWithoutReturning => {
                let mut row = row.into_active_model();
                row.balance = balance;
                let update_one = plain::Entity::update(row);
                if matches!(update, Update::SeaOrm) {
                    update_one.exec(txn).await.map(drop)
                } else {
                    update_one.exec_without_returning(txn).await.map(drop)
                }
            }
            Update::Protected(lock) | Update::ProtectedWithoutReturning(lock) => {
                let mut row = counted::ActiveModel::from(to_counted(row));
                row.balance = balance;
                let update_one = counted::Entity::update(row);
                if matches!(update, Update::Protected(_)) {
                    update_one.exec(lock).await.map(drop)
                } else {
                    update_one.exec_without_returning(lock).await.map(drop)
                }
                .map_err(db_err)
            }
            Update::Versioned(_) | Update::WithoutProof => {
                let mut row = versioned::ActiveModel::from(to_versioned(row));
                row.balance = balance;
                let update_one = versioned::Entity::update(row);
                match update {
                    Update::Versioned(lock) => update_one.exec(lock).await.map(drop),
                    _ => update_one.exec_versioned(txn).await.map(drop),
                }
                .map_err(db_err)
            }
        }
        .expect("update");
        let after = counter.now(txn).await;
        sent = counter.between(before, after);
    }
    sent
}

fn db_err(e: hierlock::Error) -> hierlock::sea_orm::DbErr {
    hierlock::sea_orm::DbErr::Custom(e.to_string())
}

pub async fn protected_bulk_writes_take_two_statements_whatever_the_rows(backend: Backend) {
    let _turn = TURN.lock().await;
    let fx = Fixture::new(backend, TABLE, 1000).await;
    fx.exec(&format!("DROP TABLE IF EXISTS {TABLE}")).await;
    fx.exec(&format!(
        "CREATE TABLE {TABLE} (id BIGINT NOT NULL PRIMARY KEY, user_id VARCHAR(16) NOT NULL, \
         account_id VARCHAR(16) NOT NULL, balance BIGINT NOT NULL, version INTEGER NOT NULL)"
    ))
    .await;
    let (db, counter) = counted_pool(&fx, backend).await;
    for rows in [1_i64, 600] {
        let txn = db.begin().await.expect("begin");
        let counts = as_account(&fx.locker, &txn, "u1", "a1", async |lock| {
            let mut counts = Vec::new();
            let inserted = counted(&txn, &counter, async |i| {
                let models = (0..rows)
                    .map(|r| counted::ActiveModel::from(to_counted(new_row(i * 10_000 + r))));
                counted::Entity::insert_many(models)
                    .exec(lock)
                    .await
                    .expect("insert_many")
            })
            .await;
            counts.push(("insert_many", inserted, 1));
            let updated = counted(&txn, &counter, async |_| {
                counted::Entity::update_many()
                    .filter(counted::Column::UserId.eq("u1"))
                    .col_expr(
                        counted::Column::Balance,
                        Expr::col(counted::Column::Balance).add(1),
                    )
                    .exec(lock)
                    .await
                    .expect("update_many")
            })
            .await;
            counts.push(("update_many", updated, 2));
            let deleted = counted(&txn, &counter, async |i| {
                counted::Entity::delete_many()
                    .filter(counted::Column::Id.gte(i * 10_000))
                    .filter(counted::Column::Id.lt(i * 10_000 + rows))
                    .exec(lock)
                    .await
                    .expect("delete_many")
            })
            .await;
            counts.push(("delete_many", deleted, 2));
            counts
        })
        .await
        .expect("locks");
        txn.rollback().await.expect("rollback");
        for (write, sent, most) in counts {
            eprintln!("{backend:?}: {write} of {rows} rows: {sent} statements");
            assert!(
                sent <= most,
                "{backend:?}: {write} of {rows} rows sent {sent} statements, more than {most}"
            );
        }
    }
}
