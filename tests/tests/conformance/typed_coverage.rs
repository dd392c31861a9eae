//! The proof's check inside the write's statement is exactly as strict as
//! the check in memory it replaced: IDs typed otherwise in the table than in
//! the proof (integers, UUIDs), text compared byte for byte whatever the
//! column's collation, a model read before the row moved, and a proof of
//! more nodes than a statement checks.
//!
//! Every refused write must write nothing: each test commits and reads the
//! table back.

use hierlock::proof::ResourceLevel;
use hierlock::sea_orm::sea_query::Expr;
use hierlock::sea_orm::{
    ActiveValue::Set, ActiveValue::Unchanged, ColumnTrait, ConnectionTrait, DatabaseTransaction,
    ExprTrait, Statement,
};
use hierlock::{Error, ErrorKind, Locked, Locker, hierlocked};
use hierlock_tests::{Backend, Fixture};

use crate::support::{as_account, assert_kind};

/// Rows with integer IDs.
#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
pub mod numbered {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlt_numbered")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub account_id: i64,
        pub balance: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

/// Rows whose user is a UUID.
#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
pub mod uuided {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlt_uuided")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: Uuid,
        pub account_id: String,
        pub balance: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

/// Rows with text IDs, in the server's default collation.
#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
pub mod texted {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlt_texted")]
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

/// Rows whose own ID, the primary key, is text.
#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
pub mod keyed {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hlt_keyed")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub user_id: String,
        pub account_id: String,
        pub balance: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

/// Two tests share a table, and PostgreSQL's two backends a server: they
/// take turns.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn turn(backend: Backend) -> tokio::sync::MutexGuard<'static, ()> {
    let _ = backend;
    TURN.lock().await
}

/// A fresh `table` with `columns`, holding `rows` (SQL value tuples).
async fn table(fx: &Fixture, table: &str, columns: &str, rows: &[String]) {
    fx.exec(&format!("DROP TABLE IF EXISTS {table}")).await;
    fx.exec(&format!("CREATE TABLE {table} ({columns})")).await;
    fx.exec(&format!("INSERT INTO {table} VALUES {}", rows.join(", ")))
        .await;
}

/// `(id, balance)` of every row of `table`, by id.
async fn balances(fx: &Fixture, table: &str) -> Vec<(i64, i64)> {
    let sql = format!("SELECT id, balance FROM {table} ORDER BY id");
    let rows = fx
        .db
        .query_all_raw(Statement::from_string(fx.db.get_database_backend(), sql))
        .await
        .expect("read the table back");
    rows.iter()
        .map(|row| {
            (
                row.try_get("", "id").expect("id"),
                row.try_get("", "balance").expect("balance"),
            )
        })
        .collect()
}

/// Run `body` with write-lock proofs on resources `rs` of `u/a`.
#[hierlocked(user = u, account = a, resources = rs, locker = locker)]
async fn as_resources<T>(
    locker: &Locker,
    txn: &DatabaseTransaction,
    u: &str,
    a: &str,
    rs: &[String],
    body: impl AsyncFnOnce(&Locked<'_, ResourceLevel>) -> T,
) -> hierlock::Result<T> {
    Ok(body(&lock).await)
}

#[track_caller]
fn assert_not_covered<T: std::fmt::Debug>(outcome: Result<T, Error>, what: &str) {
    assert_kind(outcome, ErrorKind::NotCovered, what);
}

pub async fn integer_ids_are_covered_by_the_nodes_their_text_names(backend: Backend) {
    use numbered as t;
    let _turn = turn(backend).await;
    let fx = Fixture::new(backend, "hlt_numbered", 1000).await;
    let rows = [
        "(1, 7, 70, 10)",
        "(2, 7, 70, 20)",
        "(3, 8, 70, 30)",
        "(4, 7, 71, 40)",
    ];
    table(
        &fx,
        "hlt_numbered",
        "id BIGINT NOT NULL PRIMARY KEY, user_id BIGINT NOT NULL, account_id BIGINT NOT NULL, \
         balance BIGINT NOT NULL",
        &rows.map(String::from),
    )
    .await;
    let txn = fx.begin().await;
    as_account(&fx.locker, &txn, "7", "70", async |lock| {
        let row = t::Entity::find_by_id(1)
            .one(&txn)
            .await
            .expect("read")
            .expect("row 1");
        let mut row: t::ActiveModel = row.into();
        row.balance = Set(11);
        t::Entity::update(row)
            .exec(lock)
            .await
            .expect("update of a covered row");
        let deleted = t::Entity::delete_by_id(2)
            .exec(lock)
            .await
            .expect("delete of a covered row");
        assert_eq!(deleted, 1);
        assert_not_covered(
            t::Entity::delete_by_id(3).exec(lock).await,
            "delete of user 8's row",
        );
        // A model without its IDs: the statement checks the stored ones.
        let blind = t::ActiveModel {
            id: Unchanged(4),
            balance: Set(0),
            ..Default::default()
        };
        assert_not_covered(
            t::Entity::update(blind).exec_without_returning(lock).await,
            "update of account 71's row by primary key alone",
        );
        assert_not_covered(
            t::Entity::update_many()
                .filter(t::Column::Balance.gt(0_i64))
                .col_expr(t::Column::Balance, Expr::col(t::Column::Balance).add(1))
                .exec(lock)
                .await,
            "update_many reaching user 8",
        );
        let updated = t::Entity::update_many()
            .filter(t::Column::Id.eq(1_i64))
            .col_expr(t::Column::Balance, Expr::col(t::Column::Balance).add(1))
            .exec(lock)
            .await
            .expect("update_many of a covered row");
        assert_eq!(updated, 1);
        assert_not_covered(
            t::Entity::insert(t::ActiveModel {
                id: Set(3),
                user_id: Set(7),
                account_id: Set(70),
                balance: Set(0),
            })
            .on_conflict_update([t::Column::Balance])
            .exec(lock)
            .await,
            "upsert onto user 8's row",
        );
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    // "07" names another node than 7: it covers no row.
    let txn = fx.begin().await;
    as_account(&fx.locker, &txn, "07", "70", async |lock| {
        assert_not_covered(
            t::Entity::delete_by_id(1).exec(lock).await,
            "delete under user \"07\"",
        );
        assert_not_covered(
            t::Entity::delete_many()
                .filter(t::Column::Id.eq(1_i64))
                .exec(lock)
                .await,
            "delete_many under user \"07\"",
        );
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(
        balances(&fx, "hlt_numbered").await,
        [(1, 12), (3, 30), (4, 40)]
    );
}

pub async fn uuid_ids_are_covered_by_their_hyphenated_text(backend: Backend) {
    use uuided as t;
    let _turn = turn(backend).await;
    let fx = Fixture::new(backend, "hlt_uuided", 1000).await;
    let mine =
        hierlock::sea_orm::prelude::Uuid::from_u128(0x67e5_5044_10b1_426f_9247_bb68_0e5f_e0c8);
    let theirs =
        hierlock::sea_orm::prelude::Uuid::from_u128(0x1111_2222_3333_4444_5555_6666_7777_8888);
    let uuid_column = match backend {
        Backend::MariaDb | Backend::MySql => "BINARY(16)",
        Backend::Postgres | Backend::PostgresBuckets => "UUID",
        Backend::Sqlite | Backend::SqliteWithoutHandler => "BLOB",
    };
    fx.exec("DROP TABLE IF EXISTS hlt_uuided").await;
    fx.exec(&format!(
        "CREATE TABLE hlt_uuided (id BIGINT NOT NULL PRIMARY KEY, user_id {uuid_column} NOT NULL, \
         account_id VARCHAR(16) NOT NULL, balance BIGINT NOT NULL)"
    ))
    .await;
    // Inserted through the entity, so each server stores the UUID its way.
    let seed = fx.begin().await;
    for (id, user) in [(1, mine), (2, mine), (3, theirs)] {
        as_account(&fx.locker, &seed, &user.to_string(), "a1", async |lock| {
            t::Entity::insert(t::ActiveModel {
                id: Set(id),
                user_id: Set(user),
                account_id: Set("a1".to_owned()),
                balance: Set(id * 10),
            })
            .exec_without_returning(lock)
            .await
            .expect("seed");
        })
        .await
        .expect("locks");
    }
    seed.commit().await.expect("commit the seed");
    let txn = fx.begin().await;
    let text = mine.to_string();
    as_account(&fx.locker, &txn, &text, "a1", async |lock| {
        let deleted = t::Entity::delete_by_id(1)
            .exec(lock)
            .await
            .expect("delete of my row");
        assert_eq!(deleted, 1);
        assert_not_covered(
            t::Entity::delete_by_id(3).exec(lock).await,
            "delete of another user's row",
        );
        let updated = t::Entity::update_many()
            .filter(t::Column::Id.eq(2_i64))
            .col_expr(t::Column::Balance, Expr::value(21_i64))
            .exec(lock)
            .await
            .expect("update_many of my row");
        assert_eq!(updated, 1);
        assert_not_covered(
            t::Entity::update_many()
                .filter(t::Column::Id.gte(2_i64))
                .col_expr(t::Column::Balance, Expr::value(0_i64))
                .exec(lock)
                .await,
            "update_many reaching another user",
        );
    })
    .await
    .expect("locks");
    // The same UUID in capitals names another node (IDs are hashed as
    // text): it covers none of the rows.
    as_account(&fx.locker, &txn, &text.to_uppercase(), "a1", async |lock| {
        assert_not_covered(
            t::Entity::delete_by_id(2).exec(lock).await,
            "delete under the UUID in capitals",
        );
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(balances(&fx, "hlt_uuided").await, [(2, 21), (3, 30)]);
}

pub async fn text_ids_are_compared_byte_for_byte(backend: Backend) {
    use texted as t;
    let _turn = turn(backend).await;
    let fx = Fixture::new(backend, "hlt_texted", 1000).await;
    // Rows 2 and 3 name other users than u1, which MySQL's default
    // collation would call equal to it ('U1', and 'u1 ' with its pad).
    let rows = [
        "(1, 'u1', 'a1', 10)",
        "(2, 'U1', 'a1', 20)",
        "(3, 'u1 ', 'a1', 30)",
    ];
    table(
        &fx,
        "hlt_texted",
        "id BIGINT NOT NULL PRIMARY KEY, user_id VARCHAR(16) NOT NULL, \
         account_id VARCHAR(16) NOT NULL, balance BIGINT NOT NULL",
        &rows.map(String::from),
    )
    .await;
    let txn = fx.begin().await;
    as_account(&fx.locker, &txn, "u1", "a1", async |lock| {
        for id in [2, 3] {
            assert_not_covered(
                t::Entity::delete_by_id(id).exec(lock).await,
                &format!("delete of row {id}"),
            );
            let blind = t::ActiveModel {
                id: Unchanged(id),
                balance: Set(0),
                ..Default::default()
            };
            assert_not_covered(
                t::Entity::update(blind).exec(lock).await,
                &format!("update of row {id} by primary key alone"),
            );
        }
        assert_not_covered(
            t::Entity::update_many()
                .col_expr(t::Column::Balance, Expr::value(0_i64))
                .exec(lock)
                .await,
            "update_many of every row",
        );
        let updated = t::Entity::update_many()
            .filter(t::Column::Id.eq(1_i64))
            .col_expr(t::Column::Balance, Expr::value(11_i64))
            .exec(lock)
            .await
            .expect("update_many of u1's row");
        assert_eq!(updated, 1);
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(
        balances(&fx, "hlt_texted").await,
        [(1, 11), (2, 20), (3, 30)]
    );
}

pub async fn a_stale_model_and_a_proof_of_many_nodes_are_checked(backend: Backend) {
    use texted as t;
    let _turn = turn(backend).await;
    let fx = Fixture::new(backend, "hlt_texted", 1000).await;
    let rows: Vec<String> = (1..=45)
        .map(|id| format!("({id}, 'u1', 'a1', {})", id * 10))
        .collect();
    table(
        &fx,
        "hlt_texted",
        "id BIGINT NOT NULL PRIMARY KEY, user_id VARCHAR(16) NOT NULL, \
         account_id VARCHAR(16) NOT NULL, balance BIGINT NOT NULL",
        &rows,
    )
    .await;
    // A model read while row 1 was in a1; then it moved to a2.
    let stale: t::Model = t::Entity::find_by_id(1)
        .one(&fx.db)
        .await
        .expect("read")
        .expect("row 1");
    fx.exec("UPDATE hlt_texted SET account_id = 'a2' WHERE id = 1")
        .await;
    let txn = fx.begin().await;
    as_account(&fx.locker, &txn, "u1", "a1", async |lock| {
        let mut row: t::ActiveModel = stale.clone().into();
        row.balance = Set(0);
        assert_not_covered(
            t::Entity::update(row).exec(lock).await,
            "update of a model read before its row moved out of the proof",
        );
        assert_not_covered(
            t::Entity::delete(stale.clone()).exec(lock).await,
            "delete of a model read before its row moved out of the proof",
        );
    })
    .await
    .expect("locks");
    // 40 resources: more than one statement checks against.
    let resources: Vec<String> = (2..=41).map(|id| id.to_string()).collect();
    as_resources(&fx.locker, &txn, "u1", "a1", &resources, async |lock| {
        let deleted = t::Entity::delete_by_id(41)
            .exec(lock)
            .await
            .expect("delete of r41");
        assert_eq!(deleted, 1);
        assert_not_covered(
            t::Entity::delete_by_id(42).exec(lock).await,
            "delete of r42, not among the 40",
        );
        let blind = t::ActiveModel {
            id: Unchanged(2),
            balance: Set(21),
            ..Default::default()
        };
        t::Entity::update(blind)
            .exec(lock)
            .await
            .expect("update of r2");
        let updated = t::Entity::update_many()
            .filter(t::Column::Id.between(3_i64, 40_i64))
            .col_expr(t::Column::Balance, Expr::col(t::Column::Balance).add(1))
            .exec(lock)
            .await
            .expect("update_many of r3..r40");
        assert_eq!(updated, 38);
        assert_not_covered(
            t::Entity::update_many()
                .filter(t::Column::Id.between(40_i64, 43_i64))
                .col_expr(t::Column::Balance, Expr::value(0_i64))
                .exec(lock)
                .await,
            "update_many reaching r42",
        );
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    let mut expected: Vec<(i64, i64)> = vec![(1, 10), (2, 21)];
    expected.extend((3..=40).map(|id| (id, id * 10 + 1)));
    expected.extend([(42, 420), (43, 430), (44, 440), (45, 450)]);
    assert_eq!(balances(&fx, "hlt_texted").await, expected);
}

/// A text primary key: SeaORM's `WHERE id = 'r1'` matches a row `R1` in
/// MySQL's default collation, but a lock on resource `r1` does not cover
/// resource `R1`.
pub async fn text_keys_are_compared_byte_for_byte(backend: Backend) {
    use keyed as t;
    let _turn = turn(backend).await;
    let fx = Fixture::new(backend, "hlt_keyed", 1000).await;
    table(
        &fx,
        "hlt_keyed",
        "id VARCHAR(16) NOT NULL PRIMARY KEY, user_id VARCHAR(16) NOT NULL, \
         account_id VARCHAR(16) NOT NULL, balance BIGINT NOT NULL",
        &["('R1', 'u1', 'a1', 10)".to_owned()],
    )
    .await;
    let txn = fx.begin().await;
    let r1 = ["r1".to_owned()];
    as_resources(&fx.locker, &txn, "u1", "a1", &r1, async |lock| {
        let stale = t::ActiveModel {
            id: Unchanged("r1".to_owned()),
            user_id: Unchanged("u1".to_owned()),
            account_id: Unchanged("a1".to_owned()),
            balance: Set(0),
        };
        // Where `id = 'r1'` finds `R1` (MySQL's collation) the proof does not
        // cover it; elsewhere there is no row `r1`. Either way nothing is
        // written.
        let case_blind = matches!(backend, Backend::MariaDb | Backend::MySql);
        let updated = t::Entity::update(stale).exec(lock).await;
        let deleted = t::Entity::delete_by_id("r1".to_owned()).exec(lock).await;
        if case_blind {
            assert_not_covered(updated, "update of R1 under a lock on r1");
            assert_not_covered(deleted, "delete of R1 under a lock on r1");
        } else {
            let missing = updated.expect_err("no row r1");
            assert_eq!(missing.kind(), ErrorKind::Database, "{missing}");
            assert_eq!(deleted.expect("no row r1 to delete"), 0);
        }
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    let rows = fx
        .db
        .query_all_raw(Statement::from_string(
            fx.db.get_database_backend(),
            "SELECT id, balance FROM hlt_keyed",
        ))
        .await
        .expect("read back");
    let rows: Vec<(String, i64)> = rows
        .iter()
        .map(|row| {
            (
                row.try_get("", "id").expect("id"),
                row.try_get("", "balance").expect("balance"),
            )
        })
        .collect();
    assert_eq!(rows, [("R1".to_owned(), 10)]);
}
