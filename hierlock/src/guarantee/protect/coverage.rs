//! The proof's coverage said in the write's own statement.
//!
//! A protected write may touch only rows whose node its proof covers.
//! Reading the row first to check that costs a statement SeaORM's own write
//! does not send; instead the write carries the check in its `WHERE`:
//! `<pk> AND <the row's ID columns name a node the proof covers>`, built
//! from the proof's write locks with their IDs typed as the entity's fields
//! ([`FromLockId`](crate::FromLockId)). A statement that touches no row then
//! tells nothing wrong happened without saying what: the caller reads the
//! row (one statement, on that path only) to tell a missing row from
//! [`NotCovered`](crate::Error::NotCovered) or a version conflict.
//!
//! Three things keep the statement exactly as strict as the check in memory
//! ([`Request::covers`](crate::Request::covers)) it replaces:
//! - an ID written into the statement is the proof's own text rebuilt as the
//!   field's type, and only from its canonical text (`"07"` names no row of
//!   an integer column);
//! - text IDs are compared byte for byte, whatever the column's collation
//!   (`'u1' = 'U1'` in MySQL's default one);
//! - where the statement cannot say it (an ID type without `FromLockId`,
//!   or a proof of very many nodes), the write reads the row first, as
//!   before.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use sea_orm::sea_query::{Expr, ExprTrait as _};
use sea_orm::{
    ActiveModelTrait, ActiveValue, Condition, ConnectionTrait, DbBackend,
    PrimaryKeyToColumn, Value,
};

use super::{Proof, Protect, id_columns};
use crate::model::id::FromLockId;
use crate::model::target::Access;

/// Write locks a one-row write's statement checks against, at most: past
/// that the row is read first (one statement) rather than sending a long
/// condition with every write.
pub(super) const ROW_NODES: usize = 32;

/// Write locks a filtered write's statements check against, at most: past
/// that the rows are read first.
pub(super) const BULK_NODES: usize = 1000;

/// An ID of a proof's node typed as an entity's ID field (what
/// `Protect::id_value` returns).
#[derive(Clone, Debug, PartialEq)]
pub enum IdValue {
    /// The value a field holds in rows of that node.
    Value(Value),
    /// No value of the field's type has this text: no row is in that node.
    NotAnId,
    /// The field's type cannot be rebuilt from text (no
    /// [`FromLockId`](crate::FromLockId)): the row is read first.
    Unsupported,
}

/// The type of an ID field, for [`IdValue`]: generated code calls
/// `(&IdType::of(|model: &Model| &model.field)).id_value(text)`, which is
/// [`IdParse::id_value`] for a type with `FromLockId` and, through autoref,
/// [`NoIdParse::id_value`] for any other.
#[doc(hidden)]
pub struct IdType<T>(PhantomData<T>);

impl<T> IdType<T> {
    /// The type of the field that `field` reads.
    pub fn of<M>(field: fn(&M) -> &T) -> Self {
        let _ = field;
        IdType(PhantomData)
    }
}

/// [`IdValue`] of an ID field whose type has `FromLockId`.
#[doc(hidden)]
pub trait IdParse {
    /// `text` as the field's value.
    fn id_value(&self, text: &str) -> IdValue;
}

impl<T: FromLockId + Into<Value>> IdParse for IdType<T> {
    fn id_value(&self, text: &str) -> IdValue {
        match T::from_lock_id(text) {
            Some(id) => IdValue::Value(id.into()),
            None => IdValue::NotAnId,
        }
    }
}

/// The fallback of [`IdParse`]: [`IdValue::Unsupported`].
#[doc(hidden)]
pub trait NoIdParse {
    /// Always [`IdValue::Unsupported`].
    fn id_value(&self, text: &str) -> IdValue {
        let _ = text;
        IdValue::Unsupported
    }
}

impl<T> NoIdParse for &IdType<T> {}

/// What a statement knows of one ID of the node it checks.
#[derive(Clone, Copy, Debug)]
pub(super) enum Id<'a> {
    /// This ID, known before the statement runs (checked in memory).
    Known(&'a str),
    /// The row's column, as stored when the statement runs.
    Column,
}

/// The proof's coverage of a node, as a statement can check it.
#[derive(Debug)]
pub(super) enum Coverage {
    /// Covered, whatever the row's columns hold.
    Always,
    /// Covered by no lock of the proof.
    Never,
    /// Covered exactly where the condition holds.
    Where(Condition),
    /// Not sayable in a statement: read the rows first.
    Unsayable,
}

impl Coverage {
    /// Both nodes covered.
    pub(super) fn and(self, other: Coverage) -> Coverage {
        match (self, other) {
            (Coverage::Unsayable, _) | (_, Coverage::Unsayable) => Coverage::Unsayable,
            (Coverage::Never, _) | (_, Coverage::Never) => Coverage::Never,
            (Coverage::Always, other) | (other, Coverage::Always) => other,
            (Coverage::Where(a), Coverage::Where(b)) => Coverage::Where(a.add(b)),
        }
    }
}

/// Whether `lock` covers the node `ids` names (one per ID field of `E`, from
/// the user down), at most `limit` locks checked in the statement.
pub(super) fn node<E: Protect>(lock: Proof<'_>, ids: &[Id<'_>], limit: usize) -> Coverage {
    // Each covering lock as the column IDs it needs; a lock that needs none
    // covers the node outright.
    let mut needs: Vec<Vec<(usize, &str)>> = Vec::new();
    for request in lock.requests {
        let path = request.target.path();
        if request.access != Access::Write || path.len() > ids.len() {
            continue;
        }
        let mut columns = Vec::new();
        let consistent = path.iter().zip(ids).enumerate().all(|(depth, (text, id))| {
            match id {
                Id::Known(known) => *known == text,
                Id::Column => {
                    columns.push((depth, text.as_str()));
                    true
                }
            }
        });
        if !consistent {
            continue;
        }
        if columns.is_empty() {
            return Coverage::Always;
        }
        needs.push(columns);
    }
    if needs.is_empty() {
        return Coverage::Never;
    }
    if needs.len() > limit {
        return Coverage::Unsayable;
    }
    let columns = id_columns::<E>();
    if columns.len() != ids.len() {
        return Coverage::Unsayable;
    }
    let backend = lock.txn().get_database_backend();
    let needs: Vec<&Need<'_>> = needs.iter().map(Vec::as_slice).collect();
    match any_of::<E>(&needs, &columns, backend) {
        Ok(Some(condition)) => Coverage::Where(condition),
        Ok(None) => Coverage::Never,
        Err(Unsupported) => Coverage::Unsayable,
    }
}

/// The check of a write of the one row `model` names by its primary key:
/// the ID fields the model carries unchanged are pinned (`user_id = ?`, so
/// a stale model writes nothing) and checked in memory; the others are the
/// row's columns, checked in the statement; a move (an ID field set) must
/// also land in a covered node. `None`: read the row first.
pub(super) fn row<E: Protect>(lock: Proof<'_>, model: &E::ActiveModel) -> Option<Condition> {
    let columns = id_columns::<E>();
    let texts = E::active_ids(model);
    if columns.len() != texts.len() {
        return None;
    }
    let backend = lock.txn().get_database_backend();
    let mut pins = Condition::all();
    let (mut before, mut after) = (Vec::new(), Vec::new());
    let mut moves = false;
    for (column, text) in columns.iter().zip(&texts) {
        match (model.get(*column), text) {
            (ActiveValue::Unchanged(value), Some(text)) => {
                // A key column is pinned by the write's own `WHERE <pk>`,
                // exactly unless it is text (which that compares in the
                // column's collation).
                if E::PrimaryKey::from_column(*column).is_none() || is_text(&value) {
                    pins = pins.add(id_equals::<E>(backend, *column, value));
                }
                before.push(Id::Known(text));
                after.push(Id::Known(text));
            }
            (ActiveValue::Set(_), Some(text)) => {
                moves = true;
                before.push(Id::Column);
                after.push(Id::Known(text));
            }
            _ => {
                before.push(Id::Column);
                after.push(Id::Column);
            }
        }
    }
    let mut coverage = node::<E>(lock, &before, ROW_NODES);
    if moves {
        coverage = coverage.and(node::<E>(lock, &after, ROW_NODES));
    }
    match coverage {
        Coverage::Always => Some(pins),
        Coverage::Where(condition) => Some(pins.add(condition)),
        Coverage::Never | Coverage::Unsayable => None,
    }
}

/// The coverage of the rows a filtered write touches: where they are and,
/// when `moves_to` sets ID fields, where they go.
pub(super) fn rows<E: Protect>(lock: Proof<'_>, moves_to: Option<&E::ActiveModel>) -> Coverage {
    let stored = vec![Id::Column; E::ID_FIELDS.len()];
    let coverage = node::<E>(lock, &stored, BULK_NODES);
    let Some(model) = moves_to else {
        return coverage;
    };
    let texts = E::active_ids(model);
    let columns = id_columns::<E>();
    if columns.len() != texts.len() {
        return Coverage::Unsayable;
    }
    let mut moved = false;
    let after: Vec<Id<'_>> = columns
        .iter()
        .zip(&texts)
        .map(|(column, text)| match (model.get(*column), text) {
            (ActiveValue::Set(_), Some(text)) => {
                moved = true;
                Id::Known(text)
            }
            _ => Id::Column,
        })
        .collect();
    if !moved {
        return coverage;
    }
    coverage.and(node::<E>(lock, &after, BULK_NODES))
}

/// An ID type hierlock cannot rebuild from text.
struct Unsupported;

/// The IDs a covering lock needs the row's columns to hold: (depth, ID).
type Need<'a> = [(usize, &'a str)];

/// `OR` over `needs` (the column IDs each covering lock needs, in depth
/// order), sharing prefixes: locks on r1 and r2 of one account become
/// `user = u AND account = a AND (resource = r1 OR resource = r2)`. `None`
/// when no lock can match a row (its IDs are not values of the fields).
fn any_of<E: Protect>(
    needs: &[&Need<'_>],
    columns: &[E::Column],
    backend: DbBackend,
) -> Result<Option<Condition>, Unsupported> {
    let mut by_first: BTreeMap<(usize, &str), Vec<&Need<'_>>> = BTreeMap::new();
    for need in needs {
        if let Some((first, rest)) = need.split_first() {
            by_first.entry(*first).or_default().push(rest);
        }
    }
    let mut any = Condition::any();
    let mut matches_any = false;
    for ((depth, text), rests) in by_first {
        let value = match E::id_value(depth, text) {
            IdValue::Value(value) => value,
            IdValue::NotAnId => continue,
            IdValue::Unsupported => return Err(Unsupported),
        };
        let equals = id_equals::<E>(backend, columns[depth], value);
        // A lock that needs nothing more covers everything below.
        if rests.iter().any(|rest| rest.is_empty()) {
            any = any.add(equals);
            matches_any = true;
        } else if let Some(below) = any_of::<E>(&rests, columns, backend)? {
            any = any.add(Condition::all().add(equals).add(below));
            matches_any = true;
        }
    }
    // An empty `Condition::any()` would be left out of the statement, not
    // read as false.
    Ok(matches_any.then_some(any))
}

fn is_text(value: &Value) -> bool {
    matches!(value, Value::String(_) | Value::Char(_))
}

/// `column = value`, text compared byte for byte: the lock of `u1` does not
/// cover a row of `U1`, whatever the column's collation says.
pub(super) fn id_equals<E: Protect>(backend: DbBackend, column: E::Column, value: Value) -> Expr {
    let stored = Expr::col((E::default(), column));
    if !is_text(&value) {
        return stored.eq(value);
    }
    // sea-query's placeholders: numbered on PostgreSQL, `?` in order on the
    // others.
    let template = match backend {
        DbBackend::MySql => "CAST(? AS BINARY) = CAST(? AS BINARY)",
        DbBackend::Postgres => r#"$1 = $2 COLLATE "C""#,
        _ => "? = ? COLLATE BINARY",
    };
    Expr::cust_with_exprs(template, [stored, Expr::val(value)])
}
