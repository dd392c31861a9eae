//! The lock prologue a [`Plan`] describes, inserted before the function's
//! own body (or, in an `#[async_trait]` method, inside its async block).

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{AttrStyle, Expr, Ident, ItemFn, ReturnType, Stmt};

use super::async_trait::{async_trait_body, async_trait_body_mut, rename_self};
use super::transaction::Transaction;
use super::validate::{Plan, receiver};

impl Plan {
    pub(super) fn expand(self, func: ItemFn) -> TokenStream {
        let Plan {
            async_trait,
            krate,
            level,
            access,
            requests,
            wait,
            locker,
            txn,
            proof,
            within,
            rows,
        } = self;
        let ItemFn {
            attrs,
            vis,
            sig,
            mut block,
        } = func;
        let (inner, outer): (Vec<_>, Vec<_>) = attrs
            .into_iter()
            .partition(|a| matches!(a.style, AttrStyle::Inner(_)));
        let level = Ident::new(level, Span::call_site());
        let access = access.proof_type(&krate);
        let error = Ident::new("__hierlock_error", Span::call_site());
        let proved = Ident::new("__hierlock_proof", Span::call_site());
        // Errors about the return type point at the return type: every token
        // of the call carries its span.
        let output = match &sig.output {
            ReturnType::Type(_, ty) => ty.span(),
            ReturnType::Default => sig.ident.span(),
        };
        let output = async_trait_body(&block)
            .and_then(|body| body.output)
            .unwrap_or(output);
        let fail = respan(quote!(#krate::__private::lock_failed(#error)), output);
        let Transaction { name, by_reference } = txn;
        let txn_ref = if by_reference {
            // `&*txn`: a reborrow of the transaction for all of `'t`, not a
            // borrow of the local parameter.
            quote_spanned!(name.span()=> #krate::__private::txn(&*#name))
        } else {
            quote_spanned!(name.span()=> #krate::__private::txn(&#name))
        };
        let proof_type = quote!(#krate::Locked<'_, #krate::proof::#level, #access>);
        let (binding, binding_type, acquire) = match rows {
            None => (
                quote!(#proof),
                proof_type,
                quote!(#krate::__private::acquire::<#krate::proof::#level, #access>(
                    #locker, #txn_ref, #requests, #wait, #within,
                )),
            ),
            // The rows, read once the locks are held (on the MySQL family in
            // the lock statement itself).
            Some((rows, select)) => (
                quote!((#proof, #rows)),
                quote!((#proof_type, _)),
                quote!(#krate::__private::acquire_reading::<#krate::proof::#level, #access, _>(
                    #locker, #txn_ref, #requests, #wait, #within, #select,
                )),
            ),
        };
        let prologue = quote! {
            #[allow(unused_variables)]
            let #binding: #binding_type = match #acquire.await {
                ::core::result::Result::Ok(#proved) => #proved,
                ::core::result::Result::Err(#error) => return #fail,
            };
        };
        if async_trait {
            // async-trait has bound `self` to `__self` in the async block.
            let prologue = if receiver(&sig).is_some() {
                rename_self(prologue)
            } else {
                prologue
            };
            if let Some(body) = async_trait_body_mut(&mut block) {
                // Tokens as they are, not reparsed: they were generated here.
                let prologue = Stmt::Expr(Expr::Verbatim(prologue), None);
                body.block.stmts.insert(body.insert_at, prologue);
            }
            let stmts = &block.stmts;
            quote! {
                #(#outer)*
                #vis #sig {
                    #(#inner)*
                    #(#stmts)*
                }
            }
        } else {
            quote! {
                #(#outer)*
                #vis #sig {
                    #(#inner)*
                    #prologue
                    #block
                }
            }
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
