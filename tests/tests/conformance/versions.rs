//! Optimistic version locking: protected entities declared with
//! `version = <field>`, written with a lock proof (`.exec(&lock)`) and
//! without one (`.exec_versioned(&txn)`).
//!
//! Each test has its own versioned resource table, seeded with
//!
//! | id | user | account | balance | version |
//! |----|------|---------|---------|---------|
//! | 1  | u1   | a1      | 10      | 0       |
//! | 2  | u1   | a1      | 20      | 0       |
//! | 3  | u2   | a1      | 30      | 0       |
//!
//! A write refused for its version must leave the row as it was: the tests
//! commit and read the table back.

use hierlock::proof::AccountLevel;
use hierlock::sea_orm::sea_query::Expr;
use hierlock::sea_orm::{
    ActiveValue::Set, ActiveValue::Unchanged, ColumnTrait, ConnectionTrait, DatabaseTransaction,
    EntityTrait, ExprTrait, Statement,
};
use hierlock::{Error, ErrorKind, Locked, Locker, TxnState, hierlocked};
use hierlock_tests::{Backend, Fixture, bounded};

/// A versioned resource table of one test: `$module` with table `$table`.
macro_rules! versioned_table {
    ($module:ident, $table:tt) => {
        versioned_table!($module, $table, i32);
    };
    ($module:ident, $table:tt, $version:ty) => {
        #[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id, version = version)]
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
                pub version: $version,
            }

            #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
            pub enum Relation {}
        }
    };
}

versioned_table!(bumped, "hlv_bumped");
versioned_table!(raced, "hlv_raced");
versioned_table!(deleted, "hlv_deleted");
versioned_table!(bulk, "hlv_bulk");
versioned_table!(wrapped, "hlv_wrapped");
versioned_table!(unsigned32, "hlv_unsigned32", u32);
versioned_table!(unsigned16, "hlv_unsigned16", u16);

/// A row as the tests compare it: (id, balance, version).
type Row = (i64, i64, i32);

/// PostgreSQL and PostgreSQL-with-buckets share a server and so the tables:
/// these tests take turns.
static POSTGRES_TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A fixture whose `table` is created afresh and seeded; keep the guard for
/// the whole test.
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
         account_id VARCHAR(16) NOT NULL, balance BIGINT NOT NULL, version INTEGER NOT NULL)"
    ))
    .await;
    fx.exec(&format!(
        "INSERT INTO {name} (id, user_id, account_id, balance, version) VALUES \
         (1, 'u1', 'a1', 10, 0), (2, 'u1', 'a1', 20, 0), (3, 'u2', 'a1', 30, 0)"
    ))
    .await;
    (fx, turn)
}

/// Every row of `table`, by id: (id, balance, version).
async fn contents<E: EntityTrait>(fx: &Fixture, table: E) -> Vec<Row> {
    let sql = format!(
        "SELECT id, balance, version FROM {} ORDER BY id",
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
                row.try_get("", "balance").expect("balance"),
                row.try_get("", "version").expect("version"),
            )
        })
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

/// `outcome` is a version conflict from `expected` to `current`, which
/// wrote nothing and says "reload and retry".
#[track_caller]
fn assert_conflict<T: std::fmt::Debug>(
    outcome: Result<T, Error>,
    expected: i64,
    current: i64,
    what: &str,
) {
    let e = match outcome {
        Err(e) => e,
        Ok(v) => panic!("{what}: expected a version conflict, got Ok({v:?})"),
    };
    assert_eq!(e.kind(), ErrorKind::Conflict, "{what}: {e}");
    assert!(e.is_retryable(), "{what}: a conflict is retryable");
    assert_eq!(e.txn_state(), TxnState::Unchanged, "{what}");
    match e {
        Error::Conflict {
            expected: e,
            current: c,
            ..
        } => assert_eq!((e, c), (expected, current), "{what}: (expected, current)"),
        other => panic!("{what}: {other:?}"),
    }
}

#[track_caller]
fn assert_kind<T: std::fmt::Debug>(outcome: Result<T, Error>, kind: ErrorKind, what: &str) {
    match outcome {
        Err(e) => assert_eq!(e.kind(), kind, "{what}: {e}"),
        Ok(v) => panic!("{what}: expected {kind:?}, got Ok({v:?})"),
    }
}

async fn read<E: EntityTrait>(fx: &Fixture, id: i64) -> E::Model
where
    E::PrimaryKey: hierlock::sea_orm::PrimaryKeyTrait<ValueType = i64>,
{
    E::find_by_id(id)
        .one(&fx.db)
        .await
        .expect("read")
        .expect("the row is there")
}

pub async fn versioned_updates_increment_and_stale_ones_conflict(backend: Backend) {
    use bumped as t;
    let (fx, _turn) = seeded(backend, t::Table).await;
    let v0 = read::<t::Table>(&fx, 1).await;

    // With a proof: the update is checked against the version read.
    let txn = fx.begin().await;
    as_u1_a1(&fx.locker, &txn, async |lock| {
        let mut am = v0.clone().into_active_model();
        am.balance = Set(11);
        let v1 = t::Entity::update(am)
            .exec(lock)
            .await
            .expect("update at v0");
        assert_eq!(
            (v1.balance, v1.version),
            (11, 1),
            "the returned row is at v1"
        );
        let mut stale = v0.clone().into_active_model();
        stale.balance = Set(99);
        assert_conflict(
            t::Entity::update(stale).exec(lock).await,
            0,
            1,
            "update with a proof from v0",
        );
        let n = {
            let mut stale = v0.clone().into_active_model();
            stale.balance = Set(98);
            t::Entity::update(stale).exec_without_returning(lock).await
        };
        assert_conflict(n, 0, 1, "update without returning, with a proof, from v0");
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(contents(&fx, t::Table).await[0], (1, 11, 1));

    // Without a proof: the version check alone.
    let v1 = read::<t::Table>(&fx, 1).await;
    let txn = fx.begin().await;
    let mut am = v1.clone().into_active_model();
    am.balance = Set(12);
    let v2 = t::Entity::update(am)
        .exec_versioned(&txn)
        .await
        .expect("versioned update at v1");
    assert_eq!((v2.balance, v2.version), (12, 2));
    let mut stale = v1.clone().into_active_model();
    stale.balance = Set(97);
    assert_conflict(
        t::Entity::update(stale).exec_versioned(&txn).await,
        1,
        2,
        "versioned update from v1",
    );
    let mut stale = v0.clone().into_active_model();
    stale.balance = Set(96);
    assert_conflict(
        t::Entity::update(stale).exec_versioned(&txn).await,
        0,
        2,
        "versioned update from v0",
    );
    // No version to check, a move to another node, a missing row.
    let unversioned = t::ActiveModel {
        id: Set(1),
        balance: Set(95),
        ..Default::default()
    };
    assert_kind(
        t::Entity::update(unversioned).exec_versioned(&txn).await,
        ErrorKind::Misuse,
        "versioned update without a version",
    );
    let mut moved = v2.clone().into_active_model();
    moved.account_id = Set("a2".to_owned());
    assert_kind(
        t::Entity::update(moved).exec_versioned(&txn).await,
        ErrorKind::Misuse,
        "versioned update moving the row",
    );
    let missing = t::ActiveModel {
        id: Unchanged(404),
        balance: Set(94),
        version: Unchanged(2),
        ..Default::default()
    };
    assert_kind(
        t::Entity::update(missing).exec_versioned(&txn).await,
        ErrorKind::Database,
        "versioned update of a missing row",
    );
    txn.commit().await.expect("commit");

    // An insert starts at the initial version.
    let txn = fx.begin().await;
    as_u1_a1(&fx.locker, &txn, async |lock| {
        let new = t::Entity::insert(t::ActiveModel {
            id: Set(7),
            user_id: Set("u1".to_owned()),
            account_id: Set("a1".to_owned()),
            balance: Set(70),
            ..Default::default()
        })
        .exec(lock)
        .await
        .expect("insert");
        assert_eq!(i64::from(new.version), hierlock::INITIAL_VERSION);
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(
        contents(&fx, t::Table).await,
        vec![(1, 12, 2), (2, 20, 0), (3, 30, 0), (7, 70, 0)],
        "only the writes based on the current version were written"
    );
}

/// One edit of row 1 from `base`, in its own transaction, committed if it
/// succeeds: with a proof (`.exec(&lock)`) or without (`exec_versioned`).
async fn edit(
    fx: &Fixture,
    base: raced::Model,
    balance: i64,
    with_proof: bool,
) -> Result<(), Error> {
    use raced as t;
    let txn = fx.begin().await;
    let mut am = base.into_active_model();
    am.balance = Set(balance);
    let outcome = if with_proof {
        as_u1_a1(&fx.locker, &txn, async |lock| {
            t::Entity::update(am).exec(lock).await
        })
        .await
        .and_then(|written| written)
    } else {
        t::Entity::update(am).exec_versioned(&txn).await
    };
    match outcome {
        Ok(_) => txn.commit().await.expect("commit"),
        Err(_) => txn.rollback().await.expect("rollback"),
    }
    outcome.map(|_| ())
}

pub async fn two_edits_from_one_version_have_one_winner(backend: Backend) {
    use raced as t;
    let (fx, _turn) = seeded(backend, t::Table).await;
    for (round, with_proof) in [(0, false), (1, true)] {
        // Both edits were based on the row as it was, read before either
        // wrote (as two users' forms are).
        let base = read::<t::Table>(&fx, 1).await;
        assert_eq!(i64::from(base.version), round);
        let (a, b) = bounded(
            "two racing edits",
            futures::future::join(
                edit(&fx, base.clone(), 100, with_proof),
                edit(&fx, base.clone(), 200, with_proof),
            ),
        )
        .await;
        let what = if with_proof {
            "with proofs"
        } else {
            "without proofs"
        };
        let (winner, loser) = match (&a, &b) {
            (Ok(()), Err(_)) => (100, b),
            (Err(_), Ok(())) => (200, a),
            _ => panic!("{what}: exactly one edit must win: {a:?} / {b:?}"),
        };
        assert_conflict(loser, round, round + 1, what);
        assert_eq!(
            contents(&fx, t::Table).await[0],
            (1, winner, round as i32 + 1),
            "{what}: the winner's edit, once"
        );
    }
}

pub async fn a_stale_delete_conflicts_and_keeps_the_row(backend: Backend) {
    use deleted as t;
    let (fx, _turn) = seeded(backend, t::Table).await;
    let v0 = read::<t::Table>(&fx, 1).await;
    let txn = fx.begin().await;
    let mut am = v0.clone().into_active_model();
    am.balance = Set(11);
    let v1 = t::Entity::update(am)
        .exec_versioned(&txn)
        .await
        .expect("versioned update");
    txn.commit().await.expect("commit");

    let txn = fx.begin().await;
    assert_conflict(
        t::Entity::delete(v0.clone()).exec_versioned(&txn).await,
        0,
        1,
        "versioned delete from v0",
    );
    assert_kind(
        t::Entity::delete_by_id(1).exec_versioned(&txn).await,
        ErrorKind::Misuse,
        "versioned delete by id (no version)",
    );
    as_u1_a1(&fx.locker, &txn, async |lock| {
        assert_conflict(
            t::Entity::delete(v0.clone()).exec(lock).await,
            0,
            1,
            "delete with a proof from v0",
        );
        assert_conflict(
            t::Entity::delete(v0.clone())
                .exec_with_returning(lock)
                .await,
            0,
            1,
            "delete returning, with a proof, from v0",
        );
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(
        contents(&fx, t::Table).await[0],
        (1, 11, 1),
        "the row is still there"
    );

    let txn = fx.begin().await;
    let n = t::Entity::delete(v1.clone())
        .exec_versioned(&txn)
        .await
        .expect("versioned delete at v1");
    assert_eq!(n, 1);
    let n = t::Entity::delete(v1.clone())
        .exec_versioned(&txn)
        .await
        .expect("versioned delete of a missing row");
    assert_eq!(n, 0, "a missing row is not a conflict");
    let v0_of_2 = read::<t::Table>(&fx, 2).await;
    as_u1_a1(&fx.locker, &txn, async |lock| {
        let n = t::Entity::delete(v0_of_2).exec(lock).await;
        assert_eq!(n.expect("delete with a proof at v0"), 1);
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(contents(&fx, t::Table).await, vec![(3, 30, 0)]);
}

pub async fn a_proof_and_a_version_at_once_and_in_bulk(backend: Backend) {
    use bulk as t;
    let (fx, _turn) = seeded(backend, t::Table).await;
    let row3 = read::<t::Table>(&fx, 3).await;
    let txn = fx.begin().await;
    as_u1_a1(&fx.locker, &txn, async |lock| {
        // The version does not stand in for the proof: u2's row is not
        // covered, at the right version too.
        let mut am = row3.clone().into_active_model();
        am.balance = Set(31);
        assert_kind(
            t::Entity::update(am).exec(lock).await,
            ErrorKind::NotCovered,
            "update of an uncovered row at its version",
        );
        // update_many: every row it updates moves to its next version.
        let n = t::Entity::update_many()
            .filter(t::Column::UserId.eq("u1"))
            .col_expr(t::Column::Balance, Expr::col(t::Column::Balance).add(1))
            .exec(lock)
            .await
            .expect("update_many");
        assert_eq!(n, 2);
        assert_kind(
            t::Entity::update_many()
                .col_expr(t::Column::Version, Expr::value(0))
                .exec(lock)
                .await,
            ErrorKind::Misuse,
            "update_many writing the version",
        );
        // An upsert: inserted at the initial version, updated to the next.
        let row = |balance: i64| t::ActiveModel {
            id: Set(2),
            user_id: Set("u1".to_owned()),
            account_id: Set("a1".to_owned()),
            balance: Set(balance),
            ..Default::default()
        };
        let upserted = t::Entity::insert(row(50))
            .on_conflict_update([t::Column::Balance])
            .exec(lock)
            .await
            .expect("upsert onto row 2");
        assert_eq!((upserted.balance, upserted.version), (50, 2));
        assert_kind(
            t::Entity::insert(row(51))
                .on_conflict_update([t::Column::Balance, t::Column::Version])
                .exec(lock)
                .await,
            ErrorKind::Misuse,
            "upsert writing the version",
        );
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(
        contents(&fx, t::Table).await,
        vec![(1, 11, 1), (2, 50, 2), (3, 30, 0)]
    );
}

/// A version at its type's largest value wraps to the smallest on the next
/// write (as `wrapping_add(1)`), instead of failing out of range; a write
/// based on the largest is stale afterwards.
pub async fn a_version_at_its_largest_wraps_to_its_smallest(backend: Backend) {
    use wrapped as t;
    let (fx, _turn) = seeded(backend, t::Table).await;
    fx.exec(&format!(
        "UPDATE hlv_wrapped SET version = {} WHERE id IN (1, 2)",
        i32::MAX
    ))
    .await;
    let at_max = read::<t::Table>(&fx, 1).await;
    assert_eq!(at_max.version, i32::MAX);

    let txn = fx.begin().await;
    let mut am = at_max.clone().into_active_model();
    am.balance = Set(11);
    let wrapped = t::Entity::update(am)
        .exec_versioned(&txn)
        .await
        .expect("a versioned update at the largest version");
    assert_eq!(wrapped.version, i32::MIN, "wrapped to the smallest");
    let mut stale = at_max.clone().into_active_model();
    stale.balance = Set(99);
    assert_conflict(
        t::Entity::update(stale).exec_versioned(&txn).await,
        i64::from(i32::MAX),
        i64::from(i32::MIN),
        "versioned update from the largest version, after the wrap",
    );
    txn.commit().await.expect("commit");

    // With a proof, and in bulk: the same wrap.
    let txn = fx.begin().await;
    as_u1_a1(&fx.locker, &txn, async |lock| {
        t::Entity::update_many()
            .col_expr(t::Column::Balance, Expr::col(t::Column::Balance).add(1))
            .filter(t::Column::Id.eq(2))
            .exec(lock)
            .await
            .expect("update_many at the largest version");
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(
        contents(&fx, t::Table).await[..2],
        [(1, 11, i32::MIN), (2, 21, i32::MIN)]
    );
}

/// PostgreSQL has no unsigned integers: SeaORM keeps a `u32` in an
/// `INTEGER` column (read back as an `i32`), so a `u32` version wraps at
/// `i32::MAX` there; a `u16`, which SeaORM cannot read on PostgreSQL, is
/// refused before any SQL.
pub async fn unsigned_versions_on_postgres(backend: Backend) {
    let (fx, _turn) = seeded(backend, unsigned32::Table).await;
    fx.exec(&format!(
        "UPDATE hlv_unsigned32 SET version = {} WHERE id = 1",
        i32::MAX
    ))
    .await;
    let at_max = unsigned32::Entity::find_by_id(1)
        .one(&fx.db)
        .await
        .expect("read")
        .expect("row 1");
    assert_eq!(at_max.version, i32::MAX as u32);
    let txn = fx.begin().await;
    let mut am = at_max.into_active_model();
    am.balance = Set(11);
    let wrapped = unsigned32::Entity::update(am)
        .exec_versioned(&txn)
        .await
        .expect("a u32 version at i32::MAX wraps on PostgreSQL");
    assert_eq!(wrapped.version, 0);
    txn.commit().await.expect("commit");

    fx.exec("DROP TABLE IF EXISTS hlv_unsigned16").await;
    fx.exec(
        "CREATE TABLE hlv_unsigned16 (id BIGINT NOT NULL PRIMARY KEY, user_id VARCHAR(16) NOT NULL, \
         account_id VARCHAR(16) NOT NULL, balance BIGINT NOT NULL, version INTEGER NOT NULL)",
    )
    .await;
    fx.exec("INSERT INTO hlv_unsigned16 VALUES (1, 'u1', 'a1', 10, 0)")
        .await;
    let txn = fx.begin().await;
    let am = unsigned16::ActiveModel {
        id: Unchanged(1),
        user_id: Unchanged("u1".to_owned()),
        account_id: Unchanged("a1".to_owned()),
        balance: Set(11),
        version: Unchanged(0),
    };
    let err = unsigned16::Entity::update(am)
        .exec_versioned(&txn)
        .await
        .expect_err("a u16 version on PostgreSQL");
    assert_eq!(err.kind(), ErrorKind::Misuse, "{err}");
    assert!(err.to_string().contains("i16 or i32"), "{err}");
    txn.commit().await.expect("commit");
    assert_eq!(
        contents(&fx, unsigned16::Table).await,
        [(1, 10, 0)],
        "nothing written"
    );
}
