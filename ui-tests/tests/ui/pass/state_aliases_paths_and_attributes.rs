//! Every reducer on type aliases and on fully qualified paths, `cfg`/`cfg_attr`/doc
//! attributes on fields, generic `with = path` reducers, and `pub(crate)` items in
//! nested modules.

mod types {
    pub(crate) type Notes = Vec<String>;
    pub(crate) type Count = u32;
    pub(crate) type Scores = std::collections::BTreeMap<String, f64>;
    pub(crate) type Tags = std::collections::HashSet<String>;
    pub(crate) type Chat = Vec<stategraph::Message>;
}

mod folds {
    /// A generic fold: keeps the larger value.
    pub(crate) fn keep_max<T: PartialOrd>(current: &mut T, update: T) {
        if update > *current {
            *current = update;
        }
    }

    pub(crate) mod nested {
        pub(crate) fn push<T>(current: &mut Vec<T>, item: T) {
            current.push(item);
        }
    }
}

mod state {
    use super::{folds, types};

    #[derive(stategraph::GraphState, Clone, Debug, Default)]
    pub(crate) struct Research {
        /// The topic, with a doc comment.
        pub(crate) topic: ::std::string::String,
        #[reducer(append)]
        pub(crate) notes: types::Notes,
        #[reducer(append)]
        pub(crate) more_notes: ::std::vec::Vec<::std::string::String>,
        #[reducer(add)]
        pub(crate) steps: types::Count,
        #[reducer(add)]
        pub(crate) total: ::core::primitive::u64,
        #[reducer(merge)]
        pub(crate) scores: types::Scores,
        #[reducer(merge)]
        pub(crate) weights: std::collections::HashMap<String, u8>,
        #[reducer(union)]
        pub(crate) tags: types::Tags,
        #[reducer(union)]
        pub(crate) seen: std::collections::BTreeSet<u32>,
        #[reducer(messages)]
        pub(crate) chat: types::Chat,
        #[reducer(messages)]
        pub(crate) log: std::vec::Vec<stategraph::Message>,
        #[reducer(with = folds::keep_max::<f64>)]
        pub(crate) best: f64,
        #[reducer(with = super::folds::keep_max)]
        pub(crate) top: types::Count,
        #[reducer(with = folds::nested::push::<String>, update = String)]
        pub(crate) pushed: Vec<String>,
        #[cfg(any())]
        pub(crate) never: u8,
        #[cfg_attr(any(), reducer(append))]
        pub(crate) plain: Vec<u8>,
        #[cfg_attr(all(), reducer(add))]
        #[doc = "A counter whose reducer comes from `cfg_attr`."]
        pub(crate) counted: u16,
    }
}

mod nodes {
    use super::state::{Research, ResearchUpdate};

    #[stategraph::node(reads(topic, steps))]
    pub(crate) fn plan(r: &Research) -> ResearchUpdate {
        Research::update()
            .notes([r.topic.clone()])
            .more_notes(["more"])
            .steps(1u32)
            .total(2u64)
            .scores([("a", 1.5)])
            .weights([("w", 3u8)])
            .tags(["t"])
            .seen([7u32])
            .chat([stategraph::Message::user("hi")])
            .log([stategraph::Message::assistant("hello")])
            .best(2.5)
            .top(9u32)
            .pushed("p")
            .plain(vec![1u8])
            .counted(3u16)
    }
}

use stategraph::prelude::*;
use state::Research;

pub fn main() {
    let graph = StateGraph::<Research>::new()
        .add_node(nodes::plan)
        .add_edge(START, nodes::plan)
        .add_edge(nodes::plan, END)
        .compile()
        .expect("compiles");
    let out = graph
        .invoke_blocking(
            Research::update().topic("rust").steps(1u32).counted(1u16),
            &RunConfig::new(),
        )
        .expect("runs");
    let v = out.values;
    assert_eq!(v.notes, ["rust"]);
    assert_eq!(v.more_notes, ["more"]);
    assert_eq!((v.steps, v.total, v.counted), (2, 2, 4));
    assert_eq!(v.scores.get("a"), Some(&1.5));
    assert_eq!(v.weights.get("w"), Some(&3));
    assert!(v.tags.contains("t") && v.seen.contains(&7));
    assert_eq!((v.chat.len(), v.log.len()), (1, 1));
    assert_eq!((v.best, v.top), (2.5, 9));
    assert_eq!(v.pushed, ["p"]);
    assert_eq!(v.plain, [1]);
    // The `cfg`-removed field is not a channel; `cfg_attr(all(), reducer(add))` is.
    let names: Vec<&str> = Research::CHANNELS.iter().map(|c| c.name).collect();
    assert!(!names.contains(&"never"));
    assert_eq!(Research::COUNTED.name(), "counted");
    let reducer = |name: &str| Research::CHANNELS.iter().find(|c| c.name == name).map(|c| c.reducer);
    assert_eq!(reducer("counted"), Some("add"));
    assert_eq!(reducer("plain"), Some("last"));
    assert_eq!(nodes::plan.reads(), Some(&[0, 3][..]));
}
