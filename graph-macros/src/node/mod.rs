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
        Some(node) if !cx.has_errors() => expand::expand(&node, &options),
        _ => {
            let errors = cx.into_compile_errors();
            quote::quote!(#func #errors)
        }
    }
}
