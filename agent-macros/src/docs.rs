//! Doc comments as text: the tool's description and each parameter's.
//!
//! Rule: the `///` lines are trimmed one by one and joined with newlines, and the
//! whole is trimmed; a doc made only of blank lines counts as no doc.

use syn::{Attribute, Expr, ExprLit, ItemFn, Lit, Meta};

use crate::attr::ToolOptions;
use crate::ctxt::Ctxt;

/// The doc text of `attrs`, `None` when there is none. A `#[doc = ..]` whose value
/// is not a string literal (`include_str!`) cannot be read by the macro: an error.
pub fn doc_text(cx: &mut Ctxt, attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        match &attr.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => lines.push(s.value()),
                other => cx.error_spanned_by(
                    other,
                    "`#[tool]` reads doc comments as written and cannot expand this: write the text as `///` lines or use `#[tool(description = \"...\")]`",
                ),
            },
            other => cx.error_spanned_by(other, "expected `#[doc = \"...\"]`"),
        }
    }
    let text = lines
        .iter()
        .flat_map(|l| l.split('\n'))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The tool's description: `description = ".."` or the function's doc comment.
pub fn description(cx: &mut Ctxt, func: &ItemFn, options: &ToolOptions) -> String {
    if let Some(given) = &options.description {
        let text = given.value.trim();
        if text.is_empty() {
            cx.push(syn::Error::new(
                given.span,
                "a tool description cannot be empty: say what the tool does, so the model knows when to call it",
            ));
        }
        return text.to_string();
    }
    let before = cx.error_count();
    match doc_text(cx, &func.attrs) {
        Some(text) => text,
        // A doc the macro cannot read is already reported.
        None if cx.error_count() > before => String::new(),
        None => {
            cx.error_spanned_by(
                &func.sig.ident,
                "a tool needs a description: add a doc comment (`/// What it does.`) to the function, or `#[tool(description = \"...\")]`; the model reads it to decide when to call the tool",
            );
            String::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    #[test]
    fn doc_lines_are_trimmed_and_joined() {
        let func: ItemFn = parse_quote! {
            ///  Get the weather.
            ///
            /// Uses the forecast service.
            fn a() {}
        };
        let mut cx = Ctxt::default();
        let text = description(&mut cx, &func, &ToolOptions::default());
        assert!(!cx.has_errors());
        assert_eq!(text, "Get the weather.\n\nUses the forecast service.");
    }

    #[test]
    fn blank_docs_are_no_docs() {
        let func: ItemFn = parse_quote! {
            ///
            ///
            fn a() {}
        };
        let mut cx = Ctxt::default();
        description(&mut cx, &func, &ToolOptions::default());
        let errors = cx.into_messages();
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].starts_with("a tool needs a description"),
            "{errors:?}"
        );
    }

    #[test]
    fn the_option_wins_over_the_doc() {
        let func: ItemFn = parse_quote! {
            /// Doc.
            fn a() {}
        };
        let options = ToolOptions {
            name: None,
            description: Some(crate::ctxt::Sp::new(
                " Given. ".into(),
                proc_macro2::Span::call_site(),
            )),
        };
        let mut cx = Ctxt::default();
        assert_eq!(description(&mut cx, &func, &options), "Given.");
        assert!(!cx.has_errors());
    }

    #[test]
    fn an_empty_description_option_is_an_error_even_with_a_doc() {
        let func: ItemFn = parse_quote! {
            /// Doc.
            fn a() {}
        };
        let options = ToolOptions {
            name: None,
            description: Some(crate::ctxt::Sp::new(
                "  ".into(),
                proc_macro2::Span::call_site(),
            )),
        };
        let mut cx = Ctxt::default();
        description(&mut cx, &func, &options);
        let errors = cx.into_messages();
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].starts_with("a tool description cannot be empty"),
            "{errors:?}"
        );
    }

    #[test]
    fn doc_attributes_that_are_not_literals_are_errors() {
        let func: ItemFn = parse_quote! {
            #[doc = include_str!("x.md")]
            fn a() {}
        };
        let mut cx = Ctxt::default();
        description(&mut cx, &func, &ToolOptions::default());
        let errors = cx.into_messages();
        // One error on the attribute; no second one about the missing description.
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("cannot expand this"), "{errors:?}");
    }
}
