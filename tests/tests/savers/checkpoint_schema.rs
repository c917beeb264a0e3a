//! Loading checkpoints that do not fit: another state schema version is refused with
//! an error naming both versions; a stored channel value of the wrong JSON type fails
//! naming the channel; a newer checkpoint format, a missing stored value and an unknown
//! node are clean errors too — from `get_state`, `get_state_history` and `invoke`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;
use stategraph::checkpoint::{
    CHECKPOINT_FORMAT, Checkpoint, CheckpointConfig, CheckpointError, CheckpointMetadata,
    CheckpointSaver, CheckpointSource, InMemorySaver, ListOptions, PlannedTask, StoredValue,
    new_checkpoint_id, now_rfc3339,
};
use stategraph::prelude::*;
use stategraph::{CodecError, StateSnapshot};

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Before {
    #[reducer(append)]
    notes: Vec<String>,
    #[reducer(add)]
    count: u32,
}

/// Same fields, but `count` is now a `u64`: another schema.
#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct After {
    #[reducer(append)]
    notes: Vec<String>,
    #[reducer(add)]
    count: u64,
}

#[node]
fn note(_s: &Before) -> BeforeUpdate {
    Before::update().notes(["before".to_string()]).count(1)
}

#[node]
fn note_after(_s: &After) -> AfterUpdate {
    After::update().notes(["after".to_string()]).count(1)
}

fn before_graph(saver: &Arc<InMemorySaver>) -> CompiledGraph<Before> {
    StateGraph::<Before>::new()
        .add_node(note)
        .add_edge(START, note)
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap()
}

fn after_graph(saver: &Arc<InMemorySaver>) -> CompiledGraph<After> {
    StateGraph::<After>::new()
        .add_node(note_after)
        .add_edge(START, note_after)
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap()
}

/// Asserts `err` is a schema mismatch from `stored` to `expected`, named in the message.
fn assert_schema_mismatch(err: &RunError, stored_version: &str, expected_version: &str) {
    match err {
        RunError::Checkpoint(CheckpointError::SchemaMismatch {
            stored, expected, ..
        }) => {
            assert_eq!(stored, stored_version);
            assert_eq!(expected, expected_version);
        }
        other => panic!("expected SchemaMismatch, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(stored_version) && text.contains(expected_version),
        "{text}"
    );
}

#[tokio::test]
async fn a_thread_of_another_state_schema_is_refused_naming_both_versions() {
    assert_ne!(Before::SCHEMA_VERSION, After::SCHEMA_VERSION);
    let saver = Arc::new(InMemorySaver::new());
    let cfg = RunConfig::new().thread("migrated");
    before_graph(&saver)
        .invoke(Before::update().count(5), &cfg)
        .await
        .unwrap();
    let count = saver.checkpoint_count();

    let graph = after_graph(&saver);
    let (stored, expected) = (Before::SCHEMA_VERSION, After::SCHEMA_VERSION);
    let err = graph.get_state(&cfg).await.unwrap_err();
    assert_schema_mismatch(&err, stored, expected);
    let err = graph
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap_err();
    assert_schema_mismatch(&err, stored, expected);
    let err = graph.invoke(None, &cfg).await.unwrap_err();
    assert_schema_mismatch(&err, stored, expected);
    // New input on the thread loads it first: refused as well, nothing written.
    let err = graph
        .invoke(After::update().count(1), &cfg)
        .await
        .unwrap_err();
    assert_schema_mismatch(&err, stored, expected);
    assert_eq!(saver.checkpoint_count(), count);

    // A fresh thread of the new schema on the same saver is fine.
    let out = graph
        .invoke(After::update(), &RunConfig::new().thread("fresh"))
        .await
        .unwrap();
    assert_eq!(out.values.notes, ["after"]);
    // And the old thread still loads with its own schema.
    let old = before_graph(&saver).get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(old.values.count, 6);
}

/// A checkpoint of `Before` holding the given values (all at version 1).
fn handmade(values: BTreeMap<String, StoredValue>) -> Checkpoint {
    let versions = values.keys().map(|k| (k.clone(), 1)).collect();
    Checkpoint {
        v: CHECKPOINT_FORMAT,
        id: new_checkpoint_id(),
        ts: now_rfc3339(),
        channel_values: values,
        channel_versions: versions,
        versions_seen: BTreeMap::new(),
        updated_channels: Vec::new(),
        channel_bases: BTreeMap::new(),
        next: vec![PlannedTask {
            node: "note".into(),
            payload: None,
        }],
        barriers: BTreeMap::new(),
        schema_version: Before::SCHEMA_VERSION.into(),
        graph_version: "".into(),
    }
}

fn good_values() -> BTreeMap<String, StoredValue> {
    BTreeMap::from([
        ("notes".to_string(), StoredValue::Full(json!(["x"]))),
        ("count".to_string(), StoredValue::Full(json!(2))),
    ])
}

/// Puts `checkpoint` as the only checkpoint of `thread`; returns its id.
async fn put(saver: &InMemorySaver, thread: &str, checkpoint: Checkpoint) -> String {
    let id = checkpoint.id.clone();
    saver
        .put(
            &CheckpointConfig::thread(thread),
            checkpoint,
            CheckpointMetadata::new(CheckpointSource::Loop, 0),
        )
        .await
        .unwrap();
    id
}

/// Every way of loading `thread` fails; `check` inspects each error.
async fn every_load_fails(
    graph: &CompiledGraph<Before>,
    thread: &str,
    id: &str,
    check: impl Fn(&RunError),
) {
    let cfg = RunConfig::new().thread(thread);
    check(&graph.get_state(&cfg).await.unwrap_err());
    check(
        &graph
            .get_state(&cfg.clone().checkpoint(id))
            .await
            .unwrap_err(),
    );
    check(
        &graph
            .get_state_history(&cfg, &ListOptions::new())
            .await
            .unwrap_err(),
    );
    check(&graph.invoke(None, &cfg).await.unwrap_err());
    check(
        &graph
            .invoke(Before::update().count(1), &cfg)
            .await
            .unwrap_err(),
    );
    check(
        &graph
            .invoke(None, &cfg.clone().checkpoint(id))
            .await
            .unwrap_err(),
    );
}

#[tokio::test]
async fn a_handmade_checkpoint_loads_when_it_is_well_formed() {
    // The control for the tests below: the same construction, unbroken, works.
    let saver = Arc::new(InMemorySaver::new());
    put(&saver, "good", handmade(good_values())).await;
    let graph = before_graph(&saver);
    let cfg = RunConfig::new().thread("good");
    let snap: StateSnapshot<Before> = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.values.notes, ["x"]);
    assert_eq!(snap.values.count, 2);
    assert_eq!(snap.next, ["note"]);
    let out = graph.invoke(None, &cfg).await.unwrap();
    assert_eq!(out.values.notes, ["x", "before"]);
    assert_eq!(out.values.count, 3);
}

#[tokio::test]
async fn a_checkpoint_stored_with_another_schema_version_is_refused() {
    let saver = Arc::new(InMemorySaver::new());
    let mut cp = handmade(good_values());
    cp.schema_version = "other".into();
    let id = put(&saver, "other-schema", cp).await;
    let graph = before_graph(&saver);
    every_load_fails(&graph, "other-schema", &id, |err| {
        assert_schema_mismatch(err, "other", Before::SCHEMA_VERSION);
        assert!(err.to_string().contains(&id), "{err}");
    })
    .await;
}

#[tokio::test]
async fn a_stored_value_of_the_wrong_json_type_fails_naming_the_channel() {
    for (channel, bad) in [
        ("count", json!("not a number")),
        ("count", json!(-1)),
        ("notes", json!({"not": "a list"})),
        ("notes", json!([1, 2])),
    ] {
        let saver = Arc::new(InMemorySaver::new());
        let mut values = good_values();
        values.insert(channel.to_string(), StoredValue::Full(bad.clone()));
        let id = put(&saver, "corrupt", handmade(values)).await;
        let graph = before_graph(&saver);
        every_load_fails(&graph, "corrupt", &id, |err| {
            match err {
                RunError::Checkpoint(CheckpointError::Channel {
                    id: at,
                    source: CodecError::Decode { channel: c, .. },
                }) => {
                    assert_eq!(at, &id);
                    assert_eq!(*c, channel, "{bad}");
                }
                other => panic!("expected a Channel decode error for {bad}, got {other:?}"),
            }
            let text = err.to_string();
            assert!(text.contains(&format!("`{channel}`")), "{text}");
        })
        .await;
    }
}

#[tokio::test]
async fn an_append_delta_of_the_wrong_json_type_fails_naming_the_channel() {
    let saver = Arc::new(InMemorySaver::new());
    let mut first = handmade(good_values());
    first.channel_bases.insert("notes".into(), 1);
    put(&saver, "delta", first).await;
    // Version 2 of `notes` is a delta that is not a list of strings.
    let mut second = handmade(BTreeMap::from([(
        "notes".to_string(),
        StoredValue::Append(json!("y")),
    )]));
    second.channel_versions = BTreeMap::from([("notes".into(), 2), ("count".into(), 1)]);
    second.channel_bases = BTreeMap::from([("notes".into(), 1)]);
    let id = second.id.clone();
    let parent = saver
        .list(&CheckpointConfig::thread("delta"), &ListOptions::new())
        .await
        .unwrap()[0]
        .config
        .clone();
    saver
        .put(
            &parent,
            second,
            CheckpointMetadata::new(CheckpointSource::Loop, 1),
        )
        .await
        .unwrap();
    let graph = before_graph(&saver);
    let err = graph
        .get_state(&RunConfig::new().thread("delta"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            RunError::Checkpoint(CheckpointError::Channel { id: at, source })
                if *at == id && source.to_string().contains("`notes`")
        ),
        "{err:?}"
    );
    let err = graph
        .invoke(None, &RunConfig::new().thread("delta"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::Checkpoint(CheckpointError::Channel { .. })),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_newer_checkpoint_format_is_unsupported() {
    let saver = Arc::new(InMemorySaver::new());
    let mut cp = handmade(good_values());
    cp.v = CHECKPOINT_FORMAT + 1;
    let id = put(&saver, "future", cp).await;
    let graph = before_graph(&saver);
    every_load_fails(&graph, "future", &id, |err| match err {
        RunError::Checkpoint(CheckpointError::UnsupportedFormat {
            id: at,
            found,
            supported,
        }) => {
            assert_eq!(at, &id);
            assert_eq!(*found, CHECKPOINT_FORMAT + 1);
            assert_eq!(*supported, CHECKPOINT_FORMAT);
        }
        other => panic!("expected UnsupportedFormat, got {other:?}"),
    })
    .await;
    // The format is checked before the schema.
    let mut cp = handmade(good_values());
    cp.v = u32::MAX;
    cp.schema_version = "other".into();
    put(&saver, "future-other", cp).await;
    let err = graph
        .get_state(&RunConfig::new().thread("future-other"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            RunError::Checkpoint(CheckpointError::UnsupportedFormat {
                found: u32::MAX,
                ..
            })
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_value_missing_from_storage_is_named() {
    let saver = Arc::new(InMemorySaver::new());
    let mut cp = handmade(good_values());
    // Claims version 3 of `count`, but only carries version... none.
    cp.channel_values.remove("count");
    cp.channel_versions.insert("count".into(), 3);
    let id = put(&saver, "missing", cp).await;
    let graph = before_graph(&saver);
    every_load_fails(&graph, "missing", &id, |err| match err {
        RunError::Checkpoint(CheckpointError::MissingValue {
            id: at,
            channel,
            version,
        }) => {
            assert_eq!(at, &id);
            assert_eq!(channel, "count");
            assert_eq!(*version, 3);
        }
        other => panic!("expected MissingValue, got {other:?}"),
    })
    .await;
}

#[tokio::test]
async fn a_planned_task_of_an_unknown_node_is_an_error_when_continuing() {
    let saver = Arc::new(InMemorySaver::new());
    let mut cp = handmade(good_values());
    cp.next = vec![PlannedTask {
        node: "ghost".into(),
        payload: None,
    }];
    let id = put(&saver, "ghost", cp).await;
    let graph = before_graph(&saver);
    let err = graph
        .invoke(None, &RunConfig::new().thread("ghost"))
        .await
        .unwrap_err();
    match &err {
        RunError::Checkpoint(CheckpointError::UnknownNode { id: at, node }) => {
            assert_eq!(at, &id);
            assert_eq!(node, "ghost");
        }
        other => panic!("expected UnknownNode, got {other:?}"),
    }
    assert!(err.to_string().contains("ghost"), "{err}");
}
