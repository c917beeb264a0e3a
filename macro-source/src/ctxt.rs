//! Collects every error a macro finds while reading its input, so one compile shows
//! them all; and a parsed value with the span it came from.

use proc_macro2::TokenStream;

/// The errors found so far.
#[derive(Default)]
pub struct Ctxt {
    errors: Vec<syn::Error>,
}

impl Ctxt {
    /// Adds an error.
    pub fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// Adds an error spanned at `tokens`.
    pub fn error_spanned_by(
        &mut self,
        tokens: impl quote::ToTokens,
        message: impl std::fmt::Display,
    ) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Every error as `compile_error!` tokens, in the order found.
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
    /// The value.
    pub value: T,
    /// Where it was written.
    pub span: proc_macro2::Span,
}

impl<T> Sp<T> {
    /// `value`, written at `span`.
    pub fn new(value: T, span: proc_macro2::Span) -> Self {
        Self { value, span }
    }
}

impl Ctxt {
    /// Whether any error was found.
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// The errors' messages (for the macros' own tests).
    pub fn into_messages(self) -> Vec<String> {
        self.errors.iter().map(ToString::to_string).collect()
    }

    /// How many errors are collected so far.
    pub fn error_count(&self) -> usize {
        self.errors.len()
    }
}
