//! The arguments of `#[hierlocked(..)]` and `#[protected(..)]`, parsed into
//! typed structs. Unknown and duplicate keys are reported at the key, and
//! parsing goes on after them so that every mistake is reported at once.
//!
//! Keys are matched by name against one list per attribute (rather than one
//! `custom_keyword!` each, which would be a second list to keep in step):
//! the "valid arguments" message prints that list, and a unit test checks
//! that every key in it is accepted.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Expr, Ident, LitBool, Path, Token};

use crate::ctxt::{Ctxt, list, suggestion};

/// One argument, with the key it was given under (for error spans).
pub(crate) struct Arg<T> {
    pub(crate) key: Span,
    pub(crate) value: T,
}

/// An argument that may be given at most once.
pub(crate) struct Slot<T>(pub(crate) Option<Arg<T>>);

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot(None)
    }
}

impl<T> Slot<T> {
    /// The one setter: a second value is an error at its key.
    fn set(&mut self, key: &Ident, value: T, ctxt: &mut Ctxt) {
        if self.0.is_some() {
            ctxt.error(
                key.span(),
                format!("duplicate `{key}` argument: give each argument once"),
            );
        } else {
            self.0 = Some(Arg {
                key: key.span(),
                value,
            });
        }
    }

    pub(crate) fn get(&self) -> Option<&T> {
        self.0.as_ref().map(|a| &a.value)
    }

    pub(crate) fn key(&self) -> Option<Span> {
        self.0.as_ref().map(|a| a.key)
    }

    pub(crate) fn is_set(&self) -> bool {
        self.0.is_some()
    }
}

/// The valid keys of `#[hierlocked]`, in the order the docs list them.
pub(crate) const HIERLOCKED_KEYS: &[&str] = &[
    "user",
    "account",
    "resource",
    "resources",
    "read",
    "read_subtree",
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
pub(crate) struct HierlockedArgs {
    pub(crate) user: Slot<Expr>,
    pub(crate) account: Slot<Expr>,
    pub(crate) resource: Slot<Expr>,
    pub(crate) resources: Slot<Expr>,
    pub(crate) read: Slot<bool>,
    pub(crate) read_subtree: Slot<bool>,
    pub(crate) nowait: Slot<bool>,
    pub(crate) timeout: Slot<Expr>,
    pub(crate) txn: Slot<Ident>,
    pub(crate) locker: Slot<Expr>,
    pub(crate) proof: Slot<Ident>,
    pub(crate) within: Slot<Expr>,
    pub(crate) krate: Slot<Path>,
    /// Mistakes that did not stop parsing.
    pub(crate) ctxt: Ctxt,
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

/// The valid keys of `#[protected]`.
pub(crate) const PROTECTED_KEYS: &[&str] =
    &["level", "user", "account", "resource", "version", "crate"];

/// `#[protected(..)]`.
#[derive(Default)]
pub(crate) struct ProtectedArgs {
    pub(crate) level: Slot<Ident>,
    pub(crate) user: Slot<Ident>,
    pub(crate) account: Slot<Ident>,
    pub(crate) resource: Slot<Ident>,
    /// The integer field every write checks and increments.
    pub(crate) version: Slot<Ident>,
    pub(crate) krate: Slot<Path>,
    /// Mistakes that did not stop parsing.
    pub(crate) ctxt: Ctxt,
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

/// `= <value>`.
fn value<T: Parse>(input: ParseStream<'_>) -> syn::Result<T> {
    input.parse::<Token![=]>()?;
    input.parse()
}

/// A flag: `read`, or `read = true` / `read = false`.
fn flag(input: ParseStream<'_>) -> syn::Result<bool> {
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        Ok(input.parse::<LitBool>()?.value)
    } else {
        Ok(true)
    }
}

/// `crate = path::to::hierlock`.
fn crate_path(input: ParseStream<'_>) -> syn::Result<Path> {
    input.parse::<Token![=]>()?;
    input.call(Path::parse_mod_style)
}

/// Report `key`, then skip its value so the following keys are still read.
fn unknown_key(
    key: &Ident,
    valid: &[&str],
    attribute: &str,
    input: ParseStream<'_>,
    ctxt: &mut Ctxt,
) -> syn::Result<()> {
    let mut message = format!(
        "unknown argument `{key}` of #[{attribute}]\nvalid arguments are: {}",
        list(valid)
    );
    if let Some(close) = suggestion(&key.unraw().to_string(), valid) {
        message.push_str(&format!("\nhelp: did you mean `{close}`?"));
    }
    ctxt.error(key.span(), message);
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        input.parse::<Expr>()?;
    }
    Ok(())
}

/// A comma between arguments, or the end.
fn next_argument(input: ParseStream<'_>) -> syn::Result<()> {
    if !input.is_empty() {
        input.parse::<Token![,]>()?;
    }
    Ok(())
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
        for key in PROTECTED_KEYS {
            let key: proc_macro2::TokenStream = key.parse().expect("a key");
            let args: ProtectedArgs = syn::parse2(quote::quote!(#key = x)).expect("parses");
            assert!(args.ctxt.check().is_ok(), "{key}");
        }
    }
}
