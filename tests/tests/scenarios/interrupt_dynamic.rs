//! Dynamic interrupts (`NodeContext::interrupt`): a paused run reports the node's value
//! under a stable id with finished siblings' writes applied; resuming re-runs only the
//! interrupted node from its start, its n-th `interrupt` call returning the n-th answer;
//! a node interrupting in a loop gets a fresh id every round; without a checkpointer
//! an interrupt is a clear error; a retry policy never retries an interrupt.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Doc {
    /// `name@step` (plus what a node learned), in apply order.
    #[reducer(append)]
    trace: Vec<String>,
    draft: String,
    approved: Option<bool>,
    /// Answers collected by `interview` / `ask`, in the order they were given.
    #[reducer(append)]
    answers: Vec<String>,
}

/// Code executions per `thread/what` (tests run in parallel, each on its own threads).
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

fn visit(ctx: &NodeContext) -> DocUpdate {
    count(ctx, ctx.node());
    Doc::update().trace([format!("{}@{}", ctx.node(), ctx.step())])
}

// --- 1. one interrupt -------------------------------------------------------------

#[node]
fn write(_s: &Doc, ctx: &NodeContext) -> DocUpdate {
    visit(ctx).draft("v1")
}

/// Sorts before `review`; finishes in the step `review` pauses.
#[node]
fn notes(_s: &Doc, ctx: &NodeContext) -> DocUpdate {
    visit(ctx)
}

#[node]
fn review(s: &Doc, ctx: &NodeContext) -> Result<DocUpdate, NodeError> {
    count(ctx, "review");
    let ok: bool = ctx.interrupt(json!({ "draft": s.draft }))?;
    count(ctx, "review:answered");
    Ok(Doc::update()
        .trace([format!("review@{}:{ok}", ctx.step())])
        .approved(Some(ok)))
}

#[node]
fn publish(_s: &Doc, ctx: &NodeContext) -> DocUpdate {
    visit(ctx)
}

/// `START → write → {notes, review} → publish`.
fn review_graph(options: CompileOptions) -> CompiledGraph<Doc> {
    StateGraph::<Doc>::new()
        .add_node(write)
        .add_node(notes)
        .add_node(review)
        .add_node(publish)
        .add_edge(START, write)
        .add_edge(write, notes)
        .add_edge(write, review)
        .add_edge(notes, publish)
        .add_edge(review, publish)
        .compile_with(options)
        .unwrap()
}

#[tokio::test]
async fn one_interrupt_pauses_with_a_stable_id_and_resume_finishes_the_run() {
    let thread = "single";
    let graph = review_graph(CompileOptions::new().checkpointer(InMemorySaver::new()));
    let cfg = RunConfig::new().thread(thread);

    let paused = graph.invoke(Doc::update(), &cfg).await.unwrap();
    assert_eq!(paused.interrupts.len(), 1, "{:?}", paused.interrupts);
    let interrupt = paused.interrupts[0].clone();
    assert_eq!(interrupt.node, "review");
    assert_eq!(interrupt.value, json!({ "draft": "v1" }));
    assert!(!interrupt.id.is_empty());
    // The finished sibling's writes are in the values; the paused node's are not.
    assert_eq!(paused.values.trace, ["write@0", "notes@1"]);
    assert_eq!(paused.values.draft, "v1");
    assert_eq!(paused.values.approved, None);
    assert_eq!(paused.steps, 1, "only `write`'s step was committed");
    assert_eq!(
        [
            runs(thread, "write"),
            runs(thread, "notes"),
            runs(thread, "review"),
            runs(thread, "review:answered"),
            runs(thread, "publish"),
        ],
        [1, 1, 1, 0, 0]
    );

    // `get_state` reports the same interrupt (same id) and the pending node.
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.interrupts, vec![interrupt.clone()]);
    assert_eq!(snap.next, ["review"]);
    assert_eq!(snap.values, paused.values);
    let again = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(again.interrupts, vec![interrupt.clone()]);

    // Continuing without an answer reports the same interrupt again; nothing else runs.
    let still = graph.invoke(None, &cfg).await.unwrap();
    assert_eq!(still.interrupts, vec![interrupt.clone()]);
    assert_eq!(still.values, paused.values);
    assert_eq!(runs(thread, "notes"), 1);
    assert_eq!(runs(thread, "review:answered"), 0);

    // Resuming: `review` re-runs from its start and gets the answer; nothing before it
    // (nor its finished sibling) runs again.
    let done = graph.invoke(Command::resume(true), &cfg).await.unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(
        done.values.trace,
        ["write@0", "notes@1", "review@1:true", "publish@2"]
    );
    assert_eq!(done.values.approved, Some(true));
    assert_eq!(
        [
            runs(thread, "write"),
            runs(thread, "notes"),
            runs(thread, "review"),
            runs(thread, "review:answered"),
            runs(thread, "publish"),
        ],
        [1, 1, 2, 1, 1]
    );
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert!(snap.interrupts.is_empty());
    assert!(snap.next.is_empty());
    assert_eq!(snap.values, done.values);

    // Nothing is pending any more: resuming again is a no-op (as in LangGraph), so
    // a client that resumes idempotently needs no `get_state` first.
    let again = graph.invoke(Command::resume(false), &cfg).await.unwrap();
    assert!(again.interrupts.is_empty());
    assert_eq!(again.steps, 0);
    assert_eq!(again.values, done.values);
    assert_eq!(again.checkpoint, done.checkpoint, "nothing new was saved");
    assert_eq!(
        [
            runs(thread, "write"),
            runs(thread, "notes"),
            runs(thread, "review"),
            runs(thread, "review:answered"),
            runs(thread, "publish"),
        ],
        [1, 1, 2, 1, 1]
    );
}

// --- 2. two interrupts in one node -------------------------------------------------

#[node]
fn interview(_s: &Doc, ctx: &NodeContext) -> Result<DocUpdate, NodeError> {
    count(ctx, "before-first");
    let name: String = ctx.interrupt("name?")?;
    count(ctx, "before-second");
    let age: u32 = ctx.interrupt(json!({ "ask": "age?", "name": name }))?;
    count(ctx, "after-second");
    Ok(Doc::update().answers([name, age.to_string()]))
}

#[tokio::test]
async fn two_interrupts_in_one_node_take_two_resumes_and_get_their_answers_in_order() {
    let thread = "two-in-one";
    let graph = StateGraph::<Doc>::new()
        .add_node(interview)
        .add_edge(START, interview)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunConfig::new().thread(thread);
    let counts = || {
        [
            runs(thread, "before-first"),
            runs(thread, "before-second"),
            runs(thread, "after-second"),
        ]
    };

    let first = graph.invoke(Doc::update(), &cfg).await.unwrap();
    assert_eq!(first.interrupts.len(), 1);
    assert_eq!(first.interrupts[0].node, "interview");
    assert_eq!(first.interrupts[0].value, json!("name?"));
    assert_eq!(counts(), [1, 0, 0]);

    let second = graph.invoke(Command::resume("Ada"), &cfg).await.unwrap();
    assert_eq!(second.interrupts.len(), 1);
    assert_eq!(
        second.interrupts[0].value,
        json!({ "ask": "age?", "name": "Ada" })
    );
    assert_ne!(
        second.interrupts[0].id, first.interrupts[0].id,
        "the second call is another interrupt"
    );
    assert!(second.values.answers.is_empty());
    assert_eq!(counts(), [2, 1, 0]);
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.interrupts, second.interrupts);
    assert_eq!(snap.next, ["interview"]);

    let done = graph.invoke(Command::resume(36), &cfg).await.unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(done.values.answers, ["Ada", "36"]);
    // Code before the first call: initial run + two resumes; before the second: two.
    assert_eq!(counts(), [3, 2, 1]);
}

#[tokio::test]
async fn a_resume_value_of_the_wrong_type_is_refused_and_the_interrupt_stays_pending() {
    let thread = "two-in-one-bad-type";
    let graph = StateGraph::<Doc>::new()
        .add_node(interview)
        .add_edge(START, interview)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunConfig::new().thread(thread);
    graph.invoke(Doc::update(), &cfg).await.unwrap();
    let err = graph
        .invoke(Command::resume(json!({ "not": "a string" })), &cfg)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::InvalidResume { node, .. } if node == "interview"),
        "{err:?}"
    );
    assert!(err.to_string().contains("does not decode"), "{err}");
    assert_eq!(runs(thread, "before-second"), 0);
    // Still waiting at the same question; a good answer goes on to the next one.
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.interrupts.len(), 1);
    assert_eq!(snap.interrupts[0].value, json!("name?"));
    let next = graph.invoke(Command::resume("Ada"), &cfg).await.unwrap();
    assert_eq!(
        next.interrupts[0].value,
        json!({ "ask": "age?", "name": "Ada" })
    );
}

// --- 3. an interrupt in a loop -----------------------------------------------------

#[node]
fn ask(s: &Doc, ctx: &NodeContext) -> Result<DocUpdate, NodeError> {
    count(ctx, "ask");
    let answer: String = ctx.interrupt(json!({ "round": s.answers.len() }))?;
    Ok(Doc::update()
        .answers([answer])
        .trace([format!("ask@{}", ctx.step())]))
}

fn again_or_end(s: &Doc) -> Route<Doc> {
    if s.answers.len() < 3 {
        Route::to(ask)
    } else {
        Route::end()
    }
}

#[tokio::test]
async fn an_interrupt_in_a_loop_gets_a_fresh_id_every_round() {
    let thread = "loop";
    let graph = StateGraph::<Doc>::new()
        .add_node(ask)
        .add_edge(START, ask)
        .add_conditional_edges(ask, again_or_end, (ask, END))
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunConfig::new().thread(thread);

    let mut out = graph.invoke(Doc::update(), &cfg).await.unwrap();
    let mut ids = Vec::new();
    let mut checkpoints = Vec::new();
    for round in 0..3 {
        assert_eq!(
            out.interrupts.len(),
            1,
            "round {round}: {:?}",
            out.interrupts
        );
        let interrupt = &out.interrupts[0];
        assert_eq!(interrupt.node, "ask");
        assert_eq!(interrupt.value, json!({ "round": round }));
        let snap = graph.get_state(&cfg).await.unwrap().unwrap();
        assert_eq!(snap.interrupts, out.interrupts, "round {round}");
        ids.push(interrupt.id.clone());
        checkpoints.push(snap.config.checkpoint_id.clone().unwrap());
        assert_eq!(runs(thread, "ask"), 2 * round + 1);
        out = graph
            .invoke(Command::resume(format!("answer {round}")), &cfg)
            .await
            .unwrap();
    }
    assert!(out.interrupts.is_empty(), "{:?}", out.interrupts);
    assert_eq!(out.values.answers, ["answer 0", "answer 1", "answer 2"]);
    assert_eq!(out.values.trace, ["ask@0", "ask@1", "ask@2"]);
    assert_eq!(runs(thread, "ask"), 6);
    // Every pause is on its own step and checkpoint, with its own id.
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 3, "{ids:?}");
    assert_eq!(
        checkpoints.iter().collect::<BTreeSet<_>>().len(),
        3,
        "{checkpoints:?}"
    );
}

// --- 8. no checkpointer --------------------------------------------------------------

#[tokio::test]
async fn an_interrupt_without_a_checkpointer_is_an_error_naming_the_node() {
    let graph = review_graph(CompileOptions::new());
    let err = graph
        .invoke(Doc::update(), &RunConfig::new().thread("no-saver"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::InterruptWithoutCheckpointer { node } if node == "review"),
        "{err:?}"
    );
    assert!(err.to_string().contains("`review`"), "{err}");
    assert!(err.to_string().contains("checkpointer"), "{err}");
    // Without a thread id either.
    let err = graph
        .invoke(Doc::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::InterruptWithoutCheckpointer { node } if node == "review"),
        "{err:?}"
    );
}

// --- 9. interrupts are never retried -------------------------------------------------

#[derive(Debug)]
struct Glitch;

impl std::fmt::Display for Glitch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("glitch")
    }
}

impl std::error::Error for Glitch {}

/// Interrupts; once answered, fails its first attempt of that run (a transient error
/// the retry policy handles), then succeeds.
#[node]
fn guarded(_s: &Doc, ctx: &NodeContext) -> Result<DocUpdate, NodeError> {
    count(ctx, "guarded");
    count(ctx, &format!("guarded:attempt{}", ctx.attempt()));
    let answer: String = ctx.interrupt("go?")?;
    count(ctx, "guarded:answered");
    if ctx.attempt() == 1 {
        return Err(NodeError::new(Glitch));
    }
    Ok(Doc::update().answers([answer]))
}

#[tokio::test]
async fn a_retry_policy_never_retries_an_interrupt() {
    let thread = "retry";
    let saver = Arc::new(InMemorySaver::new());
    let graph = StateGraph::<Doc>::new()
        .add_node(guarded)
        .add_edge(START, guarded)
        .retry(
            guarded,
            RetryPolicy::new()
                .max_attempts(5)
                .initial_interval(Duration::from_millis(1))
                .max_interval(Duration::from_millis(1)),
        )
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap();
    let cfg = RunConfig::new().thread(thread);

    let paused = graph.invoke(Doc::update(), &cfg).await.unwrap();
    assert_eq!(paused.interrupts.len(), 1);
    assert_eq!(runs(thread, "guarded"), 1, "the interrupt was retried");
    assert_eq!(runs(thread, "guarded:attempt1"), 1);
    assert_eq!(
        saver.checkpoint_count(),
        1,
        "no checkpoint for the interrupted step"
    );

    // Still paused on continue: the waiting node is not run, let alone retried.
    let still = graph.invoke(None, &cfg).await.unwrap();
    assert_eq!(still.interrupts, paused.interrupts);
    assert_eq!(runs(thread, "guarded"), 1);

    // Resumed: the first attempt fails after the answer and is retried; the retry
    // gets the same answer instead of interrupting again.
    let done = graph.invoke(Command::resume("yes"), &cfg).await.unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(done.values.answers, ["yes"]);
    assert_eq!(runs(thread, "guarded"), 3);
    assert_eq!(runs(thread, "guarded:attempt1"), 2);
    assert_eq!(runs(thread, "guarded:attempt2"), 1);
    assert_eq!(runs(thread, "guarded:answered"), 2);
    // The input checkpoint and the one after `guarded`'s step: pausing wrote none.
    assert_eq!(saver.checkpoint_count(), 2);
}
