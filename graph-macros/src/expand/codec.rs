//! Per-channel codec constants. Each is built once from a generic constructor whose
//! bound (`Checkpointable`, `Sequence`, ..) is checked at the field's type, so a field
//! that cannot be stored gets one error, on that field.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::{field_ident, schema, ty_span, update_ty};
use crate::ast::{Field, Reducer, State};
use crate::reducers::ReducerDef;

/// Whether the update type is syntactically the field type, so one codec serves both.
pub fn update_is_value(f: &Field<'_>) -> bool {
    match &f.reducer {
        Reducer::Builtin(def) => def.update_is_value,
        Reducer::With { update, .. } => schema::type_text(update) == schema::type_text(f.ty),
    }
}

pub fn value_codec(f: &Field<'_>) -> syn::Ident {
    field_ident("CODEC", f)
}

pub fn update_codec(f: &Field<'_>) -> syn::Ident {
    if update_is_value(f) {
        value_codec(f)
    } else {
        field_ident("UCODEC", f)
    }
}

pub fn delta_codec(f: &Field<'_>) -> syn::Ident {
    field_ident("DELTA", f)
}

pub fn expand(state: &State<'_>) -> TokenStream {
    let p = quote!(::stategraph::__private);
    state
        .fields
        .iter()
        .filter(|f| !f.untracked)
        .map(|f| {
            let ty = f.ty;
            let span = ty_span(f);
            let codec = value_codec(f);
            let mut out = quote_spanned! {span=>
                const #codec: #p::Codec<#ty> = #p::codec::<#ty>();
            };
            if !update_is_value(f) {
                let ucodec = update_codec(f);
                let uty = update_ty(f);
                out.extend(quote_spanned! {span=>
                    const #ucodec: #p::Codec<#uty> = #p::codec::<#uty>();
                });
            }
            let delta = delta_codec(f);
            if let Reducer::Builtin(ReducerDef {
                delta: Some(make), ..
            }) = f.reducer
            {
                let make = syn::Ident::new(make, span);
                out.extend(quote_spanned! {span=>
                    const #delta: #p::DeltaCodec<#ty> = #p::#make::<#ty>();
                });
            }
            out
        })
        .collect()
}
