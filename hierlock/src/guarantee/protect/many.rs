//! Protected filtered writes: `update_many` and `delete_many`, scoped to
//! the rows the proof covers.
//!
//! Both **refuse rather than silently narrow**, in two statements whatever
//! the number of rows: the first looks for one row the filter matches that
//! the proof does not cover (`SELECT .. WHERE <filter> AND NOT <covered>
//! LIMIT 1 FOR UPDATE`); if there is one, the write fails with
//! [`Error::NotCovered`] naming it, and nothing is written. Otherwise the
//! write runs on the user's filter *and* the proof's coverage, so a row
//! that entered the filter since the check from a node the proof does not
//! cover (a phantom, on servers without gap locks) is left alone.
//!
//! Where the coverage does not fit in a statement (an ID type without
//! [`FromLockId`](crate::FromLockId), or a proof of more than 1,000 write
//! locks), the rows are read first and checked one by one, and the write
//! runs on their primary keys, 500 per statement.

use sea_orm::sea_query::{Expr, IntoCondition, Order, SimpleExpr};
use sea_orm::{
    ActiveModelTrait, ActiveValue, ColumnTrait, Condition, ConnectionTrait, EntityTrait,
    FromQueryResult, IdenStatic, Iterable, ModelTrait, PrimaryKeyToColumn, QueryFilter, QueryOrder,
    QuerySelect, QueryTrait, UpdateMany, Value,
};

use super::coverage::{self, Coverage};
use super::version::{increment, version_column, written_by_hierlock};
use super::{
    Proof, Protect, WriteFuture, WriteProof, check_moved, check_stored, failed, id_columns, table,
};
use crate::error::{Error, Result};

/// Primary keys per `UPDATE` / `DELETE` statement: far below every
/// server's limit on bound parameters.
const KEYS_PER_STATEMENT: usize = 500;

/// A filtered update of a protected entity, waiting for its proof:
/// `resource::Entity::update_many().filter(..).col_expr(..).exec(&lock)`.
///
/// It **refuses rather than silently narrows**: every row the filter
/// matches (read `FOR UPDATE`) must be covered by the proof, where it is and
/// where the update moves it; one row that is not, and the update fails
/// with [`Error::NotCovered`] naming it, and nothing is written. The update
/// then runs on the user's filter *and* the primary keys checked, so a row
/// inserted since the check is left alone.
#[must_use = "a protected write does nothing until `.exec(&lock)`"]
pub struct ProtectedUpdateMany<E: EntityTrait> {
    filter: Condition,
    exprs: Vec<(E::Column, SimpleExpr)>,
    model: Option<E::ActiveModel>,
}

impl<E: Protect> Default for ProtectedUpdateMany<E> {
    fn default() -> Self {
        ProtectedUpdateMany {
            filter: Condition::all(),
            exprs: Vec::new(),
            model: None,
        }
    }
}

impl<E: Protect> ProtectedUpdateMany<E>
where
    E::Model: Send + Sync,
    E::ActiveModel: Send + Sync,
    E::Column: Send + Sync,
{
    /// An update of every row, narrowed with [`filter`](Self::filter).
    pub fn new() -> Self {
        Self::default()
    }

    /// Update only rows matching `condition` (several calls: all of them).
    pub fn filter<F: IntoCondition>(mut self, condition: F) -> Self {
        self.filter = self.filter.add(condition);
        self
    }

    /// Set `column` to `expr` in every row updated. `column` may not be one
    /// of the entity's ID fields: `exec` refuses that with
    /// [`Error::Misuse`] (to move rows, use [`set`](Self::set), whose new
    /// IDs are checked).
    pub fn col_expr<X: Into<SimpleExpr>>(mut self, column: E::Column, expr: X) -> Self {
        self.exprs.push((column, expr.into()));
        self
    }

    /// Write the fields of `model` that are `Set` into every row updated
    /// (other fields, `Unchanged` or `NotSet`, are not written; several
    /// calls add up, a later value winning). If it sets ID fields, the proof
    /// must also cover the node each row moves to.
    pub fn set<M: Into<E::ActiveModel>>(mut self, model: M) -> Self {
        let model: E::ActiveModel = model.into();
        let mut merged = self.model.take().unwrap_or_else(E::ActiveModel::default);
        for column in E::Column::iter() {
            if let ActiveValue::Set(value) = model.get(column) {
                merged.set(column, value);
            }
        }
        self.model = Some(merged);
        self
    }

    /// Update the rows on the proof's transaction; returns the number of
    /// rows updated, as the server reports it.
    ///
    /// The rows the filter matches are read `FOR UPDATE` and each is checked
    /// against the proof (where it is, and where [`set`](Self::set) moves
    /// it); the update then runs on the user's filter and the checked
    /// primary keys, 500 keys per statement. On a versioned entity every row
    /// updated also gets `version = version + 1`, in the same statement (no
    /// version is checked: the proof's locks exclude other writers). Nothing
    /// to set, or no row matched: nothing is written, `Ok(0)`.
    ///
    /// # Errors
    /// - [`Error::Misuse`]: a [`col_expr`](Self::col_expr) writes an ID
    ///   field, or the update writes the version field of a versioned
    ///   entity; nothing was sent to the server.
    /// - [`Error::NotCovered`]: a row the filter matches is not covered by
    ///   the proof, or would move to a node it does not cover; nothing was
    ///   written.
    /// - [`Error::Database`]: reading or updating the rows failed.
    pub fn exec<'p, P>(self, lock: &'p P) -> WriteFuture<'p, u64>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move {
            let ids = id_columns::<E>();
            if let Some((column, _)) = self.exprs.iter().find(|(c, _)| is_in(*c, &ids)) {
                return Err(Error::Misuse(format!(
                    "update_many of `{}` sets ID field `{}` with an expression: hierlock cannot tell \
                     which node the rows would move to; use `set(model)` to move them",
                    table::<E>(),
                    column.as_str()
                )));
            }
            let version = version_column::<E>()?;
            let backend = lock.txn().get_database_backend();
            let version = match version {
                Some(column) => Some((column, increment::<E>(column, backend)?)),
                None => None,
            };
            if let Some((version, _)) = &version {
                let version = *version;
                let in_exprs = self
                    .exprs
                    .iter()
                    .any(|(c, _)| c.as_str() == version.as_str());
                let in_model = self.model.as_ref().is_some_and(|m| m.get(version).is_set());
                if in_exprs || in_model {
                    return Err(written_by_hierlock::<E>(version, "update_many"));
                }
            }
            let sets_any = self
                .model
                .as_ref()
                .is_some_and(ActiveModelTrait::is_changed);
            if self.exprs.is_empty() && !sets_any {
                return Ok(0);
            }
            let moves = self.model.as_ref();
            let txn = lock.txn();
            let coverage = coverage::rows::<E>(lock, moves);
            match check_in_statement::<E>(&self.filter, lock, coverage, "update").await? {
                Checked::Covered(None) => return Ok(0),
                Checked::Covered(Some(covered)) => {
                    return self
                        .statement(covered, version.clone())
                        .exec(txn)
                        .await
                        .map(|done| done.rows_affected)
                        .map_err(|e| failed(&doing_update::<E>(), e));
                }
                Checked::Outside(row) => refuse::<E>(&row, lock, moves, "update")?,
                Checked::ReadFirst => {}
            }
            let rows = matching::<E>(self.filter.clone(), lock, "update").await?;
            for row in &rows {
                let old = check_stored::<E>(row, lock, "update")?;
                if let Some(model) = moves {
                    check_moved::<E>(model, &old, lock, "update")?;
                }
            }
            let mut updated = 0;
            for keys in rows.chunks(KEYS_PER_STATEMENT) {
                updated += self
                    .statement(primary_keys_in::<E>(keys), version.clone())
                    .exec(txn)
                    .await
                    .map_err(|e| failed(&doing_update::<E>(), e))?
                    .rows_affected;
            }
            Ok(updated)
        })
    }

    /// The `UPDATE` of the rows the filter and `rows` match.
    /// `version`: the version column and its increment.
    fn statement(&self, rows: Condition, version: Option<(E::Column, SimpleExpr)>) -> UpdateMany<E> {
        let mut update = E::update_many().filter(self.filter.clone()).filter(rows);
        if let Some(model) = &self.model {
            update = update.set(model.clone());
        }
        for (column, expr) in &self.exprs {
            update = update.col_expr(*column, expr.clone());
        }
        if let Some((column, increment)) = version {
            update = update.col_expr(column, increment);
        }
        update
    }
}


/// A filtered delete of a protected entity, waiting for its proof:
/// `resource::Entity::delete_many().filter(..).exec(&lock)`.
///
/// It **refuses rather than silently narrows**: every row the filter
/// matches (read `FOR UPDATE`) must be covered by the proof; one row that is
/// not, and the delete fails with [`Error::NotCovered`] naming it, and
/// nothing is deleted. The delete then runs on the user's filter *and* the
/// primary keys checked, so a row inserted since the check is left alone.
#[must_use = "a protected write does nothing until `.exec(&lock)`"]
pub struct ProtectedDeleteMany<E: EntityTrait> {
    filter: Condition,
    entity: std::marker::PhantomData<E>,
}

impl<E: Protect> Default for ProtectedDeleteMany<E> {
    fn default() -> Self {
        ProtectedDeleteMany {
            filter: Condition::all(),
            entity: std::marker::PhantomData,
        }
    }
}

impl<E: Protect> ProtectedDeleteMany<E>
where
    E::Model: Send + Sync,
{
    /// A delete of every row, narrowed with [`filter`](Self::filter).
    pub fn new() -> Self {
        Self::default()
    }

    /// Delete only rows matching `condition` (several calls: all of them).
    pub fn filter<F: IntoCondition>(mut self, condition: F) -> Self {
        self.filter = self.filter.add(condition);
        self
    }

    /// Delete the rows on the proof's transaction; returns the number of
    /// rows deleted.
    ///
    /// The rows the filter matches are read `FOR UPDATE` and each is checked
    /// against the proof; the delete then runs on the user's filter and the
    /// checked primary keys, 500 keys per statement.
    ///
    /// # Errors
    /// - [`Error::NotCovered`]: a row the filter matches is not covered by
    ///   the proof; nothing was deleted.
    /// - [`Error::Database`]: reading or deleting the rows failed.
    pub fn exec<'p, P>(self, lock: &'p P) -> WriteFuture<'p, u64>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(self.run(lock))
    }

    /// [`exec`](Self::exec) on a proof's locks.
    pub(crate) async fn run(self, lock: Proof<'_>) -> Result<u64> {
        {
            let txn = lock.txn();
            let delete = |rows: Condition| E::delete_many().filter(self.filter.clone()).filter(rows);
            let coverage = coverage::rows::<E>(lock, None);
            match check_in_statement::<E>(&self.filter, lock, coverage, "delete").await? {
                Checked::Covered(None) => return Ok(0),
                Checked::Covered(Some(covered)) => {
                    return delete(covered)
                        .exec(txn)
                        .await
                        .map(|done| done.rows_affected)
                        .map_err(|e| failed(&doing_delete::<E>(), e));
                }
                Checked::Outside(row) => refuse::<E>(&row, lock, None, "delete")?,
                Checked::ReadFirst => {}
            }
            let rows = matching::<E>(self.filter.clone(), lock, "delete").await?;
            for row in &rows {
                check_stored::<E>(row, lock, "delete")?;
            }
            let mut deleted = 0;
            for keys in rows.chunks(KEYS_PER_STATEMENT) {
                deleted += delete(primary_keys_in::<E>(keys))
                    .exec(txn)
                    .await
                    .map_err(|e| failed(&doing_delete::<E>(), e))?
                    .rows_affected;
            }
            Ok(deleted)
        }
    }
}

fn doing_update<E: EntityTrait>() -> String {
    format!("updating `{}`", table::<E>())
}

fn doing_delete<E: EntityTrait>() -> String {
    format!("deleting from `{}`", table::<E>())
}

/// The outcome of the coverage check done in a statement.
enum Checked<M> {
    /// Every row the filter matches is covered: write where the condition
    /// holds (`None`: no row matches, write nothing).
    Covered(Option<Condition>),
    /// A row the filter matches, outside the proof as the statement saw it.
    Outside(M),
    /// The check does not fit in a statement: read the rows first.
    ReadFirst,
}

/// The column of the probe that says whether its row is covered.
const COVERED: &str = "hierlock_covered";

/// Read one row `filter` matches, one outside `coverage` if there is any
/// (`FOR UPDATE`, so among the current rows, not a snapshot's): its
/// `CASE WHEN <covered> THEN 1 ELSE 0 END` sorts it first. No row: nothing
/// to write, and no write is sent.
async fn check_in_statement<E: Protect>(
    filter: &Condition,
    lock: Proof<'_>,
    coverage: Coverage,
    action: &'static str,
) -> Result<Checked<E::Model>> {
    // `Some(condition)` where the rows' coverage depends on their columns.
    let (covered, always) = match coverage {
        Coverage::Unsayable => return Ok(Checked::ReadFirst),
        Coverage::Always => (None, true),
        Coverage::Never => (None, false),
        Coverage::Where(covered) => (Some(covered), false),
    };
    let mut probe = E::find().filter(filter.clone()).limit(1).lock_exclusive();
    if let Some(covered) = &covered {
        let inside: Expr = Expr::case(covered.clone(), Expr::cust("1"))
            .finally(Expr::cust("0"))
            .into();
        probe = probe
            .expr_as(inside.clone(), COVERED)
            .order_by(inside, Order::Asc);
    }
    let txn = lock.txn();
    let doing = || format!("reading the rows to {action} in `{}`", table::<E>());
    let Some(first) = txn
        .query_one(&probe.into_query())
        .await
        .map_err(|e| failed(&doing(), e))?
    else {
        return Ok(Checked::Covered(None));
    };
    let row = E::Model::from_query_result(&first, "").map_err(|e| failed(&doing(), e))?;
    if always {
        return Ok(Checked::Covered(Some(Condition::all())));
    }
    let inside = covered.is_some()
        && first
            .try_get::<i64>("", COVERED)
            .or_else(|_| first.try_get::<i32>("", COVERED).map(i64::from))
            .map_err(|e| failed(&doing(), e))?
            == 1;
    Ok(if inside {
        // The row least covered is covered: they all are.
        Checked::Covered(covered)
    } else {
        Checked::Outside(row)
    })
}

/// [`Error::NotCovered`] naming `row`, found outside the proof. If the check
/// in memory finds it covered after all (the statement's byte-wise
/// comparison and the column disagree, as for a column in another character
/// set), `Ok`: the caller checks row by row instead.
fn refuse<E: Protect>(
    row: &E::Model,
    lock: Proof<'_>,
    moves_to: Option<&E::ActiveModel>,
    action: &'static str,
) -> Result<()> {
    let old = check_stored::<E>(row, lock, action)?;
    if let Some(model) = moves_to {
        check_moved::<E>(model, &old, lock, action)?;
    }
    Ok(())
}

/// The rows `filter` matches, read `FOR UPDATE` on the proof's transaction.
async fn matching<E: EntityTrait>(
    filter: Condition,
    lock: Proof<'_>,
    action: &str,
) -> Result<Vec<E::Model>> {
    E::find()
        .filter(filter)
        .lock_exclusive()
        .all(lock.txn())
        .await
        .map_err(|e| {
            failed(
                &format!("reading the rows to {action} in `{}`", table::<E>()),
                e,
            )
        })
}

fn is_in<C: IdenStatic>(column: C, columns: &[C]) -> bool {
    columns.iter().any(|c| c.as_str() == column.as_str())
}

/// `pk IN (..)` (or, for a composite key, `(k1 = .. AND k2 = ..) OR ..`)
/// over the primary keys of `rows`.
fn primary_keys_in<E: EntityTrait>(rows: &[E::Model]) -> Condition {
    let columns: Vec<E::Column> = E::PrimaryKey::iter()
        .map(PrimaryKeyToColumn::into_column)
        .collect();
    if let [column] = columns.as_slice() {
        let values: Vec<Value> = rows.iter().map(|row| row.get(*column)).collect();
        return Condition::all().add(column.is_in(values));
    }
    rows.iter().fold(Condition::any(), |any, row| {
        let key = columns
            .iter()
            .fold(Condition::all(), |all, c| all.add(c.eq(row.get(*c))));
        any.add(key)
    })
}
