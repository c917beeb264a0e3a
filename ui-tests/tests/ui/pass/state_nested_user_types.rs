//! Serde user types nested in std containers, on every kind of channel, with the
//! containers spelled as aliases too: the codecs are bounded on the inner types.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use stategraph::prelude::*;

#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
struct Doc {
    title: String,
}

type Docs = Vec<Doc>;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(append)]
    docs: Vec<Doc>,
    #[reducer(append)]
    more: Docs,
    #[reducer(merge)]
    by_key: BTreeMap<String, Doc>,
    #[reducer(union)]
    set: BTreeSet<Doc>,
    last: Option<Vec<Doc>>,
}

pub fn main() {
    let mut s = Research::default();
    let doc = Doc {
        title: "t".into(),
    };
    let update = Research::update()
        .docs([doc.clone()])
        .more([doc.clone()])
        .by_key([("k", doc.clone())])
        .set([doc.clone()])
        .last(Some(vec![doc.clone()]));
    let json = serde_json::to_value(&update).expect("encodes");
    let back: ResearchUpdate = serde_json::from_value(json).expect("decodes");
    s.apply_writes(vec![Write::new("n", back)]).expect("applies");
    assert_eq!(s.docs, std::slice::from_ref(&doc));
    assert_eq!(s.more, std::slice::from_ref(&doc));
    assert_eq!(s.by_key.get("k"), Some(&doc));
    assert!(s.set.contains(&doc));
    assert_eq!(s.last, Some(vec![doc]));
}
