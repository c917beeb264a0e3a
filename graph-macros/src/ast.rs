//! The resolved model of a `#[derive(GraphState)]` input: every field with its reducer
//! and persistence, each keeping the span of the user's tokens.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, Path, Type};

use crate::attr::{self, ReducerAttr};
use crate::ctxt::Ctxt;
use crate::reducers::{self, ReducerDef};

pub struct State<'a> {
    pub ident: &'a Ident,
    pub vis: &'a syn::Visibility,
    pub generics: &'a syn::Generics,
    pub fields: Vec<Field<'a>>,
    /// The generated partial-update type's name: `<State>Update`, unless the user's
    /// module already has an item of that name (see `expand::update_name`).
    pub update: Ident,
}

pub struct Field<'a> {
    pub index: usize,
    pub member: &'a Ident,
    /// The field name without `r#`.
    pub name: String,
    pub ty: &'a Type,
    pub reducer: Reducer,
    /// Span of the reducer name, or of the field when it has no `#[reducer]`.
    pub reducer_span: Span,
    pub untracked: bool,
    /// Another field already has this field's key (`State::FIELD`): no key is
    /// generated for it, the error says why.
    pub key_taken: bool,
}

#[derive(Clone)]
pub enum Reducer {
    /// A reducer of the table, `reducers::LAST` for a field without `#[reducer]`.
    Builtin(&'static ReducerDef),
    With {
        path: Path,
        update: Box<Type>,
    },
}

impl Reducer {
    /// The default last-value reducer.
    pub fn last() -> Self {
        Reducer::Builtin(&reducers::LAST)
    }

    /// Whether a checkpoint may store only the items a step appended.
    pub fn is_delta(&self) -> bool {
        matches!(self, Reducer::Builtin(def) if def.delta.is_some())
    }

    /// Whether this is the default last-value reducer.
    pub fn is_last(&self) -> bool {
        matches!(self, Reducer::Builtin(def) if def.is_last())
    }
}

impl<'a> State<'a> {
    pub fn from_input(cx: &mut Ctxt, input: &'a DeriveInput) -> Option<Self> {
        let named = match &input.data {
            Data::Struct(data) => match &data.fields {
                Fields::Named(named) if named.named.is_empty() => {
                    cx.push(syn::Error::new(
                        named.brace_token.span.join(),
                        "`GraphState` needs at least one field: each field is a channel; add the fields the graph's nodes read and write",
                    ));
                    return None;
                }
                Fields::Named(named) => named,
                Fields::Unnamed(_) => {
                    cx.error_spanned_by(
                        &data.fields,
                        "`GraphState` needs a struct with named fields: each field is a channel, named by its field name",
                    );
                    return None;
                }
                Fields::Unit => {
                    cx.error_spanned_by(
                        &input.ident,
                        "`GraphState` cannot be derived for a unit struct: add named fields, one per channel",
                    );
                    return None;
                }
            },
            Data::Enum(data) => {
                cx.push(syn::Error::new(
                    data.enum_token.span,
                    "`GraphState` can only be derived for a struct with named fields, not an enum",
                ));
                return None;
            }
            Data::Union(data) => {
                cx.push(syn::Error::new(
                    data.union_token.span,
                    "`GraphState` can only be derived for a struct with named fields, not a union",
                ));
                return None;
            }
        };
        let fields = named
            .named
            .iter()
            .enumerate()
            .filter_map(|(index, field)| {
                let member = field.ident.as_ref()?;
                let attrs = attr::parse_field_attrs(cx, &field.attrs);
                let (reducer, reducer_span) = match attrs.reducer {
                    None => (Reducer::last(), field.ty.span()),
                    Some(sp) => (resolve_reducer(sp.value, &field.ty), sp.span),
                };
                Some(Field {
                    index,
                    member,
                    name: member.unraw().to_string(),
                    ty: &field.ty,
                    reducer,
                    reducer_span,
                    untracked: attrs.untracked.is_some(),
                    key_taken: false,
                })
            })
            .collect();
        Some(State {
            ident: &input.ident,
            vis: &input.vis,
            generics: &input.generics,
            fields,
            update: quote::format_ident!("{}Update", input.ident),
        })
    }
}

fn resolve_reducer(attr: ReducerAttr, field_ty: &Type) -> Reducer {
    match attr {
        ReducerAttr::Builtin(def) => Reducer::Builtin(def),
        ReducerAttr::With { path, update } => Reducer::With {
            path,
            update: update.unwrap_or_else(|| Box::new(field_ty.clone())),
        },
    }
}
