//! Raw syntax of `#[tool(..)]` arguments.

use proc_macro2::TokenStream;
use syn::LitStr;
use syn::parse::Parser;

use crate::ctxt::{Ctxt, Sp};

pub const NAME: &str = "name";
pub const DESCRIPTION: &str = "description";
/// The marker of the single-struct parameter form: `fn search(#[args] q: Query)`.
pub const ARGS: &str = "args";

#[derive(Default)]
pub struct ToolOptions {
    pub name: Option<Sp<String>>,
    pub description: Option<Sp<String>>,
}

pub fn parse_args(cx: &mut Ctxt, args: TokenStream) -> ToolOptions {
    let mut options = ToolOptions::default();
    let parser = syn::meta::parser(|meta| {
        let slot = if meta.path.is_ident(NAME) {
            &mut options.name
        } else if meta.path.is_ident(DESCRIPTION) {
            &mut options.description
        } else {
            return Err(meta.error(
                "unknown `#[tool]` option, expected `name = \"...\"` or `description = \"...\"`",
            ));
        };
        if slot.is_some() {
            let key = if meta.path.is_ident(NAME) {
                NAME
            } else {
                DESCRIPTION
            };
            return Err(meta.error(format!("duplicate `{key}`: give it once")));
        }
        let lit: LitStr = meta.value()?.parse()?;
        *slot = Some(Sp::new(lit.value(), lit.span()));
        Ok(())
    });
    if let Err(e) = parser.parse2(args) {
        cx.push(e);
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn parse(args: TokenStream) -> (ToolOptions, Vec<String>) {
        let mut cx = Ctxt::default();
        let options = parse_args(&mut cx, args);
        (options, cx.into_messages())
    }

    #[test]
    fn reads_name_and_description() {
        let (options, errors) = parse(quote!(name = "weather", description = "Forecast."));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(options.name.map(|n| n.value).as_deref(), Some("weather"));
        assert_eq!(
            options.description.map(|d| d.value).as_deref(),
            Some("Forecast.")
        );
    }

    #[test]
    fn rejects_duplicates_and_unknown_keys() {
        let (_, errors) = parse(quote!(name = "a", name = "b"));
        assert_eq!(errors, ["duplicate `name`: give it once"]);
        let (_, errors) = parse(quote!(description = "a", description = "b"));
        assert_eq!(errors, ["duplicate `description`: give it once"]);
        let (_, errors) = parse(quote!(title = "a"));
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].starts_with("unknown `#[tool]` option"),
            "{errors:?}"
        );
        let (_, errors) = parse(quote!(name = 3));
        assert_eq!(errors.len(), 1);
    }
}
