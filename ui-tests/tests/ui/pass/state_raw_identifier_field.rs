//! A raw-identifier field (`r#type`) keeps its `r#` in Rust code and drops it in the
//! channel name and key.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Item {
    r#type: String,
    #[reducer(append)]
    r#match: Vec<String>,
}

pub fn main() {
    let mut item = Item::default();
    item.apply_writes(vec![Write::new(
        "a",
        Item::update().r#type("book").r#match(["x"]),
    )])
    .expect("applies");
    assert_eq!(item.r#type, "book");
    assert_eq!(item.r#match, ["x"]);
    assert_eq!(Item::TYPE.name(), "type");
    assert_eq!(Item::MATCH.name(), "match");
    let _ = Item::update().overwrite_match(vec![String::new()]);
}
