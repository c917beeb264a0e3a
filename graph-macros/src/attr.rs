//! Raw syntax of the field attributes `#[reducer(..)]` and `#[channel(..)]`.

use syn::spanned::Spanned;
use syn::{Attribute, Path, Type};

use crate::ctxt::{Ctxt, Sp};
use crate::reducers::{self, ReducerDef};

pub const REDUCER: &str = "reducer";
pub const CHANNEL: &str = "channel";
pub const UNTRACKED: &str = "untracked";
pub const WITH: &str = "with";
pub const UPDATE: &str = "update";

#[derive(Clone)]
pub enum ReducerAttr {
    Builtin(&'static ReducerDef),
    With {
        path: Path,
        update: Option<Box<Type>>,
    },
}

#[derive(Default)]
pub struct FieldAttrs {
    pub reducer: Option<Sp<ReducerAttr>>,
    pub untracked: Option<proc_macro2::Span>,
}

fn expected_reducers() -> String {
    let names: Vec<String> = reducers::BUILTINS
        .iter()
        .map(|r| format!("`{}`", r.name))
        .collect();
    format!("{}, `with = path`", names.join(", "))
}

pub fn parse_field_attrs(cx: &mut Ctxt, attrs: &[Attribute]) -> FieldAttrs {
    let mut out = FieldAttrs::default();
    for attr in attrs {
        if attr.path().is_ident(REDUCER) {
            if out.reducer.is_some() {
                cx.error_spanned_by(
                    attr,
                    "duplicate `#[reducer]` attribute: a field has one reducer",
                );
                continue;
            }
            out.reducer = parse_reducer(cx, attr);
        } else if attr.path().is_ident(CHANNEL) {
            parse_channel(cx, attr, &mut out);
        }
    }
    out
}

fn parse_reducer(cx: &mut Ctxt, attr: &Attribute) -> Option<Sp<ReducerAttr>> {
    let mut builtin: Option<Sp<&'static ReducerDef>> = None;
    let mut with: Option<Sp<Path>> = None;
    let mut update: Option<Sp<Type>> = None;
    let mut ok = true;
    let result = attr.parse_nested_meta(|meta| {
        let span = meta.path.span();
        if meta.path.is_ident(WITH) {
            if with.is_some() {
                return Err(meta.error(
                    "duplicate `with`: a field has one reducer function; remove one of them",
                ));
            }
            let value = meta.value()?;
            if value.peek(syn::Lit) {
                return Err(value.error(
                    "`with` takes the path of a function `fn(&mut T, U)`, not a literal: write `with = keep_max`",
                ));
            }
            let path: Path = value.parse()?;
            with = Some(Sp::new(path, span));
        } else if meta.path.is_ident(UPDATE) {
            if update.is_some() {
                return Err(meta.error(
                    "duplicate `update`: a `with` reducer takes one update type; remove one of them",
                ));
            }
            let ty: Type = meta.value()?.parse()?;
            update = Some(Sp::new(ty, span));
        } else if let Some(def) = reducers::builtin(&meta.path) {
            let name = def.name;
            if builtin.is_some() {
                return Err(meta.error("a field takes one reducer; remove one of them"));
            }
            if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
                return Err(meta.error(format!(
                    "reducer `{name}` takes no value: write `#[reducer({name})]`"
                )));
            }
            builtin = Some(Sp::new(def, span));
        } else {
            let found = path_text(&meta.path);
            return Err(meta.error(format!(
                "unknown reducer `{found}`, expected one of {}",
                expected_reducers()
            )));
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.push(e);
        ok = false;
    }
    if let (Some(b), Some(w)) = (&builtin, &with) {
        cx.push(syn::Error::new(
            w.span,
            format!(
                "a field takes one reducer: `{}` and `with = ..` were both given",
                b.value.name
            ),
        ));
        return None;
    }
    if let Some(u) = &update
        && with.is_none()
    {
        cx.push(syn::Error::new(
            u.span,
            "`update = Type` only applies to `with = path` reducers",
        ));
        ok = false;
    }
    if let Some(b) = builtin {
        return ok.then(|| Sp::new(ReducerAttr::Builtin(b.value), b.span));
    }
    if let Some(w) = with {
        return ok.then(|| {
            Sp::new(
                ReducerAttr::With {
                    path: w.value,
                    update: update.map(|u| Box::new(u.value)),
                },
                w.span,
            )
        });
    }
    if ok {
        cx.error_spanned_by(
            attr,
            format!(
                "`#[reducer]` needs a reducer name, expected one of {}",
                expected_reducers()
            ),
        );
    }
    None
}

fn parse_channel(cx: &mut Ctxt, attr: &Attribute, out: &mut FieldAttrs) {
    let result = attr.parse_nested_meta(|meta| {
        if meta.path.is_ident(UNTRACKED) {
            if out.untracked.is_some() {
                return Err(meta.error("duplicate `untracked`"));
            }
            out.untracked = Some(meta.path.span());
            Ok(())
        } else {
            Err(meta.error(format!(
                "unknown channel option `{}`, expected `untracked`",
                path_text(&meta.path)
            )))
        }
    });
    if let Err(e) = result {
        cx.push(e);
    }
}

fn path_text(path: &Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn parse(attrs: Vec<Attribute>) -> (FieldAttrs, Vec<String>) {
        let mut cx = Ctxt::default();
        let out = parse_field_attrs(&mut cx, &attrs);
        let errors = cx.into_messages();
        (out, errors)
    }

    #[test]
    fn builtin_reducers_parse() {
        for name in reducers::BUILTINS.iter().map(|r| r.name) {
            let ident = syn::Ident::new(name, proc_macro2::Span::call_site());
            let (out, errors) = parse(vec![parse_quote!(#[reducer(#ident)])]);
            assert!(errors.is_empty(), "{errors:?}");
            match out.reducer.map(|r| r.value) {
                Some(ReducerAttr::Builtin(found)) => assert_eq!(found.name, name),
                _ => panic!("`{name}` did not parse as a built-in reducer"),
            }
        }
    }

    #[test]
    fn with_reducer_takes_path_and_update_type() {
        let (out, errors) = parse(vec![
            parse_quote!(#[reducer(with = my::keep_max, update = f64)]),
        ]);
        assert!(errors.is_empty(), "{errors:?}");
        match out.reducer.map(|r| r.value) {
            Some(ReducerAttr::With { path, update }) => {
                assert_eq!(path_text(&path), "my::keep_max");
                assert!(update.is_some());
            }
            _ => panic!("expected a `with` reducer"),
        }
    }

    #[test]
    fn unknown_reducer_lists_the_choices() {
        let (out, errors) = parse(vec![parse_quote!(#[reducer(apend)])]);
        assert!(out.reducer.is_none());
        assert_eq!(
            errors,
            [
                "unknown reducer `apend`, expected one of `append`, `add`, `merge`, `union`, `messages`, `with = path`"
            ]
        );
    }

    #[test]
    fn duplicate_reducer_attribute_is_an_error() {
        let (_, errors) = parse(vec![
            parse_quote!(#[reducer(append)]),
            parse_quote!(#[reducer(add)]),
        ]);
        assert_eq!(
            errors,
            ["duplicate `#[reducer]` attribute: a field has one reducer"]
        );
    }

    #[test]
    fn two_reducers_in_one_attribute_is_an_error() {
        let (_, errors) = parse(vec![parse_quote!(#[reducer(append, add)])]);
        assert_eq!(errors, ["a field takes one reducer; remove one of them"]);
    }

    #[test]
    fn update_without_with_is_an_error() {
        let (_, errors) = parse(vec![parse_quote!(#[reducer(append, update = u32)])]);
        assert_eq!(
            errors,
            ["`update = Type` only applies to `with = path` reducers"]
        );
    }

    #[test]
    fn untracked_channel_parses_and_unknown_option_is_an_error() {
        let (out, errors) = parse(vec![parse_quote!(#[channel(untracked)])]);
        assert!(errors.is_empty());
        assert!(out.untracked.is_some());
        let (_, errors) = parse(vec![parse_quote!(#[channel(untraked)])]);
        assert_eq!(
            errors,
            ["unknown channel option `untraked`, expected `untracked`"]
        );
    }

    #[test]
    fn duplicate_keys_in_one_attribute_are_errors() {
        let (out, errors) = parse(vec![parse_quote!(#[reducer(with = a, with = b)])]);
        assert!(out.reducer.is_none());
        assert_eq!(
            errors,
            ["duplicate `with`: a field has one reducer function; remove one of them"]
        );
        let (out, errors) = parse(vec![
            parse_quote!(#[reducer(with = f, update = u8, update = u8)]),
        ]);
        assert!(out.reducer.is_none());
        assert_eq!(
            errors,
            ["duplicate `update`: a `with` reducer takes one update type; remove one of them"]
        );
    }

    #[test]
    fn builtin_reducer_with_a_value_is_an_error() {
        let (_, errors) = parse(vec![parse_quote!(#[reducer(append = true)])]);
        assert_eq!(
            errors,
            ["reducer `append` takes no value: write `#[reducer(append)]`"]
        );
        let (_, errors) = parse(vec![parse_quote!(#[reducer(with = "f")])]);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("`with` takes the path of a function"));
    }

    #[test]
    fn empty_reducer_attribute_is_an_error() {
        let (_, errors) = parse(vec![parse_quote!(#[reducer()])]);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("`#[reducer]` needs a reducer name"));
    }
}
