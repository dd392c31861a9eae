//! The transaction the locks are taken on: the parameter named by
//! `txn = ..`, or the one whose type is a `DatabaseTransaction`.

use quote::ToTokens;
use syn::{FnArg, Ident, Pat, Signature, Type};

use crate::ctxt::Ctxt;

/// The transaction parameter.
pub(super) struct Transaction {
    pub(super) name: Ident,
    /// Its type is a reference (`&'t DatabaseTransaction`, `&'t C`): the
    /// prologue then reborrows the transaction itself rather than the
    /// parameter, so that the proof can live as long as `'t` (and be
    /// returned).
    pub(super) by_reference: bool,
}

/// The transaction parameter: the one named by `txn = <ident>`, or the only
/// parameter whose type is a `DatabaseTransaction` (by value or reference).
pub(super) fn find_transaction(
    sig: &Signature,
    named: Option<&Ident>,
    ctxt: &mut Ctxt,
) -> Option<Transaction> {
    let params: Vec<(&Pat, &Type)> = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(p) => Some((&*p.pat, &*p.ty)),
            FnArg::Receiver(_) => None,
        })
        .collect();
    if let Some(named) = named {
        let found = params.iter().find_map(|(pat, ty)| match pat {
            Pat::Ident(p) if p.ident == *named => Some(is_reference(ty)),
            _ => None,
        });
        if found.is_none() {
            let names: Vec<String> = params
                .iter()
                .filter_map(|(pat, _)| match pat {
                    Pat::Ident(p) => Some(format!("`{}`", p.ident)),
                    _ => None,
                })
                .collect();
            ctxt.error(
                named.span(),
                format!(
                    "`{}` has no parameter `{named}`\nhelp: `txn` names the transaction parameter; the parameters are: {}",
                    sig.ident,
                    if names.is_empty() {
                        "(none)".to_owned()
                    } else {
                        names.join(", ")
                    }
                ),
            );
        }
        // Keep the user's token: errors about its type point at it.
        return found.map(|by_reference| Transaction {
            name: named.clone(),
            by_reference,
        });
    }
    let candidates: Vec<(&Pat, &Type)> = params
        .into_iter()
        .filter(|(_, ty)| is_transaction(ty))
        .collect();
    match candidates.as_slice() {
        [] => {
            ctxt.error(
                sig.paren_token.span.join(),
                format!(
                    "`{}` has no transaction parameter: #[hierlocked] locks on the `&DatabaseTransaction` the method receives\n\
                     help: add a parameter `txn: &sea_orm::DatabaseTransaction`, or name one of another type with `txn = <parameter>`",
                    sig.ident
                ),
            );
            None
        }
        [(pat, ty)] => match pat {
            Pat::Ident(p) => Some(Transaction {
                name: p.ident.clone(),
                by_reference: is_reference(ty),
            }),
            other => {
                ctxt.error_spanned(
                    other,
                    "#[hierlocked] locks on this transaction parameter and needs to name it\nhelp: bind it to a name, e.g. `txn: &DatabaseTransaction`",
                );
                None
            }
        },
        [_, (second, _), ..] => {
            let names: Vec<String> = candidates
                .iter()
                .map(|(pat, _)| pat.to_token_stream().to_string())
                .collect();
            ctxt.error_spanned(
                second,
                format!(
                    "`{}` has several transaction parameters ({}): which one should be locked?\nhelp: name it with #[hierlocked(txn = {}, ..)]",
                    sig.ident,
                    names.join(", "),
                    names[0]
                ),
            );
            None
        }
    }
}

/// `&T`, `&mut T`, `(&T)`.
fn is_reference(ty: &Type) -> bool {
    match ty {
        Type::Reference(_) => true,
        Type::Paren(p) => is_reference(&p.elem),
        Type::Group(g) => is_reference(&g.elem),
        _ => false,
    }
}

/// `DatabaseTransaction`, `&DatabaseTransaction`, `&mut sea_orm::DatabaseTransaction`…
fn is_transaction(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => is_transaction(&r.elem),
        Type::Paren(p) => is_transaction(&p.elem),
        Type::Group(g) => is_transaction(&g.elem),
        Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "DatabaseTransaction" && s.arguments.is_none()),
        _ => false,
    }
}
