//! The junctions of a protected dense `Model`'s `via` fields
//! (`#[sea_orm(has_many, via = "project_tags")] pub tags: HasMany<super::tags::Entity>`).
//!
//! SeaORM's nested save links and unlinks a `via` field's rows through
//! `establish_links` / `delete_links`, which `#[protected]` shadows on the
//! `ActiveModelEx` (see `super::sealed`). Whether a junction's rows are
//! checked against the proof depends on whether the junction is protected,
//! which only its type knows: so each junction gets here the impls through
//! which the shadows ask it (`hierlock::__private::dense::{Junction,
//! Unlink}`), with its kind picked where its type is named.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Fields, GenericArgument, Ident, Item, LitStr, PathArguments, Type, TypePath};

use crate::protected::format::compact;

/// A `via` field: its junction's module and the entity it reaches.
pub(in crate::protected) struct Via {
    junction: Ident,
    related: Type,
}

/// The `via` fields of the module's `Model` (a `self_ref` one links
/// through `establish_links_self`, which stays protected-only).
pub(in crate::protected) fn fields(items: &[Item]) -> Vec<Via> {
    let Some(model) = compact::model(items) else {
        return Vec::new();
    };
    let Fields::Named(named) = &model.fields else {
        return Vec::new();
    };
    named
        .named
        .iter()
        .filter_map(|field| {
            let junction = via_junction(&field.attrs)?;
            let related = has_many_entity(&field.ty)?;
            Some(Via { junction, related })
        })
        .collect()
}

/// The junction module of `#[sea_orm(has_many, via = "junction")]` (or
/// `"junction::Relation"`), unless `self_ref`.
fn via_junction(attrs: &[syn::Attribute]) -> Option<Ident> {
    let mut via = None;
    let mut self_ref = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("sea_orm")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("via") {
                via = Some(meta.value()?.parse::<LitStr>()?);
            } else if meta.path.is_ident("self_ref") {
                self_ref = true;
            } else if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            } else if meta.input.peek(syn::token::Paren) {
                let _: proc_macro2::Group = meta.input.parse()?;
            }
            Ok(())
        });
    }
    if self_ref {
        return None;
    }
    let path: syn::Path = via?.parse().ok()?;
    path.segments.first().map(|s| s.ident.clone())
}

/// `E` of `HasMany<E>`.
fn has_many_entity(ty: &Type) -> Option<Type> {
    let Type::Path(TypePath { qself: None, path }) = ty else {
        return None;
    };
    let last = path.segments.last()?;
    if last.ident != "HasMany" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    args.args.iter().find_map(|a| match a {
        GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    })
}

/// The sealed module's impls of `Junction` (per field) and `Unlink` (per
/// junction) for the junctions of `vias`.
pub(in crate::protected) fn junction_impls(krate: &syn::Path, vias: &[Via]) -> TokenStream {
    let dense = quote!(#krate::__private::dense);
    let sea_orm = quote!(#krate::__private::sea_orm);
    let pick = quote! {
        #[allow(unused_imports)]
        use #dense::{PlainJunction as _, ProtectedJunction as _};
    };
    let mut seen: Vec<&Ident> = Vec::new();
    let impls = vias.iter().map(|Via { junction, related }| {
        let related_ex = quote!(<#related as #sea_orm::EntityTrait>::ActiveModelEx);
        let unlink = if seen.contains(&junction) {
            TokenStream::new()
        } else {
            seen.push(junction);
            quote! {
                impl #dense::Unlink<ActiveModelEx> for super::#junction::Entity {
                    fn unlink<'__hierlock, C>(
                        model: &'__hierlock ActiveModelEx,
                        db: &'__hierlock C,
                    ) -> #dense::NestedFuture<'__hierlock, #sea_orm::DeleteResult>
                    where
                        C: #dense::LinkWrite + #sea_orm::ConnectionTrait,
                    {
                        #pick
                        (&#dense::Probe::<Self>::new()).junction().unlink(model, db)
                    }
                }
            }
        };
        quote! {
            impl #dense::Junction<ActiveModelEx, #related_ex> for super::#junction::Entity {
                fn establish<'__hierlock, C>(
                    model: &'__hierlock ActiveModelEx,
                    related: &'__hierlock [#related_ex],
                    delete_leftover: bool,
                    db: &'__hierlock C,
                ) -> #dense::NestedFuture<'__hierlock, ()>
                where
                    C: #dense::LinkWrite + #sea_orm::ConnectionTrait,
                {
                    #pick
                    (&#dense::Probe::<Self>::new())
                        .junction()
                        .establish(model, related, delete_leftover, db)
                }
            }
            #unlink
        }
    });
    quote!(#(#impls)*)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_junctions_of_via_fields() {
        let items: Vec<Item> = vec![syn::parse_quote! {
            pub struct Model {
                pub id: i64,
                #[sea_orm(has_many, extra(of = "a list"), via = "project_tags")]
                pub tags: HasMany<super::tags::Entity>,
                #[sea_orm(has_many, via = "links::Relation")]
                pub others: HasMany<super::other::Entity>,
                #[sea_orm(self_ref, via = "follows", from = "from_id", to = "to_id")]
                pub follows: HasMany<Entity>,
                #[sea_orm(has_many)]
                pub items: HasMany<super::items::Entity>,
            }
        }];
        let found: Vec<String> = fields(&items)
            .iter()
            .map(|v| v.junction.to_string())
            .collect();
        assert_eq!(found, ["project_tags", "links"]);
    }
}
