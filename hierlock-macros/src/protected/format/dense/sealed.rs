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
//!   method resolution, so the bodies type-check. Each is bounded by a
//!   trait that SeaORM transactions carry and connections do not (called
//!   directly with a connection, a compile error), and writes only on the
//!   `NestedTxn` a proof begins, refusing any other transaction at run
//!   time: under a proof the row writes check each row against it
//!   (`hierlock::__private::dense::{insert, update, delete}`), and so do
//!   the links through a protected junction; the links through a plain
//!   junction are SeaORM's (see `super::via`).

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
    let self_unlink = quote! {
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
    // The raw `ActiveModel` links through protected junctions only (its
    // shadows stand in for SeaORM's trait methods, which users could call).
    let raw_links = quote! {
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
    };
    // `ActiveModelEx`'s, which SeaORM's nested save calls for each `via`
    // field, ask the field's junction (see `super::via`): a protected one's
    // links are checked, a plain one's are SeaORM's.
    let ex_links = quote! {
        /// Links this row to `related` through the junction `J` of one of
        /// its `via` fields, as SeaORM's nested save does: through a
        /// protected junction only under a proof, which checks each link.
        pub fn establish_links<'__hierlock, J, R, C>(
            &'__hierlock self,
            _: J,
            related: &'__hierlock [R],
            delete_leftover: bool,
            db: &'__hierlock C,
        ) -> #unit
        where
            J: #dense::Junction<Self, R>,
            C: #links + #sea_orm::ConnectionTrait,
        {
            <J as #dense::Junction<Self, R>>::establish(self, related, delete_leftover, db)
        }

        /// Unlinks this row from the rows of the `via` field through the
        /// junction `J`, as SeaORM's nested delete does: through a
        /// protected junction only under a proof, which checks each link.
        pub fn delete_links<'__hierlock, J, C>(&'__hierlock self, _: J, db: &'__hierlock C) -> #deleted
        where
            J: #dense::Unlink<Self>,
            C: #links + #sea_orm::ConnectionTrait,
        {
            <J as #dense::Unlink<Self>>::unlink(self, db)
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

            #raw_links
            #self_links
            #self_unlink
        }

        impl ActiveModelEx {
            #ex_links
            #self_links
            #self_unlink
        }

    }
}
