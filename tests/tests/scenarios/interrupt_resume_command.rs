//! Resuming with a command: `Command::resume(v).update(..)` writes the update before the
//! interrupted node re-runs (the node sees it, and it is kept if the node pauses
//! again); `.and_goto(node)` adds a task to the paused step, which runs next to the
//! resumed node without re-running the step's finished tasks.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::json;
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Memo {
    /// `name@step` (plus what a node saw), in apply order.
    #[reducer(append)]
    trace: Vec<String>,
    note: String,
}

static RUNS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

fn count(ctx: &NodeContext, what: &str) {
    let key = format!("{}/{what}", ctx.thread_id().unwrap_or("-"));
    *RUNS.lock().unwrap().entry(key).or_default() += 1;
}

fn runs(thread: &str, what: &str) -> usize {
    RUNS.lock()
        .unwrap()
        .get(&format!("{thread}/{what}"))
        .copied()
        .unwrap_or(0)
}

fn visit(ctx: &NodeContext) -> MemoUpdate {
    count(ctx, ctx.node());
    Memo::update().trace([format!("{}@{}", ctx.node(), ctx.step())])
}

#[node]
fn draft(_s: &Memo, ctx: &NodeContext) -> MemoUpdate {
    visit(ctx).note("first")
}

/// Finishes in the step `review` pauses in.
#[node]
fn notes(_s: &Memo, ctx: &NodeContext) -> MemoUpdate {
    visit(ctx)
}

#[node]
fn review(s: &Memo, ctx: &NodeContext) -> Result<MemoUpdate, NodeError> {
    count(ctx, "review");
    let ok: bool = ctx.interrupt(json!({ "note": s.note }))?;
    Ok(Memo::update().trace([format!("review@{}:{}:{ok}", ctx.step(), s.note)]))
}

/// Asks twice, showing the note it sees each time.
#[node]
fn review_twice(s: &Memo, ctx: &NodeContext) -> Result<MemoUpdate, NodeError> {
    count(ctx, "review_twice");
    let first: String = ctx.interrupt(json!({ "q": 1, "note": s.note }))?;
    let second: String = ctx.interrupt(json!({ "q": 2, "note": s.note }))?;
    Ok(Memo::update().trace([format!(
        "review_twice@{}:{}:{first}+{second}",
        ctx.step(),
        s.note
    )]))
}

/// Only reached by a `goto` given with the resume; sorts before `notes` and `review`.
#[node]
fn audit(_s: &Memo, ctx: &NodeContext) -> MemoUpdate {
    visit(ctx)
}

/// Only reached by a `goto` given with the resume; sorts after `review`.
#[node]
fn tally(_s: &Memo, ctx: &NodeContext) -> MemoUpdate {
    visit(ctx)
}

/// `START → draft → {notes, review}`, plus `audit` and `tally` reachable by goto only.
fn graph() -> CompiledGraph<Memo> {
    StateGraph::<Memo>::new()
        .add_node(draft)
        .add_node(notes)
        .add_node(review)
        .add_node(audit)
        .add_node(tally)
        .add_edge(START, draft)
        .add_edge(draft, notes)
        .add_edge(draft, review)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

/// Runs the graph on `thread` up to `review`'s interrupt.
async fn paused(graph: &CompiledGraph<Memo>, cfg: &RunConfig) {
    let out = graph.invoke(Memo::update(), cfg).await.unwrap();
    assert_eq!(out.interrupts.len(), 1, "{:?}", out.interrupts);
    assert_eq!(out.interrupts[0].node, "review");
    assert_eq!(out.interrupts[0].value, json!({ "note": "first" }));
    assert_eq!(out.values.trace, ["draft@0", "notes@1"]);
}

#[tokio::test]
async fn a_resume_with_an_update_writes_it_before_the_node_re_runs() {
    let thread = "resume-update";
    let graph = graph();
    let cfg = RunConfig::new().thread(thread);
    paused(&graph, &cfg).await;

    let done = graph
        .invoke(
            Command::resume(true).update(Memo::update().note("edited")),
            &cfg,
        )
        .await
        .unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(
        done.values.trace,
        ["draft@0", "notes@1", "review@1:edited:true"]
    );
    assert_eq!(done.values.note, "edited");
    assert_eq!(
        [
            runs(thread, "draft"),
            runs(thread, "notes"),
            runs(thread, "review")
        ],
        [1, 1, 2]
    );
    assert_eq!(
        graph.get_state(&cfg).await.unwrap().unwrap().values,
        done.values
    );
}

#[tokio::test]
async fn a_resume_update_is_kept_when_the_node_pauses_again() {
    let thread = "resume-update-twice";
    let graph = StateGraph::<Memo>::new()
        .add_node(draft)
        .add_node(review_twice)
        .add_edge(START, draft)
        .add_edge(draft, review_twice)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunConfig::new().thread(thread);

    let first = graph.invoke(Memo::update(), &cfg).await.unwrap();
    assert_eq!(
        first.interrupts[0].value,
        json!({ "q": 1, "note": "first" })
    );

    let second = graph
        .invoke(
            Command::resume("yes").update(Memo::update().note("edited")),
            &cfg,
        )
        .await
        .unwrap();
    assert_eq!(second.interrupts.len(), 1, "{:?}", second.interrupts);
    // The node re-ran after the update was written.
    assert_eq!(
        second.interrupts[0].value,
        json!({ "q": 2, "note": "edited" })
    );
    assert_eq!(second.values.note, "edited");
    // The paused thread keeps the update.
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.values.note, "edited", "the resume's update was lost");
    assert_eq!(snap.interrupts, second.interrupts);

    let done = graph.invoke(Command::resume("sure"), &cfg).await.unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(done.values.note, "edited");
    assert_eq!(
        done.values.trace,
        ["draft@0", "review_twice@1:edited:yes+sure"]
    );
    assert_eq!(runs(thread, "review_twice"), 3);
}

#[tokio::test]
async fn a_goto_with_the_resume_is_kept_when_the_node_pauses_again() {
    let thread = "resume-goto-twice";
    let graph = StateGraph::<Memo>::new()
        .add_node(draft)
        .add_node(review_twice)
        .add_node(tally)
        .add_edge(START, draft)
        .add_edge(draft, review_twice)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunConfig::new().thread(thread);
    graph.invoke(Memo::update(), &cfg).await.unwrap();

    // `tally` joins the paused step and finishes; `review_twice` pauses again.
    let second = graph
        .invoke(Command::resume("yes").and_goto(tally), &cfg)
        .await
        .unwrap();
    assert_eq!(second.interrupts.len(), 1, "{:?}", second.interrupts);
    assert_eq!(second.values.trace, ["draft@0", "tally@1"]);
    assert_eq!(runs(thread, "tally"), 1);
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(
        snap.values.trace,
        ["draft@0", "tally@1"],
        "the added task's writes were lost"
    );

    let done = graph.invoke(Command::resume("sure"), &cfg).await.unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(
        done.values.trace,
        ["draft@0", "review_twice@1:first:yes+sure", "tally@1"]
    );
    assert_eq!(runs(thread, "tally"), 1);
}

#[tokio::test]
async fn a_goto_with_the_resume_adds_a_task_to_the_paused_step() {
    let thread = "resume-goto-after";
    let graph = graph();
    let cfg = RunConfig::new().thread(thread);
    paused(&graph, &cfg).await;

    let done = graph
        .invoke(Command::resume(true).and_goto(tally), &cfg)
        .await
        .unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    // `tally` runs in the paused step (1), next to the resumed `review`.
    assert_eq!(
        done.values.trace,
        ["draft@0", "notes@1", "review@1:first:true", "tally@1"]
    );
    assert_eq!(
        [
            runs(thread, "draft"),
            runs(thread, "notes"),
            runs(thread, "review"),
            runs(thread, "tally")
        ],
        [1, 1, 2, 1]
    );
}

#[tokio::test]
async fn a_goto_to_a_node_sorting_first_does_not_disturb_the_paused_tasks() {
    // Same as above, but the added task sorts before the paused step's tasks: the
    // paused `review` must still get its answer, and the finished `notes` must not
    // run again.
    let thread = "resume-goto-before";
    let graph = graph();
    let cfg = RunConfig::new().thread(thread);
    paused(&graph, &cfg).await;

    let done = graph
        .invoke(Command::resume(true).and_goto(audit), &cfg)
        .await
        .unwrap();
    assert!(
        done.interrupts.is_empty(),
        "the answered interrupt fired again: {:?}",
        done.interrupts
    );
    assert_eq!(
        done.values.trace,
        ["draft@0", "audit@1", "notes@1", "review@1:first:true"]
    );
    assert_eq!(
        [
            runs(thread, "draft"),
            runs(thread, "notes"),
            runs(thread, "review"),
            runs(thread, "audit")
        ],
        [1, 1, 2, 1]
    );
}
