//! Raw syntax of `#[node(..)]` arguments.

use proc_macro2::TokenStream;
use syn::ext::IdentExt;
use syn::parse::Parser;
use syn::{Ident, LitStr};

use crate::ctxt::{Ctxt, Sp};

pub const NAME: &str = "name";
pub const READS: &str = "reads";

#[derive(Default)]
pub struct NodeOptions {
    pub name: Option<Sp<String>>,
    /// `reads(a, b)`: the state fields the node reads.
    pub reads: Option<Vec<Ident>>,
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
        } else if meta.path.is_ident(READS) {
            if options.reads.is_some() {
                return Err(meta.error("duplicate `reads`"));
            }
            let mut fields: Vec<Ident> = Vec::new();
            meta.parse_nested_meta(|field| {
                let ident = field.path.require_ident()?;
                if fields.iter().any(|f| f.unraw() == ident.unraw()) {
                    return Err(field.error(format!("`{}` is listed twice", ident.unraw())));
                }
                fields.push(ident.clone());
                Ok(())
            })?;
            options.reads = Some(fields);
            Ok(())
        } else {
            Err(meta
                .error("unknown `#[node]` option, expected `name = \"...\"` or `reads(field, ..)`"))
        }
    });
    if let Err(e) = parser.parse2(args) {
        cx.push(e);
    }
    options
}
