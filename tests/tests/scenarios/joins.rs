//! Joins `[a, b] → c`: `c` runs once after every source ran, even when the sources
//! finish in different supersteps; an early visit by another edge does not reset the
//! barrier; the barrier resets each time round a loop.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Join {
    /// `name@step`, in apply order.
    #[reducer(append)]
    trace: Vec<String>,
    /// Times `c` ran.
    #[reducer(add)]
    rounds: u32,
    /// Times `a` should loop on itself.
    a_loops: u32,
    #[reducer(add)]
    a_runs: u32,
}

fn visit(ctx: &NodeContext) -> JoinUpdate {
    Join::update().trace([format!("{}@{}", ctx.node(), ctx.step())])
}

macro_rules! tracing_nodes {
    ($($name:ident),* $(,)?) => {$(
        #[node]
        fn $name(_s: &Join, ctx: &NodeContext) -> JoinUpdate {
            visit(ctx)
        }
    )*};
}

tracing_nodes!(b1, b2, b3, b4);

#[node]
fn a(_s: &Join, ctx: &NodeContext) -> JoinUpdate {
    visit(ctx).a_runs(1)
}

#[node]
async fn c(_s: &Join, ctx: &NodeContext) -> JoinUpdate {
    tokio::task::yield_now().await;
    visit(ctx).rounds(1)
}

#[tokio::test]
async fn join_waits_for_sources_finishing_in_different_supersteps() {
    // a finishes in step 0, b2 in step 1: c runs once, in step 2.
    let graph = StateGraph::<Join>::new()
        .add_node(c)
        .add_node(b2)
        .add_node(b1)
        .add_node(a)
        .add_edge(START, a)
        .add_edge(START, b1)
        .add_edge(b1, b2)
        .add_edge([a, b2], c)
        .add_edge(c, END)
        .compile()
        .unwrap();

    let out = graph
        .invoke(Join::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["a@0", "b1@0", "b2@1", "c@2"]);
    assert_eq!(out.values.rounds, 1);
    assert_eq!(out.steps, 3);
}

#[tokio::test]
async fn join_written_as_a_tuple_behaves_the_same() {
    let graph = StateGraph::<Join>::new()
        .add_node(a)
        .add_node(b1)
        .add_node(b2)
        .add_node(c)
        .add_edge(START, a)
        .add_edge(START, b1)
        .add_edge(b1, b2)
        .add_edge((b2, a), c)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Join::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["a@0", "b1@0", "b2@1", "c@2"]);
}

#[tokio::test]
async fn join_runs_once_even_if_one_source_ran_several_times() {
    // a loops on itself three times (steps 0-2) while b1..b4 take steps 0-3.
    let graph = StateGraph::<Join>::new()
        .add_node(a)
        .add_node(b1)
        .add_node(b2)
        .add_node(b3)
        .add_node(b4)
        .add_node(c)
        .add_edge(START, a)
        .add_edge(START, b1)
        .add_edge(b1, b2)
        .add_edge(b2, b3)
        .add_edge(b3, b4)
        .add_conditional_edges(
            a,
            |s: &Join| {
                if s.a_runs < s.a_loops {
                    Route::to(a)
                } else {
                    Route::end()
                }
            },
            (a, END),
        )
        .add_edge([a, b4], c)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Join::update().a_loops(3), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(
        out.values.trace,
        [
            "a@0", "b1@0", //
            "a@1", "b2@1", //
            "a@2", "b3@2", //
            "b4@3", //
            "c@4",
        ]
    );
    assert_eq!(out.values.rounds, 1);
}

#[tokio::test]
async fn join_target_reached_early_by_another_edge_keeps_the_barrier() {
    // a → c (plain) and [a, b3] → c. The plain edge runs c in step 1; the join still
    // remembers that a ran and fires when b3 finishes in step 2.
    let graph = StateGraph::<Join>::new()
        .add_node(a)
        .add_node(b1)
        .add_node(b2)
        .add_node(b3)
        .add_node(c)
        .add_edge(START, a)
        .add_edge(START, b1)
        .add_edge(b1, b2)
        .add_edge(b2, b3)
        .add_edge(a, c)
        .add_edge([a, b3], c)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Join::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(
        out.values.trace,
        ["a@0", "b1@0", "b2@1", "c@1", "b3@2", "c@3"]
    );
    assert_eq!(out.values.rounds, 2);
}

#[tokio::test]
async fn join_and_plain_edge_completing_in_the_same_step_schedule_once() {
    // a and b1 both run in step 0: the plain edge a → c and the join [a, b1] → c
    // both want c in step 1; it runs once.
    let graph = StateGraph::<Join>::new()
        .add_node(a)
        .add_node(b1)
        .add_node(c)
        .add_edge(START, a)
        .add_edge(START, b1)
        .add_edge(a, c)
        .add_edge([a, b1], c)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Join::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["a@0", "b1@0", "c@1"]);
    assert_eq!(out.values.rounds, 1);
}

#[tokio::test]
async fn join_inside_a_loop_resets_each_time_round() {
    // Round: a and b1 (step k), b2 (k+1), c (k+2); c loops back to a and b1 twice.
    // A barrier that kept b2's mark would fire c early, right after a, in round two.
    let graph = StateGraph::<Join>::new()
        .add_node(a)
        .add_node(b1)
        .add_node(b2)
        .add_node(c)
        .add_edge(START, a)
        .add_edge(START, b1)
        .add_edge(b1, b2)
        .add_edge([a, b2], c)
        .add_conditional_edges(
            c,
            |s: &Join| {
                if s.rounds < 3 {
                    Route::to_all([a, b1])
                } else {
                    Route::end()
                }
            },
            (a, b1, END),
        )
        .compile()
        .unwrap();
    let out = graph
        .invoke(Join::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(
        out.values.trace,
        [
            "a@0", "b1@0", "b2@1", "c@2", //
            "a@3", "b1@3", "b2@4", "c@5", //
            "a@6", "b1@6", "b2@7", "c@8",
        ]
    );
    assert_eq!(out.values.rounds, 3);
    assert_eq!(out.steps, 9);
}

#[tokio::test]
async fn a_join_into_end_schedules_nothing() {
    let graph = StateGraph::<Join>::new()
        .add_node(a)
        .add_node(b1)
        .add_node(b2)
        .add_edge(START, a)
        .add_edge(START, b1)
        .add_edge(b1, b2)
        .add_edge([a, b2], END)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Join::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["a@0", "b1@0", "b2@1"]);
    assert_eq!(out.steps, 2);
}
