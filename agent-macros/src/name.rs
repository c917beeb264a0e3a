//! The tool's name, checked against what model APIs accept (OpenAI:
//! `^[a-zA-Z0-9_-]{1,64}$`), so a name a provider would refuse is a compile error on
//! the user's token.

use syn::Ident;
use syn::ext::IdentExt;

use crate::attr::ToolOptions;
use crate::ctxt::Ctxt;

pub const MAX_LEN: usize = 64;

/// The name: `name = ".."` or the function's name without `r#`. Errors are pushed
/// to `cx`; the name is returned either way.
pub fn check(cx: &mut Ctxt, ident: &Ident, options: &ToolOptions) -> String {
    let (name, span, how) = match &options.name {
        Some(n) => (n.value.clone(), n.span, "change `name = \"..\"`"),
        None => (
            ident.unraw().to_string(),
            ident.span(),
            "rename the function or give it `#[tool(name = \"..\")]`",
        ),
    };
    if name.is_empty() {
        cx.push(syn::Error::new(
            span,
            "a tool name cannot be empty: give it a name, or drop `name = \"\"` to use the function's name",
        ));
    } else if let Some(problem) = problem(&name) {
        cx.push(syn::Error::new(span, format!("{problem}: {how}")));
    }
    name
}

fn problem(name: &str) -> Option<String> {
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Some(format!(
            "tool name `{name}` contains `{c}`; model APIs accept only ASCII letters, digits, `_` and `-`"
        ));
    }
    let len = name.len();
    (len > MAX_LEN).then(|| {
        format!("tool name `{name}` is {len} characters long; model APIs accept at most {MAX_LEN}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::Span;

    fn errors(ident: &str, name: Option<&str>) -> Vec<String> {
        let ident: Ident = syn::parse_str(ident).expect("an identifier");
        let options = ToolOptions {
            name: name.map(|n| crate::ctxt::Sp::new(n.to_string(), Span::call_site())),
            description: None,
        };
        let mut cx = Ctxt::default();
        check(&mut cx, &ident, &options);
        cx.into_messages()
    }

    #[test]
    fn raw_function_names_lose_their_prefix() {
        let ident: Ident = syn::parse_str("r#type").expect("an identifier");
        let mut cx = Ctxt::default();
        assert_eq!(check(&mut cx, &ident, &ToolOptions::default()), "type");
        assert!(!cx.has_errors());
    }

    #[test]
    fn names_model_apis_refuse_are_errors() {
        assert_eq!(
            errors("a", Some("")),
            [
                "a tool name cannot be empty: give it a name, or drop `name = \"\"` to use the function's name"
            ]
        );
        assert_eq!(
            errors("a", Some("get weather")),
            [
                "tool name `get weather` contains ` `; model APIs accept only ASCII letters, digits, `_` and `-`: change `name = \"..\"`"
            ]
        );
        assert_eq!(errors("météo", None).len(), 1);
        assert_eq!(errors("a", Some(&"x".repeat(65))).len(), 1);
        assert!(errors("a", Some(&"x".repeat(64))).is_empty());
        assert!(errors("a", Some("get-weather_2")).is_empty());
    }
}
