//! `impl GraphState`: channel metadata, schema version, applying a superstep's writes
//! through the reducers, and the per-channel codecs.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::codec::state_bounds;
use super::codec::{delta_codec, update_codec, value_codec};
use super::common::{field_ident, index_lit, marker, update_ident, update_ty};
use super::schema;
use crate::ast::{Field, Reducer, State};

pub fn expand(state: &State<'_>) -> TokenStream {
    let ident = state.ident;
    let update = update_ident(state);
    let manifest = schema::manifest(state);
    let version = schema::version(&manifest);
    let p = quote!(::stategraph::__private);

    let infos = state.fields.iter().map(|f| {
        let index = index_lit(f);
        let name = &f.name;
        let reducer = schema::reducer_id(&f.reducer);
        let persistence = if f.untracked {
            quote!(#p::Persistence::Untracked)
        } else {
            quote!(#p::Persistence::Checkpointed)
        };
        let type_name = schema::type_text(f.ty);
        let delta = f.reducer.is_delta() && !f.untracked;
        quote! {
            #p::ChannelInfo {
                index: #index,
                name: #name,
                reducer: #reducer,
                persistence: #persistence,
                type_name: #type_name,
                delta: #delta,
            }
        }
    });

    let apply = apply_writes(state);
    let codecs = codec_methods(state);
    let bounds = state_bounds(state);

    quote! {
        #[automatically_derived]
        impl #p::GraphState for #ident #bounds {
            type Update = #update;

            const CHANNELS: &'static [#p::ChannelInfo] = &[#(#infos),*];
            const SCHEMA_VERSION: &'static str = #version;
            const SCHEMA_MANIFEST: &'static str = #manifest;

            #apply
            #codecs
        }
    }
}

fn channel(f: &Field<'_>) -> TokenStream {
    let index = index_lit(f);
    quote!(&<Self as ::stategraph::__private::GraphState>::CHANNELS[#index])
}

fn apply_writes(state: &State<'_>) -> TokenStream {
    let p = quote!(::stategraph::__private);
    let pending: Vec<_> = state
        .fields
        .iter()
        .map(|f| field_ident("PENDING", f))
        .collect();
    let decls = state.fields.iter().zip(&pending).map(|(f, pend)| {
        let ty = f.ty;
        let uty = update_ty(f);
        quote!(let mut #pend = #p::Pending::<#ty, #uty>::default();)
    });
    let gathers = state.fields.iter().zip(&pending).map(|(f, pend)| {
        let member = f.member;
        quote! {
            if let ::core::option::Option::Some(__sg_w) = __sg_update.#member {
                #pend.push(__sg_i, __sg_w);
            }
        }
    });
    let checks = state.fields.iter().zip(&pending).map(|(f, pend)| {
        let member = f.member;
        let ch = channel(f);
        match marker(f) {
            Some(m) => quote!(#pend.check::<#m>(&self.#member, #ch, &__sg_writers)?;),
            None => quote!(#pend.check_writers(#ch, false, &__sg_writers)?;),
        }
    });
    let commits = state.fields.iter().zip(&pending).map(|(f, pend)| {
        let member = f.member;
        let index = index_lit(f);
        let commit = match (&f.reducer, marker(f)) {
            // The one place the function is checked against `fn(&mut T, U)`, with both
            // types given, so a wrong function is one error, on the path.
            (Reducer::With { path, update }, _) => {
                let ty = f.ty;
                quote_spanned! {path.span()=>
                    #pend.commit_with(&mut self.#member, |__sg_current, __sg_update| {
                        <_ as #p::WithReducer<#ty, #update>>::fold(&#path, __sg_current, __sg_update)
                    })
                }
            }
            (_, Some(m)) => quote!(#pend.commit::<#m>(&mut self.#member)),
            (_, None) => quote!(::core::option::Option::None),
        };
        quote! {
            if let ::core::option::Option::Some(__sg_change) = #commit {
                __sg_changes.record(#index, __sg_change);
            }
        }
    });
    quote! {
        fn apply_writes(
            &mut self,
            __sg_writes: ::std::vec::Vec<#p::Write<Self>>,
        ) -> ::core::result::Result<#p::ChangeSet, #p::InvalidUpdate> {
            let mut __sg_writers = ::std::vec::Vec::with_capacity(__sg_writes.len());
            #(#decls)*
            for (__sg_i, __sg_write) in __sg_writes.into_iter().enumerate() {
                __sg_writers.push(__sg_write.writer);
                let __sg_update = __sg_write.update;
                #(#gathers)*
            }
            #(#checks)*
            let mut __sg_changes = #p::ChangeSet::new();
            #(#commits)*
            ::core::result::Result::Ok(__sg_changes)
        }
    }
}

fn codec_methods(state: &State<'_>) -> TokenStream {
    let values = value_methods(state);
    let deltas = delta_methods(state);
    let updates = update_methods(state);
    quote! {
        #values
        #deltas
        #updates
    }
}

/// `encode_channel` and `decode_channel`: a channel's whole value.
fn value_methods(state: &State<'_>) -> TokenStream {
    let p = quote!(::stategraph::__private);
    let count = state.fields.len();
    let unknown = quote! {
        __sg_index => ::core::result::Result::Err(#p::CodecError::UnknownChannel { index: __sg_index, count: #count })
    };

    let encode_arms = state.fields.iter().map(|f| {
        let index = index_lit(f);
        let member = f.member;
        let ch = channel(f);
        if f.untracked {
            quote!(#index => ::core::result::Result::Ok(::core::option::Option::None),)
        } else {
            let codec = value_codec(f);
            quote!(#index => #codec.encode(&self.#member, #ch).map(::core::option::Option::Some),)
        }
    });
    let decode_arms = state.fields.iter().map(|f| {
        let index = index_lit(f);
        let member = f.member;
        let ch = channel(f);
        if f.untracked {
            quote!(#index => ::core::result::Result::Err(#p::CodecError::Untracked { channel: (#ch).name }),)
        } else {
            let codec = value_codec(f);
            quote!(#index => {
                self.#member = #codec.decode(__sg_value, #ch)?;
                ::core::result::Result::Ok(())
            })
        }
    });
    quote! {
        fn encode_channel(
            &self,
            __sg_index: usize,
        ) -> ::core::result::Result<::core::option::Option<#p::serde_json::Value>, #p::CodecError> {
            match __sg_index {
                #(#encode_arms)*
                #unknown
            }
        }

        fn decode_channel(
            &mut self,
            __sg_index: usize,
            __sg_value: #p::serde_json::Value,
        ) -> ::core::result::Result<(), #p::CodecError> {
            match __sg_index {
                #(#decode_arms)*
                #unknown
            }
        }

    }
}

/// `channel_len`, `encode_channel_since` and `extend_channel`: the channels stored as
/// deltas.
fn delta_methods(state: &State<'_>) -> TokenStream {
    let p = quote!(::stategraph::__private);
    let count = state.fields.len();
    let unknown = quote! {
        __sg_index => ::core::result::Result::Err(#p::CodecError::UnknownChannel { index: __sg_index, count: #count })
    };

    let deltas: Vec<&Field<'_>> = state
        .fields
        .iter()
        .filter(|f| f.reducer.is_delta() && !f.untracked)
        .collect();
    let len_arms = deltas.iter().map(|f| {
        let index = index_lit(f);
        let member = f.member;
        let delta = delta_codec(f);
        quote!(#index => ::core::option::Option::Some(#delta.len(&self.#member)),)
    });
    let since_arms = deltas.iter().map(|f| {
        let index = index_lit(f);
        let member = f.member;
        let delta = delta_codec(f);
        let ch = channel(f);
        quote!(#index => #delta.encode_since(&self.#member, __sg_from, #ch),)
    });
    let extend_arms = deltas.iter().map(|f| {
        let index = index_lit(f);
        let member = f.member;
        let delta = delta_codec(f);
        let ch = channel(f);
        quote!(#index => #delta.extend(&mut self.#member, __sg_delta, #ch),)
    });
    let no_delta = quote! {
        __sg_index if __sg_index < #count => ::core::result::Result::Err(#p::CodecError::NoDelta {
            channel: <Self as #p::GraphState>::CHANNELS[__sg_index].name,
        }),
        #unknown
    };

    quote! {
        fn channel_len(&self, __sg_index: usize) -> ::core::option::Option<usize> {
            match __sg_index {
                #(#len_arms)*
                _ => ::core::option::Option::None,
            }
        }

        fn encode_channel_since(
            &self,
            __sg_index: usize,
            __sg_from: usize,
        ) -> ::core::result::Result<#p::serde_json::Value, #p::CodecError> {
            match __sg_index {
                #(#since_arms)*
                #no_delta
            }
        }

        fn extend_channel(
            &mut self,
            __sg_index: usize,
            __sg_delta: #p::serde_json::Value,
        ) -> ::core::result::Result<(), #p::CodecError> {
            match __sg_index {
                #(#extend_arms)*
                #no_delta
            }
        }

    }
}

/// `encode_update` and `decode_update`: a partial update's wire form.
fn update_methods(state: &State<'_>) -> TokenStream {
    let p = quote!(::stategraph::__private);
    let tracked: Vec<&Field<'_>> = state.fields.iter().filter(|f| !f.untracked).collect();
    let encode_update = tracked.iter().map(|f| {
        let member = f.member;
        let name = &f.name;
        let ch = channel(f);
        let codec = value_codec(f);
        let ucodec = update_codec(f);
        quote! {
            if let ::core::option::Option::Some(__sg_w) = &__sg_update.#member {
                let (__sg_tag, __sg_value) = match __sg_w {
                    #p::ChannelWrite::Reduce(__sg_u) => ("reduce", #ucodec.encode(__sg_u, #ch)?),
                    #p::ChannelWrite::Overwrite(__sg_v) => ("overwrite", #codec.encode(__sg_v, #ch)?),
                };
                let mut __sg_entry = #p::serde_json::Map::new();
                __sg_entry.insert(::std::string::String::from(__sg_tag), __sg_value);
                __sg_map.insert(::std::string::String::from(#name), #p::serde_json::Value::Object(__sg_entry));
            }
        }
    });
    let decode_update = tracked.iter().map(|f| {
        let member = f.member;
        let name = &f.name;
        let ch = channel(f);
        let codec = value_codec(f);
        let ucodec = update_codec(f);
        quote! {
            #name => {
                let (__sg_overwrite, __sg_value) = #p::split_write(__sg_value, #ch)?;
                __sg_update.#member = ::core::option::Option::Some(if __sg_overwrite {
                    #p::ChannelWrite::Overwrite(#codec.decode(__sg_value, #ch)?)
                } else {
                    #p::ChannelWrite::Reduce(#ucodec.decode(__sg_value, #ch)?)
                });
            }
        }
    });

    quote! {
        fn encode_update(
            __sg_update: &Self::Update,
        ) -> ::core::result::Result<#p::serde_json::Value, #p::CodecError> {
            let mut __sg_map = #p::serde_json::Map::new();
            #(#encode_update)*
            ::core::result::Result::Ok(#p::serde_json::Value::Object(__sg_map))
        }

        fn decode_update(
            __sg_value: #p::serde_json::Value,
        ) -> ::core::result::Result<Self::Update, #p::CodecError> {
            let #p::serde_json::Value::Object(__sg_map) = __sg_value else {
                return ::core::result::Result::Err(#p::CodecError::UpdateNotObject);
            };
            let mut __sg_update = <Self::Update as ::core::default::Default>::default();
            for (__sg_name, __sg_value) in __sg_map {
                match __sg_name.as_str() {
                    #(#decode_update)*
                    _ => return ::core::result::Result::Err(#p::CodecError::UnknownUpdateChannel { name: __sg_name }),
                }
            }
            ::core::result::Result::Ok(__sg_update)
        }
    }
}
