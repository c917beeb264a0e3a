//! The checked shape of a tool function.
//!
//! Rule: a tool is a free, non-generic, safe function (`async` or not) whose
//! parameters are named (`city: String`) and owned. Either every parameter is one
//! property of the arguments object (the per-parameter form; `Option<_>` ones are
//! not required, `///` on a parameter describes it), or the single parameter is
//! marked `#[args]` and its type is the whole arguments object.

use syn::{Attribute, FnArg, Ident, ItemFn, Pat, ReturnType, Signature, Type};

use crate::attr::ARGS;
use crate::ctxt::Ctxt;
use crate::docs::doc_text;

pub struct ToolFn<'a> {
    pub func: &'a ItemFn,
    pub params: Params<'a>,
    /// The written return type; `None` for `()`.
    pub output: Option<&'a Type>,
    pub is_async: bool,
}

pub enum Params<'a> {
    /// Each parameter is a property of the arguments object.
    Each(Vec<Param<'a>>),
    /// `#[args] q: Query`: `Query` is the arguments object.
    Args(Param<'a>),
}

pub struct Param<'a> {
    pub ident: &'a Ident,
    pub ty: &'a Type,
    /// From the parameter's `///` lines.
    pub description: Option<String>,
    /// Written as `Option<_>`: not required; a missing property is `None`.
    pub optional: bool,
}

const NAMED: &str = "name the parameter: each parameter of a tool is a property of its arguments object, e.g. `city: String`";

impl<'a> ToolFn<'a> {
    pub fn from_fn(cx: &mut Ctxt, func: &'a ItemFn) -> Option<Self> {
        let sig = &func.sig;
        let before = cx.error_count();
        if let Some(receiver) = sig.receiver() {
            cx.error_spanned_by(
                receiver,
                "`#[tool]` goes on a free function: move it out of the `impl` block and drop `self`",
            );
            return None;
        }
        if let Some(param) = sig.generics.params.first() {
            cx.error_spanned_by(
                param,
                "a tool cannot be generic: its arguments are decoded from JSON into concrete types; remove the generic parameter",
            );
        }
        if let Some(unsafety) = &sig.unsafety {
            cx.error_spanned_by(
                unsafety,
                "a tool cannot be an `unsafe fn`: a model calls it with any arguments; make it safe",
            );
        }
        let mut params = Vec::new();
        let mut args_attr: Option<&Attribute> = None;
        for arg in &sig.inputs {
            let FnArg::Typed(typed) = arg else { continue };
            let ident = match &*typed.pat {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => &p.ident,
                other => {
                    cx.error_spanned_by(other, NAMED);
                    continue;
                }
            };
            let ty = &*typed.ty;
            if !check_type(cx, ty) {
                continue;
            }
            let marker = typed.attrs.iter().find(|a| a.path().is_ident(ARGS));
            if let Some(marker) = marker {
                if !matches!(marker.meta, syn::Meta::Path(_)) {
                    cx.error_spanned_by(marker, "`#[args]` takes no arguments");
                }
                if args_attr.is_some() {
                    cx.error_spanned_by(marker, "only one parameter can be `#[args]`");
                }
                args_attr = Some(marker);
            }
            let description = doc_text(cx, &typed.attrs);
            if marker.is_some() && description.is_some() {
                cx.error_spanned_by(
                    ident,
                    "an `#[args]` parameter is described by its type: move this doc comment to the struct's fields",
                );
            }
            params.push(Param {
                ident,
                ty,
                description,
                optional: is_option(ty),
            });
        }
        if cx.error_count() > before {
            return None;
        }
        let params = match args_attr {
            Some(marker) if params.len() > 1 => {
                cx.error_spanned_by(
                    marker,
                    "an `#[args]` parameter must be the tool's only parameter: move the other parameters into its struct",
                );
                return None;
            }
            Some(_) => Params::Args(params.pop()?),
            None => Params::Each(params),
        };
        let output = match &sig.output {
            ReturnType::Type(_, ty) => Some(&**ty),
            ReturnType::Default => None,
        };
        Some(ToolFn {
            func,
            params,
            output,
            is_async: sig.asyncness.is_some(),
        })
    }
}

/// Types the tokens show cannot be decoded from JSON: borrowed ones, `impl Trait`.
fn check_type(cx: &mut Ctxt, ty: &Type) -> bool {
    match ty {
        Type::Reference(_) => {
            cx.error_spanned_by(
                ty,
                "a tool's arguments are decoded from JSON into owned values: take `String` rather than `&str`, `Vec<T>` rather than `&[T]`",
            );
            false
        }
        Type::ImplTrait(_) => {
            cx.error_spanned_by(
                ty,
                "a tool cannot be generic: its arguments are decoded from JSON into concrete types; name a concrete type",
            );
            false
        }
        Type::Paren(p) => check_type(cx, &p.elem),
        _ => true,
    }
}

/// Whether a type is written as `Option<_>` (any path ending in it).
fn is_option(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|s| {
            s.ident == "Option" && matches!(s.arguments, syn::PathArguments::AngleBracketed(_))
        }),
        Type::Paren(p) => is_option(&p.elem),
        Type::Group(g) => is_option(&g.elem),
        _ => false,
    }
}

/// Removes what rustc refuses on a function's parameters (`///` lines) or would not
/// know (`#[args]`), both read by the macro.
pub fn strip_param_attrs(sig: &mut Signature) {
    for arg in &mut sig.inputs {
        if let FnArg::Typed(typed) = arg {
            typed
                .attrs
                .retain(|a| !a.path().is_ident("doc") && !a.path().is_ident(ARGS));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn messages(func: ItemFn) -> Vec<String> {
        let mut cx = Ctxt::default();
        let parsed = ToolFn::from_fn(&mut cx, &func).is_some();
        let messages = cx.into_messages();
        assert_eq!(parsed, messages.is_empty(), "{messages:?}");
        messages
    }

    #[test]
    fn accepted_signatures() {
        let func: ItemFn = parse_quote! {
            async fn a(
                /// The city.
                city: String,
                mut day: Option<String>,
                r#type: std::option::Option<u8>,
            ) -> String { todo() }
        };
        let mut cx = Ctxt::default();
        let tool = ToolFn::from_fn(&mut cx, &func).expect("accepted");
        let Params::Each(params) = &tool.params else {
            panic!("per-parameter form")
        };
        let seen: Vec<_> = params
            .iter()
            .map(|p| (p.ident.to_string(), p.optional, p.description.clone()))
            .collect();
        assert_eq!(
            seen,
            [
                ("city".into(), false, Some("The city.".into())),
                ("day".into(), true, None),
                ("r#type".into(), true, None),
            ]
        );
        assert!(tool.is_async);
        assert!(
            messages(parse_quote!(
                fn a(#[args] q: Query) {}
            ))
            .is_empty()
        );
    }

    #[test]
    fn rejected_signatures_say_the_fix() {
        let cases: Vec<(ItemFn, &str)> = vec![
            (
                parse_quote!(
                    fn a(&self) {}
                ),
                "goes on a free function",
            ),
            (
                parse_quote!(
                    fn a<T>(x: T) {}
                ),
                "cannot be generic",
            ),
            (
                parse_quote!(
                    fn a<'x>(x: u8) {}
                ),
                "cannot be generic",
            ),
            (
                parse_quote!(
                    fn a(x: impl Into<u8>) {}
                ),
                "cannot be generic",
            ),
            (
                parse_quote!(
                    unsafe fn a() {}
                ),
                "`unsafe fn`",
            ),
            (
                parse_quote!(
                    fn a((x, y): (u8, u8)) {}
                ),
                "name the parameter",
            ),
            (
                parse_quote!(
                    fn a(_: u8) {}
                ),
                "name the parameter",
            ),
            (
                parse_quote!(
                    fn a(x: &str) {}
                ),
                "owned values",
            ),
            (
                parse_quote!(
                    fn a(#[args] q: Query, x: u8) {}
                ),
                "must be the tool's only parameter",
            ),
            (
                parse_quote!(
                    fn a(#[args(x)] q: Query) {}
                ),
                "takes no arguments",
            ),
        ];
        for (func, expected) in cases {
            let m = messages(func);
            assert_eq!(m.len(), 1, "{m:?}");
            assert!(m[0].contains(expected), "{m:?} lacks {expected:?}");
        }
    }
}
