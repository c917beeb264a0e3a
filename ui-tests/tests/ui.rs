//! Compile-time guarantees: every `fail/` case must fail with the recorded message at
//! the recorded span; every `pass/` case must build and run.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
