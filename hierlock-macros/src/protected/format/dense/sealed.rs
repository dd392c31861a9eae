//! What the sealed module of a protected dense entity adds around SeaORM's
//! derive, so that every write path the dense format generates is refused
//! or proof-gated (`hierlock/src/guarantee/dense.rs` holds the other half).
//!
//! - The module-local `sea_orm` also redirects `TransactionTrait` (the
//!   bound of the nested writes: implemented by nothing), `Delete` and
//!   `ValidatedDeleteOne` (`delete_by_<key>` becomes a protected delete).
//! - The nested writes' bodies call `model.insert(db)`, `item.update(db)`,
//!   `model.delete(db)` on the raw `ActiveModel` and
//!   `model.establish_links(..)` / `self.delete_links(..)` on
//!   `ActiveModelEx`. SeaORM's versions need its `IntoActiveModel`, which
//!   the sealed module diverts; inherent methods of the same names win
//!   method resolution, so the bodies type-check, and each is bounded by a
//!   trait only the (never implemented) nested transaction carries: called
//!   directly, on `<Table as EntityTrait>::ActiveModel(Ex)`, each is a
//!   compile error too.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Path;

/// The `pub use` lines the module-local `sea_orm` gets on top of the
/// compact ones.
pub(in crate::protected) fn sea_orm_names(krate: &Path) -> TokenStream {
    quote! {
        pub use #krate::__private::dense::{Delete, TransactionTrait, ValidatedDeleteOne};
    }
}

/// Inherent shadows of SeaORM's writes on the raw `ActiveModel` and on
/// `ActiveModelEx`.
pub(in crate::protected) fn shadows(krate: &Path) -> TokenStream {
    let sea_orm = quote!(#krate::__private::sea_orm);
    let raw = quote!(#krate::__private::dense::RawWrite);
    let links = quote!(#krate::__private::dense::LinkWrite);
    let ready = |ret: TokenStream| quote!(::core::future::Ready<::core::result::Result<#ret, #sea_orm::DbErr>>);
    let model = ready(quote!(Model));
    let deleted = ready(quote!(#sea_orm::DeleteResult));
    let unit = ready(quote!(()));
    let link_methods = quote! {
        /// Not available on a protected entity: it would write junction
        /// rows without a lock.
        pub fn establish_links<J, R, C>(&self, _: J, _: &[R], _: bool, _db: &C) -> #unit
        where
            C: #links + ?Sized,
        {
            #krate::__private::refused()
        }

        /// Not available on a protected entity: it would write junction
        /// rows without a lock.
        pub fn establish_links_self<J, R, C>(&self, _: J, _: &[R], _: bool, _db: &C) -> #unit
        where
            C: #links + ?Sized,
        {
            #krate::__private::refused()
        }

        /// Not available on a protected entity: it would write junction
        /// rows without a lock.
        pub fn establish_links_self_rev<J, R, C>(&self, _: J, _: &[R], _: bool, _db: &C) -> #unit
        where
            C: #links + ?Sized,
        {
            #krate::__private::refused()
        }

        /// Not available on a protected entity: it would delete junction
        /// rows without a lock.
        pub fn delete_links<J, C>(&self, _: J, _db: &C) -> #deleted
        where
            C: #links + ?Sized,
        {
            #krate::__private::refused()
        }

        /// Not available on a protected entity: it would delete junction
        /// rows without a lock.
        pub fn delete_links_self<J, C>(&self, _: J, _db: &C) -> #deleted
        where
            C: #links + ?Sized,
        {
            #krate::__private::refused()
        }
    };
    quote! {
        impl ActiveModel {
            /// Not available on a protected entity: it would insert the row
            /// without a lock. Use `Entity::insert(am).exec(&lock)`.
            pub fn insert<C>(self, _db: &C) -> #model
            where
                C: #raw + ?Sized,
            {
                #krate::__private::refused()
            }

            /// Not available on a protected entity: it would update the row
            /// without a lock. Use `Entity::update(am).exec(&lock)`.
            pub fn update<C>(self, _db: &C) -> #model
            where
                C: #raw + ?Sized,
            {
                #krate::__private::refused()
            }

            /// Not available on a protected entity: it would delete the row
            /// without a lock. Use `Entity::delete(am).exec(&lock)`.
            pub fn delete<C>(self, _db: &C) -> #deleted
            where
                C: #raw + ?Sized,
            {
                #krate::__private::refused()
            }

            #link_methods
        }

        impl ActiveModelEx {
            #link_methods
        }
    }
}
