//! A checkpoint written under an older schema loads only through a registered
//! migration; without one the error names both schema versions.

use std::sync::Arc;

use stategraph::checkpoint::{CheckpointError, InMemorySaver, ListOptions};
use stategraph::prelude::*;

mod v1 {
    use stategraph::prelude::*;

    #[derive(GraphState, Clone, Debug, Default)]
    pub struct Job {
        #[reducer(append)]
        pub notes: Vec<String>,
        #[reducer(add)]
        pub count: u32,
    }

    #[node]
    pub fn work(_: &Job) -> JobUpdate {
        Job::update().notes(["v1 work"]).count(1u32)
    }
}

mod v2 {
    use stategraph::prelude::*;

    /// `count` was renamed `total` and widened.
    #[derive(GraphState, Clone, Debug, Default)]
    pub struct Job {
        #[reducer(append)]
        pub notes: Vec<String>,
        #[reducer(add)]
        pub total: u64,
    }

    #[node]
    pub fn work(_: &Job) -> JobUpdate {
        Job::update().notes(["v2 work"]).total(10u64)
    }
}

fn v1_graph(saver: Arc<InMemorySaver>) -> CompiledGraph<v1::Job> {
    StateGraph::<v1::Job>::new()
        .add_node(v1::work)
        .add_edge(START, v1::work)
        .compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

fn v2_graph(options: CompileOptions) -> CompiledGraph<v2::Job> {
    StateGraph::<v2::Job>::new()
        .add_node(v2::work)
        .add_edge(START, v2::work)
        .compile_with(options)
        .unwrap()
}

#[tokio::test]
async fn without_a_migration_loading_fails_naming_both_versions() {
    let saver = Arc::new(InMemorySaver::new());
    let cfg = RunConfig::new().thread("job");
    v1_graph(saver.clone())
        .invoke(v1::Job::update(), &cfg)
        .await
        .unwrap();
    let v2 = v2_graph(CompileOptions::new().shared_checkpointer(saver));
    let err = v2.invoke(v2::Job::update(), &cfg).await.unwrap_err();
    match &err {
        RunError::Checkpoint(CheckpointError::SchemaMismatch {
            stored, expected, ..
        }) => {
            assert_eq!(stored, <v1::Job as GraphState>::SCHEMA_VERSION);
            assert_eq!(expected, <v2::Job as GraphState>::SCHEMA_VERSION);
        }
        other => panic!("expected a schema mismatch, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(<v1::Job as GraphState>::SCHEMA_VERSION)
            && text.contains(<v2::Job as GraphState>::SCHEMA_VERSION),
        "{text}"
    );
}

#[tokio::test]
async fn a_registered_migration_maps_old_checkpoints_to_the_new_schema() {
    let saver = Arc::new(InMemorySaver::new());
    let cfg = RunConfig::new().thread("job");
    let v1 = v1_graph(saver.clone());
    v1.invoke(v1::Job::update().notes(["input"]), &cfg)
        .await
        .unwrap();
    v1.invoke(v1::Job::update(), &cfg).await.unwrap();

    let v2 = v2_graph(
        CompileOptions::new()
            .shared_checkpointer(saver.clone())
            .migration(<v1::Job as GraphState>::SCHEMA_VERSION, |values| {
                // Checkpoints from before the first `count` write have no such channel.
                if let Some(count) = values.remove("count") {
                    values.insert("total".into(), count);
                }
                Ok(())
            }),
    );
    let before = v2.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(before.values.total, 2);
    assert_eq!(before.values.notes, ["input", "v1 work", "v1 work"]);

    let out = v2.invoke(v2::Job::update(), &cfg).await.unwrap();
    assert_eq!(out.values.total, 12);
    assert_eq!(out.values.notes, ["input", "v1 work", "v1 work", "v2 work"]);

    // The new checkpoints are in the new schema and load without the migration.
    let plain = v2_graph(CompileOptions::new().shared_checkpointer(saver.clone()));
    assert_eq!(
        plain.get_state(&cfg).await.unwrap().unwrap().values.total,
        12
    );
    // The old ones are untouched and still load through the migration.
    let history = v2
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap();
    assert_eq!(history.last().unwrap().values.total, 0);
    assert_eq!(history.last().unwrap().values.notes, ["input"]);
}

#[tokio::test]
async fn a_failing_migration_is_reported_with_its_reason() {
    let saver = Arc::new(InMemorySaver::new());
    let cfg = RunConfig::new().thread("job");
    v1_graph(saver.clone())
        .invoke(v1::Job::update(), &cfg)
        .await
        .unwrap();
    let v2 = v2_graph(
        CompileOptions::new()
            .shared_checkpointer(saver)
            .migration(<v1::Job as GraphState>::SCHEMA_VERSION, |_| {
                Err("not supported".into())
            }),
    );
    let err = v2.invoke(None, &cfg).await.unwrap_err();
    assert!(
        matches!(err, RunError::Checkpoint(CheckpointError::Migration { ref reason, .. }) if reason == "not supported"),
        "{err}"
    );
}
