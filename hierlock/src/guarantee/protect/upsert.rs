//! Protected upserts: an insert that, on a row with the same primary key,
//! updates it or leaves it.

use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveModelTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, ExprTrait, IdenStatic,
    Iterable, ModelTrait, PrimaryKeyToColumn,
};

use super::version::{increment, version_column, written_by_hierlock};
use super::{
    Proof, Protect, WriteFuture, WriteProof, by_primary_key, check_new, check_stored, id_columns,
    load_for_write, read_back, table,
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
/// The conflict target is the primary key, which must be set. Before
/// anything is written, the proof must cover the new row (as for
/// [`ProtectedInsert`](super::ProtectedInsert)) and, if a row with that
/// primary key exists (read `FOR UPDATE`), that row too: an upsert onto
/// another user's row is refused even when it would only be left as it is.
///
/// **The race the check cannot see.** Where no row has the key when it is
/// read, the read cannot lock the absent row. On InnoDB (MySQL, MariaDB) it
/// takes a gap lock, and on SQLite the proof holds the database's write
/// lock, so no other transaction can insert that key until this one ends.
/// On PostgreSQL, which has no gap locks, a concurrent transaction may
/// insert a row with the same primary key under *another* node between the
/// check and the upsert. The statement itself guards against it: its
/// `DO UPDATE` carries `WHERE` the ID columns of the node that was checked,
/// and when the upsert writes nothing the row that stopped it is read and
/// checked, so such a row is neither updated nor returned:
/// [`Error::NotCovered`].
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
    /// stored afterwards (read back by its primary key).
    ///
    /// # Errors
    /// As [`ProtectedUpsert::exec`].
    pub fn exec_with_returning<'p, P>(self, lock: &'p P) -> WriteFuture<'p, E::Model>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move {
            let reread = by_primary_key::<E>(&self.model, "upsert")?;
            self.run(lock).await?;
            let doing = || format!("upserting into `{}`", table::<E>());
            read_back(reread, lock.txn(), &doing(), DbErr::RecordNotInserted).await
        })
    }

    /// Insert or update the row on the proof's transaction; returns the
    /// number of rows affected as the server reports it (MySQL and MariaDB
    /// count an update as 2, and a row left as it was as 0).
    ///
    /// # Errors
    /// As [`ProtectedUpsert::exec`].
    pub fn exec_without_returning<'p, P>(self, lock: &'p P) -> WriteFuture<'p, u64>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move { self.run(lock).await })
    }

    /// Check, then run the statement, then check what stopped it if it
    /// wrote nothing.
    async fn run(self, lock: Proof<'_>) -> Result<u64> {
        let existing = by_primary_key::<E>(&self.model, "upsert")?;
        let reread = existing.clone();
        check_new::<E>(&self.model, lock, "upsert")?;
        let old = load_for_write(existing, lock.txn(), "upsert").await?;
        if let Some(old) = &old {
            // The row after the upsert has the IDs of the old row or, for
            // the columns written over it, of the new row: both checked.
            check_stored::<E>(old, lock, "upsert")?;
        }
        let keys = || E::PrimaryKey::iter().map(PrimaryKeyToColumn::into_column);
        let mut on_conflict = OnConflict::columns(keys());
        match self.conflict {
            Conflict::Update(columns) if !columns.is_empty() => {
                if let Some(version) = version_column::<E>()? {
                    if columns.iter().any(|c| c.as_str() == version.as_str()) {
                        return Err(written_by_hierlock::<E>(version, "upsert"));
                    }
                    // The update arm moves the stored row to its next
                    // version, as any protected update does.
                    on_conflict.value(version, increment::<E>(version));
                }
                on_conflict.update_columns(columns);
                // PostgreSQL has no gap locks: a row inserted since the
                // check under another node must not be updated. (InnoDB's
                // gap lock and SQLite's database lock exclude it; MySQL has
                // no `WHERE` here.)
                if lock.txn().get_database_backend() != DbBackend::MySql {
                    on_conflict.action_and_where(same_node::<E>(&self.model, old.as_ref()));
                }
            }
            // MySQL has no `DO NOTHING`: sea-query writes `pk = pk`.
            Conflict::Update(_) | Conflict::DoNothing => {
                on_conflict.do_nothing_on(keys());
            }
        }
        let affected = E::insert(self.model)
            .on_conflict(on_conflict)
            .exec_without_returning(lock.txn())
            .await
            .map_err(|e| Error::database(format!("upserting into `{}`", table::<E>()), e))?;
        if affected == 0 {
            // A row with the key stopped the upsert: it must be one the
            // proof covers (it is, unless it was inserted since the check).
            if let Some(row) = load_for_write(reread, lock.txn(), "upsert").await? {
                check_stored::<E>(&row, lock, "upsert")?;
            }
        }
        Ok(affected)
    }
}

/// `WHERE` of the upsert's update: the conflicting row is in the node that
/// was checked (the stored row's, or the new row's if there was none).
fn same_node<E: Protect>(new: &E::ActiveModel, old: Option<&E::Model>) -> Expr {
    id_columns::<E>()
        .into_iter()
        .filter_map(|column| {
            let value = match old {
                Some(old) => old.get(column),
                None => new.get(column).into_value()?,
            };
            Some(Expr::col((E::default(), column)).eq(value))
        })
        .reduce(ExprTrait::and)
        .unwrap_or_else(|| Expr::value(true))
}
