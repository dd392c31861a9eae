//! `#[protected]`: make a SeaORM entity's module writable only with a lock
//! proof.
//!
//! The steps: [`args`] parses the arguments, [`validate`] checks them
//! against the module's items into an [`Entity`] (reporting every mistake),
//! and [`facade`] replaces the module by a facade over the sealed SeaORM
//! entity: [`entity`] gives the entity its protected writes, [`guards`] the
//! words of its refused ones, [`refused`] SeaORM's traits on its types under
//! those guards. SeaORM's entity formats, compact and dense,
//! are in [`mod@format`].

mod args;
mod behavior;
mod entity;
mod facade;
mod format;
mod guards;
mod refused;
mod validate;

use proc_macro2::TokenStream;
use syn::ItemMod;

use crate::ctxt::item_with_error;
use args::ProtectedArgs;
use behavior::with_behavior;
use validate::Entity;

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
    let krate = args.krate.or_hierlock();
    match Entity::new(args, &module) {
        Ok(entity) => facade::expand(
            &entity.krate,
            entity.level,
            &entity.fields,
            entity.version.as_ref(),
            entity.dense,
            module,
        ),
        Err(err) => item_with_error(with_behavior(module, &krate), err),
    }
}
