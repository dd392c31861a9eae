//! Lock statement shapes on the MySQL family: what a Resource write's lock
//! costs, statement by statement, against the floor.
//!
//! The same transaction as `uncontended` (`BEGIN; <lock>; UPDATE row;
//! COMMIT`, 1 and 16 clients on rows of their own), with the lock taken:
//!
//! - by `SELECT … FOR UPDATE` of the business row (the floor, baseline);
//! - by `Locker::acquire` (hierlock);
//! - by hierlock's own statement sent by hand with the same keys: the
//!   difference to `acquire` is the library's client-side cost;
//! - by one bucket row `FOR UPDATE`, the resource's only: not a correct lock
//!   (its ancestors are not taken), the lower bound of any bucket-table lock;
//! - by other shapes that take the same three rows in the same modes in one
//!   statement: the ancestors' two keys in one query block (`OR`), the
//!   ancestors' keys as a `JSON_TABLE` key list (the large-plan form) and,
//!   on MySQL, one query block of three lookups with `FOR SHARE OF` and
//!   `FOR UPDATE OF`.
//!
//! Statements sent by hand wait for a conflict (two clients' keys may share
//! a bucket), where hierlock's first statement is `NOWAIT`, then waits: the
//! two cost the same when nothing waits.
//!
//! The other shapes are measurements only: the `OR` block may lock every row
//! of a small table (see `hierlock`'s `backend::mysql`), and the join's row
//! order is the optimizer's. With the CPU columns, the section shows where a
//! gap to the floor comes from: the server's work for three row locks
//! instead of one, or the client.

use std::sync::Arc;

use hierlock::{Dialect, Locker, Target};
use hierlock_migration::Provision;
use sea_orm::{ConnectionTrait, TransactionTrait, Value};

use super::uncontended::{self, Variant, at_1_and_16_clients, clients_throughput};
use super::{Bench, BoxError, ROWS_TABLE};

/// How one measured transaction takes its lock before its `UPDATE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Floor,
    Acquire,
    ByHand,
    OneRow,
    AncestorsOr,
    AncestorsKeyList,
    JoinOf,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Floor => "floor: SELECT … FOR UPDATE of the row",
            Shape::Acquire => "hierlock: acquire(Resource write)",
            Shape::ByHand => "hierlock's UNION of 3 lookups, by hand",
            Shape::OneRow => "1 bucket row FOR UPDATE (a lower bound)",
            Shape::AncestorsOr => "2 blocks: ancestors by OR, target",
            Shape::AncestorsKeyList => "2 blocks: ancestors by JSON_TABLE, target",
            Shape::JoinOf => "1 block: 3 lookups, FOR SHARE OF / UPDATE OF",
        }
    }

    /// The shapes a server accepts: `OF` is MySQL's only.
    fn all(dialect: Dialect) -> Vec<Shape> {
        let mut shapes = vec![
            Shape::Floor,
            Shape::Acquire,
            Shape::ByHand,
            Shape::OneRow,
            Shape::AncestorsOr,
            Shape::AncestorsKeyList,
        ];
        if dialect == Dialect::MySql {
            shapes.push(Shape::JoinOf);
        }
        shapes
    }

    /// The lock statement, for the three keys (user, account, resource) as
    /// `(level, bucket)` parameters in that order; `None` for the floor and
    /// `acquire`, which build their own.
    fn sql(self, dialect: Dialect, table: &str) -> Option<String> {
        let shared = if dialect == Dialect::MySql {
            "FOR SHARE"
        } else {
            "LOCK IN SHARE MODE"
        };
        let cols = "CAST(level AS SIGNED) AS locked_level, CAST(bucket AS SIGNED) AS locked_bucket";
        let lookup = |clause: &str| {
            format!("SELECT {cols} FROM {table} WHERE level = ? AND bucket = ? {clause}")
        };
        let target = lookup("FOR UPDATE");
        Some(match self {
            Shape::Floor | Shape::Acquire => return None,
            Shape::ByHand => format!(
                "({}) UNION ALL ({}) UNION ALL ({target})",
                lookup(shared),
                lookup(shared)
            ),
            Shape::OneRow => target,
            Shape::AncestorsOr => format!(
                "(SELECT {cols} FROM {table} FORCE INDEX (PRIMARY) \
                 WHERE (level = ? AND bucket = ?) OR (level = ? AND bucket = ?) {shared}) \
                 UNION ALL ({target})"
            ),
            Shape::AncestorsKeyList => {
                let of = if dialect == Dialect::MySql {
                    " OF b"
                } else {
                    ""
                };
                format!(
                    "(SELECT CAST(b.level AS SIGNED) AS locked_level, \
                     CAST(b.bucket AS SIGNED) AS locked_bucket \
                     FROM JSON_TABLE(JSON_ARRAY(JSON_ARRAY(?, ?), JSON_ARRAY(?, ?)), '$[*]' \
                     COLUMNS (level INT PATH '$[0]', bucket INT PATH '$[1]')) AS k \
                     STRAIGHT_JOIN {table} AS b FORCE INDEX (PRIMARY) \
                     ON b.level = k.level AND b.bucket = k.bucket {shared}{of}) \
                     UNION ALL ({target})"
                )
            }
            Shape::JoinOf => format!(
                "SELECT 1 AS locked FROM {table} AS u STRAIGHT_JOIN {table} AS a \
                 STRAIGHT_JOIN {table} AS r \
                 WHERE u.level = ? AND u.bucket = ? AND a.level = ? AND a.bucket = ? \
                 AND r.level = ? AND r.bucket = ? \
                 FOR SHARE OF u, a FOR UPDATE OF r"
            ),
        })
    }

    /// Rows the statement returns when it locked its three rows.
    fn rows(self) -> usize {
        match self {
            Shape::OneRow | Shape::JoinOf => 1,
            _ => 3,
        }
    }
}

/// Measure and print every shape the server accepts, at 1 and 16 clients.
///
/// # Errors
/// Setting up or a transaction failed.
pub async fn run(bench: &Bench) -> Result<(), BoxError> {
    println!(
        "\n## Lock statement shapes: a Resource write's lock, statement by statement (txn/s, higher is better)"
    );
    if !bench.dialect.is_mysql_family() {
        println!(
            "  MySQL and MariaDB only: PostgreSQL takes each run of equal modes in one statement"
        );
        return Ok(());
    }
    bench.ensure_rows().await?;
    let config = bench.lock_config()?;
    Provision::new(config.clone()).run(&bench.db).await?;
    let locker = Locker::connect(&bench.db, config.clone()).await?;
    let shapes = Shape::all(bench.dialect);
    let table = config.table().as_str().to_owned();
    at_1_and_16_clients(
        bench,
        shapes.iter().map(|s| s.name()),
        async |i, clients, txns| {
            let shape = shapes[i];
            // Shared by every transaction: one reference count each, no copies.
            let shared = Arc::new((
                bench.clone(),
                locker.clone(),
                shape.sql(bench.dialect, &table),
            ));
            clients_throughput(clients, txns, move |row| {
                let shared = Arc::clone(&shared);
                async move {
                    let (bench, locker, sql) = &*shared;
                    transaction(bench, locker, shape, sql.as_deref(), row).await
                }
            })
            .await
        },
    )
    .await?;
    Ok(())
}

/// One transaction: lock `row` the shape's way, update it, commit. The
/// floor and `acquire` are `uncontended`'s own transactions.
async fn transaction(
    bench: &Bench,
    locker: &Locker,
    shape: Shape,
    sql: Option<&str>,
    row: i64,
) -> Result<(), BoxError> {
    let sql = match (shape, sql) {
        (Shape::Floor, _) => {
            return uncontended::transaction(bench, locker, &bench.db, Variant::Floor, row).await;
        }
        (Shape::Acquire, _) => {
            return uncontended::transaction(bench, locker, &bench.db, Variant::Hierlock, row)
                .await;
        }
        (_, Some(sql)) => sql,
        (_, None) => unreachable!("only the floor and acquire build their own statement"),
    };
    let txn = bench.db.begin().await?;
    // The keys `uncontended`'s Resource write locks: users of 100 rows,
    // accounts of 10.
    let target = Target::resource(row / 100, row / 10, row).write();
    let plan = locker.plan([&target])?;
    let mut keys: Vec<Value> = plan
        .locks()
        .iter()
        .flat_map(|l| {
            [
                Value::from(i32::from(l.key.table_level())),
                Value::from(l.key.slot),
            ]
        })
        .collect();
    if shape == Shape::OneRow {
        keys.drain(..4);
    }
    let rows = txn.query_all_raw(bench.stmt(sql, keys)).await?;
    if rows.len() != shape.rows() {
        return Err(format!(
            "{}: {} rows returned, not {}",
            shape.name(),
            rows.len(),
            shape.rows()
        )
        .into());
    }
    let sql = format!("UPDATE {ROWS_TABLE} SET balance = balance + 1 WHERE id = ?");
    txn.execute_raw(bench.stmt(&sql, [Value::from(row)]))
        .await?;
    txn.commit().await?;
    Ok(())
}
