//! A linear chain of nodes: each runs in its own superstep, in chain order, and sees
//! every earlier node's writes.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Chain {
    /// Every node appends `name@step`: the per-step task order.
    #[reducer(append)]
    trace: Vec<String>,
    /// What each node saw of `count` when it ran.
    #[reducer(append)]
    seen: Vec<u32>,
    #[reducer(add)]
    count: u32,
    /// Last value: written by exactly one node per step.
    last: String,
}

fn visit(state: &Chain, ctx: &NodeContext) -> ChainUpdate {
    Chain::update()
        .trace([format!("{}@{}", ctx.node(), ctx.step())])
        .seen([state.count])
        .count(1)
        .last(ctx.node())
}

#[node]
fn fetch(state: &Chain, ctx: &NodeContext) -> ChainUpdate {
    visit(state, ctx)
}

#[node]
async fn parse(state: &Chain, ctx: &NodeContext) -> ChainUpdate {
    tokio::task::yield_now().await;
    visit(state, ctx)
}

#[node]
fn enrich(state: &Chain, ctx: &NodeContext) -> ChainUpdate {
    visit(state, ctx)
}

#[node]
async fn validate(state: &Chain, ctx: &NodeContext) -> ChainUpdate {
    visit(state, ctx)
}

#[node]
fn store(state: &Chain, ctx: &NodeContext) -> ChainUpdate {
    visit(state, ctx)
}

#[tokio::test]
async fn five_node_chain_runs_one_node_per_superstep_in_chain_order() {
    // Added out of chain order (and out of name order): neither matters.
    let graph = StateGraph::<Chain>::new()
        .add_node(validate)
        .add_node(store)
        .add_node(fetch)
        .add_node(enrich)
        .add_node(parse)
        .add_edge(START, fetch)
        .add_edge(fetch, parse)
        .add_edge(parse, enrich)
        .add_edge(enrich, validate)
        .add_edge(validate, store)
        .add_edge(store, END)
        .compile()
        .unwrap();

    let out = graph
        .invoke(Chain::update().count(100), &RunConfig::new())
        .await
        .unwrap();

    assert_eq!(out.steps, 5);
    assert_eq!(
        out.values.trace,
        ["fetch@0", "parse@1", "enrich@2", "validate@3", "store@4"]
    );
    // Each node saw the input plus every earlier node's write.
    assert_eq!(out.values.seen, [100, 101, 102, 103, 104]);
    assert_eq!(out.values.count, 105);
    assert_eq!(out.values.last, "store");
}

#[test]
fn long_generated_chain_of_closure_nodes() {
    const N: usize = 60;
    let names: Vec<String> = (0..N).map(|i| format!("n{i:02}")).collect();

    let mut builder = StateGraph::<Chain>::new();
    // Added in reverse: the graph's shape, not the add order, decides the run.
    let mut handles: Vec<_> = names
        .iter()
        .rev()
        .map(|name| {
            let me = name.clone();
            builder.add_node_fn(name.as_str(), move |s: &Chain| {
                Chain::update()
                    .trace([me.clone()])
                    .seen([s.count])
                    .count(1)
                    .last(me.as_str())
            })
        })
        .collect();
    handles.reverse();
    builder.add_edge(START, &handles[0]);
    for pair in handles.windows(2) {
        builder.add_edge(&pair[0], &pair[1]);
    }
    builder.add_edge(&handles[N - 1], END);
    let graph = builder.compile().unwrap();

    let out = graph
        .invoke_blocking(Chain::update(), &RunConfig::new())
        .unwrap();

    assert_eq!(out.steps, N);
    assert_eq!(out.values.trace, names);
    let expected_seen: Vec<u32> = (0..N as u32).collect();
    assert_eq!(out.values.seen, expected_seen);
    assert_eq!(out.values.count, N as u32);
    assert_eq!(out.values.last, names[N - 1]);
}

#[tokio::test]
async fn chain_is_reproducible_and_the_graph_is_reusable() {
    let graph = StateGraph::<Chain>::new()
        .add_node(fetch)
        .add_node(parse)
        .add_node(store)
        .add_edge(START, fetch)
        .add_edge(fetch, parse)
        .add_edge(parse, store)
        .compile()
        .unwrap();
    let first = graph
        .invoke(Chain::update(), &RunConfig::new())
        .await
        .unwrap();
    for _ in 0..10 {
        let again = graph
            .invoke(Chain::update(), &RunConfig::new())
            .await
            .unwrap();
        assert_eq!(again.values, first.values);
        assert_eq!(again.steps, 3);
    }
    // A chain ending without an explicit edge to END simply stops.
    assert_eq!(first.values.trace, ["fetch@0", "parse@1", "store@2"]);
}
