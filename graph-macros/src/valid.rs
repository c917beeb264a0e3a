//! Cross-cutting checks on the resolved model.

use crate::ast::State;
use crate::ctxt::Ctxt;

/// Names the derive gives the state type itself; a field whose key constant would
/// take one of them would shadow the trait item.
const RESERVED_KEYS: [&str; 3] = ["CHANNELS", "SCHEMA_VERSION", "SCHEMA_MANIFEST"];

pub fn check(cx: &mut Ctxt, state: &State<'_>) {
    check_not_generic(cx, state);
    check_reserved_names(cx, state);
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
fn check_reserved_names(cx: &mut Ctxt, state: &State<'_>) {
    for field in &state.fields {
        let key = field.name.to_uppercase();
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
