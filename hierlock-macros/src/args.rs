//! The argument syntax both attributes share (`key = value`, flags,
//! `crate = <path>`), read into typed slots. Unknown and duplicate keys are
//! reported at the key, and parsing goes on after them so that every mistake
//! is reported at once.
//!
//! Keys are matched by name against one list per attribute (rather than one
//! `custom_keyword!` each, which would be a second list to keep in step):
//! the "valid arguments" message prints that list, and a unit test checks
//! that every key in it is accepted.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Expr, Ident, LitBool, Path, Token, parse_quote};

use crate::ctxt::{Ctxt, list, suggestion};

/// One argument, with the key it was given under (for error spans).
struct Arg<T> {
    key: Span,
    value: T,
}

/// An argument that may be given at most once.
pub(crate) struct Slot<T>(Option<Arg<T>>);

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot(None)
    }
}

impl<T> Slot<T> {
    /// The one setter: a second value is an error at its key.
    pub(crate) fn set(&mut self, key: &Ident, value: T, ctxt: &mut Ctxt) {
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

impl Slot<Path> {
    /// Where hierlock is: `crate = <path>`, or `::hierlock`.
    pub(crate) fn or_hierlock(&self) -> Path {
        self.get()
            .cloned()
            .unwrap_or_else(|| parse_quote!(::hierlock))
    }
}

/// `= <value>`.
pub(crate) fn value<T: Parse>(input: ParseStream<'_>) -> syn::Result<T> {
    input.parse::<Token![=]>()?;
    input.parse()
}

/// A flag: `read`, or `read = true` / `read = false`.
pub(crate) fn flag(input: ParseStream<'_>) -> syn::Result<bool> {
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        Ok(input.parse::<LitBool>()?.value)
    } else {
        Ok(true)
    }
}

/// `crate = path::to::hierlock`.
pub(crate) fn crate_path(input: ParseStream<'_>) -> syn::Result<Path> {
    input.parse::<Token![=]>()?;
    input.call(Path::parse_mod_style)
}

/// Report `key`, then skip its value so the following keys are still read.
pub(crate) fn unknown_key(
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
pub(crate) fn next_argument(input: ParseStream<'_>) -> syn::Result<()> {
    if !input.is_empty() {
        input.parse::<Token![,]>()?;
    }
    Ok(())
}
