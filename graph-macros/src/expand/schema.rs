//! The canonical schema manifest and its SHA-256: the state's schema version.
//!
//! Format (version 1), one line each, `\n`-terminated:
//!
//! ```text
//! stategraph-schema v1
//! <index>\t<name>\t<type>\t<reducer>\t<persistence>
//! ```
//!
//! `<type>` is the field type's tokens joined without whitespace, except one space
//! between two adjacent words (`dyn Trait`, `'a str`); `<reducer>` is `last`,
//! `append`, `add`, `merge`, `union`, `messages` or `with(<path>;<update type>)`;
//! `<persistence>` is `checkpointed` or `untracked`. Comments, doc comments, attribute
//! order and formatting never reach the manifest; field order, names, types, reducers
//! and persistence do. The struct's own name does not, so renaming the type keeps
//! stored threads loadable.

use quote::ToTokens;
use sha2::{Digest, Sha256};

use crate::ast::{Reducer, State};
pub use crate::text::{normalize_tokens, type_text};

pub const FORMAT_TAG: &str = "stategraph-schema v1";

pub fn reducer_id(reducer: &Reducer) -> String {
    match reducer {
        Reducer::Builtin(def) => def.name.into(),
        Reducer::With { path, update } => format!(
            "with({};{})",
            normalize_tokens(path.to_token_stream()),
            type_text(update)
        ),
    }
}

pub fn persistence_id(untracked: bool) -> &'static str {
    if untracked {
        "untracked"
    } else {
        "checkpointed"
    }
}

pub fn manifest(state: &State<'_>) -> String {
    let mut out = format!("{FORMAT_TAG}\n");
    for f in &state.fields {
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\n",
            f.index,
            f.name,
            type_text(f.ty),
            reducer_id(&f.reducer),
            persistence_id(f.untracked)
        ));
    }
    out
}

pub fn version(manifest: &str) -> String {
    Sha256::digest(manifest.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctxt::Ctxt;
    use syn::{DeriveInput, parse_quote};

    fn manifest_of(input: DeriveInput) -> String {
        let mut cx = Ctxt::default();
        let state = State::from_input(&mut cx, &input);
        assert!(!cx.has_errors());
        manifest(&state.expect("input is a state"))
    }

    fn research() -> DeriveInput {
        parse_quote! {
            struct Research {
                topic: String,
                #[reducer(append)] notes: Vec<String>,
                #[reducer(add)] steps: u32,
                #[reducer(merge)] scores: BTreeMap<String, f64>,
                #[reducer(union)] seen: BTreeSet<String>,
                #[reducer(messages)] chat: Vec<Message>,
                #[reducer(with = keep_max)] best: f64,
                #[channel(untracked)] scratch: Option<&'static dyn Cache>,
            }
        }
    }

    /// Locks the manifest format: changing it changes every stored schema version.
    #[test]
    fn golden_manifest_and_version() {
        let m = manifest_of(research());
        assert_eq!(
            m,
            "stategraph-schema v1\n\
             0\ttopic\tString\tlast\tcheckpointed\n\
             1\tnotes\tVec<String>\tappend\tcheckpointed\n\
             2\tsteps\tu32\tadd\tcheckpointed\n\
             3\tscores\tBTreeMap<String,f64>\tmerge\tcheckpointed\n\
             4\tseen\tBTreeSet<String>\tunion\tcheckpointed\n\
             5\tchat\tVec<Message>\tmessages\tcheckpointed\n\
             6\tbest\tf64\twith(keep_max;f64)\tcheckpointed\n\
             7\tscratch\tOption<&'static dyn Cache>\tlast\tuntracked\n"
        );
        assert_eq!(version(&m), version(&m.clone()));
        assert_eq!(version("").len(), 64);
        assert_eq!(
            version(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn formatting_comments_docs_and_attribute_order_do_not_matter() {
        let a = manifest_of(parse_quote! {
            struct S { #[reducer(append)] #[channel(untracked)] a: Vec< String >, b: std::collections::BTreeMap<String,u8> }
        });
        let b = manifest_of(parse_quote! {
            /// docs
            struct S {
                /// field docs
                #[channel(untracked)]
                #[reducer(append)]
                a: Vec<String>,
                b: std :: collections :: BTreeMap < String , u8 >,
            }
        });
        assert_eq!(a, b);
    }

    #[test]
    fn renaming_retyping_reordering_or_changing_reducer_changes_the_version() {
        let base = version(&manifest_of(
            parse_quote! { struct S { a: u32, #[reducer(append)] b: Vec<u8> } },
        ));
        let variants: Vec<DeriveInput> = vec![
            parse_quote! { struct S { x: u32, #[reducer(append)] b: Vec<u8> } },
            parse_quote! { struct S { a: u64, #[reducer(append)] b: Vec<u8> } },
            parse_quote! { struct S { #[reducer(append)] b: Vec<u8>, a: u32 } },
            parse_quote! { struct S { #[reducer(add)] a: u32, #[reducer(append)] b: Vec<u8> } },
            parse_quote! { struct S { a: u32, #[reducer(append)] #[channel(untracked)] b: Vec<u8> } },
        ];
        for v in variants {
            assert_ne!(version(&manifest_of(v)), base);
        }
        let renamed_struct = version(&manifest_of(
            parse_quote! { struct T { a: u32, #[reducer(append)] b: Vec<u8> } },
        ));
        assert_eq!(renamed_struct, base);
    }

    #[test]
    fn words_stay_separated() {
        let ty: syn::Type = parse_quote!(Box<dyn Fn(&'a str) -> u8 + Send>);
        assert_eq!(type_text(&ty), "Box<dyn Fn(&'a str)->u8+Send>");
    }
}
