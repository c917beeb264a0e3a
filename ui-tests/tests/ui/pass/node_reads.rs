//! `#[node(reads(..))]` names the state's fields, raw identifiers included, and the
//! node records them by channel index.
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Doc {
    text: String,
    r#type: String,
    words: usize,
}

#[node(reads(text, r#type))]
fn count(doc: &Doc) -> DocUpdate {
    Doc::update().words(doc.text.split_whitespace().count())
}

pub fn main() {
    assert_eq!(count.reads(), Some(&[0, 1][..]));
}
