//! `#[derive(GraphState)]` end to end: builders, reducers, conflicts, codecs and deltas.

use std::collections::{BTreeMap, BTreeSet};

use stategraph::prelude::*;
use stategraph::{Change, InvalidUpdate, Persistence, ReduceError};

#[derive(Debug, Default, Clone, PartialEq)]
struct Cache(u32);

fn keep_max(current: &mut f64, update: f64) {
    if update > *current {
        *current = update;
    }
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Research {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
    #[reducer(add)]
    steps: u32,
    #[reducer(merge)]
    scores: BTreeMap<String, f64>,
    #[reducer(union)]
    seen: BTreeSet<String>,
    #[reducer(messages)]
    chat: Vec<Message>,
    #[reducer(with = keep_max)]
    best: f64,
    #[channel(untracked)]
    scratch: Option<Cache>,
}

fn write(writer: &str, update: ResearchUpdate) -> Write<Research> {
    Write::new(writer, update)
}

#[test]
fn builder_and_apply_through_every_reducer() {
    let mut s = Research::default();
    let changes = s
        .apply_writes(vec![
            write(
                "plan",
                Research::update()
                    .topic("rust")
                    .notes(["a", "b"])
                    .steps(1)
                    .scores([("x", 1.0)])
                    .seen(["s"])
                    .chat([Message::user("hi")])
                    .best(2.0),
            ),
            write(
                "search",
                Research::update()
                    .notes(["c"])
                    .steps(2)
                    .scores([("x", 3.0), ("y", 1.0)])
                    .seen(["s", "t"])
                    .best(1.0)
                    .scratch(Some(Cache(7))),
            ),
        ])
        .unwrap();
    assert_eq!(s.topic, "rust");
    assert_eq!(s.notes, ["a", "b", "c"]);
    assert_eq!(s.steps, 3);
    assert_eq!(
        s.scores,
        BTreeMap::from([("x".into(), 3.0), ("y".into(), 1.0)])
    );
    assert_eq!(s.seen, BTreeSet::from(["s".into(), "t".into()]));
    assert_eq!(s.chat.len(), 1);
    assert_eq!(s.chat[0].id.as_deref(), Some("msg-0"));
    assert_eq!(s.best, 2.0);
    assert_eq!(s.scratch, Some(Cache(7)));
    assert_eq!(changes.len(), 8);
    assert!(changes.contains(Research::NOTES));
    assert_eq!(
        changes.change_at(Research::NOTES.index()),
        Some(Change::Appended { from: 0 })
    );
    assert_eq!(
        changes.change_at(Research::TOPIC.index()),
        Some(Change::Replaced)
    );
}

#[test]
fn untouched_channels_are_not_reported() {
    let mut s = Research::default();
    let changes = s
        .apply_writes(vec![write("a", Research::update().steps(1))])
        .unwrap();
    assert_eq!(
        changes.iter().map(|(i, _)| i).collect::<Vec<_>>(),
        [Research::STEPS.index()]
    );
}

#[test]
fn two_writes_to_a_last_value_channel_name_both_writers_and_change_nothing() {
    let mut s = Research::default();
    let err = s
        .apply_writes(vec![
            write("a", Research::update().topic("x").steps(5)),
            write("b", Research::update().topic("y")),
        ])
        .unwrap_err();
    assert_eq!(
        err,
        InvalidUpdate::ConcurrentWrites {
            channel: "topic",
            writers: vec!["a".into(), "b".into()]
        }
    );
    assert!(
        err.to_string()
            .contains("channel `topic` received 2 writes")
    );
    assert_eq!(
        s,
        Research::default(),
        "a rejected step must leave the state untouched"
    );
}

#[test]
fn overwrite_wins_and_two_overwrites_are_an_error() {
    let mut s = Research {
        notes: vec!["old".into()],
        ..Default::default()
    };
    s.apply_writes(vec![
        write("a", Research::update().notes(["x"])),
        write(
            "b",
            Research::update().overwrite_notes(vec!["fresh".to_string()]),
        ),
        write("c", Research::update().notes(["y"])),
    ])
    .unwrap();
    assert_eq!(s.notes, ["fresh"]);
    let err = s
        .apply_writes(vec![
            write("a", Research::update().overwrite_steps(1u32)),
            write("b", Research::update().overwrite_steps(2u32)),
        ])
        .unwrap_err();
    assert!(matches!(
        err,
        InvalidUpdate::ConcurrentOverwrites {
            channel: "steps",
            ..
        }
    ));
}

#[test]
fn messages_replace_by_id_remove_and_reject_unknown_ids() {
    let mut s = Research::default();
    s.apply_writes(vec![write(
        "a",
        Research::update().chat([Message::user("one").with_id("1"), Message::assistant("two")]),
    )])
    .unwrap();
    let c = s
        .apply_writes(vec![write(
            "a",
            Research::update().chat([Message::user("uno").with_id("1")]),
        )])
        .unwrap();
    assert_eq!(c.change_at(Research::CHAT.index()), Some(Change::Replaced));
    assert_eq!(s.chat[0].content, "uno");
    let before = s.clone();
    let err = s
        .apply_writes(vec![write(
            "a",
            Research::update()
                .steps(1)
                .chat([RemoveMessage::new("nope")]),
        )])
        .unwrap_err();
    assert_eq!(
        err,
        InvalidUpdate::Rejected {
            channel: "chat",
            source: ReduceError::UnknownMessageId { id: "nope".into() }
        }
    );
    assert_eq!(
        s, before,
        "steps must not be added when another channel rejects the step"
    );
    s.apply_writes(vec![write(
        "a",
        Research::update().chat([RemoveMessage::new("1")]),
    )])
    .unwrap();
    assert_eq!(s.chat.len(), 1);
    s.apply_writes(vec![write(
        "a",
        Research::update().chat([RemoveAllMessages]),
    )])
    .unwrap();
    assert!(s.chat.is_empty());
}

#[test]
fn add_overflow_is_rejected() {
    let mut s = Research {
        steps: u32::MAX - 1,
        ..Default::default()
    };
    let err = s
        .apply_writes(vec![
            write("a", Research::update().steps(1)),
            write("b", Research::update().steps(1)),
        ])
        .unwrap_err();
    assert!(matches!(
        err,
        InvalidUpdate::Rejected {
            channel: "steps",
            source: ReduceError::Overflow
        }
    ));
    assert_eq!(s.steps, u32::MAX - 1);
}

#[test]
fn channel_metadata() {
    let names: Vec<_> = Research::CHANNELS.iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        [
            "topic", "notes", "steps", "scores", "seen", "chat", "best", "scratch"
        ]
    );
    assert_eq!(Research::NOTES.info().reducer, "append");
    assert_eq!(Research::BEST.info().reducer, "with(keep_max;f64)");
    assert_eq!(Research::SCRATCH.info().persistence, Persistence::Untracked);
    assert_eq!(Research::SCORES.info().type_name, "BTreeMap<String,f64>");
    assert!(Research::CHAT.info().delta && Research::NOTES.info().delta);
    assert!(!Research::TOPIC.info().delta);
    assert_eq!(Research::SCHEMA_VERSION.len(), 64);
}

#[test]
fn update_serde_round_trip_skips_untracked() {
    let u = Research::update()
        .topic("t")
        .notes(["a"])
        .overwrite_steps(4u32)
        .scratch(Some(Cache(1)));
    let json = serde_json::to_value(&u).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"topic": {"reduce": "t"}, "notes": {"reduce": ["a"]}, "steps": {"overwrite": 4}})
    );
    let back: ResearchUpdate = serde_json::from_value(json).unwrap();
    assert_eq!(
        format!("{back:?}"),
        format!(
            "{:?}",
            Research::update()
                .topic("t")
                .notes(["a"])
                .overwrite_steps(4u32)
        )
    );
    let err = serde_json::from_value::<ResearchUpdate>(serde_json::json!({"nope": {"reduce": 1}}))
        .unwrap_err();
    assert!(err.to_string().contains("unknown channel `nope`"), "{err}");
}

#[test]
fn codec_round_trip_and_delta() {
    let mut s = Research::default();
    s.apply_writes(vec![write(
        "a",
        Research::update().topic("t").notes(["a", "b"]).steps(3),
    )])
    .unwrap();
    let mut restored = Research::default();
    for c in Research::CHANNELS {
        if let Some(v) = s.encode_channel(c.index).unwrap() {
            restored.decode_channel(c.index, v).unwrap();
        }
    }
    assert_eq!(
        restored,
        Research {
            scratch: None,
            ..s.clone()
        }
    );
    let from = s.channel_len(Research::NOTES.index()).unwrap();
    s.apply_writes(vec![write("a", Research::update().notes(["c"]))])
        .unwrap();
    let delta = s
        .encode_channel_since(Research::NOTES.index(), from)
        .unwrap();
    assert_eq!(delta, serde_json::json!(["c"]));
    restored
        .extend_channel(Research::NOTES.index(), delta)
        .unwrap();
    assert_eq!(restored.notes, s.notes);
    assert!(s.encode_channel_since(Research::TOPIC.index(), 0).is_err());
    let err = restored
        .decode_channel(Research::STEPS.index(), serde_json::json!("x"))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("channel `steps` does not decode as `u32`"),
        "{err}"
    );
    assert!(
        restored
            .decode_channel(Research::SCRATCH.index(), serde_json::json!(null))
            .is_err()
    );
    assert!(
        restored
            .decode_channel(99, serde_json::json!(null))
            .is_err()
    );
}
