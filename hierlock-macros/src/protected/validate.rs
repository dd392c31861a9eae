//! `#[protected]`'s arguments checked against the module's items: every
//! mistake is reported at once, before anything is generated.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Fields, Ident, Item, ItemImpl, ItemMod, ItemStruct, Path};

use super::args::{PROTECTED_KEYS, ProtectedArgs};
use super::behavior::{behavior_derives, is_behavior_impl};
use super::format::{compact, dense};
use crate::args::Slot;
use crate::ctxt::{Ctxt, list};

/// A validated protected entity.
pub(super) struct Entity {
    pub(super) krate: Path,
    pub(super) level: &'static str,
    /// The ID fields of `Model`, from the user down.
    pub(super) fields: Vec<Ident>,
    /// The version field, for optimistic locking.
    pub(super) version: Option<Ident>,
    /// `Model` is in SeaORM's dense format (`#[sea_orm::model]`).
    pub(super) dense: bool,
}

const LEVELS: &[&str] = &["user", "account", "resource"];

impl Entity {
    pub(super) fn new(args: ProtectedArgs, module: &ItemMod) -> syn::Result<Entity> {
        let ProtectedArgs {
            level,
            user,
            account,
            resource,
            version,
            krate,
            mut ctxt,
        } = args;
        let krate = krate.or_hierlock();
        let keys = [&user, &account, &resource];
        let depth = match level.get() {
            None => {
                ctxt.error(
                    Span::call_site(),
                    format!(
                        "#[protected] needs `level = user`, `level = account` or `level = resource`: the level of the node each row belongs to\n\
                         valid arguments are: {}",
                        list(PROTECTED_KEYS)
                    ),
                );
                None
            }
            Some(level) => match LEVELS.iter().position(|l| level == l) {
                Some(depth) => Some(depth),
                None => {
                    ctxt.error(
                        level.span(),
                        format!(
                            "unknown level `{level}`: expected `user`, `account` or `resource`"
                        ),
                    );
                    None
                }
            },
        };
        if let Some(depth) = depth {
            check_keys(&keys, depth, &mut ctxt);
        }
        let Some(items) = module.content.as_ref().map(|(_, items)| items) else {
            ctxt.error(
                module.semi.map_or(module.ident.span(), |s| s.span),
                format!(
                    "#[protected] needs the entity's items inline: Rust does not pass the items of a file \
                     module (`mod {name};`) to an attribute\n\
                     help: move the items of `{name}.rs` into `mod {name} {{ .. }}` here; or write that \
                     module, with this attribute, in `{name}.rs` and put `include!(\"{name}.rs\");` here",
                    name = module.ident
                ),
            );
            return Err(ctxt.check().err().unwrap_or_else(unreported));
        };
        check_items(items, &[&user, &account, &resource, &version], &mut ctxt);
        let dense = compact::model(items)
            .and_then(dense::dense_attr)
            .is_some_and(|(_, compact_model)| !compact_model);
        ctxt.check()?;
        let depth = depth.ok_or_else(unreported)?;
        let fields = keys[..=depth]
            .iter()
            .filter_map(|slot| slot.get().cloned())
            .collect();
        Ok(Entity {
            krate,
            level: ["UserLevel", "AccountLevel", "ResourceLevel"][depth],
            fields,
            version: version.get().cloned(),
            dense,
        })
    }
}

/// Each level down to `depth` has its key, and none below.
fn check_keys(keys: &[&Slot<Ident>; 3], depth: usize, ctxt: &mut Ctxt) {
    for (i, slot) in keys.iter().enumerate() {
        let name = LEVELS[i];
        match (i <= depth, slot.key()) {
            (true, None) => ctxt.error(
                Span::call_site(),
                format!(
                    "level = {} needs `{name} = <field>`: the field of `Model` holding the {name} ID",
                    LEVELS[depth]
                ),
            ),
            (false, Some(key)) => ctxt.error(
                key,
                format!(
                    "`{name}` is below level = {}: rows of a {}-level entity are named by {} IDs\n\
                     help: remove `{name} = ..`, or use `level = {name}`",
                    LEVELS[depth],
                    LEVELS[depth],
                    LEVELS[..=depth].join(" and ")
                ),
            ),
            _ => {}
        }
    }
}

const BEHAVIOR_WITH_HOOKS: &str = "remove this `impl ActiveModelBehavior`: protected writes do not run \
     its hooks (#[protected] implements an empty one; SeaORM requires one)\n\
     help: do that work in the #[hierlocked] method that writes the row";

/// The module holds a `Model` (compact or dense, not
/// `#[sea_orm::compact_model]`) with the named fields (IDs and version), and
/// no behavior with hooks.
fn check_items(items: &[Item], keys: &[&Slot<Ident>], ctxt: &mut Ctxt) {
    match compact::model(items) {
        Some(model) => {
            check_fields(model, keys, ctxt);
            if let Some((attr, true)) = dense::dense_attr(model) {
                ctxt.error_spanned(attr, dense::COMPACT_MODEL_REFUSAL);
            }
        }
        None => ctxt.error(
            Span::call_site(),
            "#[protected] found no `struct Model` in the module: it goes on the module of a SeaORM entity \
             (`#[derive(DeriveEntityModel)] pub struct Model { .. }`)",
        ),
    }
    for item in items {
        match item {
            // An empty one (as `sea-orm-cli` writes it) is the one
            // #[protected] writes: it is dropped (`is_empty_behavior`).
            Item::Impl(imp) if is_behavior_impl(imp) && !imp.items.is_empty() => {
                ctxt.error_spanned(behavior_header(imp), BEHAVIOR_WITH_HOOKS);
            }
            Item::Struct(ItemStruct { attrs, .. }) | Item::Enum(syn::ItemEnum { attrs, .. }) => {
                for path in behavior_derives(attrs) {
                    ctxt.error_spanned(
                        path,
                        "remove `DeriveActiveModelBehavior`: #[protected] implements `ActiveModelBehavior` \
                         (SeaORM requires one; protected writes do not run its hooks)",
                    );
                }
            }
            _ => {}
        }
    }
}

fn check_fields(model: &ItemStruct, keys: &[&Slot<Ident>], ctxt: &mut Ctxt) {
    let Fields::Named(named) = &model.fields else {
        ctxt.error_spanned(
            &model.ident,
            "#[protected] needs `Model` to have named fields",
        );
        return;
    };
    let names: Vec<&Ident> = named
        .named
        .iter()
        .filter_map(|f| f.ident.as_ref())
        .collect();
    for field in keys.iter().filter_map(|k| k.get()) {
        if !names.contains(&field) {
            let all: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            ctxt.error(
                field.span(),
                format!(
                    "`Model` has no field `{field}`\nthe fields of `Model` are: {}",
                    all.join(", ")
                ),
            );
        }
    }
}

/// `impl ActiveModelBehavior for ActiveModel`, for the error's span.
fn behavior_header(imp: &ItemImpl) -> TokenStream {
    let impl_token = imp.impl_token;
    let self_ty = &imp.self_ty;
    match &imp.trait_ {
        Some((_, path, for_token)) => quote!(#impl_token #path #for_token #self_ty),
        None => quote!(#impl_token #self_ty),
    }
}

fn unreported() -> syn::Error {
    syn::Error::new(Span::call_site(), "#[protected] could not be expanded")
}
