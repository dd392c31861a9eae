//! SeaORM's `ActiveModelBehavior`, which `#[protected]` implements itself
//! (SeaORM requires one; protected writes do not run its hooks): finding
//! the module's own impl or derive of it.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Attribute, Item, ItemImpl, ItemMod, Path, parse_quote};

use super::format::compact;

/// The module as written, with the `ActiveModelBehavior` impl that SeaORM
/// requires if it has none: so that a mistake in the attribute is reported
/// alone, not with every error its absence would cause.
pub(super) fn with_behavior(mut module: ItemMod, krate: &Path) -> TokenStream {
    if let Some((_, items)) = &mut module.content {
        let has_model = compact::model(items).is_some();
        let has_behavior = items.iter().any(|item| match item {
            Item::Impl(imp) => is_behavior_impl(imp),
            Item::Struct(s) => !behavior_derives(&s.attrs).is_empty(),
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

/// The `DeriveActiveModelBehavior` paths in `#[derive(..)]` attributes.
pub(super) fn behavior_derives(attrs: &[Attribute]) -> Vec<Path> {
    let mut found = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("derive")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "DeriveActiveModelBehavior")
            {
                found.push(meta.path.clone());
            }
            Ok(())
        });
    }
    found
}

/// `impl ActiveModelBehavior for ActiveModel {}`, which #[protected] writes
/// itself.
pub(super) fn is_empty_behavior(item: &Item) -> bool {
    let Item::Impl(imp) = item else { return false };
    let for_active_model = matches!(&*imp.self_ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("ActiveModel"));
    is_behavior_impl(imp) && for_active_model && imp.items.is_empty()
}

pub(super) fn is_behavior_impl(imp: &ItemImpl) -> bool {
    imp.trait_.as_ref().is_some_and(|(_, path, _)| {
        path.segments
            .last()
            .is_some_and(|s| s.ident == "ActiveModelBehavior")
    })
}
