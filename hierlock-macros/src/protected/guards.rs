//! The guards of a protected module: the traits that bound its refused
//! SeaORM writes.
//!
//! A refused write (`am.save(db)`, `model.delete(db)`,
//! `ActiveModel::builder()`) is an inherent function of the same name,
//! bounded by `&'_ (): __hierlock_NoX`, a trait generated here with the
//! entity's name in its `#[diagnostic::on_unimplemented]`: rustc then says,
//! at the user's call, which entity is protected and what to write. (A
//! trait generic over the entity would print the entity by its definition
//! path, the hidden sealed module.) Each guard's supertrait is
//! `hierlock::__private::Unmet`, which no crate can implement for `&()`;
//! the module's `__hierlock_Unmet`, a type with no values, implements them
//! all, so that rustc does not suggest adding an impl.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, Path};

/// A refused write's kind.
#[derive(Clone, Copy)]
pub(super) enum Guard {
    /// SeaORM's writes of an active model, and its conversion to the raw one.
    ActiveModelWrite,
    /// `Model::delete`.
    ModelDelete,
    /// The dense format's nested builders (`ActiveModel::builder()` ..).
    NestedBuilder,
}

impl Guard {
    fn trait_ident(self) -> Ident {
        format_ident!(
            "__hierlock_{}",
            match self {
                Guard::ActiveModelWrite => "NoActiveModelWrite",
                Guard::ModelDelete => "NoModelDelete",
                Guard::NestedBuilder => "NoNestedBuilder",
            }
        )
    }

    /// The bound of a refused write of module `name`'s entity, from either
    /// of its two modules.
    pub(super) fn bound(self, name: &Ident) -> TokenStream {
        let guard = self.trait_ident();
        quote!(&'__hierlock (): super::#name::#guard)
    }

    /// The message, label and note of the guard of module `name`.
    fn words(self, name: &Ident) -> (String, &'static str, String) {
        match self {
            Guard::ActiveModelWrite => (
                format!("`{name}::Entity` is protected: this SeaORM write would run without a lock"),
                "writes the row with no lock proof",
                "write it in a `#[hierlocked]` method with the proof: `Entity::insert(am).exec(&lock)`, \
                 `Entity::update(am).exec(&lock)` or `Entity::delete(am).exec(&lock)` (`save` is `insert` \
                 or `update`); implementing SeaORM's `IntoActiveModel` for it instead would let SeaORM \
                 write the row without a lock"
                    .to_owned(),
            ),
            Guard::ModelDelete => (
                format!("`{name}::Entity` is protected: `Model::delete` would delete the row without a lock"),
                "deletes the row with no lock proof",
                "delete it in a `#[hierlocked]` method with the proof: `Entity::delete(model).exec(&lock)`"
                    .to_owned(),
            ),
            Guard::NestedBuilder => (
                format!(
                    "`{name}::Entity` is protected: SeaORM's `ActiveModelEx` would write it and its related \
                     rows without a lock"
                ),
                "a nested write with no lock proof",
                format!(
                    "for a nested write, build `{name}::NestedActiveModel::from({name}::ActiveModel {{ .. }})` \
                     and save it in a `#[hierlocked]` method with `.save(&lock)`, which checks every row it \
                     writes; for one row, `Entity::insert(am).exec(&lock)` (`update`, `delete` likewise)"
                ),
            ),
        }
    }
}

/// The guards of module `name`, and the type that implements them.
pub(super) fn items(krate: &Path, name: &Ident, dense: bool) -> TokenStream {
    let mut guards = vec![Guard::ActiveModelWrite, Guard::ModelDelete];
    if dense {
        guards.push(Guard::NestedBuilder);
    }
    let traits = guards.iter().map(|guard| {
        let ident = guard.trait_ident();
        let (message, label, note) = guard.words(name);
        quote! {
            #[doc(hidden)]
            #[allow(non_camel_case_types)]
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            pub trait #ident: #krate::__private::Unmet {}

            impl #ident for __hierlock_Unmet {}
        }
    });
    quote! {
        /// The one type that meets the module's guards: no value exists.
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        pub enum __hierlock_Unmet {}

        impl #krate::__private::Unmet for __hierlock_Unmet {}

        #(#traits)*
    }
}
