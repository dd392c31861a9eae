//! SeaORM 2's dense entity format (`#[sea_orm::model]`), taken with its
//! write paths sealed.
//!
//! A dense entity declares its relations as fields of `Model`
//! (`pub user: HasOne<super::user::Entity>`), and SeaORM derives from them
//! reads (`find_by_<unique key>`, `COLUMN`, `Entity::load()`) and writes
//! that run without a lock (the nested `save` of `ActiveModelEx`,
//! `cascade_delete`, `delete_by_<unique key>`). The derive has to run on the
//! items as written, in the sealed module, so `#[protected]` seals those
//! writes around it: [`sealed`] redirects the SeaORM names the writes
//! resolve through, and [`facade`] refuses the nested builders and names
//! SeaORM's nested active model `NestedActiveModel` too. Relation fields
//! stay as written: the facade re-exports the sealed `Entity` and
//! `ActiveModelEx`, which is what SeaORM's derive finds through a field's
//! path (`super::account::Entity`, `super::account::ActiveModelEx`), so a
//! protected entity's field names a protected or a plain entity alike.
//!
//! `#[sea_orm::compact_model]` adds the same `ActiveModelEx` to a compact
//! entity; it stays refused.

pub(in crate::protected) mod facade;
pub(in crate::protected) mod sealed;
pub(in crate::protected) mod via;

use syn::{Attribute, ItemStruct, Type, TypePath};

/// The dense attribute on `Model` (`#[sea_orm::model]`,
/// `#[sea_orm::compact_model]`), if any, and whether it is the compact one.
pub(in crate::protected) fn dense_attr(model: &ItemStruct) -> Option<(&Attribute, bool)> {
    model.attrs.iter().find_map(|a| {
        let segments = &a.path().segments;
        let last = segments.last()?;
        let qualified = segments.len() > 1;
        if qualified && last.ident == "model" {
            Some((a, false))
        } else if qualified && last.ident == "compact_model" {
            Some((a, true))
        } else {
            None
        }
    })
}

/// The error for `#[sea_orm::compact_model]`.
pub(in crate::protected) const COMPACT_MODEL_REFUSAL: &str = "remove `#[sea_orm::compact_model]`: #[protected] does not support the `ActiveModelEx` \
     it adds (its `save` writes related rows, and its `delete_by_<unique key>` functions \
     delete, without a lock)\n\
     help: keep `#[derive(DeriveEntityModel)]`, the `Relation` enum and the `Related` impls as they are";

/// A relation field's type: `HasOne<..>`, `HasMany<..>`, `BelongsTo<..>`
/// (SeaORM keeps these out of `Model` and its `ActiveModel`).
pub(in crate::protected) fn is_relation(ty: &Type) -> bool {
    let Type::Path(TypePath { qself: None, path }) = ty else {
        return false;
    };
    path.segments.last().is_some_and(|s| {
        matches!(
            s.ident.to_string().as_str(),
            "HasOne" | "HasMany" | "BelongsTo"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_the_two_attributes_apart() {
        let m: ItemStruct =
            syn::parse_str("#[sea_orm::model] pub struct Model { pub id: i32 }").expect("struct");
        assert!(matches!(dense_attr(&m), Some((_, false))));
        let m: ItemStruct =
            syn::parse_str("#[sea_orm::compact_model] pub struct Model { pub id: i32 }")
                .expect("struct");
        assert!(matches!(dense_attr(&m), Some((_, true))));
        let m: ItemStruct = syn::parse_str("pub struct Model { pub id: i32 }").expect("struct");
        assert!(dense_attr(&m).is_none());
    }

    #[test]
    fn relation_types() {
        let ty = |s: &str| syn::parse_str::<Type>(s).expect("type");
        assert!(is_relation(&ty("HasMany<super::a::Entity>")));
        assert!(is_relation(&ty("sea_orm::HasOne<super::a::Entity>")));
        assert!(is_relation(&ty("BelongsTo<Option<super::a::Entity>>")));
        assert!(!is_relation(&ty("Option<i64>")));
    }
}
