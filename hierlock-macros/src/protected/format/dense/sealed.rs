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
//!   trait only hierlock's nested transaction (`NestedTxn`, begun by a
//!   proof) carries: called directly, on `<Entity as EntityTrait>::ActiveModel(Ex)`
//!   with anything else, each is a compile error too. Under a proof the
//!   row writes check each row against it (`hierlock::__private::dense::{insert,
//!   update, delete}`), and so do the junction links of `via` relations
//!   (`hierlock::__private::dense::{establish_links*, delete_links*}`).

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
    let future =
        |ret: TokenStream| quote!(#krate::__private::dense::NestedFuture<'__hierlock, #ret>);
    let model = future(quote!(Model));
    let deleted = future(quote!(#sea_orm::DeleteResult));
    let unit = future(quote!(()));
    let dense = quote!(#krate::__private::dense);
    let protect = quote!(#krate::Protect);
    let junction = quote! {
        J: #protect,
        <J as #sea_orm::EntityTrait>::Model: ::core::marker::Send + ::core::marker::Sync,
    };
    let junction_rows = quote! {
        #junction
        <J as #sea_orm::EntityTrait>::ActiveModel: #sea_orm::ActiveModelBehavior
            + ::core::convert::From<<J as #sea_orm::EntityTrait>::Model>
            + ::core::marker::Send
            + ::core::marker::Sync,
    };
    // SeaORM names the two sides of a `self_ref` `via` relation apart.
    let self_links = [("establish_links_self", false), ("establish_links_self_rev", true)]
        .into_iter()
        .map(|(name, reverse)| {
            let name = syn::Ident::new(name, proc_macro2::Span::call_site());
            quote! {
                /// Only in a nested save under a proof, which checks each
                /// junction row: use `junction::Entity::insert(am).exec(&lock)`
                /// per link.
                pub fn #name<'__hierlock, J, C>(
                    &'__hierlock self,
                    _: J,
                    related: &'__hierlock [Self],
                    delete_leftover: bool,
                    db: &'__hierlock C,
                ) -> #unit
                where
                    Entity: #sea_orm::RelatedSelfVia<J>,
                    #junction_rows
                    C: #links + ?Sized,
                {
                    #dense::establish_links_self::<Self, J, C>(self, related, #reverse, delete_leftover, db)
                }
            }
        });
    let self_links = quote!(#(#self_links)*);
    let link_methods = quote! {
        /// Only in a nested save under a proof, which checks each junction
        /// row: use `junction::Entity::insert(am).exec(&lock)` per link.
        pub fn establish_links<'__hierlock, J, R, C>(
            &'__hierlock self,
            _: J,
            related: &'__hierlock [R],
            delete_leftover: bool,
            db: &'__hierlock C,
        ) -> #unit
        where
            R: #sea_orm::ActiveModelTrait + ::core::marker::Sync,
            <R as #sea_orm::ActiveModelTrait>::Entity: #protect,
            J: #sea_orm::Related<Entity> + #sea_orm::Related<<R as #sea_orm::ActiveModelTrait>::Entity>,
            #junction_rows
            C: #links + ?Sized,
        {
            #dense::establish_links::<Self, R, J, C>(self, related, delete_leftover, db)
        }

        #self_links

        /// Only in a nested delete under a proof, which checks each
        /// junction row: use `junction::Entity::delete_many().filter(..)
        /// .exec(&lock)`.
        pub fn delete_links<'__hierlock, J, C>(&'__hierlock self, _: J, db: &'__hierlock C) -> #deleted
        where
            J: #sea_orm::Related<Entity>,
            #junction
            C: #links + ?Sized,
        {
            #dense::delete_links::<Self, J, C>(self, db)
        }

        /// Only in a nested delete under a proof, which checks each
        /// junction row: use `junction::Entity::delete_many().filter(..)
        /// .exec(&lock)`.
        pub fn delete_links_self<'__hierlock, J, C>(&'__hierlock self, _: J, db: &'__hierlock C) -> #deleted
        where
            Entity: #sea_orm::RelatedSelfVia<J>,
            #junction
            C: #links + ?Sized,
        {
            #dense::delete_links_self::<Self, J, C>(self, db)
        }
    };
    quote! {
        impl ActiveModel {
            /// Only in a nested save under a proof (`am.save(&lock)`), which
            /// checks the row: use `Entity::insert(am).exec(&lock)`.
            pub fn insert<'__hierlock, C>(self, db: &'__hierlock C) -> #model
            where
                C: #raw + ?Sized,
            {
                #krate::__private::dense::insert::<Entity, C>(self, db)
            }

            /// Only in a nested save under a proof, which checks the row: use
            /// `Entity::update(am).exec(&lock)`.
            pub fn update<'__hierlock, C>(self, db: &'__hierlock C) -> #model
            where
                C: #raw + ?Sized,
            {
                #krate::__private::dense::update::<Entity, C>(self, db)
            }

            /// Only in a nested save under a proof, which checks the row: use
            /// `Entity::delete(am).exec(&lock)`.
            pub fn delete<'__hierlock, C>(self, db: &'__hierlock C) -> #deleted
            where
                C: #raw + ?Sized,
            {
                #krate::__private::dense::delete::<Entity, C>(self, db)
            }

            #link_methods
        }

        impl ActiveModelEx {
            #link_methods
        }

    }
}
