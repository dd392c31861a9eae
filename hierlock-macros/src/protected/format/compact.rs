//! SeaORM's compact entity format, the one `#[protected]` takes (what
//! `sea-orm-cli generate entity` writes by default): a `struct Model` with
//! named fields, `Relation` and `Related` written out, no `ActiveModelEx`.

use proc_macro2::TokenStream;
use syn::{Attribute, Fields, Ident, Item, ItemStruct, Type};

/// The module's `struct Model`, if any.
pub(in crate::protected) fn model(items: &[Item]) -> Option<&ItemStruct> {
    items.iter().find_map(|item| match item {
        Item::Struct(s) if s.ident == "Model" => Some(s),
        _ => None,
    })
}

/// The fields of `Model` that SeaORM's `ActiveModel` has (all but
/// `#[sea_orm(ignore)]`), with their types.
pub(in crate::protected) fn active_columns(items: &[Item]) -> Vec<(Ident, Type)> {
    let Some(model) = model(items) else {
        return Vec::new();
    };
    let Fields::Named(named) = &model.fields else {
        return Vec::new();
    };
    named
        .named
        .iter()
        .filter(|f| !is_ignored(&f.attrs))
        .filter_map(|f| Some((f.ident.clone()?, f.ty.clone())))
        .collect()
}

fn is_ignored(attrs: &[Attribute]) -> bool {
    let mut ignored = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("sea_orm")) {
        let _ = attr.parse_nested_meta(|meta| {
            ignored |= meta.path.is_ident("ignore");
            if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            } else if meta.input.peek(syn::token::Paren) {
                let _: TokenStream = meta.input.parse()?;
            }
            Ok(())
        });
    }
    ignored
}
