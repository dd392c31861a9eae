//! SeaORM 2's dense entity format (`#[sea_orm::model]`), refused with its
//! compact equivalent spelled out.
//!
//! A dense entity declares its relations as fields of `Model`
//! (`pub user: HasOne<super::user::Entity>`), and SeaORM derives from them
//! an `ActiveModelEx` whose `save` writes the related rows too, and
//! `delete_by_<unique key>` functions: writes of protected rows with no
//! lock. `#[sea_orm::compact_model]` adds the same `ActiveModelEx` to a
//! compact entity. So `#[protected]` takes the compact format, and its
//! error on a dense `Model` writes out the `Relation` enum and `Related`
//! impls that replace the relation fields.

use std::fmt::Write as _;

use syn::{Attribute, Field, Fields, GenericArgument, ItemStruct, PathArguments, Type, TypePath};

/// The dense attribute on `Model` (`#[sea_orm::model]`,
/// `#[sea_orm::compact_model]`), if any, and whether it is the compact one.
pub(in crate::protected) fn dense_attr(model: &ItemStruct) -> Option<(&Attribute, bool)> {
    model.attrs.iter().find_map(|a| {
        let segments = &a.path().segments;
        let last = segments.last()?;
        let qualified = segments.len() > 1;
        if qualified && last.ident == "model" {
            Some((a, false))
        } else if qualified && last.ident == "compact_model" {
            Some((a, true))
        } else {
            None
        }
    })
}

/// The error for a dense `Model`: what to write instead.
pub(in crate::protected) fn refusal(model: &ItemStruct, compact: bool, module: &str) -> String {
    if compact {
        return "remove `#[sea_orm::compact_model]`: #[protected] does not support the `ActiveModelEx` \
                it adds (its `save` writes related rows, and its `delete_by_<unique key>` functions \
                delete, without a lock)\n\
                help: keep `#[derive(DeriveEntityModel)]`, the `Relation` enum and the `Related` impls as they are"
            .to_owned();
    }
    let relations = relations(model);
    let mut help = String::new();
    if relations.is_empty() {
        help.push_str(
            "help: remove `#[sea_orm::model]` and add the compact format's relation enum:\n\n\
             \x20   #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]\n\
             \x20   pub enum Relation {}\n",
        );
    } else {
        let fields: Vec<String> = relations.iter().map(|r| format!("`{}`", r.field)).collect();
        let _ = write!(
            help,
            "help: write the compact format (what `sea-orm-cli generate entity` writes unless given \
             `--entity-format dense`): remove `#[sea_orm::model]` and the relation field{} {}, and add:\n\n",
            if fields.len() == 1 { "" } else { "s" },
            fields.join(", ")
        );
        help.push_str(&compact_items(&relations, &upper_camel(module)));
    }
    let help = help.trim_end();
    format!(
        "#[protected] does not support SeaORM's dense entity format (`#[sea_orm::model]`): the `save` of its \
         `ActiveModelEx` writes related rows, and its `delete_by_<unique key>` functions delete, without a lock\n{help}"
    )
}

/// A relation field of a dense `Model`.
struct Relation {
    field: String,
    kind: Kind,
    /// The target entity's path as written (`super::user::Entity`).
    target: String,
    /// `Relation`'s variant for it.
    variant: String,
    from: Option<String>,
    to: Option<String>,
    /// The junction module of a many-to-many relation (`via = "cake_filling"`).
    via: Option<String>,
    /// `on_update`, `on_delete`, `fk_name`, as written.
    extra: Vec<(String, String)>,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    BelongsTo,
    HasOne,
    HasMany,
}

fn relations(model: &ItemStruct) -> Vec<Relation> {
    let Fields::Named(named) = &model.fields else {
        return Vec::new();
    };
    named.named.iter().filter_map(relation).collect()
}

fn relation(field: &Field) -> Option<Relation> {
    let Type::Path(TypePath { qself: None, path }) = &field.ty else {
        return None;
    };
    let last = path.segments.last()?;
    let by_type = match last.ident.to_string().as_str() {
        "HasOne" => Kind::HasOne,
        "HasMany" => Kind::HasMany,
        "BelongsTo" => Kind::BelongsTo,
        _ => return None,
    };
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let Some(GenericArgument::Type(target)) = args.args.first() else {
        return None;
    };
    let target = optional_inner(target).unwrap_or(target);
    let Type::Path(target) = target else {
        return None;
    };
    let target_path = &target.path;
    let mut kind = by_type;
    let mut from = None;
    let mut to = None;
    let mut via = None;
    let mut variant = None;
    let mut extra = Vec::new();
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("sea_orm")) {
        let _ = attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            let value = if meta.input.peek(syn::Token![=]) {
                let lit: syn::LitStr = meta.value()?.parse()?;
                Some(lit.value())
            } else {
                None
            };
            match (key.as_str(), value) {
                ("belongs_to", None) => kind = Kind::BelongsTo,
                ("has_one", None) => kind = Kind::HasOne,
                ("has_many", None) => kind = Kind::HasMany,
                ("from", Some(v)) => from = Some(v),
                ("to", Some(v)) => to = Some(v),
                ("via", Some(v)) => via = Some(v),
                ("relation_enum", Some(v)) => variant = Some(v),
                (k @ ("on_update" | "on_delete" | "fk_name"), Some(v)) => {
                    extra.push((k.to_owned(), v));
                }
                _ => {}
            }
            Ok(())
        });
    }
    if from.is_some() && to.is_some() && via.is_none() {
        kind = Kind::BelongsTo;
    }
    let target = path_text(target_path);
    let variant = variant.unwrap_or_else(|| {
        let segments: Vec<String> = target_path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let module = segments
            .len()
            .checked_sub(2)
            .and_then(|i| segments.get(i))
            .or(segments.last())
            .cloned()
            .unwrap_or_default();
        upper_camel(&module)
    });
    Some(Relation {
        field: field.ident.as_ref()?.to_string(),
        kind,
        target,
        variant,
        from,
        to,
        via,
        extra,
    })
}

/// `T` of `Option<T>`.
fn optional_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(TypePath { qself: None, path }) = ty else {
        return None;
    };
    let last = path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(inner) => Some(inner),
        _ => None,
    }
}

/// The compact format's `Relation` enum and `Related` impls.
fn compact_items(relations: &[Relation], this: &str) -> String {
    let mut out = String::from(
        "    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]\n    pub enum Relation {\n",
    );
    for r in relations.iter().filter(|r| r.via.is_none()) {
        let key = match r.kind {
            Kind::BelongsTo => "belongs_to",
            Kind::HasOne => "has_one",
            Kind::HasMany => "has_many",
        };
        let mut args = vec![format!("{key} = \"{}\"", r.target)];
        if r.kind == Kind::BelongsTo {
            let module = module_of(&r.target);
            if let Some(from) = &r.from {
                args.push(format!("from = \"{}\"", columns(from, "")));
            }
            if let Some(to) = &r.to {
                args.push(format!("to = \"{}\"", columns(to, &module)));
            }
        }
        for (k, v) in &r.extra {
            args.push(format!("{k} = \"{v}\""));
        }
        let _ = writeln!(
            out,
            "        #[sea_orm({})]\n        {},",
            args.join(", "),
            r.variant
        );
    }
    out.push_str("    }\n");
    let mut related: Vec<&str> = Vec::new();
    for r in relations {
        if related.contains(&r.target.as_str()) {
            continue;
        }
        related.push(&r.target);
        match &r.via {
            None => {
                let _ = write!(
                    out,
                    "\n    impl Related<{}> for Entity {{\n        fn to() -> RelationDef {{\n            \
                     Relation::{}.def()\n        }}\n    }}\n",
                    r.target, r.variant
                );
            }
            Some(via) => {
                let junction = sibling(&r.target, via);
                let _ = write!(
                    out,
                    "\n    impl Related<{}> for Entity {{\n        fn to() -> RelationDef {{\n            \
                     {junction}::Relation::{}.def()\n        }}\n        fn via() -> Option<RelationDef> {{\n            \
                     Some({junction}::Relation::{this}.def().rev())\n        }}\n    }}\n",
                    r.target, r.variant
                );
            }
        }
    }
    out
}

/// `Column::UserId` for `user_id`, `(Column::A, Column::B)` for `(a, b)`,
/// prefixed with the target's module (`super::user::`) if any.
fn columns(names: &str, module: &str) -> String {
    let prefix = if module.is_empty() {
        String::new()
    } else {
        format!("{module}::")
    };
    let names = names.trim();
    let inner = names.strip_prefix('(').and_then(|n| n.strip_suffix(')'));
    let one = |n: &str| format!("{prefix}Column::{}", upper_camel(n.trim()));
    match inner {
        Some(list) => {
            let parts: Vec<String> = list
                .split(',')
                .filter(|n| !n.trim().is_empty())
                .map(one)
                .collect();
            format!("({})", parts.join(", "))
        }
        None => one(names),
    }
}

/// `super::user` for `super::user::Entity` (empty for `Entity`).
fn module_of(target: &str) -> String {
    target
        .rsplit_once("::")
        .map(|(module, _)| module.to_owned())
        .unwrap_or_default()
}

/// `super::cake_filling` for target `super::filling::Entity` and `cake_filling`.
fn sibling(target: &str, name: &str) -> String {
    match module_of(target).rsplit_once("::") {
        Some((parent, _)) => format!("{parent}::{name}"),
        None => name.to_owned(),
    }
}

fn path_text(path: &syn::Path) -> String {
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let lead = if path.leading_colon.is_some() {
        "::"
    } else {
        ""
    };
    format!("{lead}{}", segments.join("::"))
}

/// `user_id` → `UserId`, as SeaORM names a column's variant.
fn upper_camel(name: &str) -> String {
    name.trim_start_matches("r#")
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(src: &str) -> ItemStruct {
        syn::parse_str(src).expect("a struct")
    }

    #[test]
    fn spells_out_the_compact_relations() {
        let m = model(
            r#"
            #[sea_orm::model]
            #[derive(DeriveEntityModel)]
            pub struct Model {
                #[sea_orm(primary_key)]
                pub id: i32,
                pub user_id: i32,
                #[sea_orm(has_many)]
                pub resources: HasMany<super::resource::Entity>,
                #[sea_orm(belongs_to, from = "user_id", to = "id", on_delete = "Cascade")]
                pub user: HasOne<super::user::Entity>,
            }
            "#,
        );
        let (_, compact) = dense_attr(&m).expect("dense");
        assert!(!compact);
        let text = refusal(&m, false, "account");
        assert!(
            text.contains("the relation fields `resources`, `user`"),
            "{text}"
        );
        assert!(
            text.contains("#[sea_orm(has_many = \"super::resource::Entity\")]\n        Resource,"),
            "{text}"
        );
        assert!(
            text.contains(
                "#[sea_orm(belongs_to = \"super::user::Entity\", from = \"Column::UserId\", \
                 to = \"super::user::Column::Id\", on_delete = \"Cascade\")]\n        User,"
            ),
            "{text}"
        );
        assert!(
            text.contains("impl Related<super::user::Entity> for Entity {"),
            "{text}"
        );
        assert!(text.contains("Relation::User.def()"), "{text}");
    }

    #[test]
    fn no_relation_fields_is_an_empty_enum() {
        let m = model("#[sea_orm::model] pub struct Model { pub id: i32 }");
        let text = refusal(&m, false, "account");
        assert!(text.contains("pub enum Relation {}"), "{text}");
    }

    #[test]
    fn composite_keys_and_named_variants() {
        assert_eq!(
            columns("(a_b, c)", "super::x"),
            "(super::x::Column::AB, super::x::Column::C)"
        );
        let m = model(
            r#"#[sea_orm::model] pub struct Model {
                #[sea_orm(belongs_to, relation_enum = "Owner", from = "owner_id", to = "id")]
                pub owner: BelongsTo<Option<super::user::Entity>>,
            }"#,
        );
        let text = refusal(&m, false, "account");
        assert!(text.contains("        Owner,"), "{text}");
        assert!(text.contains("from = \"Column::OwnerId\""), "{text}");
    }

    #[test]
    fn compact_model_is_refused_on_its_own() {
        let m = model("#[sea_orm::compact_model] pub struct Model { pub id: i32 }");
        let (_, compact) = dense_attr(&m).expect("compact_model");
        assert!(compact);
        assert!(refusal(&m, true, "account").starts_with("remove `#[sea_orm::compact_model]`"));
    }
}
