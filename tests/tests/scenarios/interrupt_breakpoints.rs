//! Static breakpoints: `interrupt_before` pauses before a node runs and `interrupt_after`
//! after it ran (its writes kept), both reporting a marker with a `null` value;
//! `invoke(None)` or a resume continues. Breakpoints come from the compile options or
//! per run; a breakpoint on a node the graph does not have is a build problem.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Value, json};
use stategraph::BuildProblem;
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Line {
    /// `name@step`, in apply order.
    #[reducer(append)]
    trace: Vec<String>,
}

static RUNS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

fn visit(ctx: &NodeContext) -> LineUpdate {
    let key = format!("{}/{}", ctx.thread_id().unwrap_or("-"), ctx.node());
    *RUNS.lock().unwrap().entry(key).or_default() += 1;
    Line::update().trace([format!("{}@{}", ctx.node(), ctx.step())])
}

/// Runs of `a`, `b`, `c` on `thread`.
fn runs(thread: &str) -> [usize; 3] {
    let runs = RUNS.lock().unwrap();
    ["a", "b", "c"].map(|n| runs.get(&format!("{thread}/{n}")).copied().unwrap_or(0))
}

#[node]
fn a(_s: &Line, ctx: &NodeContext) -> LineUpdate {
    visit(ctx)
}

#[node]
async fn b(_s: &Line, ctx: &NodeContext) -> LineUpdate {
    tokio::task::yield_now().await;
    visit(ctx)
}

#[node]
fn c(_s: &Line, ctx: &NodeContext) -> LineUpdate {
    visit(ctx)
}

/// `START → a → b → c`.
fn chain(options: CompileOptions) -> Result<CompiledGraph<Line>, stategraph::BuildError> {
    StateGraph::<Line>::new()
        .add_node(a)
        .add_node(b)
        .add_node(c)
        .add_edge(START, a)
        .add_edge(a, b)
        .add_edge(b, c)
        .compile_with(options)
}

fn saver() -> CompileOptions {
    CompileOptions::new().checkpointer(InMemorySaver::new())
}

/// The run paused on exactly one static marker for `node`.
fn assert_marker(out: &RunOutput<Line>, node: &str) -> Interrupt {
    assert_eq!(out.interrupts.len(), 1, "{:?}", out.interrupts);
    let marker = out.interrupts[0].clone();
    assert_eq!(marker.node, node);
    assert_eq!(marker.value, Value::Null);
    assert!(!marker.id.is_empty());
    marker
}

#[tokio::test]
async fn interrupt_before_pauses_before_the_node_and_continue_runs_it() {
    let thread = "before";
    let graph = chain(saver().interrupt_before([b])).unwrap();
    let cfg = RunConfig::new().thread(thread);

    let paused = graph.invoke(Line::update(), &cfg).await.unwrap();
    assert_marker(&paused, "b");
    assert_eq!(paused.values.trace, ["a@0"]);
    assert_eq!(runs(thread), [1, 0, 0]);
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.next, ["b"]);
    assert_eq!(snap.values, paused.values);

    let done = graph.invoke(None, &cfg).await.unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(done.values.trace, ["a@0", "b@1", "c@2"]);
    assert_eq!(runs(thread), [1, 1, 1]);
    assert!(
        graph
            .get_state(&cfg)
            .await
            .unwrap()
            .unwrap()
            .next
            .is_empty()
    );

    // New input on the finished thread stops at the breakpoint again.
    let again = graph.invoke(Line::update(), &cfg).await.unwrap();
    assert_marker(&again, "b");
    // (The new input takes step 3 of the thread; `a` runs in step 4.)
    assert_eq!(again.values.trace, ["a@0", "b@1", "c@2", "a@4"]);
    assert_eq!(runs(thread), [2, 1, 1]);
}

#[tokio::test]
async fn interrupt_after_pauses_after_the_node_with_its_writes_and_continue_proceeds() {
    let thread = "after";
    let graph = chain(saver().interrupt_after([b])).unwrap();
    let cfg = RunConfig::new().thread(thread);

    let paused = graph.invoke(Line::update(), &cfg).await.unwrap();
    assert_marker(&paused, "b");
    assert_eq!(paused.values.trace, ["a@0", "b@1"]);
    assert_eq!(runs(thread), [1, 1, 0]);
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.next, ["c"]);
    assert_eq!(snap.values.trace, ["a@0", "b@1"]);

    let done = graph.invoke(None, &cfg).await.unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(done.values.trace, ["a@0", "b@1", "c@2"]);
    assert_eq!(runs(thread), [1, 1, 1], "b is not run again");
}

#[tokio::test]
async fn per_run_breakpoints_pause_like_compiled_ones() {
    let thread = "per-run";
    let graph = chain(saver()).unwrap();
    let cfg = RunConfig::new()
        .thread(thread)
        .interrupt_after([a])
        .interrupt_before([c]);

    let first = graph.invoke(Line::update(), &cfg).await.unwrap();
    let after_a = assert_marker(&first, "a");
    assert_eq!(first.values.trace, ["a@0"]);
    assert_eq!(runs(thread), [1, 0, 0]);

    // Continuing with the same config: runs b, then stops before c.
    let second = graph.invoke(None, &cfg).await.unwrap();
    let before_c = assert_marker(&second, "c");
    assert_ne!(after_a.id, before_c.id);
    assert_eq!(second.values.trace, ["a@0", "b@1"]);
    assert_eq!(runs(thread), [1, 1, 0]);
    assert_eq!(graph.get_state(&cfg).await.unwrap().unwrap().next, ["c"]);

    // The paused step does not stop again at the breakpoint it paused on.
    let done = graph.invoke(None, &cfg).await.unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(done.values.trace, ["a@0", "b@1", "c@2"]);
    assert_eq!(runs(thread), [1, 1, 1]);

    // A run without them does not stop at all.
    let plain = graph
        .invoke(Line::update(), &RunConfig::new().thread("per-run-plain"))
        .await
        .unwrap();
    assert!(plain.interrupts.is_empty());
    assert_eq!(plain.values.trace, ["a@0", "b@1", "c@2"]);
}

#[tokio::test]
async fn a_resume_command_continues_from_a_static_breakpoint() {
    // SEMANTICS: "Static interrupt_before / interrupt_after pause without an interrupt
    // value; invoke(None) or a resume continues."
    let thread = "before-resume";
    let graph = chain(saver().interrupt_before([b])).unwrap();
    let cfg = RunConfig::new().thread(thread);

    let paused = graph.invoke(Line::update(), &cfg).await.unwrap();
    assert_marker(&paused, "b");
    let done = graph.invoke(Command::resume(json!("go")), &cfg).await;
    let done = done.expect("a resume continues from a static breakpoint");
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(done.values.trace, ["a@0", "b@1", "c@2"]);
    assert_eq!(runs(thread), [1, 1, 1]);
}

#[node]
fn review(_s: &Line, ctx: &NodeContext) -> Result<LineUpdate, NodeError> {
    let verdict: String = ctx.interrupt("verdict?")?;
    Ok(visit(ctx).trace([verdict]))
}

#[tokio::test]
async fn a_breakpoint_before_a_node_that_interrupts_pauses_twice() {
    let thread = "before-dynamic";
    let graph = StateGraph::<Line>::new()
        .add_node(a)
        .add_node(review)
        .add_edge(START, a)
        .add_edge(a, review)
        .compile_with(saver().interrupt_before([review]))
        .unwrap();
    let cfg = RunConfig::new().thread(thread);

    let first = graph.invoke(Line::update(), &cfg).await.unwrap();
    assert_marker(&first, "review");
    let second = graph.invoke(None, &cfg).await.unwrap();
    assert_eq!(second.interrupts.len(), 1, "{:?}", second.interrupts);
    assert_eq!(second.interrupts[0].node, "review");
    assert_eq!(second.interrupts[0].value, json!("verdict?"));
    assert_ne!(second.interrupts[0].id, first.interrupts[0].id);
    let done = graph.invoke(Command::resume("ok"), &cfg).await.unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(done.values.trace, ["a@0", "review@1", "ok"]);
}

#[test]
fn a_breakpoint_on_an_unknown_node_is_a_build_problem() {
    // A handle of a node that lives in another graph.
    let mut other = StateGraph::<Line>::new();
    let ghost = other.add_node_fn("ghost", |_: &Line| Line::update());
    let phantom = other.add_node_fn("phantom", |_: &Line| Line::update());

    let err = chain(
        saver()
            .interrupt_before([&ghost])
            .interrupt_after([&phantom]),
    )
    .unwrap_err();
    assert_eq!(
        err.problems,
        [
            BuildProblem::UnknownInterruptNode {
                when: "before",
                name: "ghost".into(),
            },
            BuildProblem::UnknownInterruptNode {
                when: "after",
                name: "phantom".into(),
            },
        ]
    );
    assert!(err.to_string().contains("`ghost`"), "{err}");
    // Known nodes are fine.
    assert!(chain(saver().interrupt_before([b]).interrupt_after([c])).is_ok());
}

#[tokio::test]
async fn a_breakpoint_without_a_checkpointer_is_an_error_naming_the_node() {
    let graph = chain(CompileOptions::new().interrupt_before([b])).unwrap();
    let err = graph
        .invoke(Line::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::InterruptWithoutCheckpointer { node } if node == "b"),
        "{err:?}"
    );
}
