//! Protected entities: SeaORM entities whose rows belong to a node of the
//! hierarchy, and which can be written only with a lock proof.
//!
//! `#[hierlock::protected(..)]` on an entity's module implements [`Protect`]
//! and gives the entity inherent `insert`, `update`, `delete`,
//! `delete_by_id` and `insert_many` functions. Inherent functions come before
//! trait functions, so `account::Entity::insert(am)` is no longer SeaORM's:
//! it returns a [`ProtectedInsert`] that runs only with a [`Locked`] proof
//! (`.exec(&lock)`), on the proof's transaction, after checking that the row
//! is covered. Reads (`find`, `find_by_id`, relations, loaders) are SeaORM's
//! own, unchanged.

use std::future::Future;
use std::pin::Pin;

use sea_orm::{
    ActiveModelTrait, ActiveValue, ColumnTrait, DbErr, EntityTrait, Iterable, PrimaryKeyToColumn,
    PrimaryKeyTrait, QueryFilter, QuerySelect, Select, Value,
};

use crate::acquire::LockSet;
use crate::error::{Error, Result};
use crate::id::LockId;
use crate::level::Level;
use crate::proof::{AccessMarker, CanWrite, Covers, LevelMarker, Locked};
use crate::target::{Access, Target};

/// A SeaORM entity whose rows belong to a node of the hierarchy.
///
/// Implemented by [`#[hierlock::protected]`](crate::protected), which reads
/// the IDs from the fields named in the attribute. `Level` is the level of
/// the node a row belongs to; [`Protect::row_ids`] and
/// [`Protect::active_ids`] give its IDs from the user down.
pub trait Protect: EntityTrait {
    /// The level of the node each row belongs to.
    type Level: LevelMarker;

    /// The names of the ID fields, from the user down (for messages).
    const ID_FIELDS: &'static [&'static str];

    /// The IDs of a stored row, from the user down (one per level, down to
    /// `Self::Level`).
    fn row_ids(model: &Self::Model) -> Vec<String>;

    /// The IDs a row being written will have: `Some` for fields that are set
    /// (or unchanged), `None` for fields that are not set.
    fn active_ids(model: &Self::ActiveModel) -> Vec<Option<String>>;
}

/// The node a stored row belongs to.
fn row_target<E: Protect>(model: &E::Model) -> Result<Target> {
    target_of::<E>(E::row_ids(model).into_iter().map(Some).collect(), "row")
}

/// The target named by `ids` (one per level from the user down).
fn target_of<E: Protect>(ids: Vec<Option<String>>, action: &str) -> Result<Target> {
    let table = E::default().table_name();
    let mut known = Vec::with_capacity(ids.len());
    for (depth, id) in ids.into_iter().enumerate() {
        match id {
            Some(id) => known.push(id),
            None => {
                let field = E::ID_FIELDS.get(depth).copied().unwrap_or("?");
                return Err(Error::Misuse(format!(
                    "{action} of `{table}` does not set `{field}`: hierlock cannot tell which {} the row belongs to",
                    Level::ALL[depth.min(2)]
                )));
            }
        }
    }
    match known.as_slice() {
        [u] => Ok(Target::user(u)),
        [u, a] => Ok(Target::account(u, a)),
        [u, a, r] => Ok(Target::resource(u, a, r)),
        _ => Err(Error::Misuse(format!(
            "`{table}` names {} IDs: a protected entity names one to three",
            known.len()
        ))),
    }
}

/// The text of an ID: what [`Protect::row_ids`] returns per field.
#[doc(hidden)]
pub fn id_text<T: LockId + ?Sized>(id: &T) -> String {
    id.lock_id().into_owned()
}

/// The value of a field of an active model, if it is set (or unchanged).
#[doc(hidden)]
pub fn active_value<T: Into<Value>>(field: &ActiveValue<T>) -> Option<&T> {
    field.try_as_ref()
}

/// A proof that may write rows of entities at level `T`: a write-lock
/// [`Locked`] whose level covers `T`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a lock proof: protected entities are written with the proof of a `#[hierlocked]` method",
    label = "expected `&lock`, the proof `#[hierlocked]` gives the method body",
    note = "annotate the method with `#[hierlocked(user = .., account = ..)]` and pass `&lock`; the write then runs on the proof's transaction"
)]
pub trait WriteProof<T: LevelMarker> {
    /// The locks the proof holds.
    #[doc(hidden)]
    fn lock_set(&self) -> &LockSet<'_>;
}

impl<T, L, A> WriteProof<T> for Locked<'_, L, A>
where
    T: LevelMarker,
    L: Covers<T>,
    A: AccessMarker + CanWrite,
{
    fn lock_set(&self) -> &LockSet<'_> {
        Locked::lock_set(self)
    }
}

/// The future of a protected write: boxed, so that it does not carry the
/// proof's type (a wrong proof is then reported once, at the argument).
pub type WriteFuture<'p, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'p>>;

/// What a write needs of its proof, once the proof's type has been checked
/// (the write's future holds this, not the proof).
#[derive(Clone, Copy)]
struct Proof<'p> {
    set: &'p LockSet<'p>,
}

impl<'p> Proof<'p> {
    fn of<T: LevelMarker, P: WriteProof<T> + ?Sized>(lock: &'p P) -> Self {
        Proof {
            set: lock.lock_set(),
        }
    }

    fn covers_write(self, target: &Target) -> bool {
        self.set.covers(target, Access::Write)
    }

    fn txn(self) -> &'p sea_orm::DatabaseTransaction {
        self.set.txn()
    }

    fn held(self) -> String {
        let text: Vec<String> = self
            .set
            .requests()
            .iter()
            .map(ToString::to_string)
            .collect();
        if text.is_empty() {
            "nothing".to_owned()
        } else {
            text.join(", ")
        }
    }
}

fn table<E: EntityTrait>() -> &'static str {
    E::default().table_name()
}

fn not_covered(action: &'static str, row: String, held: String) -> Error {
    Error::NotCovered { action, row, held }
}

/// `Resource(u1/a1/r1) in `resources``, for messages.
fn describe_row<E: EntityTrait>(target: &Target) -> String {
    format!("{target} in `{}`", table::<E>())
}

/// An insert of a protected entity, waiting for its proof:
/// `account::Entity::insert(am).exec(&lock)`.
#[must_use = "a protected write does nothing until `.exec(&lock)`"]
pub struct ProtectedInsert<E: EntityTrait> {
    model: E::ActiveModel,
}

impl<E: Protect> ProtectedInsert<E>
where
    E::Model: Send,
    E::ActiveModel: Send,
{
    /// Insert `model` once a proof is given.
    pub fn new(model: E::ActiveModel) -> Self {
        ProtectedInsert { model }
    }

    /// Insert the row on the proof's transaction and return it.
    ///
    /// The row's IDs come from the active model. If the row's own ID is not
    /// set (an auto-increment key), the proof must cover its parent: with a
    /// write lock on account `a1`, any new resource of `a1` may be inserted.
    ///
    /// # Errors
    /// - [`Error::NotCovered`]: the proof does not cover the new row; nothing
    ///   was written.
    /// - [`Error::Misuse`]: an ID field above the row's own is not set.
    /// - [`Error::Database`]: the insert failed.
    pub fn exec<'p, P>(self, lock: &'p P) -> WriteFuture<'p, E::Model>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move {
            check_new::<E>(&self.model, lock)?;
            let doing = || format!("inserting into `{}`", table::<E>());
            // `exec_with_returning` needs SeaORM's `Model: IntoActiveModel`,
            // which a protected model does not have: read the row back.
            let key = E::insert(self.model)
                .exec(lock.txn())
                .await
                .map_err(|e| Error::database(doing(), e))?
                .last_insert_id;
            E::find_by_id(key)
                .one(lock.txn())
                .await
                .map_err(|e| Error::database(doing(), e))?
                .ok_or_else(|| Error::database(doing(), DbErr::RecordNotInserted))
        })
    }
}

/// Whether `lock` covers the row `model` would insert.
fn check_new<E: Protect>(model: &E::ActiveModel, lock: Proof<'_>) -> Result<()> {
    let mut ids = E::active_ids(model);
    let own_unset = ids.len() > 1 && ids.last().is_some_and(Option::is_none);
    if own_unset {
        ids.pop();
    }
    let target = target_of::<E>(ids, "insert")?;
    if lock.covers_write(&target) {
        return Ok(());
    }
    let row = if own_unset {
        format!("a new row of `{}` under {target}", table::<E>())
    } else {
        describe_row::<E>(&target)
    };
    Err(not_covered("insert", row, lock.held()))
}

/// An insert of several rows of a protected entity, waiting for its proof:
/// `resource::Entity::insert_many(rows).exec(&lock)`.
#[must_use = "a protected write does nothing until `.exec(&lock)`"]
pub struct ProtectedInsertMany<E: EntityTrait> {
    models: Vec<E::ActiveModel>,
}

impl<E: Protect> ProtectedInsertMany<E>
where
    E::ActiveModel: Send,
{
    /// Insert `models` once a proof is given.
    pub fn new<I: IntoIterator<Item = E::ActiveModel>>(models: I) -> Self {
        ProtectedInsertMany {
            models: models.into_iter().collect(),
        }
    }

    /// Insert the rows on the proof's transaction, in one statement; returns
    /// how many were inserted. Every row is checked as by
    /// [`ProtectedInsert::exec`] before anything is written.
    ///
    /// # Errors
    /// As [`ProtectedInsert::exec`], for the first row not covered.
    pub fn exec<'p, P>(self, lock: &'p P) -> WriteFuture<'p, u64>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move {
            for model in &self.models {
                check_new::<E>(model, lock)?;
            }
            if self.models.is_empty() {
                return Ok(0);
            }
            E::insert_many(self.models)
                .exec_without_returning(lock.txn())
                .await
                .map_err(|e| Error::database(format!("inserting into `{}`", table::<E>()), e))
        })
    }
}

/// An update of a protected entity, waiting for its proof:
/// `account::Entity::update(am).exec(&lock)`.
#[must_use = "a protected write does nothing until `.exec(&lock)`"]
pub struct ProtectedUpdate<E: EntityTrait> {
    model: E::ActiveModel,
}

impl<E: Protect> ProtectedUpdate<E>
where
    E::Model: Send,
    E::ActiveModel: Send,
{
    /// Update the row with the primary key of `model` once a proof is given.
    pub fn new(model: E::ActiveModel) -> Self {
        ProtectedUpdate { model }
    }

    /// Update the row on the proof's transaction and return it.
    ///
    /// The stored row is read first (`FOR UPDATE`, so its IDs are current):
    /// the proof must cover both the node the row belongs to and the node it
    /// will belong to.
    ///
    /// # Errors
    /// - [`Error::NotCovered`]: the proof does not cover the row, before or
    ///   after; nothing was written.
    /// - [`Error::Misuse`]: the primary key is not set.
    /// - [`Error::Database`]: no row has this primary key
    ///   ([`DbErr::RecordNotUpdated`]), or the update failed.
    pub fn exec<'p, P>(self, lock: &'p P) -> WriteFuture<'p, E::Model>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move {
            let doing = || format!("updating `{}`", table::<E>());
            let select = by_primary_key::<E>(&self.model, "update")?;
            let Some(old) = load_for_write(select, lock.txn(), "update").await? else {
                return Err(Error::database(doing(), DbErr::RecordNotUpdated));
            };
            let old_target = row_target::<E>(&old)?;
            if !lock.covers_write(&old_target) {
                return Err(not_covered(
                    "update",
                    describe_row::<E>(&old_target),
                    lock.held(),
                ));
            }
            let ids = E::active_ids(&self.model)
                .into_iter()
                .zip(old_target.path())
                .map(|(new, old)| Some(new.unwrap_or_else(|| old.clone())))
                .collect();
            let new_target = target_of::<E>(ids, "update")?;
            if !lock.covers_write(&new_target) {
                return Err(not_covered(
                    "update",
                    describe_row::<E>(&new_target),
                    lock.held(),
                ));
            }
            let reread = by_primary_key::<E>(&self.model, "update")?;
            E::update(self.model)
                .exec_without_returning(lock.txn())
                .await
                .map_err(|e| Error::database(doing(), e))?;
            reread
                .one(lock.txn())
                .await
                .map_err(|e| Error::database(doing(), e))?
                .ok_or_else(|| Error::database(doing(), DbErr::RecordNotUpdated))
        })
    }
}

/// A delete of a protected entity, waiting for its proof:
/// `account::Entity::delete(am).exec(&lock)` or
/// `account::Entity::delete_by_id(7).exec(&lock)`.
#[must_use = "a protected write does nothing until `.exec(&lock)`"]
pub struct ProtectedDelete<E: EntityTrait> {
    row: Result<Select<E>>,
}

impl<E: Protect> ProtectedDelete<E>
where
    E::Model: Send,
    E::ActiveModel: From<E::Model> + Send,
{
    /// Delete the row with the primary key of `model` once a proof is given.
    pub fn new(model: E::ActiveModel) -> Self {
        ProtectedDelete {
            row: by_primary_key::<E>(&model, "delete"),
        }
    }

    /// Delete the row with primary key `values` once a proof is given.
    pub fn by_id<T>(values: T) -> Self
    where
        T: Into<<E::PrimaryKey as PrimaryKeyTrait>::ValueType>,
    {
        ProtectedDelete {
            row: Ok(E::find_by_id(values)),
        }
    }

    /// Delete the row on the proof's transaction; returns the number of rows
    /// deleted: 1, or 0 when no row has this primary key.
    ///
    /// The stored row is read first (`FOR UPDATE`): the proof must cover it.
    ///
    /// # Errors
    /// - [`Error::NotCovered`]: the proof does not cover the stored row;
    ///   nothing was deleted.
    /// - [`Error::Misuse`]: the primary key is not set.
    /// - [`Error::Database`]: the delete failed.
    pub fn exec<'p, P>(self, lock: &'p P) -> WriteFuture<'p, u64>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move {
            let Some(old) = load_for_write(self.row?, lock.txn(), "delete").await? else {
                return Ok(0);
            };
            let target = row_target::<E>(&old)?;
            if !lock.covers_write(&target) {
                return Err(not_covered(
                    "delete",
                    describe_row::<E>(&target),
                    lock.held(),
                ));
            }
            E::delete(E::ActiveModel::from(old))
                .exec(lock.txn())
                .await
                .map(|done| done.rows_affected)
                .map_err(|e| Error::database(format!("deleting from `{}`", table::<E>()), e))
        })
    }
}

/// `SELECT` the row with the primary key of `model`.
fn by_primary_key<E: EntityTrait>(model: &E::ActiveModel, action: &str) -> Result<Select<E>> {
    let Some(key) = model.get_primary_key_value() else {
        return Err(Error::Misuse(format!(
            "{action} of `{}` without its primary key",
            table::<E>()
        )));
    };
    let mut select = E::find();
    for (column, value) in E::PrimaryKey::iter().zip(key) {
        select = select.filter(column.into_column().eq(value));
    }
    Ok(select)
}

/// The stored row, read with `FOR UPDATE` so that its IDs are the current
/// ones (not those of a snapshot taken before the locks).
async fn load_for_write<E: EntityTrait>(
    select: Select<E>,
    txn: &sea_orm::DatabaseTransaction,
    action: &str,
) -> Result<Option<E::Model>> {
    select.lock_exclusive().one(txn).await.map_err(|e| {
        Error::database(
            format!("reading the row to {action} in `{}`", table::<E>()),
            e,
        )
    })
}
