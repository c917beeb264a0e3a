//! What the generated items share: the bounds of the generated impls, the names and
//! types derived from each field, the reducer markers.

use std::path::Path;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Field, Reducer, State};
use crate::ctxt::Ctxt;
use crate::valid;

/// The where-clause of the update struct itself (and so of every item naming it):
/// only the fit of opaque reducers, which its field types need; empty for most states.
pub(super) fn update_bounds(state: &State<'_>) -> TokenStream {
    let reducers = opaque_reducer_bounds(state);
    if reducers.is_empty() {
        return quote!();
    }
    quote!(where #(#reducers,)*)
}

pub(super) fn opaque_reducer_bounds(state: &State<'_>) -> Vec<TokenStream> {
    let p = quote!(::stategraph::__private);
    state
        .fields
        .iter()
        .filter(|f| opaque_reducer(f))
        .map(|f| {
            let (ty, m) = (f.ty, marker(f));
            let stored = (!f.untracked).then(|| quote!(+ #p::StoredReducer<#ty>));
            let delta =
                (f.reducer.is_delta() && !f.untracked).then(|| quote!(+ #p::DeltaReducer<#ty>));
            quote!(for<'__sg> #m: #p::ChannelReducer<#ty> #stored #delta)
        })
        .collect()
}

/// The span generated type-level checks for a field point at: its type.
pub(super) fn ty_span(f: &Field<'_>) -> Span {
    f.ty.span()
}

/// The reducer marker type of a built-in reducer; `None` for `with = path`.
pub(super) fn marker(f: &Field<'_>) -> Option<TokenStream> {
    let span = f.reducer_span;
    let name = match f.reducer {
        Reducer::Builtin(def) => def.marker,
        Reducer::With { .. } => return None,
    };
    let ident = format_ident!("{}", name, span = span);
    Some(quote_spanned!(span=> ::stategraph::__private::#ident))
}

/// [`marker`] with every token at `span`.
pub(super) fn marker_at(f: &Field<'_>, span: Span) -> Option<TokenStream> {
    let m = marker(f)?;
    Some(
        m.into_iter()
            .map(|mut t| {
                t.set_span(span);
                t
            })
            .collect(),
    )
}

/// The type one write to the field carries.
pub(super) fn update_ty(f: &Field<'_>) -> TokenStream {
    let ty = f.ty;
    match (&f.reducer, marker(f)) {
        (Reducer::With { update, .. }, _) => quote!(#update),
        (_, Some(m)) => {
            quote_spanned!(ty_span(f)=> <#m as ::stategraph::__private::Reducer<#ty>>::Update)
        }
        (_, None) => quote!(#ty),
    }
}

/// The generated partial-update type's name.
pub(super) fn update_ident(state: &State<'_>) -> syn::Ident {
    state.update.clone()
}

/// When the state's module already has an item named `<State>Update` (rustc would
/// report the duplicate on it, then every generated impl against the user's item), the
/// update type is generated under a name the user's code does not use, and the clash
/// is reported once, on the state's name.
pub(super) fn rename_taken_update(cx: &mut Ctxt, state: &mut State<'_>, file: Option<&Path>) {
    let name = state.update.to_string();
    let ident = state.ident;
    if !file.is_some_and(|file| {
        stategraph_macro_source::state_sibling_named(
            file,
            &stategraph_macro_source::unraw(ident),
            &name,
        )
    }) {
        return;
    }
    cx.error_spanned_by(
        ident,
        format!(
            "`#[derive(GraphState)]` generates `{name}`, the update type of `{ident}`, but this scope already has an item named `{name}`: rename that item"
        ),
    );
    state.update = format_ident!("__{}GeneratedUpdate", ident, span = ident.span());
}

/// Name of the per-field local or constant with `prefix`.
pub(super) fn field_ident(prefix: &str, f: &Field<'_>) -> syn::Ident {
    format_ident!("__SG_{}_{}", prefix, f.index)
}

pub(super) fn index_lit(f: &Field<'_>) -> syn::LitInt {
    syn::LitInt::new(&f.index.to_string(), Span::call_site())
}

/// A built-in reducer (not `last`) on a field type whose tokens do not show whether it
/// fits (an alias, a user type): its fit is a bound of every generated impl and is
/// checked once, at the field's type.
pub fn opaque_reducer(f: &Field<'_>) -> bool {
    matches!(f.reducer, Reducer::Builtin(def) if !def.is_last())
        && valid::shape(f.ty) == crate::reducers::Shape::Unknown
}

/// One check per built-in reducer, emitted before everything else and spanned at the
/// field's type, so a reducer on a type alias or user type it cannot fold is first
/// reported there (the type checker sees through the alias; the tokens do not).
pub(super) fn reducer_checks(state: &State<'_>) -> TokenStream {
    let checks = state.fields.iter().filter_map(|f| {
        let m = marker(f)?;
        if f.reducer.is_last() {
            return None;
        }
        let ty = f.ty;
        let ident = format_ident!("__SgReducerCheck{}", f.index);
        if opaque_reducer(f) {
            // Every bound the impls carry for this field, checked once; the marker is
            // spanned at the type too so the error points at the type.
            let m = marker_at(f, ty_span(f));
            let p = quote_spanned!(ty_span(f)=> ::stategraph::__private);
            let fits = match (f.untracked, f.reducer.is_delta()) {
                (true, _) => quote_spanned!(ty_span(f)=> Fits),
                (false, false) => quote_spanned!(ty_span(f)=> FitsStored),
                (false, true) => quote_spanned!(ty_span(f)=> FitsDelta),
            };
            return Some(quote_spanned! {ty_span(f)=>
                #[allow(dead_code, non_camel_case_types)]
                struct #ident(
                    ::core::marker::PhantomData<<#m as #p::Reducer<#ty>>::Update>,
                    #p::#fits<#m, #ty>,
                );
            });
        }
        Some(quote_spanned! {ty_span(f)=>
            #[allow(dead_code, non_camel_case_types)]
            struct #ident(::core::marker::PhantomData<<#m as ::stategraph::__private::Reducer<#ty>>::Update>);
        })
    });
    quote! {
        const _: () = {
            #(#checks)*
        };
    }
}
