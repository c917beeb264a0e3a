//! Pause/resume cycles behave the same under every durability mode (`Sync`, `Async`,
//! `Exit`): the same interrupts and ids (also in `get_state`), the same values while
//! paused, finished siblings and answered tasks never re-run, the same final state.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::json;
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Job {
    /// `name@step` (plus answers), in apply order.
    #[reducer(append)]
    trace: Vec<String>,
    #[reducer(add)]
    total: u64,
}

static RUNS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

fn count(ctx: &NodeContext, what: &str) {
    let key = format!("{}/{what}", ctx.thread_id().unwrap_or("-"));
    *RUNS.lock().unwrap().entry(key).or_default() += 1;
}

fn runs<const N: usize>(thread: &str, what: [&str; N]) -> [usize; N] {
    let runs = RUNS.lock().unwrap();
    what.map(|n| runs.get(&format!("{thread}/{n}")).copied().unwrap_or(0))
}

fn visit(ctx: &NodeContext, amount: u64) -> JobUpdate {
    count(ctx, ctx.node());
    Job::update()
        .trace([format!("{}@{}", ctx.node(), ctx.step())])
        .total(amount)
}

fn tag(durability: Durability) -> String {
    format!("{durability:?}").to_lowercase()
}

// --- a node asking twice next to a finished sibling ---------------------------------

#[node]
fn prep(_s: &Job, ctx: &NodeContext) -> JobUpdate {
    visit(ctx, 1)
}

#[node]
async fn notes(_s: &Job, ctx: &NodeContext) -> JobUpdate {
    tokio::task::yield_now().await;
    visit(ctx, 10)
}

#[node]
fn review(_s: &Job, ctx: &NodeContext) -> Result<JobUpdate, NodeError> {
    count(ctx, "review");
    let ok: bool = ctx.interrupt(json!({ "q": 1 }))?;
    let comment: String = ctx.interrupt(json!({ "q": 2 }))?;
    Ok(Job::update()
        .trace([format!("review@{}:{ok}:{comment}", ctx.step())])
        .total(100))
}

#[node]
fn publish(_s: &Job, ctx: &NodeContext) -> JobUpdate {
    visit(ctx, 1000)
}

async fn two_questions_next_to_a_sibling(durability: Durability) {
    let thread = format!("two-q-{}", tag(durability));
    let thread = thread.as_str();
    let graph = StateGraph::<Job>::new()
        .add_node(prep)
        .add_node(notes)
        .add_node(review)
        .add_node(publish)
        .add_edge(START, prep)
        .add_edge(prep, notes)
        .add_edge(prep, review)
        .add_edge([notes, review], publish)
        .compile_with(CompileOptions::new().shared_checkpointer(Arc::new(InMemorySaver::new())))
        .unwrap();
    let cfg = RunConfig::new().thread(thread).durability(durability);
    let counts = || runs(thread, ["prep", "notes", "review", "publish"]);

    let first = graph.invoke(Job::update(), &cfg).await.unwrap();
    assert_eq!(first.interrupts.len(), 1, "{:?}", first.interrupts);
    assert_eq!(first.interrupts[0].value, json!({ "q": 1 }));
    assert_eq!(first.values.trace, ["prep@0", "notes@1"]);
    assert_eq!(first.values.total, 11);
    assert_eq!(counts(), [1, 1, 1, 0]);
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.interrupts, first.interrupts);
    assert_eq!(snap.next, ["review"]);
    assert_eq!(snap.values, first.values);

    let second = graph.invoke(Command::resume(true), &cfg).await.unwrap();
    assert_eq!(second.interrupts.len(), 1, "{:?}", second.interrupts);
    assert_eq!(second.interrupts[0].value, json!({ "q": 2 }));
    assert_ne!(second.interrupts[0].id, first.interrupts[0].id);
    assert_eq!(second.values.trace, ["prep@0", "notes@1"]);
    assert_eq!(counts(), [1, 1, 2, 0]);
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.interrupts, second.interrupts);
    assert_eq!(snap.next, ["review"]);
    assert_eq!(snap.values, second.values);

    let done = graph.invoke(Command::resume("ok"), &cfg).await.unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(
        done.values.trace,
        ["prep@0", "notes@1", "review@1:true:ok", "publish@2"]
    );
    assert_eq!(done.values.total, 1111);
    assert_eq!(counts(), [1, 1, 3, 1], "a node that ran before ran again");
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.values, done.values);
    assert!(snap.next.is_empty() && snap.interrupts.is_empty());
}

#[tokio::test]
async fn two_questions_next_to_a_sibling_sync() {
    two_questions_next_to_a_sibling(Durability::Sync).await;
}

#[tokio::test]
async fn two_questions_next_to_a_sibling_async() {
    two_questions_next_to_a_sibling(Durability::Async).await;
}

#[tokio::test]
async fn two_questions_next_to_a_sibling_exit() {
    two_questions_next_to_a_sibling(Durability::Exit).await;
}

// --- two parallel interrupts, answered one at a time --------------------------------

#[node]
fn left(_s: &Job, ctx: &NodeContext) -> Result<JobUpdate, NodeError> {
    count(ctx, "left");
    let answer: String = ctx.interrupt("left?")?;
    Ok(Job::update()
        .trace([format!("left@{}:{answer}", ctx.step())])
        .total(1))
}

#[node]
fn right(_s: &Job, ctx: &NodeContext) -> Result<JobUpdate, NodeError> {
    count(ctx, "right");
    let answer: String = ctx.interrupt("right?")?;
    Ok(Job::update()
        .trace([format!("right@{}:{answer}", ctx.step())])
        .total(10))
}

#[node]
fn merge(_s: &Job, ctx: &NodeContext) -> JobUpdate {
    visit(ctx, 100)
}

async fn parallel_answered_one_at_a_time(durability: Durability) {
    let thread = format!("pair-{}", tag(durability));
    let thread = thread.as_str();
    let graph = StateGraph::<Job>::new()
        .add_node(left)
        .add_node(right)
        .add_node(merge)
        .add_edge(START, left)
        .add_edge(START, right)
        .add_edge([left, right], merge)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunConfig::new().thread(thread).durability(durability);
    let counts = || runs(thread, ["left", "right", "merge"]);

    let paused = graph.invoke(Job::update(), &cfg).await.unwrap();
    assert_eq!(paused.interrupts.len(), 2, "{:?}", paused.interrupts);
    let (l, r) = (paused.interrupts[0].clone(), paused.interrupts[1].clone());
    assert_eq!((l.node.as_str(), r.node.as_str()), ("left", "right"));
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.interrupts, paused.interrupts);

    let half = graph
        .invoke(Command::resume_map([(l.id.as_str(), "L")]), &cfg)
        .await
        .unwrap();
    assert_eq!(half.interrupts, vec![r.clone()]);
    assert_eq!(half.values.trace, ["left@0:L"]);
    assert_eq!(counts(), [2, 1, 0]);
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(
        snap.interrupts,
        vec![r.clone()],
        "right's interrupt is lost"
    );
    assert_eq!(snap.next, ["right"]);
    assert_eq!(snap.values.trace, ["left@0:L"]);

    let done = graph
        .invoke(Command::resume_map([(r.id.as_str(), "R")]), &cfg)
        .await
        .unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(done.values.trace, ["left@0:L", "right@0:R", "merge@1"]);
    assert_eq!(done.values.total, 111);
    assert_eq!(counts(), [2, 2, 1]);
}

#[tokio::test]
async fn parallel_answered_one_at_a_time_sync() {
    parallel_answered_one_at_a_time(Durability::Sync).await;
}

#[tokio::test]
async fn parallel_answered_one_at_a_time_async() {
    parallel_answered_one_at_a_time(Durability::Async).await;
}

#[tokio::test]
async fn parallel_answered_one_at_a_time_exit() {
    parallel_answered_one_at_a_time(Durability::Exit).await;
}
