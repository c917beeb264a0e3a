//! `update_state` writes through the reducers as if a node had produced the update,
//! creates an `update` checkpoint and plans what follows that node; checkpoint
//! metadata records what ran, on what, and where it went.

use std::sync::Arc;

use stategraph::checkpoint::{CheckpointSource, InMemorySaver, ListOptions};
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Doc {
    #[reducer(append)]
    log: Vec<String>,
    approved: bool,
}

#[node]
fn draft(_: &Doc) -> DocUpdate {
    Doc::update().log(["draft"])
}

#[node]
fn review(_: &Doc) -> DocUpdate {
    Doc::update().log(["review"])
}

#[node]
fn publish(_: &Doc) -> DocUpdate {
    Doc::update().log(["publish"])
}

fn route(doc: &Doc) -> Route<Doc> {
    if doc.approved {
        Route::to(publish)
    } else {
        Route::end()
    }
}

fn graph(saver: Arc<InMemorySaver>) -> CompiledGraph<Doc> {
    StateGraph::<Doc>::new()
        .add_node(draft)
        .add_node(review)
        .add_node(publish)
        .add_edge(START, draft)
        .add_edge(draft, review)
        .add_conditional_edges(review, route, (publish, END))
        .compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

#[tokio::test]
async fn update_as_node_plans_what_follows_it_and_the_run_continues_from_there() {
    let g = graph(Arc::new(InMemorySaver::new()));
    let cfg = RunConfig::new().thread("t");
    let out = g.invoke(Doc::update(), &cfg).await.unwrap();
    assert_eq!(out.values.log, ["draft", "review"]);

    let at = g
        .update_state_as(&cfg, Doc::update().approved(true).log(["human"]), review)
        .await
        .unwrap();
    let snap = g.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.config, at);
    assert_eq!(snap.metadata.source, CheckpointSource::Update);
    assert_eq!(snap.metadata.step, 2, "one past the last loop step (1)");
    assert_eq!(
        snap.next,
        ["publish"],
        "the router after `review` ran on the updated state"
    );
    assert_eq!(snap.values.log, ["draft", "review", "human"]);

    let out = g.invoke(None, &cfg).await.unwrap();
    assert_eq!(out.values.log, ["draft", "review", "human", "publish"]);
    assert_eq!(out.steps, 1);
}

#[tokio::test]
async fn update_without_as_node_uses_the_last_writer() {
    let g = graph(Arc::new(InMemorySaver::new()));
    let cfg = RunConfig::new().thread("t");
    g.invoke(Doc::update(), &cfg).await.unwrap();
    g.update_state(&cfg, Doc::update().approved(true))
        .await
        .unwrap();
    let snap = g.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(
        snap.next,
        ["publish"],
        "the last writer was `review`, so its router ran"
    );
}

#[tokio::test]
async fn update_on_a_fresh_thread_acts_as_input() {
    let g = graph(Arc::new(InMemorySaver::new()));
    let cfg = RunConfig::new().thread("fresh");
    g.update_state(&cfg, Doc::update().log(["seed"]))
        .await
        .unwrap();
    let snap = g.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.next, ["draft"]);
    assert_eq!(snap.values.log, ["seed"]);
    let out = g.invoke(None, &cfg).await.unwrap();
    assert_eq!(out.values.log, ["seed", "draft", "review"]);
}

#[tokio::test]
async fn update_on_an_older_checkpoint_branches_from_it() {
    let g = graph(Arc::new(InMemorySaver::new()));
    let cfg = RunConfig::new().thread("t");
    g.invoke(Doc::update(), &cfg).await.unwrap();
    let history = g
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap();
    let after_draft = history.iter().find(|s| s.next == ["review"]).unwrap();
    let old_id = after_draft.config.checkpoint_id.clone().unwrap();
    let new = g
        .update_state_as(
            &cfg.clone().checkpoint(old_id.clone()),
            Doc::update().log(["edit"]),
            draft,
        )
        .await
        .unwrap();
    let snap = g.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.config, new);
    assert_eq!(snap.parent_config.unwrap().checkpoint_id.unwrap(), old_id);
    assert_eq!(snap.values.log, ["draft", "edit"]);
    assert_eq!(snap.next, ["review"]);
    let all = g
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap();
    assert_eq!(all.len(), history.len() + 1, "the old branch is kept");
}

#[tokio::test]
async fn errors_name_the_problem() {
    let g = graph(Arc::new(InMemorySaver::new()));
    let cfg = RunConfig::new().thread("t");
    let other = StateGraph::<Doc>::new().add_node_fn("ghost", |_| Doc::update());
    let err = g
        .update_state_as(&cfg, Doc::update(), other)
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::UnknownNode { ref name, .. } if name == "ghost"),
        "{err}"
    );

    #[node]
    fn left(_: &Doc) -> DocUpdate {
        Doc::update().log(["l"])
    }
    #[node]
    fn right(_: &Doc) -> DocUpdate {
        Doc::update().log(["r"])
    }
    let fan = StateGraph::<Doc>::new()
        .add_node(left)
        .add_node(right)
        .add_edge(START, left)
        .add_edge(START, right)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    fan.invoke(Doc::update(), &cfg).await.unwrap();
    let err = fan.update_state(&cfg, Doc::update()).await.unwrap_err();
    assert!(
        matches!(err, RunError::AmbiguousUpdate { ref candidates } if candidates == &["left", "right"]),
        "{err}"
    );

    let plain = StateGraph::<Doc>::new()
        .add_node(draft)
        .add_edge(START, draft)
        .compile()
        .unwrap();
    assert!(matches!(
        plain.update_state(&cfg, Doc::update()).await,
        Err(RunError::NothingToContinue { .. })
    ));
}

#[tokio::test]
async fn checkpoint_metadata_records_what_ran_on_what_and_where_it_went() {
    let g = graph(Arc::new(InMemorySaver::new()));
    let cfg = RunConfig::new().thread("t");
    g.invoke(Doc::update().approved(true), &cfg).await.unwrap();
    let history = g
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap();
    let after_review = history.iter().find(|s| s.metadata.step == 1).unwrap();
    let steps = &after_review.metadata.steps;
    assert_eq!(steps.len(), 1);
    let step = &steps[0];
    assert_eq!(step.step, 1);
    assert_eq!(
        step.input_versions["log"], 1,
        "review read `log` as `draft` left it"
    );
    let task = &step.tasks[0];
    assert_eq!(task.node, "review");
    assert!(task.wrote);
    assert!(!task.cached);
    assert_eq!(task.routed_to, ["publish"]);
    // Stored under `steps` in the metadata's JSON.
    let json = serde_json::to_value(&after_review.metadata).unwrap();
    assert_eq!(json["steps"][0]["tasks"][0]["node"], "review");
    let input = history.iter().find(|s| s.metadata.step == -1).unwrap();
    assert!(input.metadata.steps.is_empty());
}

#[tokio::test]
async fn update_on_a_paused_thread_edits_the_pending_step() {
    let g = StateGraph::<Doc>::new()
        .add_node(draft)
        .add_node(review)
        .add_node(publish)
        .add_edge(START, draft)
        .add_edge(draft, review)
        .add_conditional_edges(review, route, (publish, END))
        .compile_with(
            CompileOptions::new()
                .checkpointer(InMemorySaver::new())
                .interrupt_before([review]),
        )
        .unwrap();
    let cfg = RunConfig::new().thread("paused");
    let paused = g.invoke(Doc::update(), &cfg).await.unwrap();
    assert_eq!(paused.interrupts.len(), 1);
    assert_eq!(g.get_state(&cfg).await.unwrap().unwrap().next, ["review"]);

    // Approve while paused, as if `draft` had written it: `review` stays next.
    g.update_state_as(&cfg, Doc::update().approved(true), draft)
        .await
        .unwrap();
    let snap = g.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.metadata.source, CheckpointSource::Update);
    assert_eq!(snap.next, ["review"]);
    assert!(snap.values.approved);

    let out = g.invoke(None, &cfg).await.unwrap();
    assert!(
        out.interrupts.is_empty(),
        "the breakpoint already fired for this step"
    );
    assert_eq!(out.values.log, ["draft", "review", "publish"]);
}
