//! Protected upserts: an insert that, on a row with the same primary key,
//! updates it or leaves it.

use sea_orm::sea_query::{Expr, ExprTrait as _, InsertStatement, OnConflict};
use sea_orm::{
    ActiveModelTrait, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, EntityTrait,
    IdenStatic, Iterable, PrimaryKeyToColumn, QueryFilter, QueryTrait,
};

use super::coverage::id_equals;
use super::version::{increment, version_column, written_by_hierlock};
use super::{
    Proof, Protect, WriteFuture, WriteProof, by_primary_key, check_moved, check_new, check_stored,
    failed, id_columns, load_for_write, primary_key_condition, read_back, returned_row, returning,
    table,
};
use crate::error::{Error, Result};

/// What an upsert does to an existing row.
pub(super) enum Conflict<C> {
    /// Write these columns of the new row over it.
    Update(Vec<C>),
    /// Leave it.
    DoNothing,
}

/// An upsert of a protected entity, waiting for its proof:
/// `resource::Entity::insert(am).on_conflict_update([resource::Column::Balance]).exec(&lock)`
/// or `..insert(am).on_conflict_do_nothing().exec(&lock)`.
///
/// The conflict target is the primary key, which must be set. The proof
/// must cover the new row (as for
/// [`ProtectedInsert`](super::ProtectedInsert)), checked before anything is
/// sent, and any existing row with that primary key: an upsert onto another
/// user's row is refused even when it would only be left as it is.
///
/// The existing row is checked by the statement itself, so an upsert sends
/// the statements SeaORM's own sends: its update arm writes only a row in
/// the new row's node (`DO UPDATE .. WHERE <its ID columns>`; on the MySQL
/// family, which has no `WHERE` there, each column keeps its value unless
/// the row is in that node). When the upsert writes nothing, the row that
/// stopped it is read (`FOR UPDATE`) and checked: a row of a node the proof
/// does not cover, also one inserted by another transaction while the upsert
/// ran, is neither written nor returned ([`Error::NotCovered`]); a covered
/// row of another node is then updated by a second statement.
///
/// On a versioned entity, the inserted row gets
/// [`INITIAL_VERSION`](crate::INITIAL_VERSION) unless the active model sets
/// one, and an update of the stored row sets `version = version + 1` (the
/// version may not be among the columns to update). An upsert checks no
/// version: it writes whatever is stored.
///
/// On MySQL and MariaDB the statement is `ON DUPLICATE KEY UPDATE`, which
/// fires on *any* unique key, and takes no `WHERE`: upsert only tables whose
/// one unique key is the primary key.
#[must_use = "a protected write does nothing until `.exec(&lock)`"]
pub struct ProtectedUpsert<E: EntityTrait> {
    model: E::ActiveModel,
    conflict: Conflict<E::Column>,
}

impl<E: Protect> ProtectedUpsert<E>
where
    E::Model: Send,
    E::ActiveModel: Send,
{
    pub(super) fn new(model: E::ActiveModel, conflict: Conflict<E::Column>) -> Self {
        ProtectedUpsert { model, conflict }
    }

    /// Insert or update the row on the proof's transaction and return it as
    /// stored afterwards: inserted, updated, or left as it was (the same as
    /// [`ProtectedUpsert::exec_with_returning`]).
    ///
    /// # Errors
    /// - [`Error::NotCovered`]: the proof does not cover the new row, or the
    ///   existing row with its primary key (also one inserted by another
    ///   transaction since the check); nothing was written.
    /// - [`Error::Misuse`]: the primary key, or an ID field, is not set, or
    ///   the version field is among the columns to update.
    /// - [`Error::Database`]: the upsert failed.
    pub fn exec<'p, P>(self, lock: &'p P) -> WriteFuture<'p, E::Model>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        self.exec_with_returning(lock)
    }

    /// Insert or update the row on the proof's transaction and return it as
    /// stored afterwards: from `RETURNING` where the connection returns rows
    /// (PostgreSQL), else read back by its primary key.
    ///
    /// # Errors
    /// As [`ProtectedUpsert::exec`].
    pub fn exec_with_returning<'p, P>(self, lock: &'p P) -> WriteFuture<'p, E::Model>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move {
            // The key only: the read it names is built where it is needed.
            let key = primary_key_condition::<E>(&self.model, "upsert")?;
            let with_row = lock.txn().support_returning();
            if let Upserted::Row(row) = self.run(lock, with_row).await? {
                return Ok(row);
            }
            let reread = E::find().filter(key);
            read_back(reread, lock.txn(), doing::<E>, DbErr::RecordNotInserted).await
        })
    }

    /// Insert or update the row on the proof's transaction; returns the
    /// number of rows affected: 1 for a row inserted, 0 for a row left as it
    /// was, and for a row updated 1 (PostgreSQL, SQLite) or what the MySQL
    /// family reports (2, or 1 if the update changed no value).
    ///
    /// # Errors
    /// As [`ProtectedUpsert::exec`].
    pub fn exec_without_returning<'p, P>(self, lock: &'p P) -> WriteFuture<'p, u64>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move {
            match self.run(lock, false).await? {
                Upserted::Count(affected) => Ok(affected),
                Upserted::Row(_) => Ok(1),
            }
        })
    }

    /// Check the new row, then upsert with the existing row's check in the
    /// statement; if that wrote nothing, read and check the row that
    /// stopped it (and update it if it is covered and should be).
    async fn run(self, lock: Proof<'_>, with_row: bool) -> Result<Upserted<E::Model>> {
        let existing = by_primary_key::<E>(&self.model, "upsert")?;
        check_new::<E>(&self.model, lock, "upsert")?;
        let txn = lock.txn();
        let first = self.statement(txn, Arm::NewRowsNode)?;
        if let Some(written) = execute::<E>(first, txn, with_row).await? {
            return Ok(written);
        }
        let Some(old) = load_for_write(existing, txn, "upsert").await? else {
            return Ok(Upserted::Count(0));
        };
        let target = check_stored::<E>(&old, lock, "upsert")?;
        let Conflict::Update(columns) = &self.conflict else {
            return Ok(Upserted::Count(0));
        };
        // The row after the update: the stored row's IDs, and the new row's
        // where the update writes them.
        let mut written = <E::ActiveModel as ActiveModelTrait>::default();
        for column in columns {
            if let Some(value) = self.model.get(*column).into_value() {
                written.set(*column, value);
            }
        }
        check_moved::<E>(&written, &target, lock, "upsert")?;
        // The row is checked and locked: the update needs no condition.
        let second = self.statement(txn, Arm::Checked)?;
        Ok(execute::<E>(second, txn, with_row)
            .await?
            .unwrap_or(Upserted::Count(0)))
    }

    /// `INSERT .. ON CONFLICT (<pk>) ..`, whose update arm writes the row
    /// where `arm` says.
    fn statement(&self, txn: &DatabaseTransaction, arm: Arm) -> Result<InsertStatement> {
        let backend = txn.get_database_backend();
        let keys = || E::PrimaryKey::iter().map(PrimaryKeyToColumn::into_column);
        let mut on_conflict = OnConflict::columns(keys());
        match &self.conflict {
            Conflict::Update(columns) if !columns.is_empty() => {
                let version = version_column::<E>()?;
                if let Some(version) = version
                    && columns.iter().any(|c| c.as_str() == version.as_str())
                {
                    return Err(written_by_hierlock::<E>(version, "upsert"));
                }
                match (arm, backend) {
                    (Arm::Checked, _) => {
                        on_conflict.update_columns(columns.iter().copied());
                        if let Some(version) = version {
                            on_conflict.value(version, increment::<E>(version, backend)?);
                        }
                    }
                    // No `WHERE` on `ON DUPLICATE KEY UPDATE`: each column
                    // keeps its value outside the node, and the first one
                    // marks the refusal (see `REFUSED`). The condition stays
                    // true once true, as the ID columns it reads are written
                    // the values it compares them with.
                    (Arm::NewRowsNode, DbBackend::MySql) => {
                        let same = same_node::<E>(&self.model, backend);
                        let mut values: Vec<(E::Column, Expr)> = Vec::new();
                        for column in columns {
                            let kept = Expr::col(*column);
                            let written = Expr::cust_with_expr("VALUES(?)", kept.clone());
                            let outside = if values.is_empty() {
                                refused(kept)
                            } else {
                                kept
                            };
                            values.push((*column, if_else(same.clone(), written, outside)));
                        }
                        if let Some(version) = version {
                            let kept = Expr::col(version);
                            values.push((version, if_else(same, increment::<E>(version, backend)?, kept)));
                        }
                        on_conflict.values(values);
                    }
                    (Arm::NewRowsNode, _) => {
                        on_conflict.update_columns(columns.iter().copied());
                        if let Some(version) = version {
                            on_conflict.value(version, increment::<E>(version, backend)?);
                        }
                        on_conflict.action_and_where(same_node::<E>(&self.model, backend));
                    }
                }
            }
            // MySQL has no `DO NOTHING`: `pk = pk`, marking the conflict as
            // a refusal, so that the row is read and checked.
            Conflict::Update(_) | Conflict::DoNothing if backend == DbBackend::MySql => {
                let key = keys().next().ok_or_else(|| {
                    Error::Misuse(format!("`{}` has no primary key", table::<E>()))
                })?;
                on_conflict.values([(key, refused(Expr::col(key)))]);
            }
            Conflict::Update(_) | Conflict::DoNothing => {
                on_conflict.do_nothing_on(keys());
            }
        }
        Ok(E::insert(self.model.clone())
            .on_conflict(on_conflict)
            .into_query())
    }
}

/// Where an upsert's update arm may write the existing row.
#[derive(Clone, Copy)]
enum Arm {
    /// Only in the new row's node, which the proof was checked to cover.
    NewRowsNode,
    /// Anywhere: the row was read, checked and locked.
    Checked,
}

/// What an upsert wrote: the row (from `RETURNING`), or how many rows.
enum Upserted<M> {
    Row(M),
    Count(u64),
}

fn doing<E: EntityTrait>() -> String {
    format!("upserting into `{}`", table::<E>())
}

/// What the MySQL family's upsert sets `LAST_INSERT_ID` to when its update
/// arm leaves a row outside the checked node (the OK packet then carries
/// it): the driver asks for found rows, so the row count of a row left as
/// it was (1) is that of a row inserted. No `AUTO_INCREMENT` counter
/// reaches it.
const REFUSED: u64 = u64::MAX;

/// `column`, unchanged, after marking the upsert as refused (`REFUSED`).
fn refused(column: Expr) -> Expr {
    Expr::cust_with_exprs(
        format!("IF(LAST_INSERT_ID({REFUSED}), ?, ?)"),
        [column.clone(), column],
    )
}

/// Run an upsert; `None` if it wrote nothing (a row with the key stopped
/// it).
async fn execute<E: Protect>(
    mut statement: InsertStatement,
    txn: &DatabaseTransaction,
    with_row: bool,
) -> Result<Option<Upserted<E::Model>>> {
    if with_row {
        statement.returning(returning::<E>(txn.get_database_backend()));
        let row = returned_row::<E>(&statement, txn, doing::<E>).await?;
        return Ok(row.map(Upserted::Row));
    }
    let done = txn
        .execute(&statement)
        .await
        .map_err(|e| failed(&doing::<E>(), e))?;
    let refused = match txn.get_database_backend() {
        DbBackend::MySql => done.last_insert_id() == REFUSED,
        _ => done.rows_affected() == 0,
    };
    Ok((!refused).then_some(Upserted::Count(done.rows_affected())))
}

/// `IF(condition, then, otherwise)`, the MySQL family's (whose
/// placeholders sea-query writes `?`).
fn if_else(condition: Expr, then: Expr, otherwise: Expr) -> Expr {
    Expr::cust_with_exprs("IF(?, ?, ?)", [condition, then, otherwise])
}

/// The existing row is in the new row's node: its ID columns that the new
/// row sets hold the same IDs (compared byte for byte).
fn same_node<E: Protect>(new: &E::ActiveModel, backend: DbBackend) -> Expr {
    id_columns::<E>()
        .into_iter()
        .filter_map(|column| {
            let value = new.get(column).into_value()?;
            Some(id_equals::<E>(backend, column, value))
        })
        .reduce(|all, next| all.and(next))
        .unwrap_or_else(|| Expr::value(true))
}
