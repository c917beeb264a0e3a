//! The tool's unit struct (holding the original function as `run`), its private
//! arguments struct, and its `Tool` impl.
//!
//! Every use of a parameter's type goes through a probe that falls back to a
//! harmless default when the type lacks `Deserialize` or `JsonSchema`, so the only
//! error for such a type is the assertion spanned at it, with our message.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Param, Params, ToolFn};

pub fn expand(tool: &ToolFn<'_>, name: &str, description: &str) -> TokenStream {
    let p = quote!(::stategraph_agent::__private);
    let func = tool.func;
    let ident = &func.sig.ident;
    let vis = &func.vis;
    let docs: Vec<_> = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let cfgs: Vec<_> = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .collect();
    let attrs = &func.attrs;
    let mut sig = func.sig.clone();
    sig.ident = syn::Ident::new("run", ident.span());
    crate::ast::strip_param_attrs(&mut sig);
    let block = &func.block;
    let run_doc = docs.is_empty().then(|| {
        let text = format!("Runs the `{name}` tool's function directly.");
        quote!(#[doc = #text])
    });
    let struct_doc = format!(
        "The `{name}` tool: pass it to `Tools::with`; `{ident}::run(..)` calls the function directly."
    );
    let separator = (!docs.is_empty()).then(|| quote!(#[doc = ""]));

    let params: Vec<&Param<'_>> = match &tool.params {
        Params::Each(params) => params.iter().collect(),
        Params::Args(param) => vec![param],
    };
    let assertions = params.iter().map(|param| {
        let ty = param.ty;
        quote_spanned! {ty.span()=>
            const _: () = <#ty as #p::ToolArgument>::CHECKED;
            const _: () = <#ty as #p::DescribedArgument>::CHECKED;
        }
    });
    let (items, decode, schema, call_args) = match &tool.params {
        Params::Each(params) => per_parameter(&p, name, params),
        Params::Args(param) => {
            let ty = param.ty;
            (
                TokenStream::new(),
                quote! {
                    use #p::{DecodeArg as _, DecodeArgFallback as _};
                    let __sg_args: #ty = (&#p::Probe::<#ty>::new())
                        .decode_arguments(#name, __sg_arguments)?;
                },
                quote! {
                    use #p::{DescribeArg as _, DescribeArgFallback as _};
                    (&#p::Probe::<#ty>::new()).arguments_schema()
                },
                quote!(__sg_args),
            )
        }
    };
    let awaited = tool.is_async.then(|| quote!(.await));
    let ran = quote!(Self::run(#call_args) #awaited);
    // The written return type is the turbofish argument, so a type that is not a
    // `ToolOutput` is one error on all of its tokens. `impl Trait` cannot be named
    // there; it is its own `ToolOutput` bound anyway.
    let output = match tool.output {
        Some(ty) if !matches!(ty, syn::Type::ImplTrait(_)) => {
            quote!(#p::output::<#ty>(#name, #ran))
        }
        _ => quote!(#p::output(#name, #ran)),
    };

    // Spanned at the function's name, so a future that is not `Send` is reported
    // there (rustc's note then points at the `.await` that holds the culprit).
    let future = quote_spanned! {ident.span()=>
        ::std::boxed::Box::pin(async move {
            #decode
            #output
        })
    };

    quote! {
        #(#cfgs)*
        #(#docs)*
        #separator
        #[doc = #struct_doc]
        #[allow(non_camel_case_types)]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #ident;

        #(#cfgs)*
        impl #ident {
            #(#attrs)*
            #run_doc
            #vis #sig #block
        }

        #(#cfgs)*
        const _: () = {
            #(#assertions)*
            #items

            impl #p::Tool for #ident {
                fn spec(&self) -> #p::ToolSpec {
                    #p::ToolSpec {
                        name: ::std::string::String::from(#name),
                        description: ::std::string::String::from(#description),
                        parameters: { #schema },
                    }
                }

                fn call(
                    &self,
                    __sg_arguments: #p::serde_json::Value,
                ) -> #p::BoxFuture<'_, ::core::result::Result<::std::string::String, #p::ToolError>> {
                    #future
                }
            }
        };
    }
}

/// The decoding, schema and call arguments of the per-parameter form: a private
/// struct with one field per parameter, each decoded through the probe.
fn per_parameter(
    p: &TokenStream,
    name: &str,
    params: &[Param<'_>],
) -> (TokenStream, TokenStream, TokenStream, TokenStream) {
    let decoders: Vec<_> = (0..params.len())
        .map(|i| format_ident!("__sg_decode_{}", i))
        .collect();
    let fields = params.iter().zip(&decoders).map(|(param, decoder)| {
        let ident = param.ident;
        let ty = param.ty;
        let decoder = decoder.to_string();
        let default = param.optional.then(|| quote!(default,));
        quote! {
            #[serde(#default deserialize_with = #decoder)]
            #ident: #ty
        }
    });
    let decoder_fns = params.iter().zip(&decoders).map(|(param, decoder)| {
        let ty = param.ty;
        quote! {
            fn #decoder<'de, D: #p::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<#ty, D::Error> {
                use #p::{DecodeArg as _, DecodeArgFallback as _};
                (&#p::Probe::<#ty>::new()).decode(deserializer)
            }
        }
    });
    let items = quote! {
        #[derive(#p::serde::Deserialize)]
        #[serde(crate = "::stategraph_agent::__private::serde", deny_unknown_fields)]
        struct __SgArgs {
            #(#fields,)*
        }
        #(#decoder_fns)*
    };
    let decode = quote! {
        let __sg_args: __SgArgs = #p::decode_arguments(#name, __sg_arguments)?;
    };
    let properties = params.iter().map(|param| {
        let ty = param.ty;
        let key = syn::ext::IdentExt::unraw(param.ident).to_string();
        let required = !param.optional;
        let description = match &param.description {
            Some(text) => quote!(::core::option::Option::Some(#text)),
            None => quote!(::core::option::Option::None),
        };
        quote! {
            __sg_object.property(
                #key,
                (&#p::Probe::<#ty>::new()).describe(&mut __sg_generator),
                #required,
                #description,
            );
        }
    });
    let schema = quote! {
        use #p::{DescribeArg as _, DescribeArgFallback as _};
        let mut __sg_generator = #p::schema_generator();
        let mut __sg_object = #p::ObjectSchema::new();
        #(#properties)*
        __sg_object.finish(__sg_generator)
    };
    let idents = params.iter().map(|param| param.ident);
    let call_args = quote!(#(__sg_args.#idents),*);
    (items, decode, schema, call_args)
}
