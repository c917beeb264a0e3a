//! Procedural macros for stategraph. Use them through the `stategraph` crate, which
//! re-exports them together with the runtime their expansions name.

mod ast;
mod attr;
mod ctxt;
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
    expand::derive_graph_state(&input).into()
}

/// Turns a function into a graph node. Documented on the re-export in `stategraph`.
#[proc_macro_attribute]
pub fn node(args: TokenStream, item: TokenStream) -> TokenStream {
    node::node(args.into(), item.into()).into()
}
