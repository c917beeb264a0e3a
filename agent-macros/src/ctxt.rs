//! Collects every error found while reading the input, so one compile shows them all.

use proc_macro2::TokenStream;

#[derive(Default)]
pub struct Ctxt {
    errors: Vec<syn::Error>,
}

impl Ctxt {
    pub fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    pub fn error_spanned_by(
        &mut self,
        tokens: impl quote::ToTokens,
        message: impl std::fmt::Display,
    ) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    pub fn into_compile_errors(self) -> TokenStream {
        self.errors
            .into_iter()
            .map(|e| e.to_compile_error())
            .collect()
    }
}

/// A parsed value with the span of the token that produced it, so late checks still
/// point at the user's code.
#[derive(Clone)]
pub struct Sp<T> {
    pub value: T,
    pub span: proc_macro2::Span,
}

impl<T> Sp<T> {
    pub fn new(value: T, span: proc_macro2::Span) -> Self {
        Self { value, span }
    }
}

#[cfg(test)]
impl Ctxt {
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    pub fn into_messages(self) -> Vec<String> {
        self.errors.iter().map(ToString::to_string).collect()
    }
}

impl Ctxt {
    /// How many errors are collected so far.
    pub fn error_count(&self) -> usize {
        self.errors.len()
    }
}
