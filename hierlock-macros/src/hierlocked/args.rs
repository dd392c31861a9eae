//! The arguments of `#[hierlocked(..)]`, parsed into a typed struct: its
//! list of keys is the one the "valid arguments" message prints.

use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Expr, Ident, Path};

use crate::args::{Slot, crate_path, flag, next_argument, unknown_key, value};
use crate::ctxt::Ctxt;

/// The valid keys of `#[hierlocked]`, in the order the docs list them.
pub(super) const HIERLOCKED_KEYS: &[&str] = &[
    "user",
    "account",
    "resource",
    "resources",
    "read",
    "read_subtree",
    "rows",
    "nowait",
    "timeout",
    "txn",
    "locker",
    "proof",
    "within",
    "crate",
];

/// `#[hierlocked(..)]`.
#[derive(Default)]
pub(super) struct HierlockedArgs {
    pub(super) user: Slot<Expr>,
    pub(super) account: Slot<Expr>,
    pub(super) resource: Slot<Expr>,
    pub(super) resources: Slot<Expr>,
    pub(super) read: Slot<bool>,
    pub(super) read_subtree: Slot<bool>,
    pub(super) rows: Slot<Expr>,
    pub(super) nowait: Slot<bool>,
    pub(super) timeout: Slot<Expr>,
    pub(super) txn: Slot<Ident>,
    pub(super) locker: Slot<Expr>,
    pub(super) proof: Slot<Ident>,
    pub(super) within: Slot<Expr>,
    pub(super) krate: Slot<Path>,
    /// Mistakes that did not stop parsing.
    pub(super) ctxt: Ctxt,
}

impl Parse for HierlockedArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut args = HierlockedArgs::default();
        while !input.is_empty() {
            let key = input.call(Ident::parse_any)?;
            let ctxt = &mut args.ctxt;
            if key == "user" {
                args.user.set(&key, value(input)?, ctxt);
            } else if key == "account" {
                args.account.set(&key, value(input)?, ctxt);
            } else if key == "resource" {
                args.resource.set(&key, value(input)?, ctxt);
            } else if key == "resources" {
                args.resources.set(&key, value(input)?, ctxt);
            } else if key == "read" {
                args.read.set(&key, flag(input)?, ctxt);
            } else if key == "read_subtree" {
                args.read_subtree.set(&key, flag(input)?, ctxt);
            } else if key == "rows" {
                args.rows.set(&key, value(input)?, ctxt);
            } else if key == "nowait" {
                args.nowait.set(&key, flag(input)?, ctxt);
            } else if key == "timeout" {
                args.timeout.set(&key, value(input)?, ctxt);
            } else if key == "txn" {
                args.txn.set(&key, value(input)?, ctxt);
            } else if key == "locker" {
                args.locker.set(&key, value(input)?, ctxt);
            } else if key == "proof" {
                args.proof.set(&key, value(input)?, ctxt);
            } else if key == "within" {
                args.within.set(&key, value(input)?, ctxt);
            } else if key == "crate" {
                args.krate.set(&key, crate_path(input)?, ctxt);
            } else {
                unknown_key(&key, HIERLOCKED_KEYS, "hierlocked", input, ctxt)?;
            }
            next_argument(input)?;
        }
        Ok(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_hierlocked(tokens: proc_macro2::TokenStream) -> HierlockedArgs {
        syn::parse2(tokens).expect("parses")
    }

    #[test]
    fn every_key_parses_into_its_slot() {
        let args = parse_hierlocked(quote::quote! {
            user = self.user, account = a, resources = &ids, read, nowait = false,
            txn = t, locker = &self.locks, proof = guard, within = outer, crate = ::my::hl
        });
        assert!(args.user.is_set() && args.account.is_set() && args.resources.is_set());
        assert_eq!(args.read.get(), Some(&true));
        assert_eq!(args.nowait.get(), Some(&false));
        assert_eq!(
            args.proof.get().map(ToString::to_string).as_deref(),
            Some("guard")
        );
        assert!(args.ctxt.check().is_ok());
    }

    #[test]
    fn unknown_and_duplicate_keys_are_collected() {
        let args = parse_hierlocked(quote::quote!(user = u, acount = a, user = v, colour = 1));
        let err = args.ctxt.check().unwrap_err();
        let messages: Vec<String> = err.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(messages[0].contains("did you mean `account`?"));
        assert!(messages[1].contains("duplicate `user`"));
        assert!(messages[2].contains("valid arguments are: `user`"));
    }

    #[test]
    fn every_listed_key_is_accepted() {
        for key in HIERLOCKED_KEYS {
            let key: proc_macro2::TokenStream = key.parse().expect("a key");
            let value = match key.to_string().as_str() {
                "crate" => quote::quote!(::x),
                "read" | "read_subtree" | "nowait" => quote::quote!(true),
                _ => quote::quote!(x),
            };
            let args = parse_hierlocked(quote::quote!(#key = #value));
            assert!(args.ctxt.check().is_ok(), "{key}");
        }
    }
}
