//! The recursion limit: a run needing exactly `L` supersteps succeeds with limit `L`,
//! one needing `L + 1` fails naming `L`, and `L = 0` is rejected.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Loop {
    /// How many times `tick` should run (= supersteps needed).
    rounds: usize,
    #[reducer(add)]
    ticks: usize,
    #[reducer(append)]
    trace: Vec<String>,
}

#[node]
fn tick(_s: &Loop, ctx: &NodeContext) -> LoopUpdate {
    Loop::update()
        .ticks(1)
        .trace([format!("{}@{}", ctx.node(), ctx.step())])
}

fn looping_graph() -> CompiledGraph<Loop> {
    StateGraph::<Loop>::new()
        .add_node(tick)
        .add_edge(START, tick)
        .add_conditional_edges(
            tick,
            |s: &Loop| {
                if s.ticks < s.rounds {
                    Route::to(tick)
                } else {
                    Route::end()
                }
            },
            (tick, END),
        )
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_run_needing_exactly_the_limit_succeeds() {
    let graph = looping_graph();
    for limit in [1, 2, 5, 25] {
        let out = graph
            .invoke(
                Loop::update().rounds(limit),
                &RunConfig::new().recursion_limit(limit),
            )
            .await
            .unwrap_or_else(|e| panic!("limit {limit}: {e}"));
        assert_eq!(out.steps, limit);
        assert_eq!(out.values.ticks, limit);
        let expected: Vec<String> = (0..limit).map(|i| format!("tick@{i}")).collect();
        assert_eq!(out.values.trace, expected);
    }
}

#[tokio::test]
async fn one_superstep_too_many_fails_naming_the_limit() {
    let graph = looping_graph();
    for needed in [2, 3, 5, 25] {
        let limit = needed - 1;
        let err = graph
            .invoke(
                Loop::update().rounds(needed),
                &RunConfig::new().recursion_limit(limit),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(err, RunError::RecursionLimit { limit: l } if l == limit),
            "needed {needed}, limit {limit}: {err:?}"
        );
        assert!(err.to_string().contains(&limit.to_string()), "{err}");
    }
}

#[tokio::test]
async fn zero_limit_is_rejected_even_for_a_run_needing_no_supersteps() {
    let graph = looping_graph();
    let err = graph
        .invoke(
            Loop::update().rounds(3),
            &RunConfig::new().recursion_limit(0),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::ZeroRecursionLimit), "{err:?}");

    let empty_run = StateGraph::<Loop>::new()
        .add_node(tick)
        .add_conditional_edges(START, |_: &Loop| Route::end(), (tick, END))
        .compile()
        .unwrap();
    let err = empty_run
        .invoke(Loop::update(), &RunConfig::new().recursion_limit(0))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::ZeroRecursionLimit), "{err:?}");
    // With limit 1 the same zero-step run is fine.
    let out = empty_run
        .invoke(Loop::update(), &RunConfig::new().recursion_limit(1))
        .await
        .unwrap();
    assert_eq!(out.steps, 0);
}

#[tokio::test]
async fn default_limit_is_ten_thousand_supersteps() {
    assert_eq!(RunConfig::DEFAULT_RECURSION_LIMIT, 10_000);
    let graph = looping_graph();

    let out = graph
        .invoke(Loop::update().rounds(10_000), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.steps, 10_000);
    assert_eq!(out.values.ticks, 10_000);

    let err = graph
        .invoke(Loop::update().rounds(10_001), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::RecursionLimit { limit: 10_000 }),
        "{err:?}"
    );
}

#[tokio::test]
async fn supersteps_not_tasks_count_towards_the_limit() {
    // Three parallel loops, each needing 4 supersteps: 12 tasks, 4 supersteps.
    let mut g = StateGraph::<Loop>::new();
    let names = ["p", "q", "r"];
    let handles: Vec<_> = names
        .iter()
        .map(|&name| {
            g.add_node_fn(name, move |_: &Loop| {
                Loop::update().ticks(1).trace([name.to_string()])
            })
        })
        .collect();
    for h in &handles {
        g.add_edge(START, h);
        let again = h.clone();
        g.add_conditional_edges(
            h,
            move |s: &Loop| {
                if s.ticks < s.rounds {
                    Route::to(&again)
                } else {
                    Route::end()
                }
            },
            (h, END),
        );
    }
    let graph = g.compile().unwrap();
    // Each router sees pre-step ticks plus its own +1: the loops run while
    // pre-step ticks + 1 < rounds. With rounds = 10: pre-step ticks go 0, 3, 6, 9.
    let out = graph
        .invoke(
            Loop::update().rounds(10),
            &RunConfig::new().recursion_limit(4),
        )
        .await
        .unwrap();
    assert_eq!(out.steps, 4);
    assert_eq!(out.values.ticks, 12);
    let err = graph
        .invoke(
            Loop::update().rounds(10),
            &RunConfig::new().recursion_limit(3),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::RecursionLimit { limit: 3 }),
        "{err:?}"
    );
}
