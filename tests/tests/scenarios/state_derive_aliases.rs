//! `#[derive(GraphState)]` on reducer fields whose types the derive cannot see through
//! (aliases, paths into modules): their impls go through the reducer's traits, so
//! check that builders, reducers, update codecs and checkpoint deltas still work.

use stategraph::prelude::*;

mod types {
    pub type Notes = Vec<String>;
    pub type Count = u64;
    pub type Scores = std::collections::BTreeMap<String, u32>;
    pub type Tags = std::collections::BTreeSet<String>;
    pub type Chat = Vec<stategraph::Message>;
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Research {
    #[reducer(append)]
    notes: types::Notes,
    #[reducer(add)]
    steps: types::Count,
    #[reducer(merge)]
    scores: types::Scores,
    #[reducer(union)]
    tags: types::Tags,
    #[reducer(messages)]
    chat: types::Chat,
    #[reducer(append)]
    #[channel(untracked)]
    scratch: types::Notes,
}

fn apply(s: &mut Research, update: ResearchUpdate) {
    s.apply_writes(vec![Write::new("n", update)])
        .expect("applies");
}

#[test]
fn builders_fold_through_every_reducer_on_aliases() {
    let mut s = Research::default();
    apply(
        &mut s,
        Research::update()
            .notes(["a"])
            .steps(2u64)
            .scores([("x", 1u32)])
            .tags(["t"])
            .chat([Message::user("hi")])
            .scratch(["s"]),
    );
    apply(
        &mut s,
        Research::update()
            .notes(["b"])
            .steps(3u64)
            .scores([("x", 5u32)]),
    );
    assert_eq!(s.notes, ["a", "b"]);
    assert_eq!(s.steps, 5);
    assert_eq!(s.scores.get("x"), Some(&5));
    assert!(s.tags.contains("t"));
    assert_eq!(s.chat.len(), 1);
    assert_eq!(s.scratch, ["s"]);
    apply(&mut s, Research::update().overwrite_steps(1u64));
    assert_eq!(s.steps, 1);
}

#[test]
fn update_codec_round_trips_on_aliases() {
    let u = Research::update()
        .notes(["a"])
        .steps(4u64)
        .scores([("k", 2u32)])
        .scratch(["left out"]);
    let json = serde_json::to_value(&u).expect("encodes");
    assert_eq!(
        json,
        serde_json::json!({
            "notes": {"reduce": ["a"]},
            "steps": {"reduce": 4},
            "scores": {"reduce": [["k", 2]]},
        })
    );
    let back: ResearchUpdate = serde_json::from_value(json).expect("decodes");
    let mut s = Research::default();
    apply(&mut s, back);
    assert_eq!(
        (s.notes.len(), s.steps, s.scores.get("k")),
        (1, 4, Some(&2))
    );
    assert!(s.scratch.is_empty());
}

#[test]
fn checkpoint_deltas_work_on_aliases() {
    let mut s = Research::default();
    apply(
        &mut s,
        Research::update().notes(["a"]).chat([Message::user("hi")]),
    );
    let notes = Research::NOTES.index();
    let chat = Research::CHAT.index();
    assert!(Research::CHANNELS[notes].delta && Research::CHANNELS[chat].delta);
    let (from_notes, from_chat) = (
        s.channel_len(notes).expect("delta channel"),
        s.channel_len(chat).expect("delta channel"),
    );
    let mut restored = s.clone();
    apply(
        &mut s,
        Research::update()
            .notes(["b"])
            .chat([Message::assistant("hello")]),
    );
    let delta = s.encode_channel_since(notes, from_notes).expect("encodes");
    assert_eq!(delta, serde_json::json!(["b"]));
    restored.extend_channel(notes, delta).expect("extends");
    let delta = s.encode_channel_since(chat, from_chat).expect("encodes");
    restored.extend_channel(chat, delta).expect("extends");
    assert_eq!(restored, s);
    assert_eq!(s.channel_len(Research::SCRATCH.index()), None);
}
