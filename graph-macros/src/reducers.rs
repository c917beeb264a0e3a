//! The reducer table: everything the macro knows about each built-in reducer, in one
//! place (serde's `symbol.rs` idea). `attr` parses the names, `ast` resolves them,
//! `valid` checks field shapes, `expand` picks the marker, builder and codecs, and
//! `schema` writes the id. A new reducer is one entry here plus its runtime marker.

/// The shape of a field type, as far as it can be read from the tokens.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `Vec<X>` (`vec_of_plain`: `X` is a primitive or `String`, so never a message).
    Vec {
        vec_of_plain: bool,
    },
    VecDeque,
    Map,
    Set,
    Number,
    /// `String`, `bool`, `char`, `Option<_>`, tuples, arrays, references, ...
    Plain,
    /// A user type or alias: only the type checker can tell.
    Unknown,
}

/// How the generated builder method of a channel takes its writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Builder {
    /// One value of the update type per call.
    Value,
    /// Items of `<T as Capability>::Item`, any number per call.
    Items { capability: &'static str },
    /// `MessageOp`s of `<T as MessageList>::Message`.
    Messages,
    /// `(key, value)` entries of `<T as Mergeable>`.
    Entries,
}

pub struct ReducerDef {
    /// The name in `#[reducer(..)]` and the id in the schema manifest (changing it
    /// changes every stored schema version).
    pub name: &'static str,
    /// The marker type in `stategraph::__private`.
    pub marker: &'static str,
    /// Whether the update type is the field type (one codec serves both).
    pub update_is_value: bool,
    /// The `__private` constructor of the delta codec, for reducers whose checkpoints
    /// may store only the appended items.
    pub delta: Option<&'static str>,
    pub builder: Builder,
    /// The builder method's doc; `{}` is the field name.
    pub doc: &'static str,
    /// The field shapes it folds; `Shape::Unknown` is always left to the type checker.
    pub fits: fn(Shape) -> bool,
    /// What it works on, for the error on a field it cannot fold.
    pub works_on: &'static str,
}

/// The default reducer of a field without `#[reducer]`.
pub static LAST: ReducerDef = ReducerDef {
    name: "last",
    marker: "LastValue",
    update_is_value: true,
    delta: None,
    builder: Builder::Value,
    doc: "Sets `{}`. A last-value channel takes one write per superstep.",
    fits: |_| true,
    works_on: "any field",
};

/// The reducers `#[reducer(name)]` accepts, in the order error messages list them.
pub static BUILTINS: [ReducerDef; 5] = [
    ReducerDef {
        name: "append",
        marker: "Append",
        update_is_value: false,
        delta: Some("append_delta"),
        builder: Builder::Items {
            capability: "Sequence",
        },
        doc: "Appends items to `{}` (calling it again appends more).",
        fits: |s| matches!(s, Shape::Vec { .. } | Shape::VecDeque),
        works_on: "`Vec<T>` and `VecDeque<T>`; use `add` for numbers or `with = path` for a custom fold",
    },
    ReducerDef {
        name: "add",
        marker: "Add",
        update_is_value: true,
        delta: None,
        builder: Builder::Value,
        doc: "Adds to `{}`.",
        fits: |s| matches!(s, Shape::Number),
        works_on: "integer and floating-point fields; use `append` for lists or `with = path` for a custom fold",
    },
    ReducerDef {
        name: "merge",
        marker: "Merge",
        update_is_value: false,
        delta: None,
        builder: Builder::Entries,
        doc: "Inserts `(key, value)` entries into `{}`; a later write wins per key.",
        fits: |s| matches!(s, Shape::Map),
        works_on: "`BTreeMap<K, V>` and `HashMap<K, V>`; use `append` for lists or `union` for sets",
    },
    ReducerDef {
        name: "union",
        marker: "Union",
        update_is_value: false,
        delta: None,
        builder: Builder::Items {
            capability: "SetLike",
        },
        doc: "Inserts items into the set `{}`.",
        fits: |s| matches!(s, Shape::Set),
        works_on: "`BTreeSet<T>` and `HashSet<T>`",
    },
    ReducerDef {
        name: "messages",
        marker: "Messages",
        update_is_value: false,
        delta: Some("messages_delta"),
        builder: Builder::Messages,
        doc: "Writes to the message list `{}`: messages (appended, or replacing the message with the same id), `RemoveMessage` or `RemoveAllMessages`.",
        fits: |s| {
            matches!(
                s,
                Shape::Vec {
                    vec_of_plain: false
                }
            )
        },
        works_on: "`Vec<M>` where `M` implements `stategraph::MessageLike` (for example `stategraph::Message`)",
    },
];

/// The built-in reducer `#[reducer(name)]` names.
pub fn builtin(path: &syn::Path) -> Option<&'static ReducerDef> {
    BUILTINS.iter().find(|r| path.is_ident(r.name))
}

impl ReducerDef {
    /// Whether this is the default last-value reducer.
    pub fn is_last(&self) -> bool {
        self.name == LAST.name
    }

    /// The builder doc for a field.
    pub fn doc_for(&self, field: &str) -> String {
        self.doc.replace("{}", field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_markers_are_unique() {
        let mut names: Vec<&str> = BUILTINS.iter().map(|r| r.name).collect();
        names.push(LAST.name);
        let mut markers: Vec<&str> = BUILTINS.iter().map(|r| r.marker).collect();
        markers.push(LAST.marker);
        for list in [&mut names, &mut markers] {
            let n = list.len();
            list.sort_unstable();
            list.dedup();
            assert_eq!(list.len(), n);
        }
        let last: syn::Path = syn::parse_quote!(last);
        assert!(
            builtin(&last).is_none(),
            "`last` is the default, not an attribute"
        );
    }
}
