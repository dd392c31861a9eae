//! This crate's sources are sea-orm-cli's dense output
//! (`tests/sea-orm-cli/dense`) with no change but the one docs/migrating.md
//! asks for, as the compact crate's: each protected entity's file wrapped in
//! `#[hierlock::protected(..)] pub mod x { .. }` and included from `lib.rs`
//! in place of `pub mod x;`. The plain entities keep their relation fields
//! to the protected ones, and the protected ones theirs to the plain ones
//! and through the plain junctions (`memberships`, `project_tags`).

use std::path::Path;

#[path = "../../../sea-orm-cli/check.rs"]
mod check;

#[test]
fn sources_are_the_generated_ones_with_the_attribute_alone() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    check::sources_are_the_generated_ones(
        &here.join("src"),
        &here.join("../../sea-orm-cli/dense/src"),
        &["accounts", "invoices", "line_items", "projects", "users"],
    );
}
