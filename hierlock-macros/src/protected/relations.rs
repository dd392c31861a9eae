//! The relations of a protected module, as `sea-orm-cli` writes them.
//!
//! A relation names the other side by its `Entity` (`has_many =
//! "super::account::Entity"`, `impl Related<super::account::Entity>`). When
//! the other side is protected too, that `Entity` is its facade, which is
//! not a SeaORM entity. The macro cannot tell a protected module from a
//! plain one, so it lets the type system do it: each such path becomes
//! `<P as RelationTarget>::Table` (or `relation_target(P)` where a value is
//! needed), which is `P` itself for a SeaORM entity and the facade's
//! `Table` for a protected one. Nothing else of the module changes.

use proc_macro2::{Group, Literal, TokenStream, TokenTree};
use quote::quote;
use syn::{
    Attribute, GenericArgument, ImplItem, Item, ItemImpl, Path, PathArguments, Type, TypePath,
    parse_quote,
};

/// The module's items with their relation targets rewritten.
pub(super) fn rewrite(krate: &Path, items: &mut [Item]) {
    for item in items {
        match item {
            Item::Enum(e) => {
                for variant in &mut e.variants {
                    rewrite_variant(krate, &mut variant.attrs);
                }
            }
            Item::Impl(imp) => rewrite_impl(krate, imp),
            _ => {}
        }
    }
}

/// `#[sea_orm(belongs_to | has_one | has_many = "..::Entity")]` on a
/// `Relation` variant. A variant with `via_rel` is left as written: SeaORM
/// derives the junction's path from the target's text.
fn rewrite_variant(krate: &Path, attrs: &mut [Attribute]) {
    let sea_orm = |a: &Attribute| a.path().is_ident("sea_orm");
    let has_via = attrs
        .iter()
        .filter(|a| sea_orm(a))
        .any(|a| mentions(a, "via_rel"));
    if has_via {
        return;
    }
    for attr in attrs.iter_mut().filter(|a| sea_orm(a)) {
        if let syn::Meta::List(list) = &mut attr.meta {
            list.tokens = rewrite_targets(krate, list.tokens.clone());
        }
    }
}

/// Whether the attribute's arguments name `key`.
fn mentions(attr: &Attribute, key: &str) -> bool {
    let syn::Meta::List(list) = &attr.meta else {
        return false;
    };
    list.tokens
        .clone()
        .into_iter()
        .any(|t| matches!(t, TokenTree::Ident(i) if i == key))
}

/// The string after `belongs_to =`, `has_one =`, `has_many =`, rewritten
/// if it is an entity path.
fn rewrite_targets(krate: &Path, tokens: TokenStream) -> TokenStream {
    let mut out = Vec::new();
    let mut key: Option<String> = None;
    let mut after_eq = false;
    for token in tokens {
        let token = match token {
            TokenTree::Literal(lit) if after_eq && is_target_key(key.as_deref()) => {
                rewrite_literal(krate, lit)
            }
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), rewrite_targets(krate, g.stream()));
                group.set_span(g.span());
                TokenTree::Group(group)
            }
            other => other,
        };
        match &token {
            TokenTree::Ident(i) => {
                key = Some(i.to_string());
                after_eq = false;
            }
            TokenTree::Punct(p) if p.as_char() == '=' => after_eq = true,
            _ => {
                key = None;
                after_eq = false;
            }
        }
        out.push(token);
    }
    out.into_iter().collect()
}

fn is_target_key(key: Option<&str>) -> bool {
    matches!(key, Some("belongs_to" | "has_one" | "has_many"))
}

fn rewrite_literal(krate: &Path, lit: Literal) -> TokenTree {
    let Ok(syn::Lit::Str(text)) = syn::parse2::<syn::Lit>(TokenTree::Literal(lit.clone()).into())
    else {
        return TokenTree::Literal(lit);
    };
    let Ok(path) = text.parse::<Path>() else {
        return TokenTree::Literal(lit);
    };
    if !is_entity_path(&path) {
        return TokenTree::Literal(lit);
    }
    let value = quote!(#krate::__private::relation_target(#path)).to_string();
    let mut new = Literal::string(&value);
    new.set_span(lit.span());
    TokenTree::Literal(new)
}

/// `impl Related<..::Entity> for ..` and `impl Linked`'s
/// `FromEntity` / `ToEntity`.
fn rewrite_impl(krate: &Path, imp: &mut ItemImpl) {
    let Some((_, trait_path, _)) = &mut imp.trait_ else {
        return;
    };
    let Some(last) = trait_path.segments.last_mut() else {
        return;
    };
    if last.ident == "Related" {
        if let PathArguments::AngleBracketed(args) = &mut last.arguments {
            for arg in &mut args.args {
                if let GenericArgument::Type(ty) = arg {
                    rewrite_type(krate, ty);
                }
            }
        }
    } else if last.ident == "Linked" {
        for item in &mut imp.items {
            if let ImplItem::Type(t) = item
                && (t.ident == "FromEntity" || t.ident == "ToEntity")
            {
                rewrite_type(krate, &mut t.ty);
            }
        }
    }
}

fn rewrite_type(krate: &Path, ty: &mut Type) {
    if let Type::Path(TypePath { qself: None, path }) = ty
        && is_entity_path(path)
    {
        *ty = parse_quote!(<#path as #krate::__private::RelationTarget>::Table);
    }
}

/// `a::Entity`, `super::a::Entity`, `crate::entities::a::Entity`: another
/// module's `Entity` (a bare `Entity` is this module's own).
fn is_entity_path(path: &Path) -> bool {
    path.segments.len() >= 2
        && path.segments.iter().all(|s| s.arguments.is_none())
        && path.segments.last().is_some_and(|s| s.ident == "Entity")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(src: &str) -> String {
        let file: syn::File = syn::parse_str(src).expect("items");
        let mut items = file.items;
        rewrite(&parse_quote!(::hierlock), &mut items);
        items
            .iter()
            .map(|i| quote!(#i).to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn relation_targets_become_the_target_entity() {
        let out = rewritten(
            r#"
            pub enum Relation {
                #[sea_orm(has_many = "super::resource::Entity")]
                Resource,
                #[sea_orm(belongs_to = "super::user::Entity", from = "Column::UserId", to = "super::user::Column::Id")]
                User,
            }
            "#,
        );
        assert!(
            out.contains(
                r#"has_many = ":: hierlock :: __private :: relation_target (super :: resource :: Entity)""#
            ),
            "{out}"
        );
        assert!(
            out.contains(
                r#"belongs_to = ":: hierlock :: __private :: relation_target (super :: user :: Entity)""#
            ),
            "{out}"
        );
        // Columns are paths through the facade: unchanged.
        assert!(out.contains(r#"to = "super::user::Column::Id""#), "{out}");
    }

    #[test]
    fn related_impls_name_the_target_entity() {
        let out = rewritten(
            "impl Related<super::account::Entity> for Entity { fn to() -> RelationDef { todo!() } }",
        );
        assert!(
            out.contains(
                "Related < < super :: account :: Entity as :: hierlock :: __private :: RelationTarget > :: Table >"
            ),
            "{out}"
        );
    }

    #[test]
    fn own_entity_tables_and_junctions_are_left_alone() {
        let src = r#"
            pub enum Relation {
                #[sea_orm(belongs_to = "Entity", from = "Column::ParentId", to = "Column::Id")]
                Parent,
                #[sea_orm(has_many = "super::account::Table")]
                Account,
                #[sea_orm(has_many = "super::filling::Entity", via_rel = "Relation::Cake")]
                Filling,
            }
            impl Related<super::account::Table> for Entity { fn to() -> RelationDef { todo!() } }
        "#;
        let before: syn::File = syn::parse_str(src).expect("items");
        let expected = before
            .items
            .iter()
            .map(|i| quote!(#i).to_string())
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(rewritten(src), expected);
    }
}
