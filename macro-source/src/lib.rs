//! Support for stategraph's procedural macros (`stategraph-macros`,
//! `stategraph-agent-macros`; use them through `stategraph` and `stategraph-agent`).
//!
//! [`ctxt`] collects every error a macro finds, so one compile reports them all.
//!
//! The source file a macro is invoked from, for the mistakes its tokens cannot show:
//! `#[node]` or `#[tool]` on a function inside an `impl` block (the tokens are those of
//! a free function), and a user item named like a type `#[derive(GraphState)]`
//! generates (the user's item is elsewhere in the module).
//!
//! Both questions are answered from the file's items, parsed again here: by name, not
//! by position, and only when the answer is certain. When the file cannot be read or
//! parsed (a macro-generated item, a doc-test), or the name is ambiguous, the callers
//! expand as usual and rustc reports what it finds.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

pub mod ctxt;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use syn::{Attribute, ImplItem, Item, Stmt, TraitItem};

/// What the checks need from a file, as plain strings: a parsed file holds the
/// compiler's token handles, which must not outlive the macro call that made them.
#[derive(Default)]
struct Summary {
    /// Every function carrying `#[node]` or `#[tool]`: the attribute, the function's
    /// name, and whether it is in an `impl` or `trait` block.
    marked: Vec<(&'static str, String, bool)>,
    /// Every scope: the states it declares and the names in its type namespace.
    scopes: Vec<(Vec<String>, Vec<String>)>,
    /// Every struct, enum and union the file declares that is not a state.
    others: Vec<String>,
}

thread_local! {
    /// The last file read: a file's macros are expanded one after another.
    static LAST: RefCell<Option<(PathBuf, String, Rc<Summary>)>> = const { RefCell::new(None) };
}

/// The summary of `path`; `None` when it cannot be read or parsed.
fn summary(path: &Path) -> Option<Rc<Summary>> {
    let text = std::fs::read_to_string(path).ok()?;
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((p, t, summary)) = &*last
            && p == path
            && *t == text
        {
            return Some(Rc::clone(summary));
        }
        let summary = Rc::new(summarize(&syn::parse_file(&text).ok()?));
        *last = Some((path.to_path_buf(), text, Rc::clone(&summary)));
        Some(summary)
    })
}

impl Summary {
    /// Records a function carrying one of [`MARKS`].
    fn mark(&mut self, attrs: &[Attribute], ident: &syn::Ident, associated: bool) {
        for mark in MARKS {
            if attrs.iter().any(|a| last_segment_is(a.path(), mark)) {
                self.marked.push((mark, unraw(ident), associated));
            }
        }
    }
}

/// The function attributes whose expansion is only legal among a module's items.
const MARKS: [&str; 2] = ["node", "tool"];

fn summarize(file: &syn::File) -> Summary {
    let mut summary = Summary::default();
    for scope in scopes(file) {
        let mut states = Vec::new();
        let mut names = Vec::new();
        for item in scope {
            match item {
                Item::Fn(f) => summary.mark(&f.attrs, &f.sig.ident, false),
                Item::Struct(s) if derives_state(&s.attrs) => states.push(unraw(&s.ident)),
                Item::Struct(s) => summary.others.push(unraw(&s.ident)),
                Item::Enum(e) => summary.others.push(unraw(&e.ident)),
                Item::Union(u) => summary.others.push(unraw(&u.ident)),
                Item::Impl(block) => {
                    for item in &block.items {
                        if let ImplItem::Fn(f) = item {
                            summary.mark(&f.attrs, &f.sig.ident, true);
                        }
                    }
                }
                Item::Trait(block) => {
                    for item in &block.items {
                        if let TraitItem::Fn(f) = item {
                            summary.mark(&f.attrs, &f.sig.ident, true);
                        }
                    }
                }
                _ => {}
            }
            names.extend(type_names(item));
        }
        summary.scopes.push((states, names));
    }
    summary
}

/// Every list of items that share a namespace: the file, each inline module and each
/// function body (free or associated), recursively.
fn scopes(file: &syn::File) -> Vec<Vec<&Item>> {
    let mut scopes = Vec::new();
    push_scope(&mut scopes, file.items.iter().collect());
    scopes
}

fn push_scope<'a>(scopes: &mut Vec<Vec<&'a Item>>, items: Vec<&'a Item>) {
    for item in &items {
        match item {
            Item::Fn(func) => push_scope(scopes, block_items(&func.block)),
            Item::Mod(module) => {
                if let Some((_, items)) = &module.content {
                    push_scope(scopes, items.iter().collect());
                }
            }
            Item::Impl(block) => {
                for item in &block.items {
                    if let ImplItem::Fn(func) = item {
                        push_scope(scopes, block_items(&func.block));
                    }
                }
            }
            Item::Trait(block) => {
                for item in &block.items {
                    if let TraitItem::Fn(syn::TraitItemFn {
                        default: Some(body),
                        ..
                    }) = item
                    {
                        push_scope(scopes, block_items(body));
                    }
                }
            }
            _ => {}
        }
    }
    scopes.push(items);
}

fn block_items(block: &syn::Block) -> Vec<&Item> {
    block
        .stmts
        .iter()
        .filter_map(|stmt| match stmt {
            Stmt::Item(item) => Some(item),
            _ => None,
        })
        .collect()
}

/// `true` when every function named `name` that carries `#[attribute]` (`node` or
/// `tool`, by any path) in `path` is inside an `impl` or `trait` block (and there is
/// at least one).
pub fn is_associated(path: &Path, attribute: &str, name: &str) -> bool {
    summary(path)
        .is_some_and(|s| matches!(place(&s, attribute, name), (0, associated) if associated > 0))
}

/// How many functions named `name` carrying `#[attribute]` are free, and how many
/// associated.
fn place(summary: &Summary, attribute: &str, name: &str) -> (usize, usize) {
    let of_name = summary
        .marked
        .iter()
        .filter(|(mark, n, _)| *mark == attribute && n == name);
    let associated = of_name.clone().filter(|(_, _, a)| *a).count();
    (of_name.count() - associated, associated)
}

/// `true` when every scope of `path` declaring `#[derive(GraphState)] struct <state>`
/// also declares an item named `name` in the type namespace (and there is one).
pub fn state_sibling_named(path: &Path, state: &str, name: &str) -> bool {
    summary(path).is_some_and(|s| matches!(state_siblings(&s, state, name), (states, taken) if states > 0 && taken == states))
}

/// How many scopes declare the state `state`, and how many of those also an item `name`.
fn state_siblings(summary: &Summary, state: &str, name: &str) -> (usize, usize) {
    let declaring = summary
        .scopes
        .iter()
        .filter(|(states, _)| states.iter().any(|s| s == state));
    let taken = declaring
        .clone()
        .filter(|(_, names)| names.iter().any(|n| n == name))
        .count();
    (declaring.count(), taken)
}

/// `true` when `path` declares a struct, enum or union `name` and no
/// `#[derive(GraphState)]` struct of that name: a node's input of that type is a `Send`
/// payload, not the state. An imported or aliased name is not known to be either.
pub fn declared_non_state(path: &Path, name: &str) -> bool {
    summary(path).is_some_and(|s| non_state(&s, name))
}

fn non_state(summary: &Summary, name: &str) -> bool {
    let declared = summary.others.iter().any(|n| n == name);
    let state = summary
        .scopes
        .iter()
        .any(|(states, _)| states.iter().any(|s| s == name));
    declared && !state
}

/// The names an item puts in its scope's type namespace. An item under `#[cfg(..)]`
/// puts none: whether it is compiled is not known here, and a wrong guess would refuse
/// a program that builds.
fn type_names(item: &Item) -> Vec<String> {
    let (attrs, names) = match item {
        Item::Struct(i) => (&i.attrs, vec![unraw(&i.ident)]),
        Item::Enum(i) => (&i.attrs, vec![unraw(&i.ident)]),
        Item::Union(i) => (&i.attrs, vec![unraw(&i.ident)]),
        Item::Type(i) => (&i.attrs, vec![unraw(&i.ident)]),
        Item::Trait(i) => (&i.attrs, vec![unraw(&i.ident)]),
        Item::TraitAlias(i) => (&i.attrs, vec![unraw(&i.ident)]),
        Item::Mod(i) => (&i.attrs, vec![unraw(&i.ident)]),
        Item::ExternCrate(i) => (
            &i.attrs,
            vec![unraw(i.rename.as_ref().map_or(&i.ident, |(_, r)| r))],
        ),
        Item::Use(i) => {
            let mut names = Vec::new();
            use_names(&i.tree, &mut names);
            (&i.attrs, names)
        }
        _ => return Vec::new(),
    };
    if attrs.iter().any(|a| a.path().is_ident("cfg")) {
        return Vec::new();
    }
    names
}

fn use_names(tree: &syn::UseTree, names: &mut Vec<String>) {
    match tree {
        syn::UseTree::Path(p) => use_names(&p.tree, names),
        syn::UseTree::Name(n) => names.push(unraw(&n.ident)),
        syn::UseTree::Rename(r) => names.push(unraw(&r.rename)),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_names(t, names)),
        syn::UseTree::Glob(_) => {}
    }
}

/// `#[derive(.., GraphState, ..)]`, by any path.
fn derives_state(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .any(|a| {
            a.parse_args_with(
                syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|paths| paths.iter().any(|p| last_segment_is(p, "GraphState")))
        })
}

fn last_segment_is(path: &syn::Path, name: &str) -> bool {
    path.segments.last().is_some_and(|s| s.ident == name)
}

/// An identifier as the runtime and the user's error see it: without `r#`.
pub fn unraw(ident: &syn::Ident) -> String {
    let name = ident.to_string();
    match name.strip_prefix("r#") {
        Some(bare) => bare.to_owned(),
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> syn::File {
        syn::parse_file(text).unwrap_or_else(|e| panic!("test source parses: {e}"))
    }

    fn node_place(text: &str, name: &str) -> (usize, usize) {
        place(&summarize(&parse(text)), "node", name)
    }

    #[test]
    fn finds_free_and_associated_nodes_anywhere_in_a_file() {
        let text = r#"
            #[node] fn a(s: &S) -> SUpdate { S::update() }
            mod m { #[stategraph::node] fn b(s: &S) -> SUpdate { S::update() } }
            impl P { #[node(name = "c")] fn c(s: &S) -> SUpdate { S::update() } }
            trait T { #[node] fn d(s: &S) -> SUpdate { S::update() } }
            fn main() { impl Q { #[node] fn e(s: &S) -> SUpdate { S::update() } } }
            fn f() { #[node] fn r#loop(s: &S) -> SUpdate { S::update() } }
            impl P { fn a(s: &S) -> SUpdate { S::update() } }
        "#;
        assert_eq!(node_place(text, "a"), (1, 0));
        assert_eq!(node_place(text, "b"), (1, 0));
        assert_eq!(node_place(text, "c"), (0, 1));
        assert_eq!(node_place(text, "d"), (0, 1));
        assert_eq!(node_place(text, "e"), (0, 1));
        assert_eq!(node_place(text, "loop"), (1, 0));
        let tools = summarize(&parse(
            "#[tool] fn a() {} impl P { #[stategraph_agent::tool] fn b() {} #[node] fn a(s: &S) {} }",
        ));
        assert_eq!(place(&tools, "tool", "a"), (1, 0));
        assert_eq!(place(&tools, "tool", "b"), (0, 1));
        assert_eq!(place(&tools, "node", "a"), (0, 1));
    }

    #[test]
    fn a_generated_name_is_taken_only_where_every_declaration_of_the_state_sees_it() {
        let text = "use state::Imported; \
                    mod a { #[derive(GraphState)] struct S { x: u8 } struct SUpdate; } \
                    mod b { #[derive(GraphState)] struct S { x: u8 } } \
                    fn f() { #[derive(Clone, GraphState)] struct T { x: u8 } type TUpdate = u8; }";
        let summary = summarize(&parse(text));
        assert_eq!(state_siblings(&summary, "S", "SUpdate"), (2, 1));
        assert_eq!(state_siblings(&summary, "T", "TUpdate"), (1, 1));
        assert_eq!(state_siblings(&summary, "U", "UUpdate"), (0, 0));
        assert!(non_state(&summary, "SUpdate"));
        assert!(!non_state(&summary, "S"));
        assert!(!non_state(&summary, "Imported"));
    }

    #[test]
    fn names_in_the_type_namespace() {
        let file = parse(
            "struct A; enum B {} type C = u8; mod D {} trait E {} extern crate f as G; \
             use x::{H, y::I as J, z::*}; fn K() {} const L: u8 = 0; #[cfg(test)] struct M;",
        );
        let names: Vec<String> = file.items.iter().flat_map(type_names).collect();
        assert_eq!(names, ["A", "B", "C", "D", "E", "G", "H", "J"]);
    }

    #[test]
    fn a_state_is_found_by_any_derive_path() {
        let file = parse(
            "#[derive(Clone, stategraph::GraphState)] struct S { a: u8 } \
             #[derive(Clone)] struct T { a: u8 }",
        );
        let found: Vec<bool> = file
            .items
            .iter()
            .map(|i| matches!(i, Item::Struct(s) if derives_state(&s.attrs)))
            .collect();
        assert_eq!(found, [true, false]);
    }
}
