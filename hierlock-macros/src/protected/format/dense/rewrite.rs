//! The relation fields of a protected dense `Model`, pointed at the sealed
//! entities of the other side.
//!
//! SeaORM's dense derive reads a relation field's target as written
//! (`HasMany<super::account::Entity>`): it must be a SeaORM entity (a
//! facade is not one), its `ActiveModelEx` is found by replacing the last
//! segment of that path, and a junction module is named by text
//! (`via = "resource_tag"`). None of that can go through a type, so the
//! targets are rewritten to the other side's sealed module
//! (`super::__hierlock_account::Entity`, `via = "__hierlock_resource_tag"`):
//! the relation fields of a protected dense entity name protected dense
//! entities. The variant of `Relation` SeaORM infers from the target's
//! module name is kept: written out on a `belongs_to` field
//! (`relation_enum = "Account"`), so that `Relation::Account` means what it
//! means in plain SeaORM, with the inferred name (`HierlockAccount`) as an
//! associated constant of that value ([`Alias`]) for the `via` fields that
//! name the module as their junction; a `has_one` / `has_many` field, `via`
//! or not, keeps the inferred variant (SeaORM's nested save skips a field
//! that names its `relation_enum`), and the sealed module gets
//! `Relation::Account` as an alias of it.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Attribute, Fields, GenericArgument, Ident, Item, Meta, PathArguments, Type, TypePath};

use super::{is_relation, upper_camel};

/// A `Relation` variant under the name plain SeaORM gives it: `name` for
/// the variant `variant` SeaORM infers from the sealed target.
pub(in crate::protected) struct Alias {
    pub name: Ident,
    pub variant: Ident,
    /// The name SeaORM's generated code uses, not the user's: hidden.
    pub inferred: bool,
}

/// The relation fields of the module's `struct Model`, rewritten; the
/// `Relation` variants to alias.
pub(in crate::protected) fn rewrite(items: &mut [Item]) -> Vec<Alias> {
    let mut aliases = Vec::new();
    for item in items {
        let Item::Struct(s) = item else { continue };
        if s.ident != "Model" {
            continue;
        }
        let Fields::Named(named) = &mut s.fields else {
            continue;
        };
        for field in named.named.iter_mut().filter(|f| is_relation(&f.ty)) {
            let module = seal_target(&mut field.ty);
            for attr in field
                .attrs
                .iter_mut()
                .filter(|a| a.path().is_ident("sea_orm"))
            {
                if let Some(alias) = rewrite_attr(attr, module.as_deref()) {
                    aliases.push(alias);
                }
            }
        }
    }
    aliases
}

/// `super::m::Entity` inside the field's type → `super::__hierlock_m::Entity`;
/// the original module name, if there was one (not for a bare `Entity`,
/// the entity itself).
fn seal_target(ty: &mut Type) -> Option<String> {
    let Type::Path(TypePath { qself: None, path }) = ty else {
        return None;
    };
    let n = path.segments.len();
    if n >= 2
        && path.segments.iter().all(|s| s.arguments.is_none())
        && path.segments[n - 1].ident == "Entity"
    {
        let module = &mut path.segments[n - 2].ident;
        let name = module.to_string();
        *module = sealed_ident(&name, module.span());
        return Some(name);
    }
    let last = path.segments.last_mut()?;
    let PathArguments::AngleBracketed(args) = &mut last.arguments else {
        return None;
    };
    args.args.iter_mut().find_map(|arg| match arg {
        GenericArgument::Type(inner) => seal_target(inner),
        _ => None,
    })
}

fn sealed_ident(module: &str, span: Span) -> Ident {
    Ident::new(
        &format!("__hierlock_{}", module.trim_start_matches("r#")),
        span,
    )
}

/// `via = "m"` / `via = "m::Variant"` → the sealed junction module; and,
/// on an attribute without a `relation_enum`, `relation_enum = "<Module>"`
/// added to a `belongs_to` (aliased under the inferred name), and for a
/// `has_one` / `has_many` (not `via`) the alias of the variant SeaORM
/// infers.
fn rewrite_attr(attr: &mut Attribute, target_module: Option<&str>) -> Option<Alias> {
    let Meta::List(list) = &mut attr.meta else {
        return None;
    };
    let mut keys = Vec::new();
    let mut out = Vec::new();
    let mut last_key: Option<String> = None;
    let mut after_eq = false;
    for token in list.tokens.clone() {
        let token = match token {
            proc_macro2::TokenTree::Literal(lit)
                if after_eq && last_key.as_deref() == Some("via") =>
            {
                sealed_via(lit)
            }
            other => other,
        };
        match &token {
            proc_macro2::TokenTree::Ident(i) => {
                keys.push(i.to_string());
                last_key = Some(i.to_string());
                after_eq = false;
            }
            proc_macro2::TokenTree::Punct(p) if p.as_char() == '=' => after_eq = true,
            _ => {
                last_key = None;
                after_eq = false;
            }
        }
        out.push(token);
    }
    let mut tokens: TokenStream = out.into_iter().collect();
    let is_relation_attr = keys.iter().any(|k| {
        matches!(
            k.as_str(),
            "has_one" | "has_many" | "belongs_to" | "via" | "from"
        )
    });
    let named = keys
        .iter()
        .any(|k| matches!(k.as_str(), "relation_enum" | "self_ref"));
    let has = |key: &str| keys.iter().any(|k| k == key);
    let mut alias = None;
    if let (true, false, Some(module)) = (is_relation_attr, named, target_module) {
        let span = Span::call_site();
        let variant = Ident::new(&upper_camel(module), span);
        let inferred = Ident::new(&upper_camel(&sealed_ident(module, span).to_string()), span);
        if has("belongs_to") {
            // The variant as plain SeaORM names it, and under the name
            // SeaORM infers from the sealed target, which a `via` field of
            // the other side names (this module as its junction).
            let name = variant.to_string();
            tokens = quote!(#tokens, relation_enum = #name);
            alias = Some(Alias {
                name: inferred,
                variant,
                inferred: true,
            });
        } else if has("via") {
            // Named, SeaORM's nested save would skip the links; its
            // `Related` names the junction's variant by the inferred name,
            // which the junction aliases.
        } else {
            alias = Some(Alias {
                name: variant,
                variant: inferred,
                inferred: false,
            });
        }
    }
    list.tokens = tokens;
    alias
}

fn sealed_via(lit: proc_macro2::Literal) -> proc_macro2::TokenTree {
    let Ok(syn::Lit::Str(text)) =
        syn::parse2::<syn::Lit>(proc_macro2::TokenTree::Literal(lit.clone()).into())
    else {
        return proc_macro2::TokenTree::Literal(lit);
    };
    let value = text.value();
    let (module, rest) = match value.split_once("::") {
        Some((m, rest)) => (m.trim(), format!("::{rest}")),
        None => (value.trim(), String::new()),
    };
    let mut new = proc_macro2::Literal::string(&format!(
        "{}{rest}",
        sealed_ident(module, Span::call_site())
    ));
    new.set_span(lit.span());
    proc_macro2::TokenTree::Literal(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(src: &str) -> String {
        rewritten_with_aliases(src).0
    }

    fn rewritten_with_aliases(src: &str) -> (String, Vec<(String, String)>) {
        let file: syn::File = syn::parse_str(src).expect("items");
        let mut items = file.items;
        let aliases = rewrite(&mut items)
            .into_iter()
            .map(|a| (a.name.to_string(), a.variant.to_string()))
            .collect();
        let text = items
            .iter()
            .map(|i| quote!(#i).to_string())
            .collect::<Vec<_>>()
            .join("\n");
        (text, aliases)
    }

    #[test]
    fn targets_become_sealed_and_keep_their_variant() {
        let (out, aliases) = rewritten_with_aliases(
            r#"pub struct Model {
                pub id: i64,
                #[sea_orm(has_many)]
                pub accounts: HasMany<super::account::Entity>,
                #[sea_orm(belongs_to, from = "user_id", to = "id")]
                pub user: BelongsTo<Option<super::user::Entity>>,
                #[sea_orm(has_many, via = "resource_tag")]
                pub tags: HasMany<super::tag::Entity>,
                #[sea_orm(self_ref, relation_enum = "Manager", from = "manager_id", to = "id")]
                pub manager: HasOne<Entity>,
            }"#,
        );
        assert!(
            out.contains("HasMany < super :: __hierlock_account :: Entity >"),
            "{out}"
        );
        // A `has_many` keeps SeaORM's inferred variant (a named one would
        // drop out of the nested save), aliased under the plain name.
        assert!(out.contains(r#"# [sea_orm (has_many)]"#), "{out}");
        // A `belongs_to` gets the plain name, aliased under the inferred
        // one (which `via` fields naming this module as junction use).
        assert_eq!(
            aliases,
            [
                ("Account".to_owned(), "HierlockAccount".to_owned()),
                ("HierlockUser".to_owned(), "User".to_owned()),
            ]
        );
        assert!(
            out.contains("BelongsTo < Option < super :: __hierlock_user :: Entity > >"),
            "{out}"
        );
        assert!(out.contains(r#"relation_enum = "User""#), "{out}");
        // A `via` field is not named: SeaORM's nested save keeps it.
        assert!(
            out.contains(r#"# [sea_orm (has_many , via = "__hierlock_resource_tag")]"#),
            "{out}"
        );
        // Self-references are left alone.
        assert!(
            out.contains(r#"# [sea_orm (self_ref , relation_enum = "Manager" , from = "manager_id" , to = "id")] pub manager : HasOne < Entity >"#),
            "{out}"
        );
    }

    #[test]
    fn junction_variants_keep_their_name() {
        let out = rewritten(
            r#"pub struct Model {
                #[sea_orm(has_many, via = "cakes_bakers::Baker")]
                pub bakers: HasMany<crate::entities::baker::Entity>,
            }"#,
        );
        assert!(
            out.contains(r#"via = "__hierlock_cakes_bakers::Baker""#),
            "{out}"
        );
        assert!(
            out.contains("crate :: entities :: __hierlock_baker :: Entity"),
            "{out}"
        );
    }
}
