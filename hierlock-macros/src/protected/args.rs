//! The arguments of `#[protected(..)]`, parsed into a typed struct: its
//! list of keys is the one the "valid arguments" message prints.

use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, Path};

use crate::args::{Slot, crate_path, next_argument, unknown_key, value};
use crate::ctxt::Ctxt;

/// The valid keys of `#[protected]`.
pub(super) const PROTECTED_KEYS: &[&str] =
    &["level", "user", "account", "resource", "version", "crate"];

/// `#[protected(..)]`.
#[derive(Default)]
pub(super) struct ProtectedArgs {
    pub(super) level: Slot<Ident>,
    pub(super) user: Slot<Ident>,
    pub(super) account: Slot<Ident>,
    pub(super) resource: Slot<Ident>,
    /// The integer field every write checks and increments.
    pub(super) version: Slot<Ident>,
    pub(super) krate: Slot<Path>,
    /// Mistakes that did not stop parsing.
    pub(super) ctxt: Ctxt,
}

impl Parse for ProtectedArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut args = ProtectedArgs::default();
        while !input.is_empty() {
            let key = input.call(Ident::parse_any)?;
            let ctxt = &mut args.ctxt;
            if key == "level" {
                args.level.set(&key, value(input)?, ctxt);
            } else if key == "user" {
                args.user.set(&key, value(input)?, ctxt);
            } else if key == "account" {
                args.account.set(&key, value(input)?, ctxt);
            } else if key == "resource" {
                args.resource.set(&key, value(input)?, ctxt);
            } else if key == "version" {
                args.version.set(&key, value(input)?, ctxt);
            } else if key == "crate" {
                args.krate.set(&key, crate_path(input)?, ctxt);
            } else {
                unknown_key(&key, PROTECTED_KEYS, "protected", input, ctxt)?;
            }
            next_argument(input)?;
        }
        Ok(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_key_is_accepted() {
        for key in PROTECTED_KEYS {
            let key: proc_macro2::TokenStream = key.parse().expect("a key");
            let args: ProtectedArgs = syn::parse2(quote::quote!(#key = x)).expect("parses");
            assert!(args.ctxt.check().is_ok(), "{key}");
        }
    }
}
