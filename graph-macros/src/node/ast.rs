//! The checked shape of a node function.

use syn::spanned::Spanned;
use syn::{FnArg, ItemFn, ReturnType, Type};

use crate::ctxt::Ctxt;

pub struct NodeFn<'a> {
    pub func: &'a ItemFn,
    /// The input type `T` of the first parameter `&T`.
    pub input: &'a Type,
    pub takes_context: bool,
    pub output: &'a Type,
    pub is_async: bool,
}

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
        if !sig.generics.params.is_empty() {
            cx.error_spanned_by(
                &sig.generics,
                "a node cannot be generic: each node belongs to one concrete state type",
            );
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
            Type::Reference(r) if r.mutability.is_none() => &*r.elem,
            other => {
                cx.error_spanned_by(
                    other,
                    format!("the first parameter of a node must be a shared reference: {SHAPE}"),
                );
                return None;
            }
        };
        if let Some(ctx) = params.get(1)
            && !matches!(ctx, Type::Reference(r) if r.mutability.is_none())
        {
            cx.error_spanned_by(ctx, "the second parameter of a node must be `&NodeContext`");
            return None;
        }
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
        Some(NodeFn {
            func,
            input,
            takes_context: params.len() == 2,
            output,
            is_async: sig.asyncness.is_some(),
        })
    }
}
