//! Streaming: the same run as `invoke`, as ordered typed events; custom events live.

use futures::StreamExt;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct S {
    #[reducer(append)]
    log: Vec<String>,
}

#[node]
fn a(_: &S) -> SUpdate {
    S::update().log(["a"])
}

#[node]
async fn b(_: &S, ctx: &NodeContext) -> Result<SUpdate, NodeError> {
    ctx.emit("working on b").await?;
    Ok(S::update().log(["b"]))
}

fn graph() -> CompiledGraph<S> {
    StateGraph::<S>::new()
        .add_node(a)
        .add_node(b)
        .add_edge(START, a)
        .add_edge(a, b)
        .compile()
        .unwrap()
}

fn describe(e: &StreamEvent<S>) -> String {
    match e {
        StreamEvent::Values { step, values } => format!("values@{step}:{:?}", values.log),
        StreamEvent::Updates {
            step,
            node,
            updates,
            ..
        } => format!("updates@{step}:{node}:{}", updates.len()),
        StreamEvent::TaskStart { step, node, .. } => format!("start@{step}:{node}"),
        StreamEvent::TaskResult {
            step, node, error, ..
        } => format!("result@{step}:{node}:{error:?}"),
        StreamEvent::Custom { node, value } => format!("custom:{node}:{value}"),
        other => format!("{:?}", other.mode()),
    }
}

#[tokio::test]
async fn multi_mode_events_come_in_the_documented_order() {
    let g = graph();
    let events: Vec<String> = g
        .stream(
            S::update(),
            &RunConfig::new(),
            StreamMode::VALUES | StreamMode::UPDATES | StreamMode::TASKS | StreamMode::CUSTOM,
        )
        .map(|e| describe(&e.unwrap()))
        .collect()
        .await;
    assert_eq!(
        events,
        [
            "values@-1:[]",
            "start@0:a",
            "updates@0:a:1",
            "result@0:a:None",
            "values@0:[\"a\"]",
            "start@1:b",
            "custom:b:\"working on b\"",
            "updates@1:b:1",
            "result@1:b:None",
            "values@1:[\"a\", \"b\"]",
        ]
    );
    let invoked = g.invoke(S::update(), &RunConfig::new()).await.unwrap();
    assert_eq!(invoked.values.log, ["a", "b"]);
}

#[derive(GraphState, Clone, Debug, Default)]
struct J {
    #[reducer(append)]
    log: Vec<String>,
}

#[node]
fn left(_: &J) -> JUpdate {
    J::update().log(["left"])
}

#[node]
fn right(_: &J) -> JUpdate {
    J::update().log(["right"])
}

#[node]
fn merge(_: &J) -> JUpdate {
    J::update().log(["merge"])
}

#[node]
fn worker(n: &u32) -> JUpdate {
    J::update().log([format!("w{n}")])
}

#[tokio::test]
async fn task_starts_say_what_scheduled_them() {
    let g = StateGraph::<J>::new()
        .add_node(left)
        .add_node(right)
        .add_node(merge)
        .add_node(worker)
        .add_edge(START, left)
        .add_edge(START, right)
        .add_edge([left, right], merge)
        .add_conditional_edges(
            merge,
            |_: &J| Route::sends([stategraph::Send::new(worker, 7u32)]),
            [worker],
        )
        .compile()
        .unwrap();
    let starts: Vec<(String, Vec<String>)> = g
        .stream(J::update(), &RunConfig::new(), StreamMode::TASKS)
        .filter_map(|e| async move {
            match e.unwrap() {
                StreamEvent::TaskStart { node, triggers, .. } => Some((node, triggers)),
                _ => None,
            }
        })
        .collect()
        .await;
    assert_eq!(
        starts,
        [
            ("left".to_string(), vec!["START".to_string()]),
            ("right".into(), vec!["START".into()]),
            ("merge".into(), vec!["join:left+right".into()]),
            ("worker".into(), vec!["branch:merge".into()]),
        ]
    );
}
