//! Compile tests of `#[hierlocked]` and `#[protected]` (trybuild): each
//! misuse fails with the reviewed message in `ui/fail/<misuse>.stderr`.
//!
//! Every supported shape (`ui/pass`) is compiled too, but as a test target
//! of the `hierlock-tests` crate (see `tests/Cargo.toml`), not here: with
//! only compile-fail cases trybuild runs `cargo check`, so it type-checks
//! SeaORM and the drivers instead of building them (a pass case makes it
//! build every dependency, which was most of the suite's time).
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
    t.compile_fail("tests/ui/fail/*.rs");
}
