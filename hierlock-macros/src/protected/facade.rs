//! The expansion of `#[protected]`: the entity as SeaORM derives it, sealed
//! in a hidden sibling module, and under the user's module name a facade
//! that reads like SeaORM and writes only with a lock proof.
//!
//! ```text
//! pub mod resource {                  // the facade: what users name
//!     pub use super::__hierlock_resource::*;  // Entity, Model, Column, Relation, ..
//!     pub struct ActiveModel { .. }   // the same fields; no SeaORM write methods
//!     pub trait __hierlock_NoActiveModelWrite ..  // the refusals' words: see `guards`
//! }
//! #[doc(hidden)]
//! pub mod __hierlock_resource {      // the user's items, as SeaORM derives them
//!     mod sea_orm { .. }              // see `hijack`
//!     impl Entity { .. }              // insert(..).exec(&lock), ..: see `entity`
//!     ..
//! }
//! ```
//!
//! Why a facade: SeaORM writes any type that implements `ActiveModelTrait`
//! (`Insert::one(am)`, `am.save(db)`), so the `ActiveModel` users build is
//! not SeaORM's; the `Entity` is SeaORM's (relations in plain modules name
//! it), with inherent writes that need a proof in place of SeaORM's. The
//! sibling (rather than nested) module keeps the user's `super::` paths
//! meaning what they meant.
//!
//! A dense entity (`#[sea_orm::model]`) gets a few more items in both
//! modules: see `format::dense::sealed` and `format::dense::facade`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{AttrStyle, Attribute, Ident, Item, ItemMod, Path, Type, UseTree};

use super::behavior::is_empty_behavior;
use super::entity;
use super::format::{self, compact::active_columns};
use super::guards::{self, Guard};
use super::refused;

/// The two modules replacing `module`.
pub(super) fn expand(
    krate: &Path,
    level: &str,
    fields: &[Ident],
    version: Option<&Ident>,
    dense: bool,
    module: ItemMod,
) -> TokenStream {
    let ItemMod {
        attrs,
        vis,
        ident: name,
        content,
        ..
    } = module;
    let items = content.map(|(_, items)| items).unwrap_or_default();
    let sealed = format_ident!("__hierlock_{}", name);
    let sea_orm = quote!(#krate::__private::sea_orm);
    let mut columns = active_columns(&items);
    // A dense `Model`'s relation fields are not columns.
    columns.retain(|(_, ty)| !format::dense::is_relation(ty));
    // Both modules name SeaORM through hierlock (see `hijack`), so that
    // entity code needs no direct `sea-orm` dependency: the user's own
    // `use ..::sea_orm;` gives way.
    let uses: Vec<&Item> = items
        .iter()
        .filter(|i| matches!(i, Item::Use(_)) && !imports_sea_orm(i))
        .collect();
    let sealed_items: Vec<&Item> = items
        .iter()
        .filter(|i| !imports_sea_orm(i) && !is_empty_behavior(i))
        .collect();
    // Inner attributes (`//!` docs, `#![allow(..)]`, as at the top of a
    // file that `sea-orm-cli` wrote and the user wrapped in this module) go
    // inside the modules' braces; outer ones before `mod`.
    let (inner, outer): (Vec<&Attribute>, Vec<&Attribute>) = attrs
        .iter()
        .partition(|a| matches!(a.style, AttrStyle::Inner(_)));
    let not_doc = |a: &&Attribute| !a.path().is_ident("doc");
    let outer_lints: Vec<&Attribute> = outer.iter().copied().filter(not_doc).collect();
    let inner_lints: Vec<&Attribute> = inner.iter().copied().filter(not_doc).collect();
    let hijack = hijack(krate, dense);
    let protect = protect_impl(krate, level, fields, version);
    let entity_methods = entity::methods(krate, &name);
    let guards = guards::items(krate, &name, dense);
    let facade_active_model = facade_active_model(krate, &name, &sealed, &columns);
    // A compact facade answers SeaORM's dense names with errors; a dense
    // one has them (see `format::dense::facade`).
    let dense_items = if dense {
        format::dense::facade::items(krate, &name, &sealed)
    } else {
        dense_placeholders(&name, &defined_names(&items))
    };
    // SeaORM's dense nested writes, a plain entity's among them, call
    // `item.into_active_model()` on the related rows they unlink or delete
    // and write what it gives with the raw active model's methods, which
    // `#[protected]` shadows (a proof's transaction writes, another is
    // refused): SeaORM's `IntoActiveModel` into it, which `Insert::one`
    // would also take, stays diverted, so the conversion is inherent. A
    // dense row converts to the protected active model with
    // `ActiveModel::from(model)`.
    let into_active_model = if dense {
        quote! {
            /// SeaORM's raw active model of this row, which SeaORM's nested
            /// writes unlink or delete related rows through: it writes only in a
            /// nested save under a proof. To change the row, use
            /// `ActiveModel::from(model)` and `Entity::update(am).exec(&lock)`.
            #[doc(hidden)]
            pub fn into_active_model(self) -> ActiveModel {
                ::core::convert::From::from(self)
            }
        }
    } else {
        quote! {
            /// This row as a protected active model, to change and write
            /// with `Entity::update(am).exec(&lock)`.
            pub fn into_active_model(self) -> super::#name::ActiveModel {
                ::core::convert::From::from(self)
            }
        }
    };
    let into_raw_active_model = refused::model_into_active_model(krate, &name, quote!(ActiveModel));
    let dense_shadows = if dense {
        let vias = format::dense::via::fields(&items);
        let junctions = format::dense::via::junction_impls(krate, &vias);
        let shadows = format::dense::sealed::shadows(krate);
        quote!(#shadows #junctions)
    } else {
        TokenStream::new()
    };
    // SeaORM's writes of the raw active model in method syntax (which
    // `<Entity as EntityTrait>::ActiveModel` names, and a dense `Model`'s
    // `into_active_model()` gives): refused, but for those of a dense one
    // that SeaORM's nested writes call, which its shadows gate on a proof;
    // a compact one's `action` too, which a plain dense entity's nested save
    // calls through a relation field to it.
    let raw_writes = if dense {
        refused::write_methods(krate, &name, refused::RAW_WRITES_NOT_NESTED)
    } else {
        let writes = refused::write_methods(krate, &name, refused::ACTIVE_MODEL_WRITES);
        let action = refused::write_methods(krate, &name, refused::NESTED_ACTION);
        quote!(#writes #action)
    };
    let model_delete = Guard::ModelDelete.bound(&name);
    let entity_doc = format!(
        "The protected `{name}` entity: SeaORM's entity of this table. Reads are SeaORM's \
         (`find`, `find_by_id`, `find_related`, relations and loaders take it); its own writes \
         (`insert`, `update`, `delete`, `delete_by_id`, `insert_many`, `update_many`, \
         `delete_many`) run with `.exec(&lock)`, the proof of a `#[hierlocked]` method whose \
         locks cover the row."
    );
    quote! {
        #(#outer)*
        #vis mod #name {
            #(#inner)*
            #[allow(unused_imports)]
            use #krate::__private::sea_orm;
            // The module's imports, for the types of `ActiveModel`'s fields.
            #(
                #[allow(unused_imports)]
                #uses
            )*
            pub use super::#sealed::*;
            #[doc = #entity_doc]
            pub use super::#sealed::Entity;
            /// Another name of [`Entity`] (the same type).
            pub use super::#sealed::Entity as Table;

            #guards
            #dense_items
            #facade_active_model
        }

        #[doc(hidden)]
        #(#outer_lints)*
        #vis mod #sealed {
            #(#inner_lints)*
            #hijack
            #(#sealed_items)*

            impl #sea_orm::ActiveModelBehavior for ActiveModel {}

            #into_raw_active_model

            #protect
            #entity_methods
            #dense_shadows

            impl ActiveModel {
                #raw_writes
            }

            impl Model {
                #into_active_model

                /// Not available on a protected entity: it would delete the
                /// row without a lock. Use `Entity::delete(model).exec(&lock)`.
                pub fn delete<'__hierlock, C>(
                    self,
                    _db: &C,
                ) -> ::core::future::Ready<::core::result::Result<#sea_orm::DeleteResult, #sea_orm::DbErr>>
                where
                    #model_delete,
                {
                    #krate::__private::refused()
                }
            }
        }
    }
}

/// SeaORM's derives name `sea_orm::..` relative to the module, so that
/// crates re-exporting SeaORM work. A `sea_orm` module in the sealed module
/// re-exports all of SeaORM except `IntoActiveModel`, which it replaces by
/// a hidden trait of the same shape: the derived
/// `impl sea_orm::IntoActiveModel<ActiveModel> for Model` then does not
/// give SeaORM a way from a `Model` read from the database to an active
/// model it would write without a lock (`Insert::one(model)`,
/// `model.into_active_model().save(db)`, `ModelTrait::delete(model, db)`).
///
/// A dense entity's module also redirects the names its nested writes and
/// `delete_by_<key>` resolve through (see `format::dense::sealed`).
fn hijack(krate: &Path, dense: bool) -> TokenStream {
    let dense = if dense {
        format::dense::sealed::sea_orm_names(krate)
    } else {
        TokenStream::new()
    };
    quote! {
        #[allow(unused_imports)]
        mod sea_orm {
            pub use #krate::__private::sea_orm::*;
            pub use #krate::__private::IntoActiveModel;
            #dense
        }
    }
}

/// The names of the types and traits the module defines or imports.
fn defined_names(items: &[Item]) -> Vec<Ident> {
    fn use_names(tree: &UseTree, out: &mut Vec<Ident>) {
        match tree {
            UseTree::Path(p) => use_names(&p.tree, out),
            UseTree::Name(n) => out.push(n.ident.clone()),
            UseTree::Rename(r) => out.push(r.rename.clone()),
            UseTree::Group(g) => g.items.iter().for_each(|t| use_names(t, out)),
            UseTree::Glob(_) => {}
        }
    }
    let mut out = Vec::new();
    for item in items {
        match item {
            Item::Struct(i) => out.push(i.ident.clone()),
            Item::Enum(i) => out.push(i.ident.clone()),
            Item::Union(i) => out.push(i.ident.clone()),
            Item::Type(i) => out.push(i.ident.clone()),
            Item::Trait(i) => out.push(i.ident.clone()),
            Item::Use(u) => use_names(&u.tree, &mut out),
            _ => {}
        }
    }
    out
}

/// `use hierlock::sea_orm;` and the like: the sealed module's own
/// `sea_orm` (see [`hijack`]) takes their place.
fn imports_sea_orm(item: &Item) -> bool {
    let Item::Use(u) = item else { return false };
    fn last_is_sea_orm(tree: &UseTree) -> bool {
        match tree {
            UseTree::Path(p) => last_is_sea_orm(&p.tree),
            UseTree::Name(n) => n.ident == "sea_orm",
            _ => false,
        }
    }
    last_is_sea_orm(&u.tree)
}

/// `impl Protect for Entity` on the sealed entity: its level, the IDs of a
/// row, and its version (with `impl Versioned`) if it has one.
fn protect_impl(
    krate: &Path,
    level: &str,
    fields: &[Ident],
    version: Option<&Ident>,
) -> TokenStream {
    let sea_orm = quote!(#krate::__private::sea_orm);
    let level_ty = Ident::new(level, Span::call_site());
    let names: Vec<String> = fields.iter().map(ToString::to_string).collect();
    let row_ids = fields
        .iter()
        .map(|f| quote::quote_spanned!(f.span()=> #krate::__private::id_text(&model.#f)));
    let active_ids = fields.iter().map(|f| {
        // The same `id_text` call as in `row_ids`, at the same span: a field
        // that is not an ID is reported once, not twice.
        let text = quote::quote_spanned!(f.span()=> #krate::__private::id_text(value));
        quote!(#krate::__private::active_value(&model.#f).map(|value| #text))
    });
    // `IdParse` for a type with `FromLockId`, through autoref `NoIdParse`
    // (`Unsupported`: the write reads its row first) for any other.
    let id_values = fields.iter().enumerate().map(|(depth, f)| {
        quote! {
            #depth => (&#krate::__private::IdType::of(
                |model: &<Self as #sea_orm::EntityTrait>::Model| &model.#f,
            ))
                .id_value(text),
        }
    });
    let (versioning, versioned) = version_impl(krate, version);
    quote! {
        impl #krate::Protect for Entity {
            type Level = #krate::proof::#level_ty;
            const ID_FIELDS: &'static [&'static str] = &[#(#names),*];

            fn row_ids(
                model: &<Self as #sea_orm::EntityTrait>::Model,
            ) -> ::std::vec::Vec<::std::string::String> {
                ::std::vec![#(#row_ids),*]
            }

            fn active_ids(
                model: &<Self as #sea_orm::EntityTrait>::ActiveModel,
            ) -> ::std::vec::Vec<::core::option::Option<::std::string::String>> {
                ::std::vec![#(#active_ids),*]
            }

            fn id_value(depth: usize, text: &str) -> #krate::IdValue {
                use #krate::__private::{IdParse as _, NoIdParse as _};
                match depth {
                    #(#id_values)*
                    _ => #krate::IdValue::Unsupported,
                }
            }

            #versioning
        }

        #versioned
    }
}

/// The version items of `impl Protect`, and `impl Versioned`.
fn version_impl(krate: &Path, version: Option<&Ident>) -> (TokenStream, TokenStream) {
    let Some(field) = version else {
        return (TokenStream::new(), TokenStream::new());
    };
    let sea_orm = quote!(#krate::__private::sea_orm);
    let name = field.to_string();
    // The same call at the field's span in both places, so that a field
    // that is not an integer is reported there, once.
    let row =
        quote::quote_spanned!(field.span()=> #krate::__private::version_number(&model.#field));
    let active = quote::quote_spanned!(field.span()=> #krate::__private::version_number(value));
    let items = quote! {
        const VERSION_FIELD: ::core::option::Option<&'static str> =
            ::core::option::Option::Some(#name);

        fn version_range() -> (i64, i64) {
            use #krate::__private::{NoVersionRange as _, VersionRange as _};
            (&#krate::__private::VersionType::of(
                |model: &<Self as #sea_orm::EntityTrait>::Model| &model.#field,
            ))
                .range()
        }

        fn row_version(
            model: &<Self as #sea_orm::EntityTrait>::Model,
        ) -> ::core::option::Option<i64> {
            ::core::option::Option::Some(#row)
        }

        fn active_version(
            model: &<Self as #sea_orm::EntityTrait>::ActiveModel,
        ) -> ::core::option::Option<i64> {
            #krate::__private::active_value(&model.#field).map(|value| #active)
        }

        fn init_version(model: &mut <Self as #sea_orm::EntityTrait>::ActiveModel) {
            // `INITIAL_VERSION`, 0, is every integer's default.
            if model.#field.is_not_set() {
                model.#field = #sea_orm::ActiveValue::Set(::core::default::Default::default());
            }
        }
    };
    (items, quote!(impl #krate::Versioned for Entity {}))
}

/// The names SeaORM's dense format looks for in the module of a relation
/// field's target (`ModelEx`, `ActiveModelEx`, `EntityLoader`,
/// `EntityLoaderWith`), as types whose use reports that a dense entity
/// relates to a protected compact one with a field, and what to write
/// instead. `defined` are the names the module defines itself, left to it.
///
/// The first is a type with a constant that panics, the others aliases of
/// it: rustc evaluates the constant only where the type is used, reports its
/// panic once, and reports nothing of the uses it makes errors of (an unmet
/// bound would be an error at each use: about 25 for one field).
fn dense_placeholders(name: &Ident, defined: &[Ident]) -> TokenStream {
    let message = format!(
        "a relation field of a dense entity cannot point at protected `{name}::Entity`, \
         which is compact: make `{name}` dense too (`#[sea_orm::model]`), or remove the \
         field and relate with `impl Related<super::{name}::Entity> for Entity {{ fn to() -> \
         RelationDef {{ Entity::belongs_to(super::{name}::Entity).from(Column::..).to(\
         super::{name}::Column::..).into() }} }}`"
    );
    let mut placeholders = [
        "ModelEx",
        "ActiveModelEx",
        "EntityLoader",
        "EntityLoaderWith",
    ]
    .into_iter()
    .filter(|p| !defined.iter().any(|d| d == p))
    .map(|p| Ident::new(p, Span::call_site()));
    let Some(first) = placeholders.next() else {
        return TokenStream::new();
    };
    quote! {
        #[doc(hidden)]
        // The message as an argument: a format string in every edition.
        pub type #first = [(); ::core::panic!("{}", #message)];
        #(
            #[doc(hidden)]
            pub type #placeholders = #first;
        )*
    }
}

/// The `ActiveModel` users build: SeaORM's fields, no SeaORM write methods.
fn facade_active_model(
    krate: &Path,
    name: &Ident,
    sealed: &Ident,
    columns: &[(Ident, Type)],
) -> TokenStream {
    let sea_orm = quote!(#krate::__private::sea_orm);
    let idents: Vec<&Ident> = columns.iter().map(|(i, _)| i).collect();
    let types: Vec<&Type> = columns.iter().map(|(_, t)| t).collect();
    let doc = format!(
        "A `{name}` row to write: the fields of SeaORM's active model. Write it \
         with `Entity::insert(am)`, `Entity::update(am)` or `Entity::delete(am)` \
         and `.exec(&lock)`; SeaORM's `save`, `insert`, `update` and `delete` \
         do not compile on it."
    );
    let writes = refused::write_methods(krate, name, refused::ACTIVE_MODEL_WRITES);
    let active_model_traits = refused::active_model_traits(krate, name);
    let model_into_active_model =
        refused::model_into_active_model(krate, name, quote!(ActiveModel));
    quote! {
        #[doc = #doc]
        #[derive(Clone, Debug, PartialEq, Default)]
        pub struct ActiveModel {
            #(
                #[allow(missing_docs)]
                pub #idents: #sea_orm::ActiveValue<#types>,
            )*
        }

        impl ActiveModel {
            /// Every field `NotSet`.
            pub fn new() -> Self {
                ::core::default::Default::default()
            }

            #writes
        }

        impl ::core::convert::From<Model> for ActiveModel {
            fn from(model: Model) -> Self {
                ActiveModel {
                    #(#idents: #sea_orm::ActiveValue::Unchanged(model.#idents),)*
                }
            }
        }

        impl ::core::convert::From<ActiveModel> for super::#sealed::ActiveModel {
            fn from(model: ActiveModel) -> Self {
                super::#sealed::ActiveModel {
                    #(#idents: model.#idents,)*
                }
            }
        }

        #active_model_traits
        #model_into_active_model
    }
}
