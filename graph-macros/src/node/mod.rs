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
mod stand_in;

use std::path::Path;

use proc_macro2::TokenStream;

use crate::ctxt::Ctxt;

pub fn node(args: TokenStream, item: TokenStream, file: Option<&Path>) -> TokenStream {
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
    // In an `impl` the expansion cannot compile: say so on the name, and leave the
    // function as it is so nothing else fails.
    let ident = &func.sig.ident;
    if func.sig.receiver().is_none()
        && file.is_some_and(|file| {
            stategraph_macro_source::is_associated(
                file,
                "node",
                &stategraph_macro_source::unraw(ident),
            )
        })
    {
        cx.error_spanned_by(
            ident,
            format!(
                "`#[node]` goes on a free function: move `{ident}` out of the `impl` or `trait` block (the node is then a value named `{ident}`)"
            ),
        );
        let errors = cx.into_compile_errors();
        return quote::quote!(#func #errors);
    }
    match ast::NodeFn::from_fn(&mut cx, &func) {
        // Name and option mistakes do not change the node's types: it is still
        // generated, so the graph that uses it reports nothing more.
        Some(node) => {
            name::check(&mut cx, &func.sig.ident, &options);
            let node = expand::expand(&node, &options);
            let errors = cx.into_compile_errors();
            quote::quote!(#node #errors)
        }
        // A rejected signature still gives the node a value when the state it works on
        // can be told, so using the node in a graph adds no errors to the one reported.
        None => {
            let errors = cx.into_compile_errors();
            match stand_in::state(&func, file) {
                Some(state) => {
                    let node = expand::rejected(&func, &options, &state);
                    quote::quote!(#node #errors)
                }
                None => quote::quote!(#func #errors),
            }
        }
    }
}
