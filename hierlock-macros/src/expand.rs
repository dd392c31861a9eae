//! `#[hierlocked]`: validate the arguments against the function, then insert
//! the lock prologue before the function's own body.
//!
//! Two shapes of function are accepted: an `async fn`, and the `fn` that
//! `#[async_trait]` makes of one (it runs first, being on the impl or trait
//! around the method), whose body is `Box::pin(async move { .. })`: there
//! the prologue goes inside the async block, after async-trait's own
//! statements (as tracing-attributes' `AsyncInfo` does).

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    AttrStyle, Block, Expr, ExprAsync, FnArg, Ident, ItemFn, Pat, Path, ReturnType, Signature,
    Stmt, Type, parse_quote,
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
    /// The function is `#[async_trait]`'s rewrite of an `async fn`.
    async_trait: bool,
    krate: Path,
    level: &'static str,
    access: Access,
    requests: TokenStream,
    wait: TokenStream,
    locker: TokenStream,
    txn: Transaction,
    proof: Ident,
    within: TokenStream,
}

/// The transaction parameter.
struct Transaction {
    name: Ident,
    /// Its type is a reference (`&'t DatabaseTransaction`, `&'t C`): the
    /// prologue then reborrows the transaction itself rather than the
    /// parameter, so that the proof can live as long as `'t` (and be
    /// returned).
    by_reference: bool,
}

impl Plan {
    fn new(args: HierlockedArgs, func: &ItemFn) -> syn::Result<Plan> {
        let HierlockedArgs {
            user,
            account,
            resource,
            resources,
            read,
            read_subtree,
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
        let async_trait = sig.asyncness.is_none() && async_trait_body(&func.block).is_some();
        if sig.asyncness.is_none() && !async_trait {
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
        let access = Access::of(&read, &read_subtree, &mut ctxt);
        let targets = Targets {
            user: user.get(),
            account: account.get(),
            resource: &resource,
            resources: &resources,
        };
        let (level, requests) = targets.requests(&krate, access, &mut ctxt);

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
        })
    }

    fn expand(self, func: ItemFn) -> TokenStream {
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
        let prologue = quote! {
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

/// Where the user's body is in `#[async_trait]`'s rewrite of an `async fn`:
///
/// ```text
/// fn f<'life0, 'async_trait>(&'life0 self, ..) -> Pin<Box<dyn Future<Output = R> + Send + 'async_trait>> {
///     Box::pin(async move {
///         if let Some(__ret) = None::<R> { return __ret; }   // a type hint
///         let __self = self;                                  // the parameters
///         let x = x;
///         let __ret: R = { body };                            // <- the prologue goes before this
///         __ret
///     })
/// }
/// ```
struct AsyncTraitBody<'a> {
    block: &'a mut Block,
    insert_at: usize,
}

/// The span of `R` in `let __ret: R = { body }`, and where the body starts.
struct AsyncTraitShape {
    output: Option<Span>,
    insert_at: usize,
}

/// The async block of `Box::pin(async move { .. })` (or a bare
/// `async move { .. }`), the last expression of `block`.
fn async_block(block: &Block) -> Option<&ExprAsync> {
    match block.stmts.last()? {
        Stmt::Expr(Expr::Async(body), None) => Some(body),
        Stmt::Expr(Expr::Call(call), None) if is_box_pin(&call.func) && call.args.len() == 1 => {
            match call.args.first()? {
                Expr::Async(body) => Some(body),
                _ => None,
            }
        }
        _ => None,
    }
}

fn async_block_mut(block: &mut Block) -> Option<&mut ExprAsync> {
    match block.stmts.last_mut()? {
        Stmt::Expr(Expr::Async(body), None) => Some(body),
        Stmt::Expr(Expr::Call(call), None) if is_box_pin(&call.func) && call.args.len() == 1 => {
            match call.args.first_mut()? {
                Expr::Async(body) => Some(body),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `Box::pin`, `::std::boxed::Box::pin`…
fn is_box_pin(func: &Expr) -> bool {
    let Expr::Path(path) = func else {
        return false;
    };
    let segments: Vec<&Ident> = path.path.segments.iter().map(|s| &s.ident).collect();
    matches!(segments.as_slice(), [.., boxed, pin] if *boxed == "Box" && *pin == "pin")
}

/// The shape of an `#[async_trait]` body, if `block` is one.
fn async_trait_body(block: &Block) -> Option<AsyncTraitShape> {
    let body = async_block(block)?;
    let stmts = &body.block.stmts;
    // `let __ret: R = { body };` or `let _: () = { body };`
    let typed = stmts.iter().enumerate().find_map(|(i, stmt)| match stmt {
        Stmt::Local(local) => match (&local.pat, &local.init) {
            (Pat::Type(typed), Some(init)) if matches!(*init.expr, Expr::Block(_)) => {
                let output = match &*typed.pat {
                    Pat::Ident(p) if p.ident == "__ret" => Some(typed.ty.span()),
                    _ => None,
                };
                Some(AsyncTraitShape {
                    output,
                    insert_at: i,
                })
            }
            _ => None,
        },
        _ => None,
    });
    // An associated `impl Trait` output: the body is the last block.
    typed.or_else(|| match stmts.last() {
        Some(Stmt::Expr(Expr::Block(_), None)) => Some(AsyncTraitShape {
            output: None,
            insert_at: stmts.len() - 1,
        }),
        _ => None,
    })
}

fn async_trait_body_mut(block: &mut Block) -> Option<AsyncTraitBody<'_>> {
    let AsyncTraitShape { insert_at, .. } = async_trait_body(block)?;
    let body = async_block_mut(block)?;
    Some(AsyncTraitBody {
        block: &mut body.block,
        insert_at,
    })
}

/// `self` (a value, not a path `self::..`) becomes `__self`, the name
/// async-trait binds the receiver to in its async block.
fn rename_self(tokens: TokenStream) -> TokenStream {
    let mut out = Vec::new();
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        let next_is_path = matches!(
            (trees.get(i + 1), trees.get(i + 2)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && b.as_char() == ':'
        );
        out.push(match tree {
            TokenTree::Ident(ident) if ident == "self" && !next_is_path => {
                TokenTree::Ident(Ident::new("__self", ident.span()))
            }
            TokenTree::Group(group) => {
                let mut renamed = Group::new(group.delimiter(), rename_self(group.stream()));
                renamed.set_span(group.span());
                TokenTree::Group(renamed)
            }
            other => other.clone(),
        });
    }
    out.into_iter().collect()
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
        access: Access,
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
        let access = access.proof_type(krate);
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

/// The access the locks are taken with: `read`, `read_subtree`, or a write.
#[derive(Clone, Copy)]
enum Access {
    Write,
    Read,
    ReadSubtree,
}

impl Access {
    /// The access the flags ask for; both set is an error at `read_subtree`.
    fn of(read: &Slot<bool>, read_subtree: &Slot<bool>, ctxt: &mut Ctxt) -> Access {
        let read = read.get().copied().unwrap_or(false);
        let subtree = read_subtree.get().copied().unwrap_or(false);
        match (read, subtree, read_subtree.key()) {
            (true, true, Some(key)) => {
                ctxt.error(
                    key,
                    "give either `read` (shared locks on the targets) or `read_subtree` \
                     (shared locks on the targets and everything below them), not both",
                );
                Access::Read
            }
            (_, true, _) => Access::ReadSubtree,
            (true, ..) => Access::Read,
            _ => Access::Write,
        }
    }

    /// The proof's access type, `hierlock::proof::{Write, Read, ReadSubtree}`.
    fn proof_type(self, krate: &Path) -> TokenStream {
        match self {
            Access::Write => quote!(#krate::proof::Write),
            Access::Read => quote!(#krate::proof::Read),
            Access::ReadSubtree => quote!(#krate::proof::ReadSubtree),
        }
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
fn find_transaction(
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
    fn rename_self_leaves_paths_alone() {
        let out = rename_self(quote!(self.a + self::b(self)));
        assert_eq!(out.to_string(), "__self . a + self :: b (__self)");
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
