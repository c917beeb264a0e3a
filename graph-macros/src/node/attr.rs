//! Raw syntax of `#[node(..)]` arguments.

use proc_macro2::TokenStream;
use syn::LitStr;
use syn::parse::Parser;

use crate::ctxt::{Ctxt, Sp};

pub const NAME: &str = "name";

#[derive(Default)]
pub struct NodeOptions {
    pub name: Option<Sp<String>>,
}

pub fn parse_args(cx: &mut Ctxt, args: TokenStream) -> NodeOptions {
    let mut options = NodeOptions::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident(NAME) {
            if options.name.is_some() {
                return Err(meta.error("duplicate `name`"));
            }
            let lit: LitStr = meta.value()?.parse()?;
            options.name = Some(Sp::new(lit.value(), lit.span()));
            Ok(())
        } else {
            Err(meta.error("unknown `#[node]` option, expected `name = \"...\"`"))
        }
    });
    if let Err(e) = parser.parse2(args) {
        cx.push(e);
    }
    options
}
