//! The junction rows of a `via` relation in a nested save under a proof.
//!
//! SeaORM's own `establish_links` reads the links there are (to delete the
//! leftovers of a `Replace`, or when the junction's key is not its two
//! foreign keys), deletes the leftovers with one `DELETE`, and inserts the
//! new links with one `INSERT .. ON CONFLICT DO NOTHING` (`RETURNING`
//! where the server has it; on the MySQL family one per link, each read
//! back); `delete_links` deletes a row's links with one `DELETE`. The
//! same here, with the checks of the junction's flat writes: each new
//! link is checked before the insert as `Entity::insert(am)` checks its
//! row (no statement), so linking sends SeaORM's statements; the
//! leftovers and a deleted row's links are deleted as a protected
//! `delete_many` (`Entity::delete_many().filter(..).exec(&lock)`), which
//! reads the rows it would delete `FOR UPDATE` to check them: one statement
//! more than SeaORM's. A link outside the proof is `NotCovered` and nothing
//! of the save remains.
//!
//! A junction row gets its foreign keys from the two rows it links, as in
//! SeaORM, and the ID fields SeaORM does not set from the row of the two
//! that sits deeper in the hierarchy (a `resource_tag` row's user and
//! account from its resource): a node's ancestors are those of its row.

use std::str::FromStr;

use sea_orm::{
    ActiveModelBehavior, ActiveModelTrait, ColumnTrait, Condition, DbErr, DeleteResult,
    EntityTrait, Iterable, PrimaryKeyToColumn, QueryTrait, RelationDef, TryInsertResult, Value,
};

use super::{NestedFuture, NestedTxn, carried};
use crate::guarantee::protect::{
    Protect, ProtectedDeleteMany, check_new, returned_rows, returning,
};

/// Link `model` to each of `related` through junction rows of `J`
/// (`relations`: the junction's relation to `model`'s entity, then to
/// `related`'s).
pub(super) fn write<'a, M, R, J>(
    model: &'a M,
    related: &'a [R],
    (left, right): (RelationDef, RelationDef),
    delete_leftover: bool,
    nested: &'a NestedTxn,
) -> NestedFuture<'a, ()>
where
    M: ActiveModelTrait + Sync,
    M::Entity: Protect,
    R: ActiveModelTrait + Sync,
    R::Entity: Protect,
    J: Protect,
    J::Model: Send + Sync,
    J::ActiveModel: ActiveModelBehavior + From<J::Model> + Send + Sync,
{
    Box::pin(async move {
        // SeaORM's establish_links sends nothing in this case either.
        if related.is_empty() && !delete_leftover {
            return Ok(());
        }
        nested.level_check::<J>("insert").map_err(carried)?;
        // The links there are, read where SeaORM reads them: to delete the
        // leftovers, or where the junction's key is not the two foreign
        // keys (else the insert skips an existing link on its key).
        let key = J::primary_key_identity();
        let key_is_both = key.fully_contains(&left.from_col) && key.fully_contains(&right.from_col);
        let mut linked = Vec::new();
        if delete_leftover || !key_is_both {
            let backend = sea_orm::ConnectionTrait::get_database_backend(nested);
            let rows =
                <J::ActiveModel as ActiveModelTrait>::find_belongs_to_model(&left, model, backend)?
                    .all(nested)
                    .await?;
            for row in rows {
                let row = J::ActiveModel::from(row);
                linked.push((key_of(&right, &row)?, row));
            }
        }

        let model_ids = id_values(model);
        let mut wanted: Vec<Vec<Value>> = Vec::new();
        let mut new_links = Vec::new();
        for other in related {
            let mut link = <J::ActiveModel as ActiveModelBehavior>::new();
            link.set_parent_key_for_def(model, &left)?;
            link.set_parent_key_for_def(other, &right)?;
            fill_ids::<J>(&mut link, &model_ids, &id_values(other))?;
            let key = key_of(&right, &link)?;
            if !linked.iter().any(|(k, _)| *k == key) {
                new_links.push(link);
            }
            wanted.push(key);
        }

        if delete_leftover {
            let leftovers: Vec<J::ActiveModel> = linked
                .into_iter()
                .filter(|(key, _)| !wanted.contains(key))
                .map(|(_, row)| row)
                .collect();
            unlink::<J>(leftovers, nested).await?;
        }
        insert_links::<J>(new_links, nested).await
    })
}

/// Insert `links` as SeaORM does, each checked first as its flat insert:
/// one `INSERT .. ON CONFLICT DO NOTHING RETURNING` for all of them where
/// the server returns rows, else one such insert per link and the read of
/// the row it inserted. A link that exists is left as it is.
async fn insert_links<J>(links: Vec<J::ActiveModel>, nested: &NestedTxn) -> Result<(), DbErr>
where
    J: Protect,
    J::Model: Send + Sync,
    J::ActiveModel: ActiveModelBehavior + Send + Sync,
{
    let mut checked = Vec::with_capacity(links.len());
    for link in links {
        let link = ActiveModelBehavior::before_save(link, nested, true).await?;
        check_new::<J>(&link, nested.proof(), "insert").map_err(carried)?;
        checked.push(link);
    }
    if checked.is_empty() {
        return Ok(());
    }
    let doing = || {
        format!(
            "inserting into `{}`",
            sea_orm::EntityName::table_name(&J::default())
        )
    };
    let txn = &nested.txn;
    if sea_orm::ConnectionTrait::support_returning(txn) {
        let mut statement = J::insert_many(checked).on_conflict_do_nothing().into_query();
        statement.returning(returning::<J>(sea_orm::ConnectionTrait::get_database_backend(txn)));
        let rows = returned_rows::<J>(&statement, txn, doing)
            .await
            .map_err(carried)?;
        for row in rows {
            J::ActiveModel::after_save(row, nested, true).await?;
        }
        return Ok(());
    }
    for link in checked {
        let TryInsertResult::Inserted(done) = J::insert(link).on_conflict_do_nothing().exec(txn).await?
        else {
            continue;
        };
        let row = J::find_by_id(done.last_insert_id)
            .one(txn)
            .await?
            .ok_or_else(|| DbErr::RecordNotFound("Failed to find inserted item".to_owned()))?;
        J::ActiveModel::after_save(row, nested, true).await?;
    }
    Ok(())
}

/// Delete the links `leftovers` (stored rows) as a protected `delete_many`
/// on their keys, between SeaORM's delete hooks.
async fn unlink<J>(leftovers: Vec<J::ActiveModel>, nested: &NestedTxn) -> Result<(), DbErr>
where
    J: Protect,
    J::Model: Send + Sync,
    J::ActiveModel: ActiveModelBehavior + Send + Sync,
{
    if leftovers.is_empty() {
        return Ok(());
    }
    let mut rows = Condition::any();
    for row in &leftovers {
        let mut this = Condition::all();
        for key in <J as EntityTrait>::PrimaryKey::iter() {
            let column = key.into_column();
            let value = row.get(column).into_value().ok_or(DbErr::UpdateGetPrimaryKey)?;
            this = this.add(column.eq(value));
        }
        rows = rows.add(this);
        ActiveModelBehavior::before_delete(row.clone(), nested).await?;
    }
    ProtectedDeleteMany::<J>::new()
        .filter(rows)
        .run(nested.proof())
        .await
        .map_err(carried)?;
    for row in leftovers {
        ActiveModelBehavior::after_delete(row, nested).await?;
    }
    Ok(())
}

/// Delete the junction rows of `J` whose foreign key (of any of
/// `relations`, each the junction's relation to `model`'s entity) is
/// `model`'s key.
pub(super) fn delete<'a, M, J>(
    model: &'a M,
    relations: Vec<RelationDef>,
    nested: &'a NestedTxn,
) -> NestedFuture<'a, DeleteResult>
where
    M: ActiveModelTrait + Sync,
    J: Protect,
    J::Model: Send + Sync,
{
    Box::pin(async move {
        let mut rows = Condition::any();
        for relation in &relations {
            let key = values_of(&relation.to_col, model)?;
            let mut this = Condition::all();
            for (name, value) in columns(&relation.from_col).zip(key) {
                this = this.add(column::<J>(&name)?.eq(value));
            }
            rows = rows.add(this);
        }
        let rows_affected = ProtectedDeleteMany::<J>::new()
            .filter(rows)
            .run(nested.proof())
            .await
            .map_err(carried)?;
        let mut deleted = DeleteResult::empty();
        deleted.rows_affected = rows_affected;
        Ok(deleted)
    })
}

/// Set the ID fields of `link` that are not set, depth by depth, from the
/// deeper of the two rows it links (the other where that one has no ID at
/// that depth).
fn fill_ids<J: Protect>(
    link: &mut J::ActiveModel,
    a: &[Option<Value>],
    b: &[Option<Value>],
) -> Result<(), DbErr> {
    let (deep, shallow) = if b.len() > a.len() { (b, a) } else { (a, b) };
    for (depth, field) in J::ID_FIELDS.iter().enumerate() {
        let column = column::<J>(field)?;
        if !link.is_not_set(column) {
            continue;
        }
        let value = [deep, shallow]
            .iter()
            .find_map(|ids| ids.get(depth).cloned().flatten());
        if let Some(value) = value {
            link.try_set(column, value)?;
        }
    }
    Ok(())
}

/// The values of a row's ID fields, from the user down (`None`: not set).
fn id_values<A>(row: &A) -> Vec<Option<Value>>
where
    A: ActiveModelTrait,
    A::Entity: Protect,
{
    <A::Entity as Protect>::ID_FIELDS
        .iter()
        .map(|field| {
            column::<A::Entity>(field)
                .ok()
                .and_then(|c| row.get(c).into_value())
        })
        .collect()
}

/// The values of `identity`'s columns in `row`: `DbErr::Type` if one is
/// not set, as SeaORM's.
fn values_of<A: ActiveModelTrait>(
    identity: &sea_orm::Identity,
    row: &A,
) -> Result<Vec<Value>, DbErr> {
    columns(identity)
        .map(|name| {
            row.get(column::<A::Entity>(&name)?)
                .into_value()
                .ok_or_else(|| DbErr::Type(format!("the key `{name}` of a linked row is not set")))
        })
        .collect()
}

/// The key links are compared by: the junction's foreign key to the
/// linked row.
fn key_of<A: ActiveModelTrait>(
    relation: &RelationDef,
    row: &A,
) -> Result<Vec<Value>, DbErr> {
    values_of(&relation.from_col, row)
}

fn columns(identity: &sea_orm::Identity) -> impl Iterator<Item = String> + '_ {
    identity.iter().map(|iden| iden.inner().to_string())
}

/// The column of `E` named `name` (a column or field name).
fn column<E: EntityTrait>(name: &str) -> Result<E::Column, DbErr> {
    E::Column::from_str(name.trim_start_matches("r#")).map_err(|_| {
        DbErr::Type(format!(
            "`{name}` is not a column of `{}`",
            sea_orm::EntityName::table_name(&E::default())
        ))
    })
}
