//! Several interrupts at once: two nodes of one step pausing need a resume map (a
//! single value is an `AmbiguousResume` naming both ids, an unknown id is an
//! `UnknownInterrupt`); a map naming some of them resumes only those tasks, the others
//! keep their ids; an interrupt inside one of several `Send` tasks re-runs only that task.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::json;
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Desk {
    /// `name@step` (plus the answer), in apply order.
    #[reducer(append)]
    trace: Vec<String>,
    #[reducer(add)]
    total: u64,
    /// Jobs to fan out.
    jobs: Vec<Job>,
    /// Each job's result, in apply order.
    #[reducer(append)]
    results: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Job {
    id: u32,
    needs_review: bool,
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

// --- 4. two interrupts in one step --------------------------------------------------

#[node]
fn left(_s: &Desk, ctx: &NodeContext) -> Result<DeskUpdate, NodeError> {
    count(ctx, "left");
    let answer: String = ctx.interrupt(json!({ "side": "left" }))?;
    Ok(Desk::update()
        .trace([format!("left@{}:{answer}", ctx.step())])
        .total(1))
}

#[node]
async fn right(_s: &Desk, ctx: &NodeContext) -> Result<DeskUpdate, NodeError> {
    count(ctx, "right");
    tokio::task::yield_now().await;
    let answer: String = ctx.interrupt(json!({ "side": "right" }))?;
    Ok(Desk::update()
        .trace([format!("right@{}:{answer}", ctx.step())])
        .total(10))
}

#[node]
fn merge(_s: &Desk, ctx: &NodeContext) -> DeskUpdate {
    count(ctx, "merge");
    Desk::update()
        .trace([format!("merge@{}", ctx.step())])
        .total(100)
}

/// `START → {left, right} → merge`.
fn pair() -> CompiledGraph<Desk> {
    StateGraph::<Desk>::new()
        .add_node(right)
        .add_node(left)
        .add_node(merge)
        .add_edge(START, left)
        .add_edge(START, right)
        .add_edge([left, right], merge)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

/// Starts the pair on `thread`; returns the `left` and `right` interrupts.
async fn pause_both(graph: &CompiledGraph<Desk>, cfg: &RunConfig) -> (Interrupt, Interrupt) {
    let out = graph.invoke(Desk::update(), cfg).await.unwrap();
    assert_eq!(out.interrupts.len(), 2, "{:?}", out.interrupts);
    let (l, r) = (out.interrupts[0].clone(), out.interrupts[1].clone());
    assert_eq!((l.node.as_str(), r.node.as_str()), ("left", "right"));
    assert_eq!(l.value, json!({ "side": "left" }));
    assert_eq!(r.value, json!({ "side": "right" }));
    assert_ne!(l.id, r.id);
    let snap = graph.get_state(cfg).await.unwrap().unwrap();
    assert_eq!(snap.interrupts, out.interrupts);
    assert_eq!(snap.next, ["left", "right"]);
    (l, r)
}

#[tokio::test]
async fn a_single_resume_value_is_ambiguous_and_an_unknown_id_is_rejected() {
    let thread = "pair-errors";
    let graph = pair();
    let cfg = RunConfig::new().thread(thread);
    let (l, r) = pause_both(&graph, &cfg).await;

    let err = graph
        .invoke(Command::resume("yes"), &cfg)
        .await
        .unwrap_err();
    match &err {
        RunError::AmbiguousResume { ids } => {
            let ids: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
            assert_eq!(ids, BTreeSet::from([l.id.as_str(), r.id.as_str()]));
        }
        other => panic!("expected AmbiguousResume, got {other:?}"),
    }
    assert!(err.to_string().contains(&l.id) && err.to_string().contains(&r.id));

    let err = graph
        .invoke(Command::resume_map([("no-such-interrupt", "yes")]), &cfg)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::UnknownInterrupt { id } if id == "no-such-interrupt"),
        "{err:?}"
    );
    // A known id next to an unknown one: rejected as a whole, nothing runs.
    let err = graph
        .invoke(
            Command::resume_map([(l.id.as_str(), "yes"), ("nope", "no")]),
            &cfg,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::UnknownInterrupt { id } if id == "nope"),
        "{err:?}"
    );

    // The failed resumes changed nothing: both still wait under the same ids.
    assert_eq!([runs(thread, "left"), runs(thread, "right")], [1, 1]);
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.interrupts, vec![l.clone(), r.clone()]);

    let done = graph
        .invoke(
            Command::resume_map([(r.id.as_str(), "R"), (l.id.as_str(), "L")]),
            &cfg,
        )
        .await
        .unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(done.values.trace, ["left@0:L", "right@0:R", "merge@1"]);
}

#[tokio::test]
async fn a_resume_map_with_both_ids_resumes_both() {
    let thread = "pair-both";
    let graph = pair();
    let cfg = RunConfig::new().thread(thread);
    let (l, r) = pause_both(&graph, &cfg).await;

    let done = graph
        .invoke(
            Command::resume_map([(l.id.clone(), "L"), (r.id.clone(), "R")]),
            &cfg,
        )
        .await
        .unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(done.values.trace, ["left@0:L", "right@0:R", "merge@1"]);
    assert_eq!(done.values.total, 111);
    assert_eq!(
        [
            runs(thread, "left"),
            runs(thread, "right"),
            runs(thread, "merge")
        ],
        [2, 2, 1]
    );
}

#[tokio::test]
async fn a_resume_map_naming_one_interrupt_resumes_only_that_task() {
    let thread = "pair-one";
    let graph = pair();
    let cfg = RunConfig::new().thread(thread);
    let (l, r) = pause_both(&graph, &cfg).await;

    // Only `left` is answered: it re-runs and finishes; `right` is not run and the
    // run pauses again on the same `right` interrupt.
    let half = graph
        .invoke(Command::resume_map([(l.id.as_str(), "L")]), &cfg)
        .await
        .unwrap();
    assert_eq!(half.interrupts, vec![r.clone()]);
    assert_eq!(half.values.trace, ["left@0:L"], "left's writes are kept");
    assert_eq!(half.values.total, 1);
    assert_eq!(
        [
            runs(thread, "left"),
            runs(thread, "right"),
            runs(thread, "merge")
        ],
        [2, 1, 0]
    );
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.interrupts, vec![r.clone()]);
    assert_eq!(snap.next, ["right"]);
    assert_eq!(snap.values.trace, ["left@0:L"]);

    // `left` is no longer pending.
    let err = graph
        .invoke(Command::resume_map([(l.id.as_str(), "again")]), &cfg)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::UnknownInterrupt { id } if *id == l.id),
        "{err:?}"
    );

    // Now only `right` is pending, so a single value answers it.
    let done = graph.invoke(Command::resume("R"), &cfg).await.unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(done.values.trace, ["left@0:L", "right@0:R", "merge@1"]);
    assert_eq!(done.values.total, 111);
    assert_eq!(
        [
            runs(thread, "left"),
            runs(thread, "right"),
            runs(thread, "merge")
        ],
        [2, 2, 1]
    );
}

// --- 5. an interrupt inside one of several Send tasks -------------------------------

#[node]
fn dispatch(_s: &Desk, ctx: &NodeContext) -> DeskUpdate {
    count(ctx, "dispatch");
    Desk::update().trace([format!("dispatch@{}", ctx.step())])
}

#[node]
async fn worker(job: &Job, ctx: &NodeContext) -> Result<DeskUpdate, NodeError> {
    count(ctx, &format!("worker{}", job.id));
    tokio::task::yield_now().await;
    let verdict = if job.needs_review {
        let ok: bool = ctx.interrupt(json!({ "job": job.id }))?;
        if ok { "approved" } else { "rejected" }
    } else {
        "auto"
    };
    Ok(Desk::update()
        .results([format!("{}:{verdict}", job.id)])
        .total(u64::from(job.id)))
}

#[node]
fn report(_s: &Desk, ctx: &NodeContext) -> DeskUpdate {
    count(ctx, "report");
    Desk::update().trace([format!("report@{}", ctx.step())])
}

fn fan_out(s: &Desk) -> Route<Desk> {
    Route::sends(
        s.jobs
            .iter()
            .map(|j| stategraph::Send::new(worker, j.clone()))
            .collect::<Vec<_>>(),
    )
}

#[tokio::test]
async fn an_interrupt_in_one_send_task_re_runs_only_that_task() {
    let thread = "sends";
    let graph = StateGraph::<Desk>::new()
        .add_node(dispatch)
        .add_node(worker)
        .add_node(report)
        .add_edge(START, dispatch)
        .add_conditional_edges(dispatch, fan_out, [worker])
        .add_edge(worker, report)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunConfig::new().thread(thread);
    let jobs: Vec<Job> = [(3, false), (5, true), (7, false), (11, false)]
        .into_iter()
        .map(|(id, needs_review)| Job { id, needs_review })
        .collect();
    let workers = || [3, 5, 7, 11].map(|id| runs(thread, &format!("worker{id}")));

    let paused = graph.invoke(Desk::update().jobs(jobs), &cfg).await.unwrap();
    assert_eq!(paused.interrupts.len(), 1, "{:?}", paused.interrupts);
    assert_eq!(paused.interrupts[0].node, "worker");
    assert_eq!(paused.interrupts[0].value, json!({ "job": 5 }));
    // The other Send tasks finished: their writes are in the values, in emission order.
    assert_eq!(paused.values.results, ["3:auto", "7:auto", "11:auto"]);
    assert_eq!(paused.values.total, 21);
    assert_eq!(workers(), [1, 1, 1, 1]);
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.interrupts, paused.interrupts);
    assert_eq!(snap.next, ["worker"]);
    assert_eq!(snap.tasks.len(), 4);
    assert_eq!(snap.tasks.iter().filter(|t| t.has_writes).count(), 3);

    let done = graph.invoke(Command::resume(true), &cfg).await.unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(workers(), [1, 2, 1, 1], "only the paused Send task re-ran");
    assert_eq!([runs(thread, "dispatch"), runs(thread, "report")], [1, 1]);
    // Reducers fold the Send tasks in emission order, each exactly once.
    assert_eq!(
        done.values.results,
        ["3:auto", "5:approved", "7:auto", "11:auto"]
    );
    assert_eq!(done.values.total, 26);
    assert_eq!(done.values.trace, ["dispatch@0", "report@2"]);
}

#[tokio::test]
async fn two_paused_send_tasks_of_one_node_are_answered_by_id() {
    let thread = "sends-two";
    let graph = StateGraph::<Desk>::new()
        .add_node(dispatch)
        .add_node(worker)
        .add_node(report)
        .add_edge(START, dispatch)
        .add_conditional_edges(dispatch, fan_out, [worker])
        .add_edge(worker, report)
        .compile_with(CompileOptions::new().shared_checkpointer(Arc::new(InMemorySaver::new())))
        .unwrap();
    let cfg = RunConfig::new().thread(thread);
    let jobs: Vec<Job> = [(2, true), (4, false), (6, true)]
        .into_iter()
        .map(|(id, needs_review)| Job { id, needs_review })
        .collect();

    let paused = graph.invoke(Desk::update().jobs(jobs), &cfg).await.unwrap();
    let values: Vec<_> = paused.interrupts.iter().map(|i| i.value.clone()).collect();
    assert_eq!(values, [json!({ "job": 2 }), json!({ "job": 6 })]);
    let (two, six) = (
        paused.interrupts[0].id.clone(),
        paused.interrupts[1].id.clone(),
    );
    assert_ne!(two, six, "two tasks of one node get different ids");

    let half = graph
        .invoke(Command::resume_map([(six.as_str(), false)]), &cfg)
        .await
        .unwrap();
    assert_eq!(half.interrupts.len(), 1);
    assert_eq!(half.interrupts[0].id, two);
    assert_eq!(half.values.results, ["4:auto", "6:rejected"]);
    assert_eq!(
        [2, 4, 6].map(|id| runs(thread, &format!("worker{id}"))),
        [1, 1, 2]
    );

    let done = graph.invoke(Command::resume(true), &cfg).await.unwrap();
    assert!(done.interrupts.is_empty(), "{:?}", done.interrupts);
    assert_eq!(done.values.results, ["2:approved", "4:auto", "6:rejected"]);
    assert_eq!(done.values.total, 12);
    // Each paused task ran once paused and once answered; the other once.
    assert_eq!(
        [2, 4, 6].map(|id| runs(thread, &format!("worker{id}"))),
        [2, 1, 2]
    );
    assert_eq!(runs(thread, "report"), 1);
}
