//! Code generation for `#[derive(GraphState)]`, one file per generated thing.

mod codec;
mod common;
mod keys;
pub mod schema;
mod state_impl;
mod update;

use std::path::Path;

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::DeriveInput;

use crate::ast::State;
use crate::ctxt::Ctxt;
use crate::valid;
use codec::state_bounds;
use common::{reducer_checks, rename_taken_update};

pub fn derive_graph_state(input: &DeriveInput, file: Option<&Path>) -> TokenStream {
    let mut cx = Ctxt::default();
    let Some(mut state) = State::from_input(&mut cx, input) else {
        return cx.into_compile_errors();
    };
    rename_taken_update(&mut cx, &mut state, file);
    valid::check(&mut cx, &mut state);
    if !state.generics.params.is_empty() {
        return cx.into_compile_errors();
    }
    // Attribute mistakes fall back to a last-value channel, so the rest of the user's
    // code still type-checks and only the real mistake is reported.
    let keys = keys::expand(&state);
    let update = update::expand(&state);
    let state_impl = state_impl::expand(&state);
    let codecs = codec::expand(&state, &state_bounds(&state));
    let errors = cx.into_compile_errors();
    let checks = reducer_checks(&state);
    let ident = state.ident;
    let supertraits = quote_spanned!(ident.span()=>
        const _: () = ::stategraph::__private::assert_state::<#ident>();
    );
    quote! {
        #supertraits
        #checks
        #keys
        #update
        const _: () = {
            #codecs
            #state_impl
        };
        #errors
    }
}
