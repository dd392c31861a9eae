//! `#[protected]`: give an entity's module the writes that need a lock proof.
//!
//! Appended to the module: inherent `Entity::insert/update/delete/..`
//! functions (inherent functions come before SeaORM's `EntityTrait` ones, so
//! they replace them), the `hierlock::Protect` impl that reads the row's IDs,
//! and the `ActiveModelBehavior` impl whose hooks make the remaining SeaORM
//! write paths (`ActiveModel::insert/update/save/delete`, `Model::delete`)
//! fail to build.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::{Fields, Ident, Item, ItemImpl, ItemMod, ItemStruct, Path, parse_quote};

use crate::attr::{PROTECTED_KEYS, ProtectedArgs, Slot};
use crate::ctxt::{Ctxt, item_with_error, list};

/// The entry point, on `proc_macro2` types.
pub(crate) fn protected(args: TokenStream, item: TokenStream) -> TokenStream {
    let module: ItemMod = match syn::parse2(item.clone()) {
        Ok(module) => module,
        Err(err) => {
            let err = syn::Error::new(
                err.span(),
                format!(
                    "#[protected] goes on the inline module of a SeaORM entity (`mod account {{ .. }}`): {err}"
                ),
            );
            return item_with_error(item, err);
        }
    };
    let args: ProtectedArgs = match syn::parse2(args) {
        Ok(args) => args,
        Err(err) => return item_with_error(item, err),
    };
    let krate = krate_of(&args);
    match Entity::new(args, &module) {
        Ok(entity) => entity.expand(module),
        Err(err) => item_with_error(with_behavior(module, &krate), err),
    }
}

/// The module as written, with the `ActiveModelBehavior` impl that SeaORM
/// requires if it has none: so that a mistake in the attribute is reported
/// alone, not with every error its absence would cause.
fn with_behavior(mut module: ItemMod, krate: &Path) -> TokenStream {
    if let Some((_, items)) = &mut module.content {
        let has_model = items
            .iter()
            .any(|item| matches!(item, Item::Struct(s) if s.ident == "Model"));
        let has_behavior = items.iter().any(|item| match item {
            Item::Impl(imp) => is_behavior_impl(imp),
            Item::Struct(s) => derives_behavior(&s.attrs),
            _ => false,
        });
        if has_model && !has_behavior {
            items.push(parse_quote! {
                impl #krate::__private::sea_orm::ActiveModelBehavior for ActiveModel {}
            });
        }
    }
    module.into_token_stream()
}

/// A validated protected entity.
struct Entity {
    krate: Path,
    level: &'static str,
    /// The ID fields of `Model`, from the user down.
    fields: Vec<Ident>,
    /// The version field, for optimistic locking.
    version: Option<Ident>,
}

const LEVELS: &[&str] = &["user", "account", "resource"];

impl Entity {
    fn new(args: ProtectedArgs, module: &ItemMod) -> syn::Result<Entity> {
        let ProtectedArgs {
            level,
            user,
            account,
            resource,
            version,
            krate,
            mut ctxt,
        } = args;
        let krate = krate.get().cloned().unwrap_or_else(default_krate);
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
        check_items(
            items,
            &module.ident,
            &[&user, &account, &resource, &version],
            &mut ctxt,
        );
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
        })
    }

    fn expand(self, module: ItemMod) -> TokenStream {
        crate::facade::expand(
            &self.krate,
            self.level,
            &self.fields,
            self.version.as_ref(),
            module,
        )
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

/// The module holds a compact `Model` with the named fields (IDs and
/// version), and no behavior with hooks.
fn check_items(items: &[Item], module: &Ident, keys: &[&Slot<Ident>], ctxt: &mut Ctxt) {
    let model = items.iter().find_map(|item| match item {
        Item::Struct(s) if s.ident == "Model" => Some(s),
        _ => None,
    });
    match model {
        Some(model) => {
            check_fields(model, keys, ctxt);
            if let Some((dense, compact)) = crate::dense::dense_attr(model) {
                ctxt.error_spanned(dense, crate::dense::refusal(model, compact, &module.to_string()));
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
                for attr in attrs.iter().filter(|a| a.path().is_ident("derive")) {
                    let _ = attr.parse_nested_meta(|meta| {
                        if meta.path.segments.last().is_some_and(|s| s.ident == "DeriveActiveModelBehavior") {
                            ctxt.error_spanned(
                                &meta.path,
                                "remove `DeriveActiveModelBehavior`: #[protected] implements `ActiveModelBehavior` \
                                 (SeaORM requires one; protected writes do not run its hooks)",
                            );
                        }
                        Ok(())
                    });
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

/// `#[derive(.., DeriveActiveModelBehavior, ..)]`.
fn derives_behavior(attrs: &[syn::Attribute]) -> bool {
    let mut found = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("derive")) {
        let _ = attr.parse_nested_meta(|meta| {
            found |= meta
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "DeriveActiveModelBehavior");
            Ok(())
        });
    }
    found
}

/// `impl ActiveModelBehavior for ActiveModel {}`, which #[protected] writes
/// itself.
pub(crate) fn is_empty_behavior(item: &Item) -> bool {
    let Item::Impl(imp) = item else { return false };
    let for_active_model = matches!(&*imp.self_ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("ActiveModel"));
    is_behavior_impl(imp) && for_active_model && imp.items.is_empty()
}

fn is_behavior_impl(imp: &ItemImpl) -> bool {
    imp.trait_.as_ref().is_some_and(|(_, path, _)| {
        path.segments
            .last()
            .is_some_and(|s| s.ident == "ActiveModelBehavior")
    })
}

fn krate_of(args: &ProtectedArgs) -> Path {
    args.krate.get().cloned().unwrap_or_else(default_krate)
}

fn default_krate() -> Path {
    parse_quote!(::hierlock)
}

fn unreported() -> syn::Error {
    syn::Error::new(Span::call_site(), "#[protected] could not be expanded")
}
