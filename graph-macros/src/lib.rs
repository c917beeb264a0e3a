//! Procedural macros for stategraph. Use them through the `stategraph` crate, which
//! re-exports them together with the runtime their expansions name.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod ast;
mod attr;
use stategraph_macro_source::ctxt;
mod expand;
mod node;
mod reducers;
mod text;
mod valid;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Derives `stategraph::GraphState` for a struct with named fields. Documented on the
/// re-export in `stategraph`.
#[proc_macro_derive(GraphState, attributes(reducer, channel))]
pub fn derive_graph_state(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    // The file the state is declared in, to find a user item named like a generated one.
    let file = proc_macro::Span::call_site().local_file();
    expand::derive_graph_state(&input, file.as_deref()).into()
}

/// Turns a function into a graph node. Documented on the re-export in `stategraph`.
#[proc_macro_attribute]
pub fn node(args: TokenStream, item: TokenStream) -> TokenStream {
    // The file the attribute is written in, to tell a function in an `impl` block
    // from a free one (their tokens are the same).
    let file = proc_macro::Span::call_site().local_file();
    node::node(args.into(), item.into(), file.as_deref()).into()
}
