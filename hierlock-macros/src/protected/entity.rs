//! The protected `Entity`'s own functions: SeaORM's reads, and writes that
//! need a lock proof.
//!
//! `Entity` is SeaORM's entity itself (so relations, `find_related`,
//! loaders and `Schema` take it, in plain modules too, as `sea-orm-cli`
//! writes them). Its inherent functions win over `EntityTrait`'s in path
//! resolution, so `account::Entity::insert(am)` is the protected insert,
//! whose `.exec(&lock)` checks the proof. SeaORM's generic writes that take
//! any entity (`Update::many(account::Entity)`,
//! `<account::Entity as EntityTrait>::delete_many()`) still compile: the
//! guarantee table lists them, and `docs/clippy.recommended.toml` flags
//! them.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Ident, Path};

/// `impl Entity { .. }` in the sealed module of facade `name`.
pub(super) fn methods(krate: &Path, name: &Ident) -> TokenStream {
    let sea_orm = quote!(#krate::__private::sea_orm);
    let active_model = quote!(super::#name::ActiveModel);
    let into_raw = quote!(::core::convert::Into::<ActiveModel>::into(::core::convert::Into::<#active_model>::into(model)));
    let pk_value = quote!(
        <<Self as #sea_orm::EntityTrait>::PrimaryKey as #sea_orm::PrimaryKeyTrait>::ValueType
    );
    quote! {
        impl Entity {
            /// `SELECT` rows of this table (SeaORM's `EntityTrait::find`).
            pub fn find() -> #sea_orm::Select<Self> {
                <Self as #sea_orm::EntityTrait>::find()
            }

            /// `SELECT` the row with this primary key (SeaORM's `find_by_id`).
            pub fn find_by_id<T>(values: T) -> #sea_orm::Select<Self>
            where
                T: ::core::convert::Into<#pk_value>,
            {
                <Self as #sea_orm::EntityTrait>::find_by_id(values)
            }

            /// `SELECT` rows of `R` related to this table (SeaORM's
            /// `Related::find_related`).
            pub fn find_related<R>() -> #sea_orm::Select<R>
            where
                R: #sea_orm::EntityTrait,
                Self: #sea_orm::Related<R>,
            {
                <Self as #sea_orm::Related<R>>::find_related()
            }

            /// Insert a row: `.exec(&lock)` checks that the proof covers it.
            pub fn insert<M>(model: M) -> #krate::ProtectedInsert<Self>
            where
                M: ::core::convert::Into<#active_model>,
            {
                #krate::ProtectedInsert::new(#into_raw)
            }

            /// Insert rows: `.exec(&lock)` checks that the proof covers each.
            pub fn insert_many<M, I>(models: I) -> #krate::ProtectedInsertMany<Self>
            where
                M: ::core::convert::Into<#active_model>,
                I: ::core::iter::IntoIterator<Item = M>,
            {
                #krate::ProtectedInsertMany::new(models.into_iter().map(|model| #into_raw))
            }

            /// Update a row by primary key: `.exec(&lock)` checks that the
            /// proof covers it, before and after.
            pub fn update<M>(model: M) -> #krate::ProtectedUpdate<Self>
            where
                M: ::core::convert::Into<#active_model>,
            {
                #krate::ProtectedUpdate::new(#into_raw)
            }

            /// Delete a row by primary key: `.exec(&lock)` checks that the
            /// proof covers it.
            pub fn delete<M>(model: M) -> #krate::ProtectedDelete<Self>
            where
                M: ::core::convert::Into<#active_model>,
            {
                #krate::ProtectedDelete::new(#into_raw)
            }

            /// Delete the row with this primary key: `.exec(&lock)` checks
            /// that the proof covers it.
            pub fn delete_by_id<T>(values: T) -> #krate::ProtectedDelete<Self>
            where
                T: ::core::convert::Into<#pk_value>,
            {
                #krate::ProtectedDelete::by_id(values)
            }

            /// Update the rows matching a filter: `.exec(&lock)` reads them
            /// `FOR UPDATE` and refuses (`NotCovered`, nothing written) if
            /// the proof does not cover every one of them.
            pub fn update_many() -> #krate::ProtectedUpdateMany<Self> {
                #krate::ProtectedUpdateMany::new()
            }

            /// Delete the rows matching a filter: `.exec(&lock)` reads them
            /// `FOR UPDATE` and refuses (`NotCovered`, nothing deleted) if
            /// the proof does not cover every one of them.
            pub fn delete_many() -> #krate::ProtectedDeleteMany<Self> {
                #krate::ProtectedDeleteMany::new()
            }
        }
    }
}
