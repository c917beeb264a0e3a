//! A state and its updates as plain JSON objects, for a server's requests and
//! responses: `state_to_json`, `update_from_json` (each value a write through the
//! field's reducer; unknown fields and bad values are errors) and `update_to_json`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use stategraph::prelude::*;
use stategraph::{InputError, state_to_json, update_from_json, update_to_json};

fn keep_max(current: &mut f64, update: f64) {
    if update > *current {
        *current = update;
    }
}

#[derive(Debug, Default, Clone, PartialEq)]
struct Scratch(u32);

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
    summary: Option<String>,
    #[channel(untracked)]
    scratch: Option<Scratch>,
}

fn stored(update: &ResearchUpdate) -> Value {
    Research::encode_update(update).unwrap()
}

fn from(value: Value) -> ResearchUpdate {
    update_from_json::<Research>(value).unwrap()
}

#[test]
fn every_reducer_kind_decodes_as_the_builder_writes_it() {
    let hi = Message::user("hi").with_id("m1");
    let cases: Vec<(Value, ResearchUpdate)> = vec![
        (json!({"topic": "tides"}), Research::update().topic("tides")),
        (
            json!({"notes": ["a", "b"]}),
            Research::update().notes(["a", "b"]),
        ),
        (json!({"steps": 3}), Research::update().steps(3)),
        (
            json!({"scores": [["x", 1.5]]}),
            Research::update().scores([("x", 1.5)]),
        ),
        (
            json!({"seen": ["s", "t"]}),
            Research::update().seen(["s", "t"]),
        ),
        (
            json!({"chat": [{"upsert": serde_json::to_value(&hi).unwrap()}]}),
            Research::update().chat([hi.clone()]),
        ),
        (
            json!({"chat": [{"remove": "m1"}]}),
            Research::update().chat([RemoveMessage::new("m1")]),
        ),
        (json!({"best": 2.5}), Research::update().best(2.5)),
        (
            json!({"summary": "short"}),
            Research::update().summary(Some("short".to_string())),
        ),
        (
            json!({"summary": null}),
            Research::update().summary(None::<String>),
        ),
        (
            json!({"topic": "all", "notes": ["n"], "steps": 1, "seen": ["z"]}),
            Research::update()
                .topic("all")
                .notes(["n"])
                .steps(1)
                .seen(["z"]),
        ),
        (json!({}), Research::update()),
    ];
    for (input, built) in cases {
        let decoded = from(input.clone());
        assert_eq!(stored(&decoded), stored(&built), "{input}");
        // And back: the wire form again.
        assert_eq!(update_to_json::<Research>(&decoded).unwrap(), input);
    }
}

#[test]
fn decoded_input_applies_through_the_reducers() {
    let mut state = Research {
        notes: vec!["old".into()],
        steps: 2,
        best: 5.0,
        ..Research::default()
    };
    let update = from(json!({"notes": ["new"], "steps": 3, "best": 1.0}));
    state
        .apply_writes(vec![stategraph::Write::new("input", update)])
        .unwrap();
    assert_eq!(state.notes, ["old", "new"]);
    assert_eq!(state.steps, 5);
    assert_eq!(state.best, 5.0, "keep_max keeps the larger");
}

#[test]
fn an_unknown_field_is_an_error_naming_the_known_ones() {
    let err = update_from_json::<Research>(json!({"topic": "x", "titel": "y"})).unwrap_err();
    assert_eq!(
        err,
        InputError::UnknownField {
            field: "titel".into(),
            known: "topic, notes, steps, scores, seen, chat, best, summary".into(),
        }
    );
    assert!(err.to_string().contains("`titel`"), "{err}");
    // Untracked channels have no JSON form.
    let err = update_from_json::<Research>(json!({"scratch": 1})).unwrap_err();
    assert!(
        matches!(&err, InputError::Invalid { path, .. } if path == "$.scratch"),
        "{err:?}"
    );
}

#[test]
fn a_wrong_type_or_null_for_a_non_option_names_the_field() {
    for (input, field) in [
        (json!({"steps": "three"}), "steps"),
        (json!({"notes": "not a list"}), "notes"),
        (json!({"topic": null}), "topic"),
        (json!({"steps": null}), "steps"),
        (json!({"chat": [{"shout": "x"}]}), "chat"),
        (json!({"scores": {"x": 1.0}}), "scores"),
    ] {
        let err = update_from_json::<Research>(input.clone()).unwrap_err();
        let InputError::Invalid { path, message } = &err else {
            panic!("{input}: {err:?}");
        };
        assert_eq!(path, &format!("$.{field}"), "{input}");
        assert!(!message.is_empty());
        assert!(err.to_string().contains(&format!("`$.{field}`")), "{err}");
    }
}

#[test]
fn non_object_input_names_its_json_type() {
    for (input, found) in [
        (json!(null), "null"),
        (json!(true), "boolean"),
        (json!(3), "number"),
        (json!("topic"), "string"),
        (json!([{"topic": "x"}]), "array"),
    ] {
        let err = update_from_json::<Research>(input).unwrap_err();
        assert_eq!(err, InputError::NotAnObject { found });
        assert!(err.to_string().contains(found), "{err}");
    }
}

#[test]
fn state_to_json_is_the_fields_by_their_codecs_without_untracked_ones() {
    let state = Research {
        topic: "tides".into(),
        notes: vec!["a".into()],
        steps: 4,
        scores: BTreeMap::from([("x".to_string(), 1.0)]),
        seen: BTreeSet::from(["s".to_string()]),
        chat: vec![Message::user("hi").with_id("m1")],
        best: 0.5,
        summary: None,
        scratch: Some(Scratch(9)),
    };
    let value = state_to_json(&state).unwrap();
    assert_eq!(
        value,
        json!({
            "topic": "tides",
            "notes": ["a"],
            "steps": 4,
            "scores": {"x": 1.0},
            "seen": ["s"],
            "chat": [serde_json::to_value(Message::user("hi").with_id("m1")).unwrap()],
            "best": 0.5,
            "summary": null,
        })
    );
}

#[test]
fn update_to_json_gives_an_overwrite_its_value() {
    let update = Research::update().notes(["x"]).steps(1);
    assert_eq!(
        update_to_json::<Research>(&update).unwrap(),
        json!({"notes": ["x"], "steps": 1})
    );
    // An overwrite, as `Command::update` or a stored fork may carry, is the value too.
    let mut overwrite = stored(&Research::update());
    overwrite["notes"] = json!({"overwrite": ["only"]});
    let decoded = Research::decode_update(overwrite).unwrap();
    assert_eq!(
        update_to_json::<Research>(&decoded).unwrap(),
        json!({"notes": ["only"]})
    );
}
