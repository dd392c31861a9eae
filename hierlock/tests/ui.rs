//! Compile tests of `#[hierlocked]` and `#[protected]` (trybuild): every
//! supported shape compiles (`ui/pass`), and each misuse fails with the
//! reviewed message in `ui/fail/<misuse>.stderr`.
//!
//! The messages are those of the workspace's feature set (`tests/run` runs
//! `cargo test --workspace`, where a test crate turns on the `uuid` feature:
//! rustc's lists of `LockId` types then include `Uuid`). Regenerate them the
//! same way, `TRYBUILD=overwrite cargo test --workspace --test ui`, and
//! review the diff like code; `cargo test -p hierlock --test ui` alone sees
//! other features and differs in those lists.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
