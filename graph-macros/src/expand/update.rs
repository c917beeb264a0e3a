//! The partial-update struct `<State>Update`: one optional write per channel, a
//! builder method per channel typed by its reducer, `overwrite_<field>` for reducer
//! channels, `Debug`, `StateUpdate` and serde through the channel codecs.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

use super::codec::state_bounds;
use super::common::{index_lit, opaque_reducer, ty_span, update_bounds, update_ident, update_ty};
use crate::ast::{Field, Reducer, State};
use crate::reducers::Builder;

pub fn expand(state: &State<'_>) -> TokenStream {
    let ident = state.ident;
    let vis = state.vis;
    let update = update_ident(state);
    let slots = state.fields.iter().map(|f| {
        let member = f.member;
        let ty = f.ty;
        let uty = update_ty(f);
        let doc = format!("The write to `{}`, if any.", f.name);
        quote! {
            #[doc = #doc]
            pub #member: ::core::option::Option<::stategraph::__private::ChannelWrite<#ty, #uty>>,
        }
    });
    let builders = state.fields.iter().map(builder);
    let debug_fields = state.fields.iter().map(|f| {
        let member = f.member;
        let name = &f.name;
        if f.untracked {
            quote! {
                if self.#member.is_some() {
                    __sg_d.field(#name, &::core::format_args!("<untracked>"));
                }
            }
        } else {
            quote! {
                if let ::core::option::Option::Some(__sg_w) = &self.#member {
                    __sg_d.field(#name, __sg_w);
                }
            }
        }
    });
    let update_name = update.to_string();
    let bounds = state_bounds(state);
    let struct_bounds = update_bounds(state);
    let is_empty = state.fields.iter().map(|f| {
        let member = f.member;
        quote!(self.#member.is_none())
    });
    let writes_arms = state.fields.iter().map(|f| {
        let member = f.member;
        let index = index_lit(f);
        quote!(#index => self.#member.is_some(),)
    });
    let doc = format!(
        "A partial update of [`{ident}`]: one optional write per channel. Build it with \
         `{ident}::update()` and the builder methods; a node returns it."
    );
    quote! {
        #[doc = #doc]
        #[derive(Clone, Default)]
        #vis struct #update #struct_bounds {
            #(#slots)*
        }

        #[automatically_derived]
        impl #update #struct_bounds {
            #(#builders)*
        }

        #[automatically_derived]
        impl ::core::fmt::Debug for #update #struct_bounds {
            fn fmt(&self, __sg_f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut __sg_d = __sg_f.debug_struct(#update_name);
                #(#debug_fields)*
                __sg_d.finish()
            }
        }

        #[automatically_derived]
        impl ::stategraph::__private::StateUpdate for #update #struct_bounds {
            fn is_empty(&self) -> bool {
                true #(&& #is_empty)*
            }

            fn writes_channel(&self, __sg_index: usize) -> bool {
                match __sg_index {
                    #(#writes_arms)*
                    _ => false,
                }
            }
        }

        #[automatically_derived]
        impl ::core::convert::From<#update> for ::stategraph::__private::RunInput<#ident> #bounds {
            fn from(__sg_update: #update) -> Self {
                ::stategraph::__private::RunInput::Update(__sg_update)
            }
        }

        #[automatically_derived]
        impl ::stategraph::__private::NodeReturn for #update #bounds {
            type State = #ident;
            fn into_output(self) -> ::stategraph::__private::NodeResult<#ident> {
                ::stategraph::__private::update_output::<#ident>(self)
            }
        }

        #[automatically_derived]
        impl ::stategraph::__private::serde::Serialize for #update #bounds {
            fn serialize<__S>(&self, __sg_serializer: __S) -> ::core::result::Result<__S::Ok, __S::Error>
            where
                __S: ::stategraph::__private::serde::Serializer,
            {
                let __sg_value = <#ident as ::stategraph::__private::GraphState>::encode_update(self)
                    .map_err(<__S::Error as ::stategraph::__private::serde::ser::Error>::custom)?;
                ::stategraph::__private::serde::Serialize::serialize(&__sg_value, __sg_serializer)
            }
        }

        #[automatically_derived]
        impl<'de> ::stategraph::__private::serde::Deserialize<'de> for #update #bounds {
            fn deserialize<__D>(__sg_deserializer: __D) -> ::core::result::Result<Self, __D::Error>
            where
                __D: ::stategraph::__private::serde::Deserializer<'de>,
            {
                let __sg_value = <::stategraph::__private::serde_json::Value as ::stategraph::__private::serde::Deserialize>::deserialize(__sg_deserializer)?;
                <#ident as ::stategraph::__private::GraphState>::decode_update(__sg_value)
                    .map_err(<__D::Error as ::stategraph::__private::serde::de::Error>::custom)
            }
        }
    }
}

/// The builder method(s) of one channel.
fn builder(f: &Field<'_>) -> TokenStream {
    let member = f.member;
    let ty = f.ty;
    let name = &f.name;
    let span = ty_span(f);
    let p = quote!(::stategraph::__private);
    // On a type the tokens do not reveal, the capability the builder names is a bound
    // of the method, so a reducer that does not fit is reported by its check alone.
    let fits = |capability: TokenStream| {
        if opaque_reducer(f) {
            quote!(for<'__sg> #ty: #p::#capability,)
        } else {
            quote!()
        }
    };
    let items = |item: TokenStream, doc: String, fits: TokenStream| {
        quote! {
            #[doc = #doc]
            pub fn #member<__SgI>(mut self, __sg_items: __SgI) -> Self
            where
                __SgI: ::core::iter::IntoIterator,
                __SgI::Item: #p::IntoChannelValue<#item>,
                #fits
            {
                #p::extend_items(&mut self.#member, __sg_items);
                self
            }
        }
    };
    let (builder, doc) = match &f.reducer {
        Reducer::Builtin(def) => (def.builder, def.doc_for(name)),
        Reducer::With { .. } => (
            Builder::Value,
            format!("Folds a value into `{name}` with its reducer function."),
        ),
    };
    let main = match builder {
        Builder::Value => {
            let uty = update_ty(f);
            quote! {
                #[doc = #doc]
                pub fn #member(mut self, __sg_value: impl #p::IntoChannelValue<#uty>) -> Self {
                    self.#member = ::core::option::Option::Some(#p::ChannelWrite::Reduce(
                        #p::IntoChannelValue::into_channel_value(__sg_value),
                    ));
                    self
                }
            }
        }
        Builder::Items { capability } => {
            let capability = syn::Ident::new(capability, span);
            let fits = fits(quote!(#capability));
            items(
                quote_spanned!(span=> <#ty as #p::#capability>::Item),
                doc,
                fits,
            )
        }
        Builder::Messages => items(
            quote_spanned!(span=> #p::MessageOp<<#ty as #p::MessageList>::Message>),
            doc,
            fits(quote!(MessageList)),
        ),
        Builder::Entries => {
            let key = quote_spanned!(span=> <#ty as #p::Mergeable>::Key);
            let value = quote_spanned!(span=> <#ty as #p::Mergeable>::Value);
            let fits = fits(quote!(Mergeable));
            quote! {
                #[doc = #doc]
                pub fn #member<__SgI>(mut self, __sg_entries: __SgI) -> Self
                where
                    __SgI: ::core::iter::IntoIterator,
                    __SgI::Item: #p::IntoEntry<#key, #value>,
                    #fits
                {
                    #p::extend_entries(&mut self.#member, __sg_entries);
                    self
                }
            }
        }
    };
    let overwrite = if f.reducer.is_last() {
        quote!()
    } else {
        let method = format_ident!("overwrite_{}", f.name, span = f.member.span());
        let doc = format!(
            "Replaces `{name}`, bypassing its reducer; wins over the step's other writes to it."
        );
        quote! {
            #[doc = #doc]
            pub fn #method(mut self, __sg_value: impl #p::IntoChannelValue<#ty>) -> Self {
                self.#member = ::core::option::Option::Some(#p::ChannelWrite::Overwrite(
                    #p::IntoChannelValue::into_channel_value(__sg_value),
                ));
                self
            }
        }
    };
    quote!(#main #overwrite)
}
