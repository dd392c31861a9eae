//! Compile tests of `#[hierlocked]` and `#[protected]` (trybuild): every
//! supported shape compiles (`ui/pass`), and each misuse fails with the
//! reviewed message in `ui/fail/<misuse>.stderr`.
//!
//! Regenerate the messages with `TRYBUILD=overwrite cargo test -p hierlock
//! --test ui` and review the diff like code.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
