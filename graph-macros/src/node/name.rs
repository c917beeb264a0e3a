//! The node's runtime name, checked here as `compile()` would check it, so a name the
//! graph refuses is a compile error on the user's token.

use proc_macro2::Span;
use syn::Ident;
use syn::ext::IdentExt;

use super::attr::NodeOptions;
use crate::ctxt::Ctxt;

/// The prelude constants a node's constant would shadow.
const PRELUDE_MARKERS: [&str; 2] = ["START", "END"];

/// Characters the runtime uses in task paths and channel keys.
const FORBIDDEN: [char; 2] = ['|', ':'];

/// The runtime name: `name = ".."` or the function's name without `r#`.
pub fn runtime_name(ident: &Ident, options: &NodeOptions) -> String {
    options
        .name
        .as_ref()
        .map_or_else(|| ident.unraw().to_string(), |n| n.value.clone())
}

pub fn check(cx: &mut Ctxt, ident: &Ident, options: &NodeOptions) {
    let rust_name = ident.unraw().to_string();
    if PRELUDE_MARKERS.contains(&rust_name.as_str()) {
        cx.error_spanned_by(
            ident,
            format!(
                "a node named `{rust_name}` would shadow the graph's `{rust_name}` marker: rename the function (its runtime name can stay as it is with `#[node(name = \"..\")]`)"
            ),
        );
        if options.name.is_none() {
            return;
        }
    }
    let name = runtime_name(ident, options);
    let (span, how): (Span, &str) = match &options.name {
        Some(n) => (n.span, "change `name = \"..\"`"),
        None => (
            ident.span(),
            "rename the function or give it `#[node(name = \"..\")]`",
        ),
    };
    let mut error = |message: String| cx.push(syn::Error::new(span, message));
    if name.is_empty() {
        error("a node name cannot be empty: give it a name, or drop `name = \"\"` to use the function's name".into());
        return;
    }
    let bare = name.trim_matches('_').to_ascii_lowercase();
    if bare == "start" || bare == "end" {
        error(format!(
            "node name `{name}` is reserved for the graph's START/END: {how}"
        ));
    }
    for c in FORBIDDEN {
        if name.contains(c) {
            error(format!(
                "node name `{name}` contains `{c}`, which node names cannot contain: {how}"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctxt::Sp;
    use proc_macro2::Span;

    fn errors(ident: &str, name: Option<&str>) -> Vec<String> {
        let ident: Ident = syn::parse_str(ident).expect("an identifier");
        let options = NodeOptions {
            name: name.map(|n| Sp::new(n.to_string(), Span::call_site())),
            reads: None,
        };
        let mut cx = Ctxt::default();
        check(&mut cx, &ident, &options);
        cx.into_messages()
    }

    #[test]
    fn raw_function_names_lose_their_prefix() {
        let ident: Ident = syn::parse_str("r#loop").expect("an identifier");
        assert_eq!(runtime_name(&ident, &NodeOptions::default()), "loop");
        assert!(errors("r#loop", None).is_empty());
    }

    #[test]
    fn names_the_runtime_refuses_are_errors() {
        for (ident, name) in [
            ("start", None),
            ("end", None),
            ("r#__end__", None),
            ("finish", Some("__END__")),
            ("begin", Some("Start")),
            ("plan", Some("")),
            ("plan", Some("plan:v2")),
            ("plan", Some("a|b")),
        ] {
            assert_eq!(errors(ident, name).len(), 1, "{ident} {name:?}");
        }
        assert!(errors("plan", Some("planner")).is_empty());
        assert!(errors("starting", None).is_empty());
    }

    #[test]
    fn functions_named_like_the_markers_are_one_error() {
        let e = errors("END", None);
        assert_eq!(e.len(), 1);
        assert!(
            e[0].contains("would shadow the graph's `END` marker"),
            "{e:?}"
        );
        // With a name, the name is checked too.
        assert_eq!(errors("START", Some("kickoff")).len(), 1);
    }
}
