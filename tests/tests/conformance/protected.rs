//! Protected writes beyond one row: upserts, the returning variants, and
//! `update_many` / `delete_many` scoped to the proof.
//!
//! Each test has its own `#[protected]` resource table, seeded with
//!
//! | id | user | account | balance |
//! |----|------|---------|---------|
//! | 1  | u1   | a1      | 10      |
//! | 2  | u1   | a1      | 20      |
//! | 3  | u2   | a1      | 30      |
//! | 4  | u1   | a2      | 40      |
//!
//! and writes with a write-lock proof on account `u1/a1`, which covers rows
//! 1 and 2 only. A refused write must leave every row as it was: the tests
//! commit the transaction and read the table back.

use hierlock::proof::AccountLevel;
use hierlock::sea_orm::sea_query::Expr;
use hierlock::sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, ExprTrait,
    Statement,
};
use hierlock::{Error, ErrorKind, Locked, Locker, hierlocked};
use hierlock_tests::{Backend, Fixture, bounded};

/// A resource table of one test: `$module` with table `$table`.
macro_rules! resource_table {
    ($module:ident, $table:tt) => {
        #[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
        pub mod $module {
            use hierlock::sea_orm::entity::prelude::*;

            #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
            #[sea_orm(table_name = $table)]
            pub struct Model {
                #[sea_orm(primary_key, auto_increment = false)]
                pub id: i64,
                pub user_id: String,
                pub account_id: String,
                pub balance: i64,
            }

            #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
            pub enum Relation {}
        }
    };
}

resource_table!(upserted, "hlp_upserted");
resource_table!(upsert_refused, "hlp_upsert_refused");
resource_table!(returned, "hlp_returned");
resource_table!(scoped, "hlp_scoped");
resource_table!(scope_refused, "hlp_scope_refused");
resource_table!(raced, "hlp_raced");
resource_table!(bulk, "hlp_bulk");

/// A row as the tests compare it: (id, user, account, balance).
type Row = (i64, &'static str, &'static str, i64);

const SEED: [Row; 4] = [
    (1, "u1", "a1", 10),
    (2, "u1", "a1", 20),
    (3, "u2", "a1", 30),
    (4, "u1", "a2", 40),
];

/// PostgreSQL and PostgreSQL-with-buckets share a server and so the tables:
/// their protected tests take turns.
static POSTGRES_TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A fixture whose `table` is created afresh and seeded with [`SEED`]; keep
/// the guard for the whole test.
async fn seeded<E: EntityTrait>(
    backend: Backend,
    table: E,
) -> (Fixture, Option<tokio::sync::MutexGuard<'static, ()>>) {
    let turn = match backend {
        Backend::Postgres | Backend::PostgresBuckets => Some(POSTGRES_TURN.lock().await),
        _ => None,
    };
    let name = table.table_name();
    let fx = Fixture::new(backend, name, 1000).await;
    fx.exec(&format!("DROP TABLE IF EXISTS {name}")).await;
    fx.exec(&format!(
        "CREATE TABLE {name} (id BIGINT NOT NULL PRIMARY KEY, user_id VARCHAR(16) NOT NULL, \
         account_id VARCHAR(16) NOT NULL, balance BIGINT NOT NULL)"
    ))
    .await;
    let values: Vec<String> = SEED
        .iter()
        .map(|(id, u, a, b)| format!("({id}, '{u}', '{a}', {b})"))
        .collect();
    fx.exec(&format!(
        "INSERT INTO {name} (id, user_id, account_id, balance) VALUES {}",
        values.join(", ")
    ))
    .await;
    (fx, turn)
}

/// Every row of `table`, by id.
async fn contents<E: EntityTrait>(fx: &Fixture, table: E) -> Vec<(i64, String, String, i64)> {
    let sql = format!(
        "SELECT id, user_id, account_id, balance FROM {} ORDER BY id",
        table.table_name()
    );
    let rows = fx
        .db
        .query_all_raw(Statement::from_string(fx.db.get_database_backend(), sql))
        .await
        .expect("read the table back");
    rows.iter()
        .map(|row| {
            (
                row.try_get("", "id").expect("id"),
                row.try_get("", "user_id").expect("user_id"),
                row.try_get("", "account_id").expect("account_id"),
                row.try_get("", "balance").expect("balance"),
            )
        })
        .collect()
}

fn owned(rows: &[Row]) -> Vec<(i64, String, String, i64)> {
    rows.iter()
        .map(|(id, u, a, b)| (*id, (*u).to_owned(), (*a).to_owned(), *b))
        .collect()
}

/// Run `body` with a write-lock proof on account `u1/a1`, on `txn`.
#[hierlocked(user = "u1", account = "a1", locker = locker)]
async fn as_u1_a1<T>(
    locker: &Locker,
    txn: &DatabaseTransaction,
    body: impl AsyncFnOnce(&Locked<'_, AccountLevel>) -> T,
) -> hierlock::Result<T> {
    Ok(body(&lock).await)
}

#[track_caller]
fn assert_kind<T: std::fmt::Debug>(outcome: Result<T, Error>, kind: ErrorKind, what: &str) {
    match outcome {
        Err(e) => assert_eq!(e.kind(), kind, "{what}: {e}"),
        Ok(v) => panic!("{what}: expected {kind:?}, got Ok({v:?})"),
    }
}

pub async fn protected_upsert_with_a_covering_proof_inserts_updates_or_leaves(backend: Backend) {
    use upserted as t;
    let (fx, _turn) = seeded(backend, t::Table).await;
    let txn = fx.begin().await;
    let row = |id: i64, balance: i64| t::ActiveModel {
        id: Set(id),
        user_id: Set("u1".to_owned()),
        account_id: Set("a1".to_owned()),
        balance: Set(balance),
    };
    as_u1_a1(&fx.locker, &txn, async |lock| {
        let new = t::Entity::insert(row(5, 50))
            .on_conflict_update([t::Column::Balance])
            .exec(lock)
            .await
            .expect("upsert of a new row");
        assert_eq!(new.balance, 50);
        let updated = t::Entity::insert(row(1, 11))
            .on_conflict_update([t::Column::Balance])
            .exec_with_returning(lock)
            .await
            .expect("upsert onto a covered row");
        assert_eq!((updated.id, updated.balance), (1, 11));
        let left = t::Entity::insert(row(2, 99))
            .on_conflict_do_nothing()
            .exec(lock)
            .await
            .expect("upsert doing nothing onto a covered row");
        assert_eq!(
            (left.id, left.balance),
            (2, 20),
            "do nothing leaves the row"
        );
        let inserted = t::Entity::insert(row(6, 60))
            .on_conflict_do_nothing()
            .exec_without_returning(lock)
            .await
            .expect("upsert doing nothing of a new row");
        assert_eq!(inserted, 1);
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(
        contents(&fx, t::Table).await,
        owned(&[
            (1, "u1", "a1", 11),
            (2, "u1", "a1", 20),
            (3, "u2", "a1", 30),
            (4, "u1", "a2", 40),
            (5, "u1", "a1", 50),
            (6, "u1", "a1", 60),
        ])
    );
}

pub async fn protected_upsert_onto_another_users_row_is_not_covered(backend: Backend) {
    use upsert_refused as t;
    let (fx, _turn) = seeded(backend, t::Table).await;
    let txn = fx.begin().await;
    let row = |id: i64, user: &str, balance: i64| t::ActiveModel {
        id: Set(id),
        user_id: Set(user.to_owned()),
        account_id: Set("a1".to_owned()),
        balance: Set(balance),
    };
    as_u1_a1(&fx.locker, &txn, async |lock| {
        // Row 3 is u2's: the new row claims u1/a1, the stored one is u2's.
        let outcome = t::Entity::insert(row(3, "u1", 0))
            .on_conflict_update([t::Column::Balance, t::Column::UserId])
            .exec(lock)
            .await;
        assert_kind(outcome, ErrorKind::NotCovered, "upsert onto u2's row");
        let outcome = t::Entity::insert(row(3, "u1", 0))
            .on_conflict_do_nothing()
            .exec_without_returning(lock)
            .await;
        assert_kind(
            outcome,
            ErrorKind::NotCovered,
            "do-nothing upsert onto u2's row",
        );
        // A new row under u2.
        let outcome = t::Entity::insert(row(7, "u2", 0))
            .on_conflict_update([t::Column::Balance])
            .exec(lock)
            .await;
        assert_kind(outcome, ErrorKind::NotCovered, "upsert of a new row of u2");
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(
        contents(&fx, t::Table).await,
        owned(&SEED),
        "nothing written"
    );
}

pub async fn protected_returning_variants_return_the_written_rows(backend: Backend) {
    use returned as t;
    let (fx, _turn) = seeded(backend, t::Table).await;
    let txn = fx.begin().await;
    let row = |id: i64, balance: i64| t::ActiveModel {
        id: Set(id),
        user_id: Set("u1".to_owned()),
        account_id: Set("a1".to_owned()),
        balance: Set(balance),
    };
    let returning = txn.support_returning();
    as_u1_a1(&fx.locker, &txn, async |lock| {
        let five = t::Entity::insert(row(5, 50))
            .exec_with_returning(lock)
            .await
            .expect("insert returning");
        assert_eq!(
            (five.id, five.user_id.as_str(), five.balance),
            (5, "u1", 50)
        );
        let n = t::Entity::insert(row(6, 60))
            .exec_without_returning(lock)
            .await
            .expect("insert without returning");
        assert_eq!(n, 1);

        let many = t::Entity::insert_many([row(7, 70), row(8, 80)])
            .exec_with_returning(lock)
            .await;
        if returning {
            let mut many = many.expect("insert_many returning");
            many.sort_by_key(|m| m.id);
            let got: Vec<(i64, i64)> = many.iter().map(|m| (m.id, m.balance)).collect();
            assert_eq!(got, [(7, 70), (8, 80)]);
        } else {
            assert_kind(
                many,
                ErrorKind::Misuse,
                "insert_many returning without RETURNING",
            );
            let n = t::Entity::insert_many([row(7, 70), row(8, 80)])
                .exec_without_returning(lock)
                .await
                .expect("insert_many without returning");
            assert_eq!(n, 2);
        }

        let one = t::Entity::update(t::ActiveModel {
            id: Set(1),
            balance: Set(12),
            ..Default::default()
        })
        .exec_with_returning(lock)
        .await
        .expect("update returning");
        assert_eq!((one.id, one.user_id.as_str(), one.balance), (1, "u1", 12));
        let n = t::Entity::update(t::ActiveModel {
            id: Set(2),
            balance: Set(21),
            ..Default::default()
        })
        .exec_without_returning(lock)
        .await
        .expect("update without returning");
        assert_eq!(n, 1);

        let gone = t::Entity::delete_by_id(5)
            .exec_with_returning(lock)
            .await
            .expect("delete returning");
        assert_eq!(gone, Some(five), "the deleted row, as it was");
        let none = t::Entity::delete_by_id(999)
            .exec_with_returning(lock)
            .await
            .expect("delete of no row");
        assert_eq!(none, None);
        let n = t::Entity::delete(row(6, 60))
            .exec_without_returning(lock)
            .await
            .expect("delete without returning");
        assert_eq!(n, 1);

        // The returning variants check as the others do.
        let outcome = t::Entity::delete_by_id(3).exec_with_returning(lock).await;
        assert_kind(outcome, ErrorKind::NotCovered, "delete returning u2's row");
        let outcome = t::Entity::update(t::ActiveModel {
            id: Set(3),
            balance: Set(0),
            ..Default::default()
        })
        .exec_without_returning(lock)
        .await;
        assert_kind(outcome, ErrorKind::NotCovered, "update of u2's row");
        let mut stranger = row(9, 90);
        stranger.user_id = Set("u2".to_owned());
        let outcome = t::Entity::insert_many([row(10, 100), stranger])
            .exec_with_returning(lock)
            .await;
        let expected = if returning {
            ErrorKind::NotCovered
        } else {
            ErrorKind::Misuse
        };
        assert_kind(outcome, expected, "insert_many returning with a row of u2");
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(
        contents(&fx, t::Table).await,
        owned(&[
            (1, "u1", "a1", 12),
            (2, "u1", "a1", 21),
            (3, "u2", "a1", 30),
            (4, "u1", "a2", 40),
            (7, "u1", "a1", 70),
            (8, "u1", "a1", 80),
        ])
    );
}

pub async fn protected_update_many_and_delete_many_within_the_proof(backend: Backend) {
    use scoped as t;
    let (fx, _turn) = seeded(backend, t::Table).await;
    let txn = fx.begin().await;
    as_u1_a1(&fx.locker, &txn, async |lock| {
        let n = t::Entity::update_many()
            .filter(t::Column::UserId.eq("u1"))
            .filter(t::Column::AccountId.eq("a1"))
            .col_expr(t::Column::Balance, Expr::col(t::Column::Balance).add(1))
            .exec(lock)
            .await
            .expect("update_many of covered rows");
        assert_eq!(n, 2);
        // The filter need not name the IDs: the rows it matches are checked.
        let n = t::Entity::update_many()
            .filter(t::Column::Balance.eq(11))
            .set(t::ActiveModel {
                balance: Set(0),
                ..Default::default()
            })
            .exec(lock)
            .await
            .expect("update_many set");
        assert_eq!(n, 1);
        let n = t::Entity::update_many()
            .filter(t::Column::Balance.eq(12345))
            .col_expr(t::Column::Balance, Expr::value(1))
            .exec(lock)
            .await
            .expect("update_many of no row");
        assert_eq!(n, 0);
        let n = t::Entity::delete_many()
            .filter(t::Column::Balance.eq(0))
            .exec(lock)
            .await
            .expect("delete_many of a covered row");
        assert_eq!(n, 1);
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(
        contents(&fx, t::Table).await,
        owned(&[
            (2, "u1", "a1", 21),
            (3, "u2", "a1", 30),
            (4, "u1", "a2", 40),
        ])
    );
}

pub async fn protected_update_many_and_delete_many_beyond_the_proof_are_refused(backend: Backend) {
    use scope_refused as t;
    let (fx, _turn) = seeded(backend, t::Table).await;
    let txn = fx.begin().await;
    as_u1_a1(&fx.locker, &txn, async |lock| {
        // `account_id = 'a1'` reaches u2's row 3.
        let outcome = t::Entity::update_many()
            .filter(t::Column::AccountId.eq("a1"))
            .col_expr(t::Column::Balance, Expr::value(0))
            .exec(lock)
            .await;
        match &outcome {
            Err(Error::NotCovered { row, .. }) => assert!(row.contains("u2"), "{row}"),
            other => panic!("update_many reaching u2: {other:?}"),
        }
        let outcome = t::Entity::delete_many()
            .filter(t::Column::Balance.gte(0))
            .exec(lock)
            .await;
        assert_kind(
            outcome,
            ErrorKind::NotCovered,
            "delete_many reaching u2 and a2",
        );
        // Moving covered rows to u2.
        let outcome = t::Entity::update_many()
            .filter(t::Column::UserId.eq("u1"))
            .filter(t::Column::AccountId.eq("a1"))
            .set(t::ActiveModel {
                user_id: Set("u2".to_owned()),
                ..Default::default()
            })
            .exec(lock)
            .await;
        assert_kind(
            outcome,
            ErrorKind::NotCovered,
            "update_many moving rows to u2",
        );
        // An ID column written by an expression cannot be checked.
        let outcome = t::Entity::update_many()
            .filter(t::Column::Id.eq(1))
            .col_expr(t::Column::UserId, Expr::value("u1"))
            .exec(lock)
            .await;
        assert_kind(outcome, ErrorKind::Misuse, "update_many col_expr on an ID");
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(
        contents(&fx, t::Table).await,
        owned(&SEED),
        "nothing written"
    );
}

/// Another transaction inserts row `id` under u2 and holds it uncommitted
/// while the upsert of `id` under u1/a1 runs; it commits once the upsert
/// waits. The upsert must neither write nor return u2's row.
async fn upsert_racing_an_insert(fx: &Fixture, id: i64, do_nothing: bool) {
    use raced as t;
    let backend = fx.db.get_database_backend();
    let other = fx.begin().await;
    let sql = format!(
        "INSERT INTO hlp_raced (id, user_id, account_id, balance) VALUES ({id}, 'u2', 'a1', 90)"
    );
    other
        .execute_raw(Statement::from_string(backend, sql))
        .await
        .expect("the other transaction's insert");
    let txn = fx.begin().await;
    let connection = fx.connection_id(&txn).await;
    let locker = fx.locker.clone();
    let upsert = tokio::spawn(async move {
        let outcome = as_u1_a1(&locker, &txn, async |lock| {
            let insert = t::Entity::insert(t::ActiveModel {
                id: Set(id),
                user_id: Set("u1".to_owned()),
                account_id: Set("a1".to_owned()),
                balance: Set(0),
            });
            if do_nothing {
                insert.on_conflict_do_nothing().exec(lock).await
            } else {
                insert
                    .on_conflict_update([t::Column::Balance])
                    .exec(lock)
                    .await
            }
        })
        .await
        .expect("locks");
        (outcome, txn)
    });
    fx.wait_until_blocked(connection).await;
    other.commit().await.expect("commit the other insert");
    let (outcome, txn) = bounded("the upsert", upsert).await.expect("task");
    assert_kind(
        outcome,
        ErrorKind::NotCovered,
        "upsert onto a row inserted since the check",
    );
    txn.commit().await.expect("commit");
}

pub async fn protected_upsert_never_writes_a_row_inserted_since_the_check(backend: Backend) {
    let (fx, _turn) = seeded(backend, raced::Table).await;
    upsert_racing_an_insert(&fx, 9, false).await;
    upsert_racing_an_insert(&fx, 10, true).await;
    let mut expected = SEED.to_vec();
    expected.extend([(9, "u2", "a1", 90), (10, "u2", "a1", 90)]);
    assert_eq!(
        contents(&fx, raced::Table).await,
        owned(&expected),
        "u2's rows untouched"
    );
}

pub async fn protected_update_many_and_delete_many_past_one_statement(backend: Backend) {
    use bulk as t;
    // 1,201 rows of u1/a1 beyond the seed: three statements of at most 500 keys.
    const ROWS: i64 = 1201;
    let (fx, _turn) = seeded(backend, t::Table).await;
    let ids: Vec<i64> = (100..100 + ROWS).collect();
    for chunk in ids.chunks(200) {
        let values: Vec<String> = chunk
            .iter()
            .map(|id| format!("({id}, 'u1', 'a1', 1)"))
            .collect();
        fx.exec(&format!(
            "INSERT INTO hlp_bulk (id, user_id, account_id, balance) VALUES {}",
            values.join(", ")
        ))
        .await;
    }
    let txn = fx.begin().await;
    as_u1_a1(&fx.locker, &txn, async |lock| {
        let n = t::Entity::update_many()
            .filter(t::Column::Id.gte(100))
            .col_expr(t::Column::Balance, Expr::col(t::Column::Balance).add(1))
            .exec(lock)
            .await
            .expect("update_many of many covered rows");
        assert_eq!(n, ROWS as u64);
        let n = t::Entity::delete_many()
            .filter(t::Column::Balance.eq(2))
            .exec(lock)
            .await
            .expect("delete_many of many covered rows");
        assert_eq!(n, ROWS as u64);
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(contents(&fx, t::Table).await, owned(&SEED));
}
