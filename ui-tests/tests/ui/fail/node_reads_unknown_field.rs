use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Doc {
    text: String,
    words: usize,
}

// `txt` is not a field of `Doc`.
#[node(reads(txt))]
fn count(doc: &Doc) -> DocUpdate {
    Doc::update().words(doc.text.split_whitespace().count())
}

fn main() {
    let _ = count;
}
