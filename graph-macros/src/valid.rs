//! Cross-cutting checks on the resolved model.

use syn::{GenericArgument, PathArguments, Type};

use crate::ast::{Reducer, State};
use crate::ctxt::Ctxt;
use crate::reducers::Shape;

/// Names the derive gives the state type itself; a field whose key constant would
/// take one of them would shadow the trait item.
const RESERVED_KEYS: [&str; 3] = ["CHANNELS", "SCHEMA_VERSION", "SCHEMA_MANIFEST"];

pub fn check(cx: &mut Ctxt, state: &mut State<'_>) {
    check_not_generic(cx, state);
    check_reserved_names(cx, state);
    check_reducer_shapes(cx, state);
}

/// Generic states are rejected: the schema version, channel metadata and codecs are
/// constants of one concrete type, and a checkpoint must name exactly one schema.
fn check_not_generic(cx: &mut Ctxt, state: &State<'_>) {
    if !state.generics.params.is_empty() {
        cx.error_spanned_by(
            &state.generics.params,
            "`GraphState` cannot be derived for a generic struct: a state has one schema version; use a concrete struct (a type alias of a generic struct does not work either)",
        );
    }
}

/// Field keys are `State::FIELD_NAME`; the derive's own associated constants must
/// stay reachable.
fn check_reserved_names(cx: &mut Ctxt, state: &mut State<'_>) {
    let mut keys: Vec<(String, String)> = Vec::new();
    for field in &mut state.fields {
        let key = field.name.to_uppercase();
        if let Some((_, first)) = keys.iter().find(|(k, _)| *k == key) {
            cx.error_spanned_by(
                field.member,
                format!(
                    "fields `{first}` and `{}` would both get the key `{}::{key}`: rename one of them",
                    field.name, state.ident
                ),
            );
            field.key_taken = true;
            continue;
        }
        keys.push((key.clone(), field.name.clone()));
        if RESERVED_KEYS.contains(&key.as_str()) {
            cx.error_spanned_by(
                field.member,
                format!(
                    "field name `{}` is reserved: its key `{}::{key}` would shadow `GraphState::{key}`; rename the field",
                    field.name, state.ident
                ),
            );
        }
    }
}

const NUMBERS: [&str; 14] = [
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32",
    "f64",
];
const PLAIN: [&str; 6] = ["String", "str", "bool", "char", "Option", "Box"];

/// What the tokens of a field type show of it (`Unknown` for aliases and user types).
pub fn shape(ty: &Type) -> Shape {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return Shape::Unknown;
            };
            let name = last.ident.to_string();
            match name.as_str() {
                "Vec" => {
                    let plain = first_type_arg(&last.arguments)
                        .is_some_and(|t| matches!(shape(t), Shape::Number | Shape::Plain));
                    Shape::Vec {
                        vec_of_plain: plain,
                    }
                }
                "VecDeque" => Shape::VecDeque,
                "BTreeMap" | "HashMap" => Shape::Map,
                "BTreeSet" | "HashSet" => Shape::Set,
                n if NUMBERS.contains(&n) && p.path.segments.len() == 1 => Shape::Number,
                n if PLAIN.contains(&n) => Shape::Plain,
                _ => Shape::Unknown,
            }
        }
        Type::Tuple(_) | Type::Array(_) | Type::Slice(_) | Type::Reference(_) => Shape::Plain,
        Type::Paren(inner) => shape(&inner.elem),
        Type::Group(inner) => shape(&inner.elem),
        _ => Shape::Unknown,
    }
}

fn first_type_arg(args: &PathArguments) -> Option<&Type> {
    match args {
        PathArguments::AngleBracketed(a) => a.args.iter().find_map(|arg| match arg {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

/// A reducer on a field type it visibly cannot fold is reported here, once, on the
/// field type, and the field falls back to a last-value channel so the rest of the
/// expansion type-checks. Types the tokens do not reveal (aliases, user types) are
/// left to the reducer traits' `on_unimplemented` messages.
fn check_reducer_shapes(cx: &mut Ctxt, state: &mut State<'_>) {
    for field in &mut state.fields {
        let Reducer::Builtin(def) = field.reducer else {
            continue;
        };
        let found = shape(field.ty);
        if found != Shape::Unknown && !(def.fits)(found) {
            cx.error_spanned_by(
                field.ty,
                format!(
                    "reducer `{name}` cannot be used on a field of type `{}`: `{name}` works on {}",
                    crate::text::type_text(field.ty),
                    def.works_on,
                    name = def.name,
                ),
            );
            field.reducer = Reducer::last();
        }
    }
}
