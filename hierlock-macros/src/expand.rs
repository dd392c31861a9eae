//! `#[hierlocked]`: validate the arguments against the function, then insert
//! the lock prologue before the function's own body.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    AttrStyle, Expr, FnArg, Ident, ItemFn, Pat, Path, ReturnType, Signature, Type, parse_quote,
};

use crate::attr::{HierlockedArgs, Slot};
use crate::ctxt::{Ctxt, item_with_error};

/// The entry point, on `proc_macro2` types.
pub(crate) fn hierlocked(args: TokenStream, item: TokenStream) -> TokenStream {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(err) => {
            let err = syn::Error::new(
                err.span(),
                format!(
                    "#[hierlocked] goes on an `async fn` with a body (a free function or a method): {err}"
                ),
            );
            return item_with_error(item, err);
        }
    };
    let args: HierlockedArgs = match syn::parse2(args) {
        Ok(args) => args,
        Err(err) => return item_with_error(item, err),
    };
    match Plan::new(args, &func) {
        Ok(plan) => plan.expand(func),
        // The parameters meant for the attribute would be reported unused.
        Err(err) => item_with_error(quote!(#[allow(unused_variables)] #item), err),
    }
}

/// What the prologue does, every argument resolved.
struct Plan {
    krate: Path,
    level: &'static str,
    read: bool,
    requests: TokenStream,
    wait: TokenStream,
    locker: TokenStream,
    txn: Ident,
    proof: Ident,
    within: TokenStream,
}

impl Plan {
    fn new(args: HierlockedArgs, func: &ItemFn) -> syn::Result<Plan> {
        let HierlockedArgs {
            user,
            account,
            resource,
            resources,
            read,
            nowait,
            timeout,
            txn,
            locker,
            proof,
            within,
            krate,
            mut ctxt,
        } = args;
        let sig = &func.sig;
        if sig.asyncness.is_none() {
            ctxt.error(
                sig.fn_token.span,
                format!(
                    "#[hierlocked] needs an `async fn`: the locks are awaited before the body runs\n\
                     help: write `async fn {}(..)`",
                    sig.ident
                ),
            );
        }
        let krate = krate
            .get()
            .cloned()
            .unwrap_or_else(|| parse_quote!(::hierlock));
        let read = read.get().copied().unwrap_or(false);
        let targets = Targets {
            user: user.get(),
            account: account.get(),
            resource: &resource,
            resources: &resources,
        };
        let (level, requests) = targets.requests(&krate, read, &mut ctxt);

        let nowait = nowait.get().copied().unwrap_or(false);
        if let (true, Some(key)) = (nowait, timeout.key()) {
            ctxt.error(
                key,
                "give either `nowait` (fail at once) or `timeout = <Duration>` (wait at most that long), not both",
            );
        }
        let wait = match timeout.get() {
            Some(t) => quote_spanned!(t.span()=>
                ::core::option::Option::Some(#krate::Wait::Timeout(#t))
            ),
            None if nowait => quote!(::core::option::Option::Some(#krate::Wait::NoWait)),
            None => quote!(::core::option::Option::None),
        };
        let within = match within.get() {
            Some(w) => quote_spanned!(w.span()=>
                ::core::option::Option::Some(#krate::__private::AsWithin::within(&(#w)))
            ),
            None => quote!(::core::option::Option::None),
        };
        let locker = locker_of(sig, locker.get(), &krate, &mut ctxt);
        let txn = find_transaction(sig, txn.get(), &mut ctxt);
        let proof = proof
            .get()
            .cloned()
            .unwrap_or_else(|| Ident::new("lock", Span::call_site()));
        ctxt.check()?;
        let (Some(level), Some(txn)) = (level, txn) else {
            return Err(no_error());
        };
        Ok(Plan {
            krate,
            level,
            read,
            requests,
            wait,
            locker,
            txn,
            proof,
            within,
        })
    }

    fn expand(self, func: ItemFn) -> TokenStream {
        let Plan {
            krate,
            level,
            read,
            requests,
            wait,
            locker,
            txn,
            proof,
            within,
        } = self;
        let ItemFn {
            attrs,
            vis,
            sig,
            block,
        } = func;
        let (inner, outer): (Vec<_>, Vec<_>) = attrs
            .into_iter()
            .partition(|a| matches!(a.style, AttrStyle::Inner(_)));
        let level = Ident::new(level, Span::call_site());
        let access = access_type(&krate, read);
        let error = Ident::new("__hierlock_error", Span::call_site());
        let proved = Ident::new("__hierlock_proof", Span::call_site());
        // Errors about the return type point at the return type: every token
        // of the call carries its span.
        let output = match &sig.output {
            ReturnType::Type(_, ty) => ty.span(),
            ReturnType::Default => sig.ident.span(),
        };
        let fail = respan(quote!(#krate::__private::lock_failed(#error)), output);
        let txn_ref = quote_spanned!(txn.span()=> #krate::__private::txn(&#txn));
        quote! {
            #(#outer)*
            #vis #sig {
                #(#inner)*
                #[allow(unused_variables)]
                let #proof: #krate::Locked<'_, #krate::proof::#level, #access> =
                    match #krate::__private::acquire::<#krate::proof::#level, #access>(
                        #locker,
                        #txn_ref,
                        #requests,
                        #wait,
                        #within,
                    )
                    .await
                    {
                        ::core::result::Result::Ok(#proved) => #proved,
                        ::core::result::Result::Err(#error) => return #fail,
                    };
                #block
            }
        }
    }
}

/// The target arguments.
struct Targets<'a> {
    user: Option<&'a Expr>,
    account: Option<&'a Expr>,
    resource: &'a Slot<Expr>,
    resources: &'a Slot<Expr>,
}

impl Targets<'_> {
    /// The proof's level (the most specific target) and the requests.
    fn requests(
        &self,
        krate: &Path,
        read: bool,
        ctxt: &mut Ctxt,
    ) -> (Option<&'static str>, TokenStream) {
        for (slot, what) in [
            (
                self.resource,
                "`resource` needs `account = <expr>`: a resource is named by its user, account and resource IDs",
            ),
            (
                self.resources,
                "`resources` needs `account = <expr>`: resources are named by their user, account and resource IDs",
            ),
        ] {
            if let (Some(key), None) = (slot.key(), self.account) {
                ctxt.error(key, what);
            }
        }
        if let (true, Some(key)) = (self.resource.is_set(), self.resources.key()) {
            ctxt.error(
                key,
                "give either `resource = <expr>` (one) or `resources = <iterable>` (several), not both",
            );
        }
        let Some(user) = self.user else {
            ctxt.error(
                Span::call_site(),
                "#[hierlocked] needs `user = <expr>`: the user whose tree is locked\n\
                 help: #[hierlocked(user = <expr>)], #[hierlocked(user = <expr>, account = <expr>)], \
                 or add `resource = <expr>`",
            );
            return (None, TokenStream::new());
        };
        let access = access_type(krate, read);
        let id = |expr: &Expr| quote_spanned!(expr.span()=> #krate::__private::id(&(#expr)));
        let one = |target: TokenStream| {
            quote!(::std::vec![#krate::__private::request::<#access>(#target)])
        };
        let u = id(user);
        match (self.account, self.resource.get(), self.resources.get()) {
            (None, ..) => (Some("UserLevel"), one(quote!(#krate::Target::user(#u)))),
            (Some(account), None, None) => {
                let a = id(account);
                (
                    Some("AccountLevel"),
                    one(quote!(#krate::Target::account(#u, #a))),
                )
            }
            (Some(account), Some(resource), _) => {
                let (a, r) = (id(account), id(resource));
                (
                    Some("ResourceLevel"),
                    one(quote!(#krate::Target::resource(#u, #a, #r))),
                )
            }
            (Some(account), None, Some(many)) => {
                let a = id(account);
                let call = quote_spanned!(many.span()=>
                    #krate::__private::resources::<#access, _, _, _>(#u, #a, #many)
                );
                (Some("ResourceLevel"), call)
            }
        }
    }
}

/// Where the locker comes from: `locker = <expr>`, or `self`.
fn locker_of(sig: &Signature, locker: Option<&Expr>, krate: &Path, ctxt: &mut Ctxt) -> TokenStream {
    match (locker, receiver(sig)) {
        (Some(expr), _) => quote_spanned!(expr.span()=> #krate::HasLocker::locker(&(#expr))),
        (None, Some(self_token)) => {
            quote_spanned!(self_token.span()=> #krate::HasLocker::locker(&#self_token))
        }
        (None, None) => {
            ctxt.error(
                sig.ident.span(),
                format!(
                    "`{}` has no `self` to take the locker from\n\
                     help: name one with #[hierlocked(locker = <expr>, ..)], an expression whose type \
                     implements `hierlock::HasLocker` (such as `hierlock::Locker`)",
                    sig.ident
                ),
            );
            TokenStream::new()
        }
    }
}

/// `tokens`, every one of them at `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(group) = &tree {
                let mut inner = Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                tree = TokenTree::Group(inner);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}

fn access_type(krate: &Path, read: bool) -> TokenStream {
    if read {
        quote!(#krate::proof::Read)
    } else {
        quote!(#krate::proof::Write)
    }
}

/// The `self` of a method.
fn receiver(sig: &Signature) -> Option<syn::token::SelfValue> {
    sig.inputs.iter().find_map(|arg| match arg {
        FnArg::Receiver(r) => Some(r.self_token),
        FnArg::Typed(_) => None,
    })
}

/// The transaction parameter: the one named by `txn = <ident>`, or the only
/// parameter whose type is a `DatabaseTransaction` (by value or reference).
fn find_transaction(sig: &Signature, named: Option<&Ident>, ctxt: &mut Ctxt) -> Option<Ident> {
    let params: Vec<(&Pat, &Type)> = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(p) => Some((&*p.pat, &*p.ty)),
            FnArg::Receiver(_) => None,
        })
        .collect();
    if let Some(named) = named {
        let found = params.iter().find_map(|(pat, _)| match pat {
            Pat::Ident(p) if p.ident == *named => Some(p.ident.clone()),
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
        return found.map(|_| named.clone());
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
        [(pat, _)] => match pat {
            Pat::Ident(p) => Some(p.ident.clone()),
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

/// Only reached if an error was recorded without being reported: report
/// something rather than expanding wrongly.
fn no_error() -> syn::Error {
    syn::Error::new(Span::call_site(), "#[hierlocked] could not be expanded")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(args: TokenStream, item: TokenStream) -> String {
        hierlocked(args, item).to_string()
    }

    #[test]
    fn the_body_follows_the_prologue_in_its_own_block() {
        let out = expand(
            quote!(user = u, account = a),
            quote! {
                async fn f(&self, txn: &DatabaseTransaction, u: i64, a: i64) -> Result<(), E> { body() }
            },
        );
        assert!(out.contains("AccountLevel"), "{out}");
        assert!(out.contains("Target :: account"), "{out}");
        assert!(out.ends_with("{ body () } }"), "{out}");
    }

    #[test]
    fn errors_keep_the_item() {
        let out = expand(
            quote!(user = u, colour = 3),
            quote!(
                fn f(txn: &DatabaseTransaction) {}
            ),
        );
        assert!(out.contains("fn f (txn"), "{out}");
        assert!(out.contains("needs an `async fn`"), "{out}");
        assert!(out.contains("unknown argument `colour`"), "{out}");
        assert!(out.contains("has no `self`"), "{out}");
    }
}
