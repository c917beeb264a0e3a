//! The `#[tool]` attribute for stategraph-agent. Use it through the
//! `stategraph-agent` crate, which re-exports it together with the runtime its
//! expansions name.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod ast;
mod attr;
use stategraph_macro_source::ctxt;
mod docs;
mod expand;
mod name;
mod tool;

use proc_macro::TokenStream;

/// Turns a documented function into a tool. Documented on the re-export in
/// `stategraph-agent`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    // The file the attribute is written in, to tell a function in an `impl` block
    // from a free one (their tokens are the same).
    let file = proc_macro::Span::call_site().local_file();
    tool::tool(args.into(), item.into(), file.as_deref()).into()
}
