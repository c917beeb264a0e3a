//! `#[node]`: turns a function into a node value of the same name.
//!
//! `async fn plan(state: &Research) -> ResearchUpdate` becomes
//! - a braced unit struct `plan {}` (type namespace) whose `plan::call(..)` is the
//!   original body, callable from unit tests, and
//! - a constant `plan: NodeDef<Research, Research>` (value namespace) used in the
//!   builder, so every node of a graph has one type and a misspelt node name is a
//!   compile error.

mod ast;
mod attr;
mod expand;
mod name;

use proc_macro2::TokenStream;

use crate::ctxt::Ctxt;

pub fn node(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let options = attr::parse_args(&mut cx, args);
    let Ok(func) = syn::parse2::<syn::ItemFn>(item.clone()) else {
        cx.push(syn::Error::new_spanned(
            &item,
            "`#[node]` can only be used on a function: `async fn name(state: &State) -> StateUpdate`",
        ));
        let errors = cx.into_compile_errors();
        return quote::quote!(#item #errors);
    };
    match ast::NodeFn::from_fn(&mut cx, &func) {
        // Name and option mistakes do not change the node's types: it is still
        // generated, so the graph that uses it reports nothing more.
        Some(node) => {
            name::check(&mut cx, &func.sig.ident, &options);
            let node = expand::expand(&node, &options);
            let errors = cx.into_compile_errors();
            quote::quote!(#node #errors)
        }
        None => {
            let errors = cx.into_compile_errors();
            quote::quote!(#func #errors)
        }
    }
}
