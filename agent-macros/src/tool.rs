//! `#[tool]`: turns a function into a tool value of the same name.
//!
//! `async fn get_weather(city: String) -> String` becomes
//! - a unit struct `get_weather` (both a type and a value, so
//!   `Tools::new().with(get_weather)` works) that implements `Tool`, and
//! - an inherent `get_weather::run(city)`: the original function, callable
//!   directly from unit tests.

use std::path::Path;

use proc_macro2::TokenStream;
use quote::quote;

use crate::ctxt::Ctxt;

pub fn tool(args: TokenStream, item: TokenStream, file: Option<&Path>) -> TokenStream {
    let mut cx = Ctxt::default();
    let options = crate::attr::parse_args(&mut cx, args);
    let Ok(mut func) = syn::parse2::<syn::ItemFn>(item.clone()) else {
        cx.push(syn::Error::new_spanned(
            &item,
            "`#[tool]` can only be used on a function: `async fn name(arg: Type) -> String`",
        ));
        let errors = cx.into_compile_errors();
        return quote!(#item #errors);
    };
    // In an `impl` the expansion (a struct and its impls) cannot even be parsed, and
    // the tokens look like a free function's: the source file tells. Say so on the
    // name, and leave the function as it is so nothing else fails.
    let ident = &func.sig.ident;
    if func.sig.receiver().is_none()
        && file.is_some_and(|file| {
            stategraph_macro_source::is_associated(
                file,
                "tool",
                &stategraph_macro_source::unraw(ident),
            )
        })
    {
        cx.error_spanned_by(
            ident,
            format!("`#[tool]` goes on a free function: move `{ident}` out of the `impl` or `trait` block (the tool is then a value named `{ident}`)"),
        );
        crate::ast::strip_param_attrs(&mut func.sig);
        let errors = cx.into_compile_errors();
        return quote!(#func #errors);
    }
    let parsed = crate::ast::ToolFn::from_fn(&mut cx, &func).map(|tool| {
        // Name and description mistakes do not change the tool's types: it is still
        // generated, so code that uses it reports nothing more.
        let name = crate::name::check(&mut cx, &func.sig.ident, &options);
        let description = crate::docs::description(&mut cx, &func, &options);
        crate::expand::expand(&tool, &name, &description)
    });
    let errors = cx.into_compile_errors();
    match parsed {
        Some(tool) => quote!(#tool #errors),
        None => {
            // The function as written, minus what rustc refuses on parameters, so
            // the only errors are ours.
            crate::ast::strip_param_attrs(&mut func.sig);
            quote!(#func #errors)
        }
    }
}
