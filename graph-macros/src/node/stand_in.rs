//! The stand-in value `#[node]` gives a function whose signature it rejected: the
//! graph that names the node then type-checks, and the rejected signature is the only
//! error. It needs the node's state, told from the function's input or, failing that,
//! from its return type; when neither tells, there is no stand-in.

use std::path::Path;

use proc_macro2::TokenStream;

/// The state of the rejected function `func`, if it can be told. `None` for a method:
/// its receiver already says where the function went wrong.
pub fn state(func: &syn::ItemFn, file: Option<&Path>) -> Option<TokenStream> {
    if func.sig.receiver().is_some() {
        return None;
    }
    state_of_input(func, file)
        .map(quote::ToTokens::to_token_stream)
        .or_else(|| state_of_output(func))
}

/// The state a rejected node function's return type names, when its input does not
/// tell (`&str`, a type parameter): `<Output as NodeReturn>::State`, unless the
/// output is plainly not one or names a type parameter of the function.
fn state_of_output(func: &syn::ItemFn) -> Option<TokenStream> {
    let syn::ReturnType::Type(_, output) = &func.sig.output else {
        return None;
    };
    let generic: Vec<String> = func
        .sig
        .generics
        .type_params()
        .map(|p| p.ident.to_string())
        .collect();
    let tokens = quote::ToTokens::to_token_stream(output);
    if mentions(tokens, &generic) || super::ast::plainly_not_output(output) {
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

/// The type behind the function's first `&T` (or `&mut T`) parameter that is not
/// `NodeContext`, unless that is a borrowed-only type, a type parameter, or a type the
/// file declares without `#[derive(GraphState)]` (a `Send` payload).
fn state_of_input<'a>(func: &'a syn::ItemFn, file: Option<&Path>) -> Option<&'a syn::Type> {
    let state = func.sig.inputs.iter().find_map(|arg| match arg {
        syn::FnArg::Typed(pat) => match &*pat.ty {
            syn::Type::Reference(r) if !super::ast::names_context(&r.elem) => Some(&*r.elem),
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
