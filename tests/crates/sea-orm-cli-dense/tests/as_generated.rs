//! This crate's sources are sea-orm-cli's dense output
//! (`tests/sea-orm-cli/dense`) with the changes docs/migrating.md asks for:
//! the protected entities (the hierarchy's five and the membership
//! junction, whose rows carry a user's and an account's IDs) wrapped in
//! `#[hierlock::protected(..)]`; each plain entity's relation field to a
//! protected one replaced by an `impl Related`, and the `via` fields through
//! the plain `project_tags` junction dropped.

use std::path::Path;

#[path = "../../../sea-orm-cli/check.rs"]
mod check;

#[test]
fn sources_are_the_generated_ones_with_the_documented_changes() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    check::sources_are_the_generated_ones(
        &here.join("src"),
        &here.join("../../sea-orm-cli/dense/src"),
        &[
            "accounts",
            "invoices",
            "line_items",
            "memberships",
            "projects",
            "users",
        ],
        &[
            ("audit_log", &["accounts", "users"]),
            ("project_tags", &["projects"]),
            ("projects", &["tags"]),
            ("tags", &["accounts", "projects"]),
        ],
    );
}
