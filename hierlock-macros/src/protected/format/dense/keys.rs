//! The unique keys of a dense `Model`, for which SeaORM derives
//! `find_by_<key>` and `delete_by_<key>` on the sealed entity: the facade
//! forwards them, so it needs their names and value types, found here as
//! SeaORM finds them (a `#[sea_orm(unique)]` field is a key of its own;
//! fields sharing `#[sea_orm(unique_key = "k")]` make the composite key `k`,
//! whose value is the tuple of theirs, in field order).

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use syn::{Fields, Ident, ItemStruct, Type};

/// A unique key: its name and its columns with their types.
pub(in crate::protected) struct UniqueKey {
    pub(in crate::protected) name: Ident,
    pub(in crate::protected) types: Vec<Type>,
}

/// The unique keys of `model`, by name.
pub(in crate::protected) fn unique_keys(model: &ItemStruct) -> Vec<UniqueKey> {
    let Fields::Named(named) = &model.fields else {
        return Vec::new();
    };
    let mut keys = BTreeMap::<String, UniqueKey>::new();
    for field in &named.named {
        let Some(ident) = &field.ident else { continue };
        if super::is_relation(&field.ty) {
            continue;
        }
        let (unique, groups) = unique_attrs(field);
        let mut add = |name: Ident| {
            keys.entry(name.to_string())
                .or_insert_with(|| UniqueKey {
                    name,
                    types: Vec::new(),
                })
                .types
                .push(field.ty.clone());
        };
        if unique {
            add(ident.clone());
        }
        for group in groups {
            add(Ident::new(&group, ident.span()));
        }
    }
    keys.into_values().collect()
}

/// `#[sea_orm(unique)]`, and the names of `#[sea_orm(unique_key = "..")]`.
fn unique_attrs(field: &syn::Field) -> (bool, Vec<String>) {
    let mut unique = false;
    let mut groups = Vec::new();
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("sea_orm")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.input.peek(syn::Token![=]) {
                let value: syn::Expr = meta.value()?.parse()?;
                if meta.path.is_ident("unique_key")
                    && let syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) = value
                {
                    groups.push(s.value());
                }
            } else if meta.input.peek(syn::token::Paren) {
                let _: TokenStream = meta.input.parse()?;
            } else {
                unique |= meta.path.is_ident("unique");
            }
            Ok(())
        });
    }
    (unique, groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn single_and_composite_keys() {
        let model: ItemStruct = syn::parse_str(
            r#"pub struct Model {
                #[sea_orm(primary_key, auto_increment = false)]
                pub id: i64,
                #[sea_orm(unique)]
                pub email: String,
                #[sea_orm(unique_key = "owner_name", column_type = "Text")]
                pub user_id: i64,
                #[sea_orm(unique_key = "owner_name")]
                pub name: String,
                #[sea_orm(has_many)]
                pub accounts: HasMany<super::account::Entity>,
            }"#,
        )
        .expect("struct");
        let keys = unique_keys(&model);
        let shown: Vec<String> = keys
            .iter()
            .map(|k| {
                let types = &k.types;
                format!("{} {}", k.name, quote!(#(#types),*))
            })
            .collect();
        assert_eq!(shown, ["email String", "owner_name i64 , String"]);
    }
}
