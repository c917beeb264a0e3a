//! Per-channel codec constants. Each is built once from a generic constructor whose
//! bound (`Checkpointable`, `Sequence`, ..) is checked at the field's type, so a field
//! that cannot be stored gets one error, on that field. They are associated consts of
//! a hidden type whose impl carries the state's bounds (see `bounds`).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::common::{field_ident, opaque_reducer_bounds, ty_span, update_ty};
use super::schema;
use crate::ast::{Field, Reducer, State};
use crate::reducers::ReducerDef;

/// Whether the update type is syntactically the field type, so one codec serves both.
pub fn update_is_value(f: &Field<'_>) -> bool {
    // On an opaque type the update type is a projection the impls cannot equate with
    // the field type when the reducer does not fit; give it its own codec.
    if super::common::opaque_reducer(f) {
        return false;
    }
    match &f.reducer {
        Reducer::Builtin(def) => def.update_is_value,
        Reducer::With { update, .. } => schema::type_text(update) == schema::type_text(f.ty),
    }
}

/// The name of the hidden type whose associated consts are the codecs; it lives in the
/// `const _` block next to the `GraphState` impl.
fn holder() -> syn::Ident {
    syn::Ident::new("__SgCodecs", proc_macro2::Span::call_site())
}

fn value_codec_ident(f: &Field<'_>) -> syn::Ident {
    field_ident("CODEC", f)
}

fn update_codec_ident(f: &Field<'_>) -> syn::Ident {
    if update_is_value(f) {
        value_codec_ident(f)
    } else {
        field_ident("UCODEC", f)
    }
}

pub fn value_codec(f: &Field<'_>) -> TokenStream {
    let (h, c) = (holder(), value_codec_ident(f));
    quote!(#h::#c)
}

pub fn update_codec(f: &Field<'_>) -> TokenStream {
    let (h, c) = (holder(), update_codec_ident(f));
    quote!(#h::#c)
}

pub fn delta_codec(f: &Field<'_>) -> TokenStream {
    let (h, c) = (holder(), field_ident("DELTA", f));
    quote!(#h::#c)
}

/// `for<'__sg> Inner: Checkpointable` for every user type inside a tracked field's std
/// containers: the codecs (and so every impl that uses them) are bounded on it, so a
/// non-serde `Cache` in `Vec<Cache>` is only reported by the check on `Cache` itself,
/// not again through serde's bound on the container.
pub fn bounds(state: &State<'_>) -> Vec<TokenStream> {
    let p = quote!(::stategraph::__private);
    state
        .fields
        .iter()
        .filter(|f| !f.untracked)
        .flat_map(|f| nested_user_types(f.ty))
        .map(|inner| quote!(for<'__sg> #inner: #p::Checkpointable))
        // One bound per type as written: the same bound twice is harmless, but fewer
        // where-clauses are less work for the trait solver.
        .fold(Vec::new(), |mut out: Vec<TokenStream>, b| {
            if !out.iter().any(|o| o.to_string() == b.to_string()) {
                out.push(b);
            }
            out
        })
}

pub fn expand(state: &State<'_>, bounds: &TokenStream) -> TokenStream {
    let p = quote!(::stategraph::__private);
    let mut checks = TokenStream::new();
    let mut consts = TokenStream::new();
    for f in state.fields.iter().filter(|f| !f.untracked) {
        let ty = f.ty;
        let span = ty_span(f);
        let codec = value_codec_ident(f);
        // A user type inside std containers (`Vec<Cache>`) is checked on its own, so
        // its missing serde impls get our message, on that token; the container's
        // codec is bounded on it (see `bounds`) and reports nothing more.
        for inner in nested_user_types(ty) {
            checks.extend(quote_spanned! {inner.span()=>
                const _: #p::Codec<#inner> = #p::codec::<#inner>();
            });
        }
        let value = match super::common::marker(f) {
            Some(m) if super::common::opaque_reducer(f) => {
                quote_spanned!(span=> <#m as #p::StoredReducer<#ty>>::CODEC)
            }
            _ => quote_spanned!(span=> #p::codec::<#ty>()),
        };
        consts.extend(quote_spanned! {span=>
            const #codec: #p::Codec<#ty> = #value;
        });
        if !update_is_value(f) {
            let ucodec = update_codec_ident(f);
            let uty = update_ty(f);
            // On an opaque type, through the bound the impls carry (see `bounds`).
            let value = match super::common::marker(f) {
                Some(m) if super::common::opaque_reducer(f) => {
                    quote_spanned!(span=> <#m as #p::StoredReducer<#ty>>::UCODEC)
                }
                _ => quote_spanned!(span=> #p::codec::<#uty>()),
            };
            consts.extend(quote_spanned! {span=>
                const #ucodec: #p::Codec<#uty> = #value;
            });
        }
        let delta = field_ident("DELTA", f);
        if let Reducer::Builtin(ReducerDef {
            delta: Some(make), ..
        }) = f.reducer
        {
            // On an opaque type, through the bound the impls carry (see `bounds`).
            let value = if super::common::opaque_reducer(f) {
                let m = super::common::marker(f);
                quote_spanned!(span=> <#m as #p::DeltaReducer<#ty>>::DELTA)
            } else {
                let make = syn::Ident::new(make, span);
                quote_spanned!(span=> #p::#make::<#ty>())
            };
            consts.extend(quote_spanned! {span=>
                const #delta: #p::DeltaCodec<#ty> = #value;
            });
        }
    }
    let h = holder();
    quote! {
        #checks
        #[allow(dead_code)]
        struct #h;
        impl #h #bounds {
            #consts
        }
    }
}

/// Std containers whose type arguments are checked one by one.
const CONTAINERS: [&str; 10] = [
    "Vec", "VecDeque", "Option", "Box", "BTreeMap", "HashMap", "BTreeSet", "HashSet", "Arc", "Rc",
];
/// Leaf types that are always serializable.
const LEAVES: [&str; 18] = [
    "String", "bool", "char", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32",
    "i64", "i128", "isize", "f32", "f64", "Message",
];

/// The types inside std containers (at any depth) that are neither containers nor
/// known leaves: user types whose serde impls rustc would report as a nested bound.
fn nested_user_types(ty: &syn::Type) -> Vec<&syn::Type> {
    let mut out = Vec::new();
    if let Some(args) = container_args(ty) {
        for arg in args {
            collect(arg, &mut out);
        }
    }
    out
}

fn collect<'a>(ty: &'a syn::Type, out: &mut Vec<&'a syn::Type>) {
    match ty {
        syn::Type::Tuple(t) => t.elems.iter().for_each(|e| collect(e, out)),
        syn::Type::Array(a) => collect(&a.elem, out),
        syn::Type::Paren(p) => collect(&p.elem, out),
        syn::Type::Path(p) if p.qself.is_none() => match container_args(ty) {
            Some(args) => args.into_iter().for_each(|a| collect(a, out)),
            None => {
                let leaf = p
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| LEAVES.contains(&s.ident.to_string().as_str()));
                if !leaf {
                    out.push(ty);
                }
            }
        },
        _ => {}
    }
}

/// The type arguments of a std container type, `None` for anything else.
fn container_args(ty: &syn::Type) -> Option<Vec<&syn::Type>> {
    let syn::Type::Path(p) = ty else {
        return None;
    };
    let last = p.path.segments.last()?;
    if p.qself.is_some() || !CONTAINERS.contains(&last.ident.to_string().as_str()) {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    Some(
        args.args
            .iter()
            .filter_map(|a| match a {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
    )
}

/// The where-clause of every generated impl that needs `State: GraphState`: the
/// supertraits, behind a binder (trivial bounds are unstable), so a state missing
/// `Clone` or `Default` fails only `assert_state`, not each impl and item again;
/// and the codecs' bounds on user types nested in containers (`codec::bounds`).
pub(super) fn state_bounds(state: &State<'_>) -> TokenStream {
    let ident = state.ident;
    let codecs = bounds(state);
    let reducers = opaque_reducer_bounds(state);
    quote! {
        where for<'__sg> #ident: ::core::clone::Clone
            + ::core::default::Default
            + ::core::marker::Send
            + ::core::marker::Sync
            + 'static,
            #(#codecs,)*
            #(#reducers,)*
    }
}
