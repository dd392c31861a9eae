//! Protected entities: SeaORM entities whose rows belong to a node of the
//! hierarchy, and which can be written only with a lock proof.
//!
//! `#[hierlock::protected(..)]` on an entity's module implements [`Protect`]
//! and gives the entity's facade inherent write functions: `insert`,
//! `insert_many`, `update`, `delete`, `delete_by_id`, `update_many` and
//! `delete_many`. Each returns a builder that runs only with a [`Locked`]
//! proof (`.exec(&lock)`), on the proof's transaction, after checking that
//! every row it writes is covered by the proof's locks. Reads (`find`,
//! `find_by_id`, relations, loaders) are SeaORM's own, unchanged.
//!
//! One module per kind of write: [`insert`] (with the upsert of
//! [`upsert`]), [`update`], [`delete`], and [`many`] for the filtered
//! writes; [`version`] holds the optimistic version check of entities
//! declared with `version = <field>`; [`unsupported`] answers SeaORM's
//! builder methods they do not have; this module holds what they share:
//! the proof and the checks.
//!
//! [`Locked`]: crate::Locked

mod coverage;
mod delete;
mod insert;
mod many;
mod unsupported;
mod update;
mod upsert;
mod version;

use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;

use sea_orm::{
    ActiveModelTrait, ActiveValue, ColumnTrait, Condition, ConnectionTrait, EntityTrait, Iterable,
    PrimaryKeyToColumn, QueryFilter, QuerySelect, Select, Value,
};

use crate::runtime::acquire::LockSet;
use crate::error::{Error, Result};
use crate::model::id::LockId;
use crate::model::level::Level;
use crate::guarantee::proof::{AccessMarker, CanWrite, Covers, LevelMarker, Locked};
use crate::model::target::{Access, Request, Target};

pub use delete::ProtectedDelete;
pub use insert::{ProtectedInsert, ProtectedInsertMany};
pub use many::{ProtectedDeleteMany, ProtectedUpdateMany};
pub use update::ProtectedUpdate;
pub use upsert::ProtectedUpsert;
pub use coverage::IdValue;
#[doc(hidden)]
pub use coverage::{IdParse, IdType, NoIdParse};
#[doc(hidden)]
pub use version::{NoVersionRange, VersionRange, VersionType, version_number};
pub use version::{INITIAL_VERSION, VersionNumber, Versioned};

/// A SeaORM entity whose rows belong to a node of the hierarchy.
///
/// Implemented by [`#[hierlock::protected]`](crate::protected), which reads
/// the IDs from the fields named in the attribute. `Level` is the level of
/// the node a row belongs to; [`Protect::row_ids`] and
/// [`Protect::active_ids`] give its IDs from the user down.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a protected entity",
    label = "hierlock checks this entity's rows against a lock proof",
    note = "put `#[hierlock::protected(level = .., user = .., ..)]` on its module; a protected dense entity's `via` field through a protected junction reaches a protected entity (the junction's IDs come from it), and a `self_ref` one goes through a protected junction"
)]
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

    /// The ID field at `depth` (0: the user's) of rows in a node whose ID
    /// at that depth is `text`, as the field's value: what lets a write
    /// check its proof in its own statement. The default,
    /// [`IdValue::Unsupported`], makes every write read its rows first.
    fn id_value(depth: usize, text: &str) -> IdValue {
        let _ = (depth, text);
        IdValue::Unsupported
    }

    /// The version field (`#[protected(.., version = <field>)]`), which
    /// every write checks and increments; `None` for an entity without one.
    const VERSION_FIELD: Option<&'static str> = None;

    /// The smallest and largest value of the version field's type (a write
    /// of a row at the largest wraps it to the smallest).
    fn version_range() -> (i64, i64) {
        (i64::MIN, i64::MAX)
    }

    /// The version of a stored row; `None` without a version field.
    fn row_version(model: &Self::Model) -> Option<i64> {
        let _ = model;
        None
    }

    /// The version a row being written is based on: `Some` if its version
    /// field is set (or unchanged, as in a model read from the database).
    fn active_version(model: &Self::ActiveModel) -> Option<i64> {
        let _ = model;
        None
    }

    /// Set the version field of a row to insert to [`INITIAL_VERSION`], if
    /// it is not set.
    fn init_version(model: &mut Self::ActiveModel) {
        let _ = model;
    }
}

/// The node a stored row belongs to.
fn row_target<E: Protect>(model: &E::Model) -> Result<Target> {
    target_of::<E>(E::row_ids(model).into_iter().map(Some).collect(), "row")
}

/// The target named by `ids` (one per level from the user down).
fn target_of<E: Protect>(ids: Vec<Option<String>>, action: &str) -> Result<Target> {
    let table = table::<E>();
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
pub trait WriteProof<T: LevelMarker>: crate::__private::sealed::Proof {
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
///
/// A nested save (see `super::dense`) gives the requests of its proof and
/// the transaction of the nested level (a savepoint of the proof's).
#[derive(Clone, Copy)]
pub(crate) struct Proof<'p> {
    requests: &'p [Request],
    txn: &'p sea_orm::DatabaseTransaction,
}

impl<'p> Proof<'p> {
    fn of<T: LevelMarker, P: WriteProof<T> + ?Sized>(lock: &'p P) -> Self {
        let set = lock.lock_set();
        Proof {
            requests: set.requests(),
            txn: set.txn(),
        }
    }

    /// The requests of a proof, writing on `txn` (a savepoint of the
    /// proof's transaction).
    pub(crate) fn nested(requests: &'p [Request], txn: &'p sea_orm::DatabaseTransaction) -> Self {
        Proof { requests, txn }
    }

    fn covers_write(self, target: &Target) -> bool {
        self.requests
            .iter()
            .any(|request| request.covers(target, Access::Write))
    }

    fn txn(self) -> &'p sea_orm::DatabaseTransaction {
        self.txn
    }

    fn held(self) -> String {
        let text: Vec<String> = self.requests.iter().map(ToString::to_string).collect();
        if text.is_empty() {
            "nothing".to_owned()
        } else {
            text.join(", ")
        }
    }

    /// `Ok` if the proof covers `target`, else [`Error::NotCovered`].
    fn check<E: EntityTrait>(self, action: &'static str, target: &Target) -> Result<()> {
        if self.covers_write(target) {
            Ok(())
        } else {
            Err(not_covered(action, describe_row::<E>(target), self.held()))
        }
    }

    /// [`Error::Misuse`] unless the proof's transaction can return rows
    /// from a write (`RETURNING`): nothing is sent to the server.
    fn require_returning<E: EntityTrait>(self, what: &str) -> Result<()> {
        if self.txn().support_returning() {
            return Ok(());
        }
        Err(Error::Misuse(format!(
            "{what} of `{}` needs `RETURNING`, which {:?} does not support: \
             use `exec_without_returning` and read the rows back",
            table::<E>(),
            self.txn().get_database_backend()
        )))
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

/// Whether `lock` covers the row `model` would insert.
pub(crate) fn check_new<E: Protect>(
    model: &E::ActiveModel,
    lock: Proof<'_>,
    action: &'static str,
) -> Result<()> {
    let mut ids = E::active_ids(model);
    let own_unset = ids.len() > 1 && ids.last().is_some_and(Option::is_none);
    if own_unset {
        ids.pop();
    }
    let target = target_of::<E>(ids, action)?;
    if lock.covers_write(&target) {
        return Ok(());
    }
    let row = if own_unset {
        format!("a new row of `{}` under {target}", table::<E>())
    } else {
        describe_row::<E>(&target)
    };
    Err(not_covered(action, row, lock.held()))
}

/// Whether `lock` covers the stored row `row`; returns its node.
fn check_stored<E: Protect>(
    row: &E::Model,
    lock: Proof<'_>,
    action: &'static str,
) -> Result<Target> {
    let target = row_target::<E>(row)?;
    lock.check::<E>(action, &target)?;
    Ok(target)
}

/// Whether `lock` covers the node a row of node `old` moves to when
/// `changes` is written over it (its ID fields that are set replace the
/// old ones).
fn check_moved<E: Protect>(
    changes: &E::ActiveModel,
    old: &Target,
    lock: Proof<'_>,
    action: &'static str,
) -> Result<()> {
    let ids = E::active_ids(changes)
        .into_iter()
        .zip(old.path())
        .map(|(new, old)| Some(new.unwrap_or_else(|| old.clone())))
        .collect();
    let new = target_of::<E>(ids, action)?;
    lock.check::<E>(action, &new)
}

/// The columns of the entity's ID fields, from the user down.
fn id_columns<E: Protect>() -> Vec<E::Column> {
    E::ID_FIELDS
        .iter()
        .filter_map(|field| E::Column::from_str(field).ok())
        .collect()
}

/// `SELECT` the row with the primary key of `model`.
fn by_primary_key<E: EntityTrait>(model: &E::ActiveModel, action: &str) -> Result<Select<E>> {
    Ok(E::find().filter(primary_key_condition::<E>(model, action)?))
}

/// [`Error::Misuse`] unless every primary key field of `model` is set (or
/// unchanged); cheaper than [`primary_key_condition`] where the key itself
/// is not needed.
fn require_primary_key<E: EntityTrait>(model: &E::ActiveModel, action: &str) -> Result<()> {
    if E::PrimaryKey::iter().any(|key| model.is_not_set(key.into_column())) {
        return Err(missing_primary_key::<E>(action));
    }
    Ok(())
}

fn missing_primary_key<E: EntityTrait>(action: &str) -> Error {
    Error::Misuse(format!(
        "{action} of `{}` without its primary key",
        table::<E>()
    ))
}

/// `<pk> = ..` for the primary key of `model`.
fn primary_key_condition<E: EntityTrait>(
    model: &E::ActiveModel,
    action: &str,
) -> Result<Condition> {
    let Some(key) = model.get_primary_key_value() else {
        return Err(missing_primary_key::<E>(action));
    };
    Ok(E::PrimaryKey::iter()
        .zip(key)
        .fold(Condition::all(), |all, (column, value)| {
            all.add(column.into_column().eq(value))
        }))
}

/// A failed statement of a protected write, typed as in acquisition: a
/// row-lock wait that ran out, a no-wait refusal, a deadlock or a busy
/// SQLite are retryable conflicts, a lost connection is
/// [`Error::ConnectionLost`].
fn failed(doing: &str, source: sea_orm::DbErr) -> Error {
    Error::from_statement(doing, source)
}

/// The row a write just wrote, read back on the proof's transaction (a
/// protected model has no `IntoActiveModel` for SeaORM's returning
/// execution): `missing` if it is not there.
async fn read_back<E: EntityTrait>(
    select: Select<E>,
    txn: &sea_orm::DatabaseTransaction,
    doing: impl Fn() -> String,
    missing: sea_orm::DbErr,
) -> Result<E::Model> {
    select
        .one(txn)
        .await
        .map_err(|e| failed(&doing(), e))?
        .ok_or_else(|| Error::database(doing(), missing))
}

/// Run `statement`, a write ending in `RETURNING` (see [`returning`]), on
/// `txn`, and read the rows it returns.
pub(crate) async fn returned_rows<E: EntityTrait>(
    statement: &impl sea_orm::StatementBuilder,
    txn: &sea_orm::DatabaseTransaction,
    doing: impl Fn() -> String,
) -> Result<Vec<E::Model>> {
    let statement = txn.get_database_backend().build(statement);
    <E::Model as sea_orm::FromQueryResult>::find_by_statement(statement)
        .all(txn)
        .await
        .map_err(|e| failed(&doing(), e))
}

/// Run `statement`, a write of at most one row ending in `RETURNING`, on
/// `txn`: the row it wrote, if any.
async fn returned_row<E: EntityTrait>(
    statement: &impl sea_orm::StatementBuilder,
    txn: &sea_orm::DatabaseTransaction,
    doing: impl Fn() -> String,
) -> Result<Option<E::Model>> {
    let statement = txn.get_database_backend().build(statement);
    <E::Model as sea_orm::FromQueryResult>::find_by_statement(statement)
        .one(txn)
        .await
        .map_err(|e| failed(&doing(), e))
}

/// `RETURNING` every column, named as SeaORM's own returning writes name
/// them (enum columns as text).
pub(crate) fn returning<E: EntityTrait>(backend: sea_orm::DbBackend) -> sea_orm::sea_query::ReturningClause {
    sea_orm::sea_query::Query::returning().exprs(
        E::Column::iter().map(|column| column.select_as(column.into_returning_expr(backend))),
    )
}

/// The stored row, read with `FOR UPDATE` so that its IDs are the current
/// ones (not those of a snapshot taken before the locks).
async fn load_for_write<E: EntityTrait>(
    select: Select<E>,
    txn: &sea_orm::DatabaseTransaction,
    action: &str,
) -> Result<Option<E::Model>> {
    select.lock_exclusive().one(txn).await.map_err(|e| {
        failed(
            &format!("reading the row to {action} in `{}`", table::<E>()),
            e,
        )
    })
}
