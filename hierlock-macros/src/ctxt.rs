//! Collecting errors, so that one compile reports every mistake (serde's `Ctxt`).

use std::fmt::Display;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// Errors found so far.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: Vec<syn::Error>,
}

impl Ctxt {
    /// Record an error at `span`.
    pub(crate) fn error(&mut self, span: Span, message: impl Display) {
        self.errors.push(syn::Error::new(span, message));
    }

    /// Record an error spanning `tokens`.
    pub(crate) fn error_spanned(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.errors.push(syn::Error::new_spanned(tokens, message));
    }

    /// All errors as one, if any.
    pub(crate) fn check(self) -> Result<(), syn::Error> {
        let mut errors = self.errors.into_iter();
        let Some(mut first) = errors.next() else {
            return Ok(());
        };
        for error in errors {
            first.combine(error);
        }
        Err(first)
    }
}

/// The item as the user wrote it, followed by the errors: the item keeps
/// compiling (so its uses do not cascade into more errors) and the errors
/// point at the user's tokens.
pub(crate) fn item_with_error(item: TokenStream, error: syn::Error) -> TokenStream {
    let mut out = item;
    out.extend(error.into_compile_error());
    out
}

/// `did you mean `account`?` for a key close to a valid one.
pub(crate) fn suggestion(unknown: &str, valid: &[&str]) -> Option<String> {
    valid
        .iter()
        .map(|key| (distance(unknown, key), *key))
        .filter(|(d, key)| *d <= 2.max(key.len() / 3))
        .min()
        .map(|(_, key)| key.to_owned())
}

/// Levenshtein distance, for suggestions.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// `` `a`, `b`, `c` `` for messages.
pub(crate) fn list(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_close_keys() {
        let keys = ["user", "account", "resource", "resources", "nowait"];
        assert_eq!(suggestion("acount", &keys).as_deref(), Some("account"));
        assert_eq!(suggestion("resouce", &keys).as_deref(), Some("resource"));
        assert_eq!(suggestion("no_wait", &keys).as_deref(), Some("nowait"));
        assert_eq!(suggestion("banana", &keys), None);
    }
}
