//! What the prologue does, resolved from the arguments and the function's
//! signature: every mistake is reported here, so that expansion cannot fail.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, FnArg, Ident, ItemFn, Path, Signature};

use super::args::HierlockedArgs;
use super::async_trait::async_trait_body;
use super::transaction::{Transaction, find_transaction};
use crate::args::Slot;
use crate::ctxt::Ctxt;

/// What the prologue does, every argument resolved.
pub(super) struct Plan {
    /// The function is `#[async_trait]`'s rewrite of an `async fn`.
    pub(super) async_trait: bool,
    pub(super) krate: Path,
    pub(super) level: &'static str,
    pub(super) access: Access,
    pub(super) requests: TokenStream,
    pub(super) wait: TokenStream,
    pub(super) locker: TokenStream,
    pub(super) txn: Transaction,
    pub(super) proof: Ident,
    pub(super) within: TokenStream,
    /// `rows = <select>`: the rows read with the locks, and the name they
    /// are bound to in the body (the key, as the user wrote it).
    pub(super) rows: Option<(Ident, TokenStream)>,
}

impl Plan {
    pub(super) fn new(args: HierlockedArgs, func: &ItemFn) -> syn::Result<Plan> {
        let HierlockedArgs {
            user,
            account,
            resource,
            resources,
            read,
            read_subtree,
            rows,
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
        let krate = krate.or_hierlock();
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
        let rows = rows.get().zip(rows.key()).map(|(select, key)| {
            let select = quote_spanned!(select.span()=> #select);
            (Ident::new("rows", key), select)
        });
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
            rows,
        })
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

/// The access the locks are taken with: `read`, `read_subtree`, or a write.
#[derive(Clone, Copy)]
pub(super) enum Access {
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
    pub(super) fn proof_type(self, krate: &Path) -> TokenStream {
        match self {
            Access::Write => quote!(#krate::proof::Write),
            Access::Read => quote!(#krate::proof::Read),
            Access::ReadSubtree => quote!(#krate::proof::ReadSubtree),
        }
    }
}

/// The `self` of a method.
pub(super) fn receiver(sig: &Signature) -> Option<syn::token::SelfValue> {
    sig.inputs.iter().find_map(|arg| match arg {
        FnArg::Receiver(r) => Some(r.self_token),
        FnArg::Typed(_) => None,
    })
}

/// Only reached if an error was recorded without being reported: report
/// something rather than expanding wrongly.
fn no_error() -> syn::Error {
    syn::Error::new(Span::call_site(), "#[hierlocked] could not be expanded")
}
