//! SeaORM's own traits on a protected entity's types, and inherent
//! stand-ins for SeaORM's write methods, under a guard's bound that nothing
//! meets.
//!
//! SeaORM's writes bound what they are given by its traits:
//! `ActiveModelTrait` (`Insert::one(am)`, `Update::one(am)`,
//! `<Entity as EntityTrait>::update(am)`, a generic
//! `fn f<A: ActiveModelTrait>`), `ActiveModelBehavior`
//! (`ActiveModelTrait::insert(am, db)`) and `IntoActiveModel` from the
//! stored `Model` (`ActiveModelTrait::save`, a via link's junction row).
//! Where a type has no impl, rustc reports its bare trait bound, names the
//! hidden module and suggests implementing the trait, which would hand
//! SeaORM a protected row to write without a lock. With an impl whose bound
//! is a guard's, rustc reports the guard, whose words name the protected
//! write, and a user's own impl of the trait conflicts with it.
//!
//! One spelling stays rustc's: a write whose target active model is left to
//! inference from a stored `Model` (`Insert::one(model)`,
//! `ModelTrait::delete(model, db)`): the `Model` converts to two active
//! models, so rustc reports the unmet `IntoActiveModel<_>` itself.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Ident, Path};

use super::guards::Guard;

/// `ActiveModelTrait` and `ActiveModelBehavior` for the protected
/// `ActiveModel` of module `name` (in the module that defines it).
pub(in crate::protected) fn active_model_traits(krate: &Path, name: &Ident) -> TokenStream {
    let sea_orm = quote!(#krate::__private::sea_orm);
    let guard = Guard::ActiveModelWrite.bound(name);
    let active_model_trait = active_model_trait(krate, quote!(ActiveModel), &guard);
    quote! {
        #active_model_trait
        impl<'__hierlock> #sea_orm::ActiveModelBehavior for ActiveModel where #guard {}
    }
}

/// `ActiveModelTrait` for `ty`, of the entity `Entity` in scope, under
/// `guard`. Given to a type that is not an active model (a dense entity's
/// loaded `ModelEx`), it is the one impl of `IntoActiveModel` SeaORM's
/// blanket gives the type, so a write that takes it (`Insert::one(model_ex)`,
/// `Delete::one(model_ex)`) reports the guard.
pub(in crate::protected) fn active_model_trait(
    krate: &Path,
    ty: TokenStream,
    guard: &TokenStream,
) -> TokenStream {
    let sea_orm = quote!(#krate::__private::sea_orm);
    let unreachable = quote!(#krate::__private::unreachable_write());
    let column = quote!(<Entity as #sea_orm::EntityTrait>::Column);
    let value = quote!(#sea_orm::Value);
    quote! {
        impl<'__hierlock> #sea_orm::ActiveModelTrait for #ty
        where
            #guard,
        {
            type Entity = Entity;
            fn take(&mut self, _: #column) -> #sea_orm::ActiveValue<#value> {
                #unreachable
            }
            fn get(&self, _: #column) -> #sea_orm::ActiveValue<#value> {
                #unreachable
            }
            fn set_if_not_equals(&mut self, _: #column, _: #value) {
                #unreachable
            }
            fn try_set(
                &mut self,
                _: #column,
                _: #value,
            ) -> ::core::result::Result<(), #sea_orm::DbErr> {
                #unreachable
            }
            fn not_set(&mut self, _: #column) {
                #unreachable
            }
            fn is_not_set(&self, _: #column) -> bool {
                #unreachable
            }
            fn default() -> Self {
                #unreachable
            }
            fn default_values() -> Self {
                #unreachable
            }
            fn reset(&mut self, _: #column) {
                #unreachable
            }
        }
    }
}

/// `IntoActiveModel<target>` for the stored `Model` of module `name`:
/// `target` is SeaORM's raw active model (in the sealed module) or the
/// protected one (in the facade).
pub(in crate::protected) fn model_into_active_model(
    krate: &Path,
    name: &Ident,
    target: TokenStream,
) -> TokenStream {
    let sea_orm = quote!(#krate::__private::sea_orm);
    let guard = Guard::ActiveModelWrite.bound(name);
    quote! {
        impl<'__hierlock> #sea_orm::IntoActiveModel<#target> for Model
        where
            #guard,
        {
            fn into_active_model(self) -> #target {
                #krate::__private::unreachable_write()
            }
        }
    }
}

/// SeaORM's writes of an active model in method syntax (`am.save(db)` ..).
pub(in crate::protected) const ACTIVE_MODEL_WRITES: &[&str] = &[
    "save",
    "insert",
    "update",
    "update_without_returning",
    "delete",
];

/// SeaORM's dense nested write of one row, which a plain dense entity's
/// nested save calls on the related row of a relation field: for a
/// protected compact target that is its raw active model (refused as a
/// whole where the save names the target's dense types:
/// `facade::dense_placeholders`).
pub(in crate::protected) const NESTED_ACTION: &[&str] = &["action"];

/// Those of a dense entity's raw active model that SeaORM's nested writes
/// do not call (they call `insert`, `update` and `delete`, which the
/// sealed module shadows: `format::dense::sealed`).
pub(in crate::protected) const RAW_WRITES_NOT_NESTED: &[&str] =
    &["save", "update_without_returning"];

/// Inherent methods named as SeaORM's `ActiveModelTrait` writes `methods`,
/// which win method resolution over them, under the guard's bound: a call
/// is one error in hierlock's words (SeaORM's `delete` and
/// `update_without_returning` have no bound that would refuse them).
pub(in crate::protected) fn write_methods(
    krate: &Path,
    name: &Ident,
    methods: &[&str],
) -> TokenStream {
    let sea_orm = quote!(#krate::__private::sea_orm);
    let guard = Guard::ActiveModelWrite.bound(name);
    let methods = methods.iter().map(|method| {
        let ret = match *method {
            "save" | "action" => quote!(Self),
            "insert" | "update" => quote!(Model),
            "update_without_returning" => quote!(#sea_orm::UpdateResult),
            "delete" => quote!(#sea_orm::DeleteResult),
            other => unreachable!("not a write of SeaORM's active models: {other}"),
        };
        // `action` (a dense nested write's step) says which write it is.
        let kind = (*method == "action").then(|| quote!(_action: #sea_orm::ActiveModelAction,));
        let method = Ident::new(method, Span::call_site());
        quote! {
            /// Not available on a protected entity: it would write without a
            /// lock. Use `Entity::insert/update/delete(am).exec(&lock)`.
            pub fn #method<'__hierlock, C>(
                self,
                #kind
                _db: &C,
            ) -> ::core::future::Ready<::core::result::Result<#ret, #sea_orm::DbErr>>
            where
                #guard,
            {
                #krate::__private::refused()
            }
        }
    });
    quote!(#(#methods)*)
}
