//! `invoke_blocking`: runs a graph (async nodes included) without a runtime, and
//! refuses to block inside one.

use std::time::Duration;

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Tally {
    #[reducer(add)]
    count: u32,
    #[reducer(append)]
    trace: Vec<String>,
}

#[node]
async fn wait_then_count(_s: &Tally, ctx: &NodeContext) -> TallyUpdate {
    tokio::time::sleep(Duration::from_millis(2)).await;
    Tally::update()
        .count(1)
        .trace([format!("{}@{}", ctx.node(), ctx.step())])
}

#[node]
fn count_again(_s: &Tally, ctx: &NodeContext) -> TallyUpdate {
    Tally::update()
        .count(10)
        .trace([format!("{}@{}", ctx.node(), ctx.step())])
}

fn graph() -> CompiledGraph<Tally> {
    StateGraph::<Tally>::new()
        .add_node(wait_then_count)
        .add_node(count_again)
        .add_edge(START, wait_then_count)
        .add_edge(wait_then_count, count_again)
        .compile()
        .unwrap()
}

#[test]
fn invoke_blocking_runs_outside_a_runtime() {
    let out = graph()
        .invoke_blocking(Tally::update().count(100), &RunConfig::new())
        .unwrap();
    assert_eq!(out.values.count, 111);
    assert_eq!(out.values.trace, ["wait_then_count@0", "count_again@1"]);
    assert_eq!(out.steps, 2);
}

#[test]
fn invoke_blocking_reports_run_errors() {
    let err = graph()
        .invoke_blocking(Tally::update(), &RunConfig::new().recursion_limit(1))
        .unwrap_err();
    assert!(
        matches!(err, RunError::RecursionLimit { limit: 1 }),
        "{err:?}"
    );
}

#[tokio::test]
async fn invoke_blocking_inside_a_runtime_is_refused() {
    let err = graph()
        .invoke_blocking(Tally::update(), &RunConfig::new())
        .unwrap_err();
    assert!(matches!(err, RunError::BlockingInsideRuntime), "{err:?}");
    // `invoke(..).await` is the way in here.
    let out = graph()
        .invoke(Tally::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.count, 11);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invoke_blocking_inside_a_multi_thread_runtime_is_refused() {
    let err = graph()
        .invoke_blocking(Tally::update(), &RunConfig::new())
        .unwrap_err();
    assert!(matches!(err, RunError::BlockingInsideRuntime), "{err:?}");
}
