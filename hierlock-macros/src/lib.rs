//! The attributes of [hierlock](https://docs.rs/hierlock): `#[hierlocked]`
//! and `#[protected]`. Use them as `hierlock::hierlocked` and
//! `hierlock::protected`; this crate is an implementation detail, pinned to
//! the `hierlock` version it was released with.

mod attr;
mod ctxt;
mod expand;
mod protected;

use proc_macro::TokenStream;

/// Lock before the body runs. See the `hierlock` crate.
#[proc_macro_attribute]
pub fn hierlocked(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::hierlocked(args.into(), item.into()).into()
}

/// Make a SeaORM entity writable only with a lock proof. See the `hierlock` crate.
#[proc_macro_attribute]
pub fn protected(args: TokenStream, item: TokenStream) -> TokenStream {
    protected::protected(args.into(), item.into()).into()
}
