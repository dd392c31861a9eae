//! The facade of a protected dense entity: SeaORM's dense reads under the
//! names SeaORM gives them, and its nested builders refused.
//!
//! The facade re-exports the sealed module (`Entity` with what the dense
//! derive puts on it: `COLUMN`, `load()`, `find_by_<key>` and
//! `delete_by_<key>`, the last a protected delete; `ModelEx`,
//! `EntityLoader`, `ActiveModelEx`, `Relation`, ..). SeaORM's
//! `ActiveModelEx` is also named `NestedActiveModel`, which the protected
//! `ActiveModel` converts into; its nested writes run only with a proof
//! (see `super::sealed`). Refused, with the way to write instead:
//! `ActiveModel::builder()`,
//! `ActiveModel::into_ex()`, the conversion of an `ActiveModelEx` into the
//! facade's `ActiveModel` (which `Entity::insert(..)` takes), and SeaORM's
//! `Insert::one` / `Delete::one` of a loaded `ModelEx`: SeaORM's own
//! `IntoActiveModel` for it is diverted with the compact one, and
//! `ActiveModelTrait` for it, under a bound nothing meets, makes SeaORM's
//! blanket `IntoActiveModel` the one that applies, so rustc's error is the
//! bound's, which names the way to write.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Ident, Path};

use crate::protected::guards::Guard;
use crate::protected::refused;

/// The dense items of the facade module `name`.
pub(in crate::protected) fn items(krate: &Path, name: &Ident, sealed: &Ident) -> TokenStream {
    let guard = Guard::NestedBuilder.bound(name);
    let model_ex_refused =
        refused::active_model_trait(krate, quote!(super::#sealed::ModelEx), &guard);
    quote! {
        /// SeaORM's nested active model of this entity (its dense
        /// `ActiveModelEx`: the row with its related rows), for a nested save
        /// under a lock proof: `NestedActiveModel::from(am).add_..(..)` (or
        /// `NestedActiveModel::new().set_..(..)`), then `.save(&lock)` in a
        /// `#[hierlocked]` method. Every row the save writes is checked
        /// against the proof, as the flat writes check theirs.
        pub type NestedActiveModel = super::#sealed::ActiveModelEx;

        impl ::core::convert::From<ActiveModel> for super::#sealed::ActiveModelEx {
            fn from(am: ActiveModel) -> Self {
                super::#sealed::ActiveModel::from(am).into()
            }
        }

        impl ActiveModel {
            /// Not available on a protected entity: SeaORM's builder makes an
            /// `ActiveModelEx`. Build `NestedActiveModel::from(ActiveModel { .. })`
            /// and save it with the proof, `.save(&lock)`; or write one row
            /// with `Entity::insert(am).exec(&lock)`.
            pub fn builder<'__hierlock>() -> Self
            where
                #guard,
            {
                #krate::__private::unreachable_write()
            }

            /// Not available on a protected entity: see [`ActiveModel::builder`].
            pub fn into_ex<'__hierlock>(self) -> Self
            where
                #guard,
            {
                #krate::__private::unreachable_write()
            }
        }

        impl super::#sealed::ModelEx {
            /// Not available on a protected entity: SeaORM's `ActiveModelEx`
            /// writes related rows without a lock. Use `ActiveModel::from(model)`
            /// and `Entity::update(am).exec(&lock)`.
            pub fn into_active_model<'__hierlock>(self) -> super::#sealed::ActiveModelEx
            where
                #guard,
            {
                #krate::__private::unreachable_write()
            }
        }

        #model_ex_refused

        impl<'__hierlock> ::core::convert::From<super::#sealed::ActiveModelEx> for ActiveModel
        where
            #guard,
        {
            fn from(_: super::#sealed::ActiveModelEx) -> Self {
                #krate::__private::unreachable_write()
            }
        }
    }
}
