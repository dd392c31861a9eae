//! Optimistic version locking: entities declared with
//! `#[protected(.., version = <field>)]` carry an integer version that every
//! protected write checks and increments in the same statement
//! (`UPDATE .. SET .., version = version + 1 WHERE <pk> AND version = ?`).
//!
//! A write based on a stale version changes no row; the row is then read to
//! tell a missing row from a [`Conflict`](Error::Conflict), which carries
//! the version found. Because the check is in the statement, it holds with
//! or without a lock proof: a versioned write without one (`exec_versioned`)
//! cannot overwrite a change it has not seen, which is what makes edits that
//! span requests safe without holding a lock for minutes.

use std::str::FromStr;

use sea_orm::sea_query::{Expr, ExprTrait as _, SimpleExpr};
use sea_orm::{ActiveModelTrait, Condition, DbBackend, IdenStatic, QueryFilter};

use super::{
    Protect, describe_row, id_columns, load_for_write, row_target, table,
};
use crate::error::{Error, Result};

/// The version a row gets when it is inserted without one: the version
/// type's `Default`.
pub const INITIAL_VERSION: i64 = 0;

/// A protected entity with a version column: it may also be written without
/// a lock proof, with `exec_versioned(&txn)`, since the version check alone
/// keeps such a write from overwriting a change it has not seen.
///
/// Implemented by `#[protected(.., version = <field>)]`.
#[diagnostic::on_unimplemented(
    message = "this protected entity has no version column: only a versioned entity may be written without a lock proof",
    label = "`exec_versioned` needs `#[protected(.., version = <field>)]` on the entity",
    note = "declare an integer version field with `#[protected(.., version = <field>)]`, or write with the proof of a `#[hierlocked]` method: `.exec(&lock)`"
)]
pub trait Versioned: Protect {}

/// An integer type that can hold a row's version.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a version column: a version is an integer",
    label = "the field named by `version = ..`",
    note = "declare the version field as `i32` or `i64` (a column `INTEGER NOT NULL` / `BIGINT NOT NULL`)"
)]
pub trait VersionNumber: Copy + Default {
    /// The smallest version: where the version goes after [`MAX`](Self::MAX).
    const MIN: i64;
    /// The largest version: the next write wraps to [`MIN`](Self::MIN)
    /// (as `wrapping_add(1)` would) instead of failing out of range. A
    /// version only has to differ from the one a stale write is based on.
    const MAX: i64;

    /// The version as an `i64`, for errors and comparisons.
    fn to_i64(self) -> i64;
}

macro_rules! version_numbers {
    ($($t:ty),*) => {$(
        impl VersionNumber for $t {
            const MIN: i64 = <$t>::MIN as i64;
            const MAX: i64 = <$t>::MAX as i64;

            fn to_i64(self) -> i64 {
                i64::from(self)
            }
        }
    )*};
}

// Unsigned versions work on the MySQL family and SQLite; on PostgreSQL a
// `u32` wraps at `i32::MAX` and a `u16` is refused (see `increment`).
version_numbers!(i16, i32, i64, u16, u32);

/// A version field's value, as an `i64` (what generated code calls).
#[doc(hidden)]
pub fn version_number<T: VersionNumber>(version: &T) -> i64 {
    version.to_i64()
}

/// The type of a version field, for its range: generated code calls
/// `(&VersionType::of(|model: &Model| &model.field)).range()`, which is
/// [`VersionRange::range`] for an integer field and, through autoref,
/// [`NoVersionRange::range`] otherwise, so that a field that is not an
/// integer is reported once, by [`version_number`], and not again here.
#[doc(hidden)]
pub struct VersionType<T>(std::marker::PhantomData<T>);

impl<T> VersionType<T> {
    /// The type of the field that `field` reads.
    pub fn of<M>(field: fn(&M) -> &T) -> Self {
        let _ = field;
        VersionType(std::marker::PhantomData)
    }
}

/// The range of an integer version field (see [`VersionType`]).
#[doc(hidden)]
pub trait VersionRange {
    /// `(MIN, MAX)` of the field's type.
    fn range(&self) -> (i64, i64);
}

impl<T: VersionNumber> VersionRange for VersionType<T> {
    fn range(&self) -> (i64, i64) {
        (T::MIN, T::MAX)
    }
}

/// The fallback of [`VersionRange`] for a field that is not an integer,
/// which does not compile anyway (see [`VersionType`]).
#[doc(hidden)]
pub trait NoVersionRange {
    /// Never used by a crate that compiles.
    fn range(&self) -> (i64, i64) {
        (i64::MIN, i64::MAX)
    }
}

impl<T> NoVersionRange for &VersionType<T> {}

/// The version column of `E`, if it has one; `Misuse` if its
/// [`Protect::VERSION_FIELD`] names no column (a hand-written `Protect`),
/// rather than a write without the check.
pub(super) fn version_column<E: Protect>() -> Result<Option<E::Column>> {
    let Some(field) = E::VERSION_FIELD else {
        return Ok(None);
    };
    E::Column::from_str(field).map(Some).map_err(|_| {
        Error::Misuse(format!(
            "the version field `{field}` of `{}` is not one of its columns",
            table::<E>()
        ))
    })
}

/// `Misuse`: `column`, the version, is written by hierlock only.
pub(super) fn written_by_hierlock<E: Protect>(column: E::Column, action: &str) -> Error {
    Error::Misuse(format!(
        "{action} of `{}` writes version column `{}`: hierlock writes it (+1 per write)",
        table::<E>(),
        column.as_str()
    ))
}

/// `Misuse` for a write without a lock proof that is not based on a version.
pub(super) fn required_version<E: Protect>(model: &E::ActiveModel, action: &str) -> Result<i64> {
    E::active_version(model).ok_or_else(|| {
        Error::Misuse(format!(
            "{action} of `{}` without a lock proof needs the version the change is based on: \
             set the version field (a model read from the database has it), or write with `.exec(&lock)`",
            table::<E>()
        ))
    })
}

/// `Misuse` for a write without a lock proof that sets an ID field: moving
/// a row to another node needs the lock of that node.
pub(super) fn refuse_move<E: Protect>(model: &E::ActiveModel, action: &str) -> Result<()> {
    match id_columns::<E>()
        .into_iter()
        .find(|c| model.get(*c).is_set())
    {
        Some(column) => Err(Error::Misuse(format!(
            "{action} of `{}` without a lock proof sets ID field `{}`: moving a row needs the locks \
             of its nodes; write it with `.exec(&lock)`",
            table::<E>(),
            column.as_str()
        ))),
        None => Ok(()),
    }
}

/// `version = version + 1`, for `E`'s version column, wrapping from the
/// type's largest value to its smallest (instead of an out-of-range error
/// after 2³¹ − 1 writes of one `i32` row).
///
/// # Errors
/// `Misuse` for a `u16` version on PostgreSQL (see [`version_range_on`]).
pub(super) fn increment<E: Protect>(column: E::Column, backend: DbBackend) -> Result<SimpleExpr> {
    let current = Expr::col((E::default(), column));
    let (min, max) = version_range_on::<E>(column, backend)?;
    Ok(Expr::case(current.clone().eq(max), min)
        .finally(current.add(1))
        .into())
}

/// The range `E`'s version wraps in on `backend`. PostgreSQL has no unsigned
/// integers: SeaORM stores a `u32` in an `INTEGER` column and reads it back
/// as an `i32`, so a `u32` version wraps at `i32::MAX` there; a `u16` it
/// cannot read at all, so a `u16` version is refused before any SQL (the
/// message names the type to use).
fn version_range_on<E: Protect>(column: E::Column, backend: DbBackend) -> Result<(i64, i64)> {
    let (min, max) = E::version_range();
    let unsigned = min == 0;
    match (backend, unsigned, max) {
        (DbBackend::Postgres, true, max) if max == i64::from(u16::MAX) => Err(Error::Misuse(format!(
            "version column `{}` of `{}` is a u16, which SeaORM cannot read on PostgreSQL \
             (it has no unsigned integers): declare it i16 or i32",
            column.as_str(),
            table::<E>()
        ))),
        (DbBackend::Postgres, true, _) => Ok((0, i64::from(i32::MAX))),
        _ => Ok((min, max)),
    }
}

/// `Conflict` if the stored row is at another version than `expected`.
pub(super) fn check_version<E: Protect>(
    row: &E::Model,
    expected: Option<i64>,
    action: &'static str,
) -> Result<()> {
    match (expected, E::row_version(row)) {
        (Some(expected), Some(current)) if expected != current => {
            Err(conflict::<E>(row, action, expected, current))
        }
        _ => Ok(()),
    }
}

fn conflict<E: Protect>(
    row: &E::Model,
    action: &'static str,
    expected: i64,
    current: i64,
) -> Error {
    let row = match row_target::<E>(row) {
        Ok(target) => describe_row::<E>(&target),
        Err(_) => format!("a row of `{}`", table::<E>()),
    };
    Error::Conflict {
        action,
        row,
        expected,
        current,
    }
}

/// After a versioned write that changed no row: the row read (`FOR UPDATE`,
/// so the current one, not a snapshot) is a [`Conflict`](Error::Conflict)
/// if it is there, `Ok(())` if it is not (the caller's not-found outcome).
pub(super) async fn why_unwritten<E: Protect>(
    primary_key: Condition,
    expected: i64,
    txn: &sea_orm::DatabaseTransaction,
    action: &'static str,
) -> Result<()> {
    let select = E::find().filter(primary_key);
    match load_for_write(select, txn, action).await? {
        None => Ok(()),
        // With `version = version + 1` a matched row always changes, so a
        // row that is there is at another version.
        Some(row) => {
            let current = E::row_version(&row).unwrap_or(expected);
            Err(conflict::<E>(&row, action, expected, current))
        }
    }
}
