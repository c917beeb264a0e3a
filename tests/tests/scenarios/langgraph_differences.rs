//! Behaviours compared side by side with LangGraph 1.2: where we match it, and
//! where we differ on purpose (the README's concept map lists both).

use futures::StreamExt;
use serde_json::json;
use stategraph::checkpoint::ListOptions;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Post {
    #[reducer(append)]
    log: Vec<String>,
    approved: Option<bool>,
}

#[node]
fn write(_: &Post) -> PostUpdate {
    Post::update().log(["write"])
}

#[node]
fn review(_: &Post, ctx: &NodeContext) -> Result<PostUpdate, NodeError> {
    let ok: bool = ctx.interrupt(json!("publish?"))?;
    Ok(Post::update().approved(Some(ok)).log(["review"]))
}

fn graph() -> CompiledGraph<Post> {
    StateGraph::<Post>::new()
        .add_node(write)
        .add_node(review)
        .add_edge(START, write)
        .add_edge(write, review)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

/// LangGraph runs `START` as a superstep of its own, so its history is one
/// checkpoint longer and its loop steps are one higher: our step `n` is LangGraph's
/// step `n + 1`; the input checkpoint is step −1 in both.
#[tokio::test]
async fn step_numbers_are_one_below_langgraphs_after_the_input() {
    let g = graph();
    let thread = RunConfig::new().thread("steps");
    g.invoke(Post::update(), &thread).await.unwrap();
    g.invoke(Command::resume(true), &thread).await.unwrap();
    let history = g
        .get_state_history(&thread, &ListOptions::new())
        .await
        .unwrap();
    let steps: Vec<i64> = history.iter().rev().map(|s| s.metadata.step).collect();
    // LangGraph: [-1, 0 (START), 1 (write), 2 (review)].
    assert_eq!(steps, [-1, 0, 1]);
}

/// As in LangGraph, resuming a thread that has finished does nothing (it used to be
/// `NothingToContinue`), so a client may resume idempotently.
#[tokio::test]
async fn resuming_a_finished_thread_is_a_no_op() {
    let g = graph();
    let thread = RunConfig::new().thread("done");
    g.invoke(Post::update(), &thread).await.unwrap();
    let done = g.invoke(Command::resume(true), &thread).await.unwrap();
    for _ in 0..2 {
        let again = g.invoke(Command::resume(false), &thread).await.unwrap();
        assert_eq!(again.values, done.values);
        assert_eq!(again.steps, 0);
        assert!(again.interrupts.is_empty());
        assert_eq!(again.checkpoint, done.checkpoint);
    }
    // A thread that never started still has nothing to continue.
    let err = g
        .invoke(Command::resume(true), &RunConfig::new().thread("never"))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::NothingToContinue { .. }), "{err:?}");
}

/// As in LangGraph, a stream that continues a thread starts with the values it
/// continues from.
#[tokio::test]
async fn a_resume_stream_starts_with_the_current_values() {
    let g = graph();
    let thread = RunConfig::new().thread("stream");
    g.invoke(Post::update(), &thread).await.unwrap();
    let events: Vec<_> = g
        .stream(Command::resume(true), &thread, StreamMode::VALUES)
        .collect()
        .await;
    let values: Vec<(i64, Vec<String>)> = events
        .into_iter()
        .map(|e| match e.unwrap() {
            StreamEvent::Values { step, values } => (step, values.log),
            other => panic!("only values were asked for: {other:?}"),
        })
        .collect();
    assert_eq!(
        values,
        [
            (0, vec!["write".to_string()]),
            (1, vec!["write".to_string(), "review".to_string()]),
        ]
    );
}

/// As in LangGraph, an update on a thread with no checkpoint is step 0: one past
/// the step −1 an empty thread counts as (it used to be −1 here).
#[tokio::test]
async fn an_update_on_a_fresh_thread_is_step_0() {
    let g = graph();
    let thread = RunConfig::new().thread("fresh");
    g.update_state(&thread, Post::update().log(["seed"]))
        .await
        .unwrap();
    let state = g.get_state(&thread).await.unwrap().unwrap();
    assert_eq!(state.metadata.step, 0);
    assert_eq!(state.next, ["write"]);
    let paused = g.invoke(None, &thread).await.unwrap();
    assert_eq!(paused.values.log, ["seed", "write"]);
    let history = g
        .get_state_history(&thread, &ListOptions::new())
        .await
        .unwrap();
    let steps: Vec<i64> = history.iter().rev().map(|s| s.metadata.step).collect();
    assert_eq!(steps, [0, 1]);
}

/// As LangGraph's `as_node="__start__"`: the update is the run's input, so what
/// follows `START` runs next.
#[tokio::test]
async fn update_state_as_start_is_new_input() {
    let g = graph();
    let thread = RunConfig::new().thread("as-start");
    g.invoke(Post::update(), &thread).await.unwrap();
    g.invoke(Command::resume(true), &thread).await.unwrap();
    g.update_state_as(&thread, Post::update().log(["again"]), START)
        .await
        .unwrap();
    let state = g.get_state(&thread).await.unwrap().unwrap();
    assert_eq!(state.next, ["write"]);
    assert_eq!(state.values.log, ["write", "review", "again"]);
}

/// As LangGraph's `as_node="__end__"`: the update is recorded and nothing runs
/// next, so a thread paused at an interrupt can be closed with a final edit.
#[tokio::test]
async fn update_state_as_end_finishes_the_thread() {
    let g = graph();
    let thread = RunConfig::new().thread("as-end");
    let paused = g.invoke(Post::update(), &thread).await.unwrap();
    assert_eq!(paused.interrupts.len(), 1);
    g.update_state_as(&thread, Post::update().approved(Some(false)), END)
        .await
        .unwrap();
    let state = g.get_state(&thread).await.unwrap().unwrap();
    assert!(state.next.is_empty() && state.tasks.is_empty() && state.interrupts.is_empty());
    assert_eq!(state.values.approved, Some(false));
    // Nothing is left to run.
    let out = g.invoke(None, &thread).await.unwrap();
    assert_eq!(out.steps, 0);
    assert_eq!(out.values.log, ["write"]);
}

#[derive(GraphState, Clone, Debug, Default)]
struct Chat {
    #[reducer(messages)]
    messages: Vec<Message>,
}

/// LangGraph's `messages` mode also sends every message a node returns; ours sends
/// what nodes emit while they run (`ctx.emit_message`), which the agent toolkit's
/// nodes do for every message they write.
#[tokio::test]
async fn messages_mode_carries_what_nodes_emit_not_every_message_they_write() {
    let mut g = StateGraph::<Chat>::new();
    let quiet = g.add_node_fn("quiet", |_: &Chat| {
        Chat::update().messages([Message::assistant("written only")])
    });
    let loud = g.add_node_async("loud", |_: Chat, ctx: NodeContext| async move {
        let m = Message::assistant("written and emitted").with_id("m-loud");
        ctx.emit_message(stategraph::MessageChunk::whole(&m, ""))
            .await;
        Chat::update().messages([m])
    });
    g.add_edge(START, &quiet).add_edge(&quiet, &loud);
    let events: Vec<_> = g
        .compile()
        .unwrap()
        .stream(Chat::update(), &RunConfig::new(), StreamMode::MESSAGES)
        .map(Result::unwrap)
        .collect()
        .await;
    let sent: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Message { node, chunk, .. } => Some((node.clone(), chunk.content.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        sent,
        [("loud".to_string(), "written and emitted".to_string())]
    );
}
