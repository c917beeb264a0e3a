//! `compile` reports every problem of a graph at once: missing entry, duplicate,
//! reserved and malformed names, edges and routes to nodes never added, retry policies
//! for unknown nodes.

use stategraph::BuildProblem;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Shape {
    #[reducer(append)]
    trace: Vec<String>,
}

fn noop(_: &Shape) -> ShapeUpdate {
    Shape::update()
}

#[test]
fn every_problem_is_reported_at_once() {
    // Handles of nodes that live in another graph of the same state type.
    let mut other = StateGraph::<Shape>::new();
    let ghost = other.add_node_fn("ghost", noop);
    let phantom = other.add_node_fn("phantom", noop);

    let mut g = StateGraph::<Shape>::new();
    let ok = g.add_node_fn("ok", noop);
    g.add_node_fn("dup", noop);
    g.add_node_fn("dup", noop);
    // `#[node(name = "END")]` is a compile error now; a name given at runtime is not.
    g.add_node_fn("END", noop);
    g.add_node_fn("__start__", noop);
    g.add_node_fn("a|b", noop);
    g.add_node_fn("c:d", noop);
    g.add_node_fn("", noop);
    let to_ghost = line!() + 1;
    g.add_edge(&ok, &ghost);
    let from_phantom = line!() + 1;
    g.add_edge(&phantom, &ok);
    let routed = line!() + 1;
    g.add_conditional_edges(&ok, |_: &Shape| Route::end(), (&ghost, END));
    g.retry(&phantom, RetryPolicy::new());
    // And nothing leaves START.

    let err = g.compile().unwrap_err();
    let expected = [
        BuildProblem::NoEntry,
        BuildProblem::DuplicateNode { name: "dup".into() },
        BuildProblem::ReservedName { name: "END".into() },
        BuildProblem::ReservedName {
            name: "__start__".into(),
        },
        BuildProblem::InvalidCharacter {
            name: "a|b".into(),
            character: '|',
        },
        BuildProblem::InvalidCharacter {
            name: "c:d".into(),
            character: ':',
        },
        BuildProblem::EmptyName,
        BuildProblem::UnknownRetryNode {
            name: "phantom".into(),
        },
    ];
    for problem in &expected {
        assert!(
            err.problems.contains(problem),
            "missing {problem:?} in {:#?}",
            err.problems
        );
    }
    // Problems of an edge name the line of the user's code that added it.
    let at = |line: u32| format!("{}:{line}:", file!());
    let found = |want: &dyn Fn(&BuildProblem) -> bool| err.problems.iter().any(want);
    assert!(
        found(
            &|p| matches!(p, BuildProblem::UnknownTarget { source_node, target, added_at }
            if source_node == "ok" && target == "ghost" && added_at.starts_with(&at(to_ghost)))
        ),
        "{:#?}",
        err.problems
    );
    assert!(
        found(
            &|p| matches!(p, BuildProblem::UnknownSource { source_node, target, added_at }
            if source_node == "phantom" && target == "ok" && added_at.starts_with(&at(from_phantom)))
        ),
        "{:#?}",
        err.problems
    );
    assert!(
        found(
            &|p| matches!(p, BuildProblem::UnknownRouteTarget { source_node, target, added_at }
            if source_node == "ok" && target == "ghost" && added_at.starts_with(&at(routed)))
        ),
        "{:#?}",
        err.problems
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!("(added at {}", at(to_ghost))),
        "the message names the line: {text}"
    );
    // The three edge problems checked above, and the rest.
    let count = expected.len() + 3;
    assert_eq!(
        err.problems.len(),
        count,
        "unexpected extra problems: {:#?}",
        err.problems
    );
    assert_eq!(err.problems[0], BuildProblem::NoEntry);

    // The message lists them all, one per line.
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("the graph has {count} problems:")),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1 + count, "{text}");
    for word in [
        "START",
        "dup",
        "END",
        "__start__",
        "a|b",
        "c:d",
        "ghost",
        "phantom",
    ] {
        assert!(text.contains(word), "{word} missing from {text}");
    }
}

#[test]
fn reserved_names_ignore_case_and_underscores() {
    for name in ["start", "End", "__end__", "_START_"] {
        let mut g = StateGraph::<Shape>::new();
        let n = g.add_node_fn(name, noop);
        g.add_edge(START, &n);
        let err = g.compile().unwrap_err();
        assert_eq!(
            err.problems,
            [BuildProblem::ReservedName { name: name.into() }]
        );
    }
    // Names merely containing the words are fine.
    let mut g = StateGraph::<Shape>::new();
    let a = g.add_node_fn("start_job", noop);
    let b = g.add_node_fn("backend", noop);
    g.add_edge(START, &a).add_edge(&a, &b);
    assert!(g.compile().is_ok());
}

#[test]
fn a_single_problem_reads_singular() {
    let mut g = StateGraph::<Shape>::new();
    g.add_node_fn("lonely", noop);
    let err = g.compile().unwrap_err();
    assert_eq!(err.problems, [BuildProblem::NoEntry]);
    assert!(
        err.to_string().starts_with("the graph has 1 problem:"),
        "{err}"
    );
}

#[test]
fn conditional_edge_from_an_unknown_node_and_retry_for_start_are_problems() {
    let mut other = StateGraph::<Shape>::new();
    let ghost = other.add_node_fn("ghost", noop);

    let mut g = StateGraph::<Shape>::new();
    let ok = g.add_node_fn("ok", noop);
    g.add_edge(START, &ok);
    let routed = line!() + 1;
    g.add_conditional_edges(&ghost, |_: &Shape| Route::end(), END);
    g.retry(START, RetryPolicy::new());
    let err = g.compile().unwrap_err();
    assert_eq!(err.problems.len(), 2, "{:#?}", err.problems);
    assert!(
        err.problems.iter().any(|p| matches!(p,
            BuildProblem::UnknownSource { source_node, target, added_at }
                if source_node == "ghost" && target == "<conditional edge>"
                    && added_at.starts_with(&format!("{}:{routed}:", file!())))),
        "{:#?}",
        err.problems
    );
    assert!(
        err.problems.contains(&BuildProblem::UnknownRetryNode {
            name: "START".into()
        }),
        "{:#?}",
        err.problems
    );
}

fn many_unknown_retries() -> StateGraph<Shape> {
    let mut other = StateGraph::<Shape>::new();
    let ghosts: Vec<_> = (0..8)
        .map(|i| other.add_node_fn(format!("ghost{i}"), noop))
        .collect();
    let mut g = StateGraph::<Shape>::new();
    let ok = g.add_node_fn("ok", noop);
    g.add_edge(START, &ok);
    for ghost in &ghosts {
        g.retry(ghost, RetryPolicy::new());
    }
    g
}

#[test]
fn problems_come_in_the_same_order_every_time() {
    let first = many_unknown_retries().compile().unwrap_err().problems;
    for _ in 0..20 {
        assert_eq!(
            many_unknown_retries().compile().unwrap_err().problems,
            first
        );
    }
}

// `BuildError::problems` is documented as "every problem, in declaration order".

#[test]
fn unknown_retry_nodes_are_reported_in_declaration_order() {
    let problems = many_unknown_retries().compile().unwrap_err().problems;
    let expected: Vec<BuildProblem> = (0..8)
        .map(|i| BuildProblem::UnknownRetryNode {
            name: format!("ghost{i}"),
        })
        .collect();
    assert_eq!(problems, expected);
}

#[test]
fn node_name_problems_are_reported_in_declaration_order() {
    let mut g = StateGraph::<Shape>::new();
    let ok = g.add_node_fn("ok", noop);
    g.add_edge(START, &ok);
    g.add_node_fn("zeta|1", noop);
    g.add_node_fn("alpha:1", noop);
    let problems = g.compile().unwrap_err().problems;
    assert_eq!(
        problems,
        [
            BuildProblem::InvalidCharacter {
                name: "zeta|1".into(),
                character: '|',
            },
            BuildProblem::InvalidCharacter {
                name: "alpha:1".into(),
                character: ':',
            },
        ]
    );
}
