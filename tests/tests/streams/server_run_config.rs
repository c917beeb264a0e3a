//! What a server sets per request on a run: its id and extra metadata (recorded on
//! every checkpoint the run writes, its subgraphs' too, on every saver), and
//! breakpoints named by strings (checked against the graph before anything is saved).

use std::sync::Arc;

use serde_json::{Map, Value, json};
use stategraph::checkpoint::{
    CheckpointConfig, CheckpointSaver, CheckpointSource, InMemorySaver, ListOptions,
};
use stategraph::prelude::*;
use stategraph_postgres::{PostgresOptions, PostgresSaver};
use stategraph_sqlite::SqliteSaver;
use stategraph_tests::servers;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Job {
    #[reducer(append)]
    log: Vec<String>,
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Inner {
    #[reducer(append)]
    notes: Vec<String>,
}

#[node]
fn first(_: &Job) -> JobUpdate {
    Job::update().log(["first"])
}

#[node]
fn last(_: &Job) -> JobUpdate {
    Job::update().log(["last"])
}

#[node]
fn note(_: &Inner) -> InnerUpdate {
    Inner::update().notes(["noted"])
}

fn inner_graph() -> CompiledGraph<Inner> {
    let mut g = StateGraph::<Inner>::new();
    g.add_node(note).add_edge(START, note).add_edge(note, END);
    g.compile().unwrap()
}

/// `first` → subgraph `inner` → `last`.
fn job_graph(saver: Arc<dyn CheckpointSaver>) -> CompiledGraph<Job> {
    let mut g = StateGraph::<Job>::new();
    let inner = g.add_subgraph(Subgraph::new(
        "inner",
        inner_graph(),
        |_: &Job| Inner::update(),
        |i: &Inner| Job::update().log(i.notes.clone()),
    ));
    g.add_node(first)
        .add_node(last)
        .add_edge(START, first)
        .add_edge(first, &inner)
        .add_edge(&inner, last)
        .add_edge(last, END);
    g.compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

type Savers = Vec<(
    &'static str,
    Arc<dyn CheckpointSaver>,
    Option<tempfile::TempDir>,
)>;

/// Memory, SQLite and (when configured) PostgreSQL.
async fn savers(test: &str) -> Savers {
    let mut out: Savers = vec![("memory", Arc::new(InMemorySaver::new()), None)];
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteSaver::open(dir.path().join("run.sqlite")).unwrap();
    out.push(("sqlite", Arc::new(sqlite), Some(dir)));
    if let Some(url) = servers::postgres_url(&format!("server_run_config::{test}")) {
        let schema = servers::fresh_schema("srvcfg");
        let pg = PostgresSaver::connect_with(&url, PostgresOptions::new().schema(&schema))
            .await
            .unwrap();
        out.push(("postgres", Arc::new(pg), None));
    }
    out
}

fn extra() -> Map<String, Value> {
    let Value::Object(map) = json!({
        "user": "ana",
        "request": {"path": "/runs", "attempt": 2},
        // Typed fields' names: dropped, the record stays readable.
        "step": "not a number",
        "source": 17,
        "parents": [],
        "run_id": "spoofed",
        "steps": "x",
    }) else {
        unreachable!()
    };
    map
}

#[tokio::test]
async fn run_id_and_metadata_are_on_every_checkpoint_of_the_run_and_its_subgraph() {
    for (name, saver, _dir) in savers("run_id").await {
        let g = job_graph(saver.clone());
        let thread = format!("run-id-{name}");
        let config = RunConfig::new()
            .thread(thread.as_str())
            .run_id("run-1")
            .metadata(extra());
        assert_eq!(config.configured_run_id(), Some("run-1"));
        let out = g.invoke(Job::update(), &config).await.unwrap();
        assert_eq!(out.values.log, ["first", "noted", "last"], "{name}");

        let plain = RunConfig::new().thread(thread.as_str());
        let history = g
            .get_state_history(&plain, &ListOptions::new())
            .await
            .unwrap();
        assert!(history.len() >= 4, "{name}: input, first, inner, last");
        for snap in &history {
            let m = &snap.metadata;
            assert_eq!(m.run_id.as_deref(), Some("run-1"), "{name}: {m:?}");
            assert_eq!(m.extra.get("user"), Some(&json!("ana")), "{name}");
            assert_eq!(
                m.extra.get("request"),
                Some(&json!({"path": "/runs", "attempt": 2})),
                "{name}"
            );
            for reserved in ["step", "source", "parents", "run_id", "steps"] {
                assert!(!m.extra.contains_key(reserved), "{name}: {reserved}");
            }
            assert!(m.step >= -1, "{name}: the typed step is the real one");
        }
        assert!(
            history
                .iter()
                .any(|s| s.metadata.source == CheckpointSource::Input),
            "{name}"
        );

        // The subgraph's checkpoints, under its task's namespace, carry them too.
        let namespaces = saver.list_namespaces(&thread).await.unwrap();
        let child_ns: Vec<_> = namespaces.into_iter().filter(|n| !n.is_empty()).collect();
        assert_eq!(child_ns.len(), 1, "{name}: {child_ns:?}");
        let mut child = CheckpointConfig::thread(thread.as_str());
        child.checkpoint_ns = child_ns[0].clone();
        let child_history = saver.list(&child, &ListOptions::default()).await.unwrap();
        assert!(child_history.len() >= 2, "{name}: input and note");
        for t in &child_history {
            assert_eq!(t.metadata.run_id.as_deref(), Some("run-1"), "{name}");
            assert_eq!(t.metadata.extra.get("user"), Some(&json!("ana")), "{name}");
        }

        // A second run without an id records none; update_state is not a run.
        g.invoke(Job::update(), &plain).await.unwrap();
        g.update_state(&config, Job::update().log(["edit"]))
            .await
            .unwrap();
        let latest = g.get_state(&plain).await.unwrap().unwrap();
        assert_eq!(latest.metadata.source, CheckpointSource::Update, "{name}");
        assert_eq!(latest.metadata.run_id, None, "{name}");
        assert!(latest.metadata.extra.is_empty(), "{name}");
        let history = g
            .get_state_history(&plain, &ListOptions::new())
            .await
            .unwrap();
        let without = history
            .iter()
            .filter(|s| s.metadata.run_id.is_none())
            .count();
        assert!(without >= 4, "{name}: the second run and the update");
    }
}

#[tokio::test]
async fn a_fork_checkpoint_records_the_run_id() {
    let saver: Arc<dyn CheckpointSaver> = Arc::new(InMemorySaver::new());
    let g = job_graph(saver);
    let plain = RunConfig::new().thread("fork");
    g.invoke(Job::update(), &plain).await.unwrap();
    let history = g
        .get_state_history(&plain, &ListOptions::new())
        .await
        .unwrap();
    let input = history
        .last()
        .unwrap()
        .config
        .checkpoint_id
        .clone()
        .unwrap();
    g.invoke(None, &plain.clone().checkpoint(input).run_id("again"))
        .await
        .unwrap();
    let history = g
        .get_state_history(&plain, &ListOptions::new())
        .await
        .unwrap();
    let fork = history
        .iter()
        .find(|s| s.metadata.source == CheckpointSource::Fork)
        .expect("a fork checkpoint");
    assert_eq!(fork.metadata.run_id.as_deref(), Some("again"));
}

#[tokio::test]
async fn interrupt_names_pause_like_the_typed_form() {
    let saver: Arc<dyn CheckpointSaver> = Arc::new(InMemorySaver::new());
    let g = job_graph(saver);
    let by_name = RunConfig::new()
        .thread("names")
        .interrupt_before_names(["last"]);
    let typed = RunConfig::new().thread("typed").interrupt_before([last]);
    let a = g.invoke(Job::update(), &by_name).await.unwrap();
    let b = g.invoke(Job::update(), &typed).await.unwrap();
    assert_eq!(a.values.log, ["first", "noted"]);
    assert_eq!(a.values, b.values);
    assert_eq!(a.interrupts.len(), 1);
    assert_eq!(a.interrupts[0].node, "last");
    assert_eq!(b.interrupts[0].node, "last");
    let snap = g.get_state(&by_name).await.unwrap().unwrap();
    assert_eq!(snap.next, ["last"]);

    let after = RunConfig::new()
        .thread("after")
        .interrupt_after_names([String::from("first")]);
    let out = g.invoke(Job::update(), &after).await.unwrap();
    assert_eq!(out.values.log, ["first"]);
    assert_eq!(out.interrupts[0].node, "first");
}

#[tokio::test]
async fn an_unknown_interrupt_name_fails_the_run_before_anything_is_saved() {
    let saver: Arc<dyn CheckpointSaver> = Arc::new(InMemorySaver::new());
    let g = job_graph(saver.clone());
    // `note` is a node of the subgraph, not of this graph; `nope` of neither.
    for (thread, config) in [
        (
            "ghost",
            RunConfig::new()
                .thread("ghost")
                .interrupt_before_names(["nope"]),
        ),
        (
            "child-node",
            RunConfig::new()
                .thread("child-node")
                .interrupt_after_names(["note"]),
        ),
        (
            "typed-child-node",
            RunConfig::new()
                .thread("typed-child-node")
                .interrupt_before([note]),
        ),
    ] {
        let err = g.invoke(Job::update(), &config).await.unwrap_err();
        let RunError::UnknownInterruptNode { node, known } = &err else {
            panic!("{thread}: {err:?}");
        };
        assert!(["nope", "note"].contains(&node.as_str()), "{thread}");
        assert_eq!(known, "first, inner, last", "{thread}");
        let message = err.to_string();
        assert!(message.contains(&format!("`{node}`")), "{message}");
        assert!(message.contains("first, inner, last"), "{message}");
        assert!(g.get_state(&config).await.unwrap().is_none(), "{thread}");
        assert!(saver.list_namespaces(thread).await.unwrap().is_empty());
    }
    // The streaming form checks too.
    let config = RunConfig::new()
        .thread("stream")
        .interrupt_before_names(["x"]);
    let mut stream = g.stream(Job::update(), &config, StreamMode::VALUES);
    let mut err = None;
    {
        use futures::StreamExt as _;
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => panic!("no event before the check: {event:?}"),
                Err(e) => err = Some(e),
            }
        }
    }
    let err = err.expect("the stream fails");
    assert!(
        matches!(err, RunError::UnknownInterruptNode { .. }),
        "{err:?}"
    );
}
