//! The node's struct (holding the original body as `call`) and its `NodeDef` constant.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::ItemFn;
use syn::spanned::Spanned;

use super::ast::NodeFn;
use super::attr::NodeOptions;

pub fn expand(node: &NodeFn<'_>, options: &NodeOptions) -> TokenStream {
    let p = quote!(::stategraph::__private);
    let func = node.func;
    let ident = &func.sig.ident;
    let vis = &func.vis;
    let attrs = &func.attrs;
    let docs: Vec<_> = attrs.iter().filter(|a| a.path().is_ident("doc")).collect();
    let name = super::name::runtime_name(ident, options);
    let input = node.input;
    let output = node.output;
    // Every mention of the output type is spanned at it, paths included, so a
    // non-output type gets one error, on the user's return type.
    let at_output = quote_spanned!(output.span()=> ::stategraph::__private);
    let state = quote_spanned!(output.span()=> <#output as #at_output::NodeReturn>::State);
    let result = quote_spanned!(output.span()=> #at_output::NodeResult<#state>);
    let into_output =
        quote_spanned!(output.span()=> <#output as #at_output::NodeReturn>::into_output);
    // The context argument goes through `ContextArg`, so a second parameter of another
    // type is one error on that type rather than a mismatch at the macro.
    let args = match node.context {
        Some(ctx) => {
            let arg = quote_spanned!(ctx.span()=> #p::context_arg::<#ctx>(__sg_ctx));
            quote!(__sg_input, #arg)
        }
        None => quote!(__sg_input),
    };
    // `__sg_run` is spanned at the output as a whole: rustc reports the ill-formed
    // signature of a non-output at the function, and that is then the return type.
    let (runner, kind) = if node.is_async {
        (
            quote_spanned! {output.span()=>
                #[doc(hidden)]
                // Spanned at the user's return type, so lints would see it as theirs.
                #[allow(clippy::all, clippy::pedantic)]
                pub fn __sg_run<'a>(
                    __sg_input: &'a #input,
                    __sg_ctx: &'a #p::NodeContext,
                ) -> #at_output::BoxFuture<'a, #result> {
                    let _ = &__sg_ctx;
                    ::std::boxed::Box::pin(async move {
                        #into_output(Self::call(#args).await)
                    })
                }
            },
            quote!(Async),
        )
    } else {
        (
            quote_spanned! {output.span()=>
                #[doc(hidden)]
                // Spanned at the user's return type, so lints would see it as theirs.
                #[allow(clippy::all, clippy::pedantic)]
                pub fn __sg_run(__sg_input: &#input, __sg_ctx: &#p::NodeContext) -> #result {
                    let _ = &__sg_ctx;
                    #into_output(Self::call(#args))
                }
            },
            quote!(Sync),
        )
    };
    // The node's value mentions the output through `__sg_run`'s type: spanned at the
    // output too, so the same error is not reported again at `#[node]`.
    let mut node_type = ident.clone();
    node_type.set_span(output.span());
    let def = quote_spanned! {output.span()=>
        #at_output::NodeDef::__new(
            #name,
            #at_output::NodeFn::#kind(#node_type::__sg_run),
            #node_type::__sg_payload_codec,
        )
    };
    // Each read field names the state's typed key, spanned at the field as written,
    // so a field the state does not have is an error there.
    let def = match &options.reads {
        Some(fields) => {
            // `__SG_FIELDS` has one field per state field, named exactly as written, so a
            // name the state does not have is rustc's "no field" error on the token.
            let keys = fields.iter().map(|f| {
                let fields = syn::Ident::new("__SG_FIELDS", f.span());
                quote_spanned!(f.span()=> <#state>::#fields.#f)
            });
            quote! {{
                const __SG_READS: &[usize] = &[#(#keys),*];
                #def.__with_reads(__SG_READS)
            }}
        }
        None => def,
    };
    let def_ty = quote_spanned!(output.span()=> #at_output::NodeDef<#state, #input>);
    let constant = quote! {
        #(#docs)*
        #[allow(non_upper_case_globals, clippy::all, clippy::pedantic)]
        #vis const #ident: #def_ty = #def;
    };
    let codec = quote! {
        #runner

        #[doc(hidden)]
        pub fn __sg_payload_codec() -> ::core::option::Option<#p::PayloadCodec> {
            #[allow(unused_imports)]
            use #p::{OpaquePayload as _, SerdePayload as _};
            (&&#p::PayloadProbe::<#input>::new()).payload_codec()
        }
    };
    items(func, &name, &codec, &constant)
}

/// The stand-in for a function whose signature `#[node]` rejected (the error is
/// reported apart): the function as `name::call`, and a node value over `state` (the
/// type its reference parameter or its return type names), so the graph that uses it type-checks and the
/// signature is the only error.
pub fn rejected(func: &ItemFn, options: &NodeOptions, state: &TokenStream) -> TokenStream {
    let p = quote!(::stategraph::__private);
    let ident = &func.sig.ident;
    let vis = &func.vis;
    let docs = func.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let name = super::name::runtime_name(ident, options);
    let constant = quote! {
        #(#docs)*
        #[allow(non_upper_case_globals)]
        #vis const #ident: #p::NodeDef<#state, #state> = #p::NodeDef::__rejected(#name);
    };
    items(func, &name, &TokenStream::new(), &constant)
}

/// The node's braced unit struct, whose `call` is the original function, with `extra`
/// associated items; then `constant`, the node's value.
fn items(func: &ItemFn, name: &str, extra: &TokenStream, constant: &TokenStream) -> TokenStream {
    let ident = &func.sig.ident;
    let vis = &func.vis;
    let attrs = &func.attrs;
    let mut sig = func.sig.clone();
    sig.ident = syn::Ident::new("call", ident.span());
    let block = &func.block;
    let struct_doc = format!("The `{name}` node; `{ident}::call(..)` runs its body directly.");
    quote! {
        #[doc = #struct_doc]
        #[allow(non_camel_case_types)]
        #vis struct #ident {}

        impl #ident {
            #(#attrs)*
            // The input's type is the `Send` payload's type, so `&String` is deliberate.
            #[allow(clippy::ptr_arg)]
            #vis #sig #block

            #extra
        }

        #constant
    }
}
