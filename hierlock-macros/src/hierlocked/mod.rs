//! `#[hierlocked]`: validate the arguments against the function, then insert
//! the lock prologue before the function's own body.
//!
//! Two shapes of function are accepted: an `async fn`, and the `fn` that
//! `#[async_trait]` makes of one (it runs first, being on the impl or trait
//! around the method), whose body is `Box::pin(async move { .. })`: there
//! the prologue goes inside the async block, after async-trait's own
//! statements (as tracing-attributes' `AsyncInfo` does).
//!
//! The steps: [`args`] parses the arguments, [`validate`] resolves them
//! against the function into a [`Plan`] (reporting every mistake), and
//! [`expand`] writes the prologue the plan describes.

mod args;
mod async_trait;
mod expand;
mod transaction;
mod validate;

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

use crate::ctxt::item_with_error;
use args::HierlockedArgs;
use validate::Plan;

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
    fn a_reference_transaction_is_reborrowed_not_borrowed() {
        let by_ref = expand(
            quote!(user = u),
            quote!(
                async fn f<'t>(&self, txn: &'t DatabaseTransaction, u: i64) -> R {
                    body()
                }
            ),
        );
        assert!(by_ref.contains("txn (& * txn)"), "{by_ref}");
        let by_value = expand(
            quote!(user = u),
            quote!(
                async fn f(&self, txn: DatabaseTransaction, u: i64) -> R {
                    body()
                }
            ),
        );
        assert!(by_value.contains("txn (& txn)"), "{by_value}");
    }

    #[test]
    fn async_trait_bodies_get_the_prologue_inside_their_async_block() {
        // What `#[async_trait]` makes of
        // `async fn f(&self, txn: &DatabaseTransaction, u: i64) -> Result<(), E> { body() }`.
        let out = expand(
            quote!(user = self.user, locker = &self.locker),
            quote! {
                fn f<'life0, 'life1, 'async_trait>(&'life0 self, txn: &'life1 DatabaseTransaction, u: i64)
                    -> Pin<Box<dyn Future<Output = Result<(), E>> + Send + 'async_trait>>
                {
                    Box::pin(async move {
                        if let Some(__ret) = None::<Result<(), E>> { return __ret; }
                        let __self = self;
                        let u = u;
                        let __ret: Result<(), E> = { body() };
                        __ret
                    })
                }
            },
        );
        assert!(!out.contains("needs an `async fn`"), "{out}");
        let prologue = out.find("let lock").expect("a prologue");
        assert!(out.find("let u = u").is_some_and(|i| i < prologue), "{out}");
        assert!(
            out.find("let __ret : Result").is_some_and(|i| i > prologue),
            "{out}"
        );
        assert!(out.contains("__self . user"), "{out}");
        assert!(out.contains("& __self . locker"), "{out}");
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
