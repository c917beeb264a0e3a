//! Typed channel keys (`State::FIELD`) and the `State::update()` entry point.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::common::{index_lit, update_bounds, update_ident};
use crate::ast::State;

pub fn expand(state: &State<'_>) -> TokenStream {
    let ident = state.ident;
    let update = update_ident(state);
    let keys = state.fields.iter().filter(|f| !f.key_taken).map(|f| {
        let key = format_ident!("{}", f.name.to_uppercase(), span = f.member.span());
        let ty = f.ty;
        let index = index_lit(f);
        let doc = format!("Key of the `{}` channel.", f.name);
        quote! {
            #[doc = #doc]
            pub const #key: ::stategraph::__private::ChannelKey<Self, #ty> =
                ::stategraph::__private::ChannelKey::__new(#index);
        }
    });
    let update_doc = format!(
        "An empty partial update of `{ident}`; chain its builder methods to write channels."
    );
    let fields = format_ident!("{}Fields", ident);
    let update_bounds = update_bounds(state);
    let members = state.fields.iter().map(|f| f.member);
    let inits = state.fields.iter().map(|f| {
        let member = f.member;
        let index = index_lit(f);
        quote!(#member: #index)
    });
    quote! {
        // Channel indices by exact field name, for `#[node(reads(..))]`: a name the
        // state lacks is rustc's "no field `x` on type `<State>Fields`", on the token.
        const _: () = {
            #[doc(hidden)]
            #[allow(non_snake_case, dead_code)]
            pub struct #fields {
                #(pub #members: usize,)*
            }

            #[automatically_derived]
            impl #ident {
                #[doc(hidden)]
                pub const __SG_FIELDS: #fields = #fields { #(#inits,)* };
            }
        };

        #[automatically_derived]
        impl #ident {
            #(#keys)*

            #[doc = #update_doc]
            pub fn update() -> #update #update_bounds {
                ::core::default::Default::default()
            }
        }
    }
}
