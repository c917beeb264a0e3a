//! Replaying from a checkpoint before an interrupt makes it fire again: the fork
//! re-runs the node, which interrupts with a fresh id (not the original one) instead of
//! reusing the old answers, and the new branch can be resumed with other answers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde_json::json;
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Post {
    /// `name@step` (plus answers), in apply order.
    #[reducer(append)]
    trace: Vec<String>,
    approved: Option<bool>,
    comment: String,
}

static RUNS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

fn count(ctx: &NodeContext, what: &str) {
    let key = format!("{}/{what}", ctx.thread_id().unwrap_or("-"));
    *RUNS.lock().unwrap().entry(key).or_default() += 1;
}

/// Runs of `prep`, `review` (its start), `finish` on `thread`.
fn runs(thread: &str) -> [usize; 3] {
    let runs = RUNS.lock().unwrap();
    ["prep", "review", "finish"].map(|n| runs.get(&format!("{thread}/{n}")).copied().unwrap_or(0))
}

#[node]
fn prep(_s: &Post, ctx: &NodeContext) -> PostUpdate {
    count(ctx, "prep");
    Post::update().trace([format!("prep@{}", ctx.step())])
}

#[node]
fn review(_s: &Post, ctx: &NodeContext) -> Result<PostUpdate, NodeError> {
    count(ctx, "review");
    let ok: bool = ctx.interrupt(json!({ "q": "approve?" }))?;
    let comment: String = ctx.interrupt(json!({ "q": "comment?", "approved": ok }))?;
    Ok(Post::update()
        .trace([format!("review@{}:{ok}:{comment}", ctx.step())])
        .approved(Some(ok))
        .comment(comment))
}

#[node]
fn finish(_s: &Post, ctx: &NodeContext) -> PostUpdate {
    count(ctx, "finish");
    Post::update().trace([format!("finish@{}", ctx.step())])
}

fn graph() -> CompiledGraph<Post> {
    StateGraph::<Post>::new()
        .add_node(prep)
        .add_node(review)
        .add_node(finish)
        .add_edge(START, prep)
        .add_edge(prep, review)
        .add_edge(review, finish)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

/// The only interrupt of a paused run.
fn only(out: &RunOutput<Post>) -> Interrupt {
    assert_eq!(out.interrupts.len(), 1, "{:?}", out.interrupts);
    assert_eq!(out.interrupts[0].node, "review");
    out.interrupts[0].clone()
}

#[tokio::test]
async fn replaying_from_before_an_interrupt_fires_it_again_with_a_fresh_id() {
    let thread = "replay";
    let graph = graph();
    let cfg = RunConfig::new().thread(thread);

    // The original branch: two questions, two answers.
    let first = only(&graph.invoke(Post::update(), &cfg).await.unwrap());
    assert_eq!(first.value, json!({ "q": "approve?" }));
    let pause_point = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(pause_point.next, ["review"]);
    let pause_point = pause_point.config.checkpoint_id.unwrap();
    let input_point = graph
        .get_state(&cfg.clone().checkpoint(pause_point.as_str()))
        .await
        .unwrap()
        .unwrap()
        .parent_config
        .unwrap()
        .checkpoint_id
        .unwrap();
    let second = only(&graph.invoke(Command::resume(true), &cfg).await.unwrap());
    assert_eq!(second.value, json!({ "q": "comment?", "approved": true }));
    let done = graph.invoke(Command::resume("lgtm"), &cfg).await.unwrap();
    assert!(done.interrupts.is_empty());
    assert_eq!(
        done.values.trace,
        ["prep@0", "review@1:true:lgtm", "finish@2"]
    );
    assert_eq!(runs(thread), [1, 3, 1]);

    // Fork from the checkpoint the interrupt was raised on: `review` runs again and
    // asks its first question again, under a new id; the old answers are not reused.
    let forked = graph
        .invoke(None, &cfg.clone().checkpoint(pause_point.as_str()))
        .await
        .unwrap();
    let again = only(&forked);
    assert_eq!(again.value, json!({ "q": "approve?" }));
    assert_ne!(again.id, first.id);
    assert_ne!(again.id, second.id);
    assert_eq!(forked.values.trace, ["prep@0"]);
    assert_eq!(forked.values.approved, None);
    assert_eq!(runs(thread), [1, 4, 1]);
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.interrupts, vec![again.clone()]);
    assert_ne!(
        snap.config.checkpoint_id.as_deref(),
        Some(pause_point.as_str())
    );

    // The new branch takes other answers.
    let again2 = only(&graph.invoke(Command::resume(false), &cfg).await.unwrap());
    assert_eq!(again2.value, json!({ "q": "comment?", "approved": false }));
    assert!(![first.id.as_str(), second.id.as_str()].contains(&again2.id.as_str()));
    let redone = graph.invoke(Command::resume("nope"), &cfg).await.unwrap();
    assert!(redone.interrupts.is_empty());
    assert_eq!(redone.values.approved, Some(false));
    assert_eq!(redone.values.comment, "nope");
    assert_eq!(
        redone.values.trace,
        ["prep@0", "review@2:false:nope", "finish@3"],
        "the fork is one step later than the checkpoint it branched from"
    );
    assert_eq!(runs(thread), [1, 6, 2]);

    // Replaying from the input re-runs `prep`, and the interrupt fires yet again.
    let from_input = graph
        .invoke(None, &cfg.clone().checkpoint(input_point.as_str()))
        .await
        .unwrap();
    let third = only(&from_input);
    assert_eq!(third.value, json!({ "q": "approve?" }));
    let ids: BTreeSet<&str> = [&first, &second, &again, &again2, &third]
        .iter()
        .map(|i| i.id.as_str())
        .collect();
    assert_eq!(ids.len(), 5, "every interrupt got its own id");
    assert_eq!(runs(thread), [2, 7, 2]);
}

#[tokio::test]
async fn forking_a_paused_thread_ignores_the_answers_given_on_the_old_branch() {
    let thread = "replay-paused";
    let graph = graph();
    let cfg = RunConfig::new().thread(thread);

    let first = only(&graph.invoke(Post::update(), &cfg).await.unwrap());
    let pause_point = graph
        .get_state(&cfg)
        .await
        .unwrap()
        .unwrap()
        .config
        .checkpoint_id
        .unwrap();
    // Answer the first question; the old branch now waits on the second.
    let second = only(&graph.invoke(Command::resume(true), &cfg).await.unwrap());
    assert_eq!(second.value["q"], "comment?");

    // A fork from the same checkpoint asks the first question again.
    let forked = graph
        .invoke(None, &cfg.clone().checkpoint(pause_point.as_str()))
        .await
        .unwrap();
    let again = only(&forked);
    assert_eq!(again.value, json!({ "q": "approve?" }));
    assert_ne!(again.id, first.id);
    assert_eq!(runs(thread), [1, 3, 0]);

    let second_again = only(&graph.invoke(Command::resume(false), &cfg).await.unwrap());
    assert_eq!(
        second_again.value,
        json!({ "q": "comment?", "approved": false })
    );
    let done = graph.invoke(Command::resume("fork"), &cfg).await.unwrap();
    assert!(done.interrupts.is_empty());
    assert_eq!(done.values.approved, Some(false));
    assert_eq!(done.values.comment, "fork");
    assert_eq!(runs(thread), [1, 5, 1]);
}
