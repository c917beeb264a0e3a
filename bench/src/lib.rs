//! The graphs the scenario runner (`stategraph-bench`) and the criterion benches
//! share: the same shapes as the LangGraph reference script.

use stategraph::prelude::*;

pub mod roundtrips;

/// The chain and loop state: one last-value counter (each node writes `counter + 1`).
#[derive(GraphState, Clone, Debug, Default)]
pub struct CounterState {
    /// Incremented by every node.
    pub counter: u64,
}

fn inc(state: &CounterState) -> CounterStateUpdate {
    CounterState::update().counter(state.counter + 1)
}

/// START → n0 → n1 → … → n{n-1} → END, each node incrementing the counter.
///
/// # Errors
/// Only for `n == 0` (no entry from START).
pub fn chain(
    n: usize,
    options: CompileOptions,
) -> Result<CompiledGraph<CounterState>, stategraph::BuildError> {
    let mut g = StateGraph::<CounterState>::new();
    let nodes: Vec<_> = (0..n)
        .map(|i| g.add_node_fn(format!("n{i}"), inc))
        .collect();
    if let (Some(first), Some(last)) = (nodes.first(), nodes.last()) {
        g.add_edge(START, first);
        g.add_edge(last, END);
    }
    for pair in nodes.windows(2) {
        g.add_edge(&pair[0], &pair[1]);
    }
    g.compile_with(options)
}

/// One node and a router looping back to it until the counter reaches `until`.
///
/// # Errors
/// None in practice (the graph is well formed).
pub fn router_loop(until: u64) -> Result<CompiledGraph<CounterState>, stategraph::BuildError> {
    router_loop_with(until, inc, CompileOptions::new())
}

/// [`router_loop`] with `step` as the node (it must increment the counter) and
/// compiled with `options`.
///
/// # Errors
/// None in practice (the graph is well formed).
pub fn router_loop_with(
    until: u64,
    step: fn(&CounterState) -> CounterStateUpdate,
    options: CompileOptions,
) -> Result<CompiledGraph<CounterState>, stategraph::BuildError> {
    let mut g = StateGraph::<CounterState>::new();
    let step = g.add_node_fn("step", step);
    let target = step.clone();
    g.add_edge(START, &step).add_conditional_edges(
        &step,
        move |s: &CounterState| {
            if s.counter >= until {
                Route::end()
            } else {
                Route::to(&target)
            }
        },
        (&step, END),
    );
    g.compile_with(options)
}

/// The fan-out state: `n` Sends, each appending `2 * i` to `results`; `total` their sum.
#[derive(GraphState, Clone, Debug, Default)]
pub struct FanState {
    /// How many Sends.
    pub n: u64,
    /// Each Send's result.
    #[reducer(append)]
    pub results: Vec<u64>,
    /// The reduce node's sum.
    pub total: u64,
}

#[node]
fn fan_start(_state: &FanState) -> Option<FanStateUpdate> {
    None
}

#[node]
fn worker(i: &u64) -> FanStateUpdate {
    FanState::update().results([i * 2])
}

#[node]
fn reduce(state: &FanState) -> FanStateUpdate {
    FanState::update().total(state.results.iter().sum::<u64>())
}

/// A router returning `n` `Send("worker", i)`, the workers appending `2 * i`, and a
/// reduce node summing them.
///
/// # Errors
/// None in practice (the graph is well formed).
pub fn fanout() -> Result<CompiledGraph<FanState>, stategraph::BuildError> {
    StateGraph::<FanState>::new()
        .add_node(fan_start)
        .add_node(worker)
        .add_node(reduce)
        .add_edge(START, fan_start)
        .add_conditional_edges(
            fan_start,
            |s: &FanState| Route::sends((0..s.n).map(|i| stategraph::Send::new(worker, i))),
            [worker],
        )
        .add_edge(worker, reduce)
        .add_edge(reduce, END)
        .compile()
}

/// A chain of `outer` subgraph nodes `s0 … s{outer-1}`, each running the same child:
/// a [`chain`] of `inner` counter nodes. Each child starts from the parent's counter
/// and hands its final counter back, so an invoke from 0 ends at `outer * inner`.
/// With a checkpointer in `options`, the children inherit it (their checkpoints go
/// under the task's namespace), as LangGraph's children do by default.
///
/// # Errors
/// Only for `outer == 0` or `inner == 0` (no entry from START).
pub fn subgraph_chain(
    outer: usize,
    inner: usize,
    options: CompileOptions,
) -> Result<CompiledGraph<CounterState>, stategraph::BuildError> {
    let child = chain(inner, CompileOptions::new())?;
    let mut g = StateGraph::<CounterState>::new();
    let nodes: Vec<_> = (0..outer)
        .map(|i| {
            g.add_subgraph(Subgraph::new(
                format!("s{i}"),
                child.clone(),
                |p: &CounterState| CounterState::update().counter(p.counter),
                |c: &CounterState| CounterState::update().counter(c.counter),
            ))
        })
        .collect();
    if let (Some(first), Some(last)) = (nodes.first(), nodes.last()) {
        g.add_edge(START, first);
        g.add_edge(last, END);
    }
    for pair in nodes.windows(2) {
        g.add_edge(&pair[0], &pair[1]);
    }
    g.compile_with(options)
}

/// The serving benchmark's state (`serve_bench`): the same fields as the LangGraph
/// graph in `bench/langgraph/serve/graph.py`.
#[derive(GraphState, schemars::JsonSchema, Clone, Debug, Default)]
pub struct Chain3State {
    /// Summed: the input's `n` plus one per node.
    #[reducer(add)]
    pub n: u64,
    /// Appended: the name of every node that ran, in order.
    #[reducer(append)]
    pub log: Vec<String>,
}

/// START → a → b → c → END; each node adds 1 to `n` and appends its name to `log`.
/// With input `{"n": 1}` a run ends with `n == 4` and `log == ["a", "b", "c"]`.
pub fn chain3() -> StateGraph<Chain3State> {
    let mut g = StateGraph::<Chain3State>::new();
    let nodes: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|name| {
            g.add_node_fn(name, move |_: &Chain3State| {
                Chain3State::update().n(1u64).log(vec![name.to_string()])
            })
        })
        .collect();
    g.add_edge(START, &nodes[0])
        .add_edge(&nodes[0], &nodes[1])
        .add_edge(&nodes[1], &nodes[2])
        .add_edge(&nodes[2], END);
    g
}
