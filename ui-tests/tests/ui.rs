//! Compile-time guarantees. Every `fail/` case must fail with the recorded message at
//! the recorded span (trybuild, one `cargo check` for all of them). Every `pass/` case
//! must build and run: each is a module of this test binary, its `main` run by a test
//! of its own, so the cases build with the workspace instead of one by one.

use std::path::Path;

#[test]
fn fail_cases_fail_with_their_recorded_errors() {
    trybuild::TestCases::new().compile_fail("tests/ui/fail/*.rs");
}

/// Declares each `pass/` case as a module and a test that runs its `main`.
macro_rules! pass_cases {
    ($($case:ident),* $(,)?) => {
        #[path = "ui/pass"]
        mod pass {
            $(pub mod $case;)*
        }

        $(
            #[test]
            fn $case() {
                pass::$case::main();
            }
        )*

        /// The cases listed here, to compare with the files in `pass/`.
        const PASS_CASES: &[&str] = &[$(stringify!($case)),*];
    };
}

pass_cases!(
    node_lifetime_param,
    node_named_like_a_method,
    node_outputs,
    node_raw_identifier_names,
    node_reads,
    node_returns_anyhow,
    node_returns_boxed_error,
    state_130_fields,
    state_aliases_paths_and_attributes,
    state_every_reducer_type,
    state_messages_builders,
    state_nested_user_types,
    state_raw_identifier_field,
    state_untracked_non_serde,
    state_update_name_elsewhere,
    tool_args_struct,
    tool_async_and_sync,
    tool_pub_crate_in_nested_module,
    tool_raw_identifiers,
    tool_result_return,
);

#[test]
fn every_pass_case_is_listed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui/pass");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/ui/pass")
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".rs")
                .map(String::from)
        })
        .collect();
    files.sort();
    assert_eq!(
        files, PASS_CASES,
        "add the new pass case to `pass_cases!` in ui.rs"
    );
}
