//! Smallest end-to-end runs: a chain, a router, a Send fan-out.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Counter {
    #[reducer(add)]
    count: u32,
    #[reducer(append)]
    log: Vec<String>,
}

#[node]
fn inc(state: &Counter) -> CounterUpdate {
    Counter::update()
        .count(1)
        .log([format!("inc@{}", state.count)])
}

#[node]
async fn double(state: &Counter, ctx: &NodeContext) -> CounterUpdate {
    Counter::update()
        .count(state.count)
        .log([format!("double@{}", ctx.step())])
}

#[node]
fn worker(item: &u32) -> CounterUpdate {
    Counter::update().count(*item)
}

#[node]
fn fan(_state: &Counter) -> Option<CounterUpdate> {
    None
}

#[tokio::test]
async fn chain_router_and_sends() {
    let graph = StateGraph::<Counter>::new()
        .add_node(inc)
        .add_node(double)
        .add_edge(START, inc)
        .add_edge(inc, double)
        .add_conditional_edges(
            double,
            |s: &Counter| {
                if s.count < 10 {
                    Route::to(inc)
                } else {
                    Route::end()
                }
            },
            (inc, END),
        )
        .compile()
        .unwrap();
    let out = graph
        .invoke(Counter::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.count, 14);
    assert_eq!(out.steps, 6);
    assert!(inc::call(&Counter::default()).count.is_some());

    let fanout = StateGraph::<Counter>::new()
        .add_node(fan)
        .add_node(worker)
        .add_edge(START, fan)
        .add_conditional_edges(
            fan,
            |_: &Counter| Route::sends((1..=4).map(|i| stategraph::Send::new(worker, i))),
            [worker],
        )
        .compile()
        .unwrap();
    let out = fanout
        .invoke(Counter::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.count, 10);
    println!("{}", fanout.draw_mermaid());
}
