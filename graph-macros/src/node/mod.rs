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
            let state = state_guess(&func, file)
                .map(quote::ToTokens::to_token_stream)
                .or_else(|| state_of_output(&func));
            match state {
                Some(state) => {
                    let node = expand::rejected(&func, &options, &state);
                    quote::quote!(#node #errors)
                }
                None => quote::quote!(#func #errors),
            }
        }
    }
}

/// The state a rejected node function's return type names, when its input does not
/// tell (`&str`, a type parameter): `<Output as NodeReturn>::State`, unless the
/// output is plainly not one or names a type parameter of the function.
fn state_of_output(func: &syn::ItemFn) -> Option<TokenStream> {
    let syn::ReturnType::Type(_, output) = &func.sig.output else {
        return None;
    };
    if func.sig.receiver().is_some() {
        return None;
    }
    let generic: Vec<String> = func
        .sig
        .generics
        .type_params()
        .map(|p| p.ident.to_string())
        .collect();
    let tokens = quote::ToTokens::to_token_stream(output);
    if mentions(tokens, &generic) || ast::plainly_not_output(output) {
        return None;
    }
    Some(quote::quote!(<#output as ::stategraph::__private::NodeReturn>::State))
}

/// Whether `tokens` name any of `idents`, inside groups too.
fn mentions(tokens: TokenStream, idents: &[String]) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => idents.contains(&i.to_string()),
        proc_macro2::TokenTree::Group(g) => mentions(g.stream(), idents),
        _ => false,
    })
}

/// The state a rejected node function works on: the type behind its first `&T` (or
/// `&mut T`) parameter that is not `NodeContext`, unless that is a borrowed-only type or a type
/// the file declares without `#[derive(GraphState)]` (a `Send` payload). `None` for a
/// method, whose receiver already says where the function went wrong.
fn state_guess<'a>(func: &'a syn::ItemFn, file: Option<&Path>) -> Option<&'a syn::Type> {
    if func.sig.receiver().is_some() {
        return None;
    }
    let state = func.sig.inputs.iter().find_map(|arg| match arg {
        syn::FnArg::Typed(pat) => match &*pat.ty {
            syn::Type::Reference(r)
                if !matches!(&*r.elem, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "NodeContext")) =>
            {
                Some(&*r.elem)
            }
            _ => None,
        },
        syn::FnArg::Receiver(_) => None,
    })?;
    let syn::Type::Path(path) = state else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident == "str" || !last.arguments.is_none() {
        return None;
    }
    // A type parameter of the function names nothing outside it.
    let generic = func
        .sig
        .generics
        .type_params()
        .any(|p| path.path.is_ident(&p.ident));
    let name = stategraph_macro_source::unraw(&last.ident);
    if generic || file.is_some_and(|file| stategraph_macro_source::declared_non_state(file, &name))
    {
        return None;
    }
    Some(state)
}
