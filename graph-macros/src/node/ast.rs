//! The checked shape of a node function.

use syn::spanned::Spanned;
use syn::{FnArg, GenericParam, ItemFn, ReturnType, Type};

use crate::ctxt::Ctxt;

pub struct NodeFn<'a> {
    pub func: &'a ItemFn,
    /// The input type `T` of the first parameter `&T`.
    pub input: &'a Type,
    /// The `T` of a second parameter `&T` (checked to be `NodeContext` by type).
    pub context: Option<&'a Type>,
    pub output: &'a Type,
    pub is_async: bool,
}

const OUTPUTS: &str = "a node returns its writes as `<State>Update`, `Command<State>`, `Vec<Command<State>>`, or an `Option` or `Result<_, E>` of one of those";

const SHAPE: &str =
    "a node takes `&State` (or, for a `Send` target, `&Payload`) and optionally `&NodeContext`";

impl<'a> NodeFn<'a> {
    pub fn from_fn(cx: &mut Ctxt, func: &'a ItemFn) -> Option<Self> {
        let sig = &func.sig;
        if let Some(receiver) = sig.receiver() {
            cx.error_spanned_by(
                receiver,
                "`#[node]` cannot be used on a method: a node is a free function; move it out of the `impl` block",
            );
            return None;
        }
        // Lifetimes are fine (`fn plan<'a>(s: &'a S)`); types and constants are not.
        if let Some(param) = sig
            .generics
            .params
            .iter()
            .find(|p| !matches!(p, GenericParam::Lifetime(_)))
        {
            cx.error_spanned_by(
                param,
                "a node cannot be generic: each node belongs to one concrete state type; remove the type parameter",
            );
            return None;
        }
        let params: Vec<&Type> = sig
            .inputs
            .iter()
            .filter_map(|arg| match arg {
                FnArg::Typed(pat) => Some(&*pat.ty),
                FnArg::Receiver(_) => None,
            })
            .collect();
        if params.is_empty() || params.len() > 2 {
            let span = match sig.inputs.iter().nth(2) {
                Some(extra) => extra.span(),
                None => sig.paren_token.span.join(),
            };
            cx.push(syn::Error::new(
                span,
                format!("{SHAPE}; found {} parameters", params.len()),
            ));
            return None;
        }
        let input = match params[0] {
            Type::Reference(r) if names_context(&r.elem) => {
                cx.error_spanned_by(
                    params[0],
                    "the state comes first: `fn name(state: &State, ctx: &NodeContext)`",
                );
                return None;
            }
            Type::Reference(r)
                if matches!(
                    &*r.elem,
                    Type::Slice(_) | Type::TraitObject(_) | Type::ImplTrait(_)
                ) || matches!(&*r.elem, Type::Path(p) if p.path.is_ident("str")) =>
            {
                cx.error_spanned_by(
                    &r.elem,
                    format!("a node's input must be an owned, sized type: {SHAPE}; for text take `&String`, for a list `&Vec<T>`"),
                );
                return None;
            }
            Type::Reference(r) if r.mutability.is_none() => &*r.elem,
            other => {
                cx.error_spanned_by(
                    other,
                    format!("the first parameter of a node must be a shared reference: {SHAPE}"),
                );
                return None;
            }
        };
        let context = match params.get(1) {
            Some(Type::Reference(r)) if r.mutability.is_none() => Some(&*r.elem),
            Some(ctx) => {
                cx.error_spanned_by(
                    ctx,
                    format!("the second parameter of a node must be `&NodeContext`: {SHAPE}"),
                );
                return None;
            }
            None => None,
        };
        let output = match &sig.output {
            ReturnType::Type(_, ty) => &**ty,
            ReturnType::Default => {
                cx.error_spanned_by(
                    &sig.ident,
                    "a node must return its writes: add `-> <State>Update` (or `Command<State>`, `Vec<Command<State>>`, `Option<_>`, `Result<_, E>`)",
                );
                return None;
            }
        };
        if plainly_not_output(output) {
            cx.error_spanned_by(
                output,
                format!(
                    "`{}` is not a node output: {OUTPUTS}",
                    crate::text::type_text(output)
                ),
            );
            return None;
        }
        Some(NodeFn {
            func,
            input,
            context,
            output,
            is_async: sig.asyncness.is_some(),
        })
    }
}

/// Whether a type is written as `NodeContext` (any path ending in it).
pub fn names_context(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "NodeContext"))
}

/// Return types the tokens show cannot be a node output (primitives, `String`,
/// tuples, references, ..., also inside `Option`, `Result` and `Vec`). Aliases and
/// user types are left to `NodeReturn`'s own message.
pub fn plainly_not_output(ty: &Type) -> bool {
    const PLAIN: [&str; 18] = [
        "String", "str", "bool", "char", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16",
        "i32", "i64", "i128", "isize", "f32", "f64",
    ];
    match ty {
        Type::Tuple(_) | Type::Reference(_) | Type::Array(_) | Type::Slice(_) | Type::Ptr(_) => {
            true
        }
        Type::Paren(p) => plainly_not_output(&p.elem),
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return false;
            };
            let name = last.ident.to_string();
            if PLAIN.contains(&name.as_str()) {
                return true;
            }
            if !matches!(name.as_str(), "Option" | "Result" | "Vec") {
                return false;
            }
            match &last.arguments {
                syn::PathArguments::AngleBracketed(args) => args.args.iter().next().is_some_and(
                    |a| matches!(a, syn::GenericArgument::Type(t) if plainly_not_output(t)),
                ),
                _ => false,
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn messages(func: ItemFn) -> Vec<String> {
        let mut cx = Ctxt::default();
        let parsed = NodeFn::from_fn(&mut cx, &func).is_some();
        let messages = cx.into_messages();
        assert_eq!(parsed, messages.is_empty(), "{messages:?}");
        messages
    }

    #[test]
    fn accepted_signatures() {
        assert!(
            messages(parse_quote!(
                fn a(s: &S) -> SUpdate {
                    todo()
                }
            ))
            .is_empty()
        );
        assert!(
            messages(parse_quote!(
                fn a<'x>(s: &'x S, c: &'x NodeContext) -> Out {
                    todo()
                }
            ))
            .is_empty()
        );
        assert!(
            messages(parse_quote!(
                async fn a(p: &String) -> Option<Command<S>> {
                    todo()
                }
            ))
            .is_empty()
        );
    }

    #[test]
    fn rejected_signatures_name_the_accepted_ones() {
        let cases: Vec<(ItemFn, &str)> = vec![
            (
                parse_quote!(
                    fn a<T>(s: &S) -> SUpdate {
                        todo()
                    }
                ),
                "cannot be generic",
            ),
            (
                parse_quote!(
                    fn a(c: &NodeContext, s: &S) -> SUpdate {
                        todo()
                    }
                ),
                "the state comes first",
            ),
            (
                parse_quote!(
                    fn a(s: &str) -> SUpdate {
                        todo()
                    }
                ),
                "owned, sized type",
            ),
            (
                parse_quote!(
                    fn a(s: &S, c: u32) -> SUpdate {
                        todo()
                    }
                ),
                "must be `&NodeContext`",
            ),
            (
                parse_quote!(
                    fn a(s: &S) -> String {
                        todo()
                    }
                ),
                "`String` is not a node output",
            ),
            (
                parse_quote!(
                    fn a(s: &S) -> Result<Vec<u8>, E> {
                        todo()
                    }
                ),
                "is not a node output",
            ),
        ];
        for (func, expected) in cases {
            let m = messages(func);
            assert_eq!(m.len(), 1, "{m:?}");
            assert!(m[0].contains(expected), "{m:?} lacks {expected:?}");
        }
    }
}
