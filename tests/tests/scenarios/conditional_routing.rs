//! Conditional edges: routing on state (including `END` and several targets), routers
//! at `START`, the state a router sees, and routes outside the declared targets.

use std::sync::{Arc, Mutex};

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Ticket {
    #[reducer(append)]
    trace: Vec<String>,
    priority: u32,
    /// Written only by `left`.
    left_mark: String,
    /// Written only by `right`.
    right_mark: String,
    #[reducer(add)]
    total: u32,
}

fn mark(ctx: &NodeContext) -> TicketUpdate {
    Ticket::update().trace([format!("{}@{}", ctx.node(), ctx.step())])
}

#[node]
fn triage(_s: &Ticket, ctx: &NodeContext) -> TicketUpdate {
    mark(ctx)
}

#[node]
fn urgent(_s: &Ticket, ctx: &NodeContext) -> TicketUpdate {
    mark(ctx)
}

#[node]
fn normal(_s: &Ticket, ctx: &NodeContext) -> TicketUpdate {
    mark(ctx)
}

#[node]
fn audit(_s: &Ticket, ctx: &NodeContext) -> TicketUpdate {
    mark(ctx)
}

#[node]
fn left(_s: &Ticket, ctx: &NodeContext) -> TicketUpdate {
    mark(ctx).left_mark("left wrote this").total(1)
}

#[node]
async fn right(_s: &Ticket, ctx: &NodeContext) -> TicketUpdate {
    tokio::task::yield_now().await;
    mark(ctx).right_mark("right wrote this").total(10)
}

fn by_priority(s: &Ticket) -> Route<Ticket> {
    match s.priority {
        0 => Route::end(),
        1..=5 => Route::to(normal),
        6..=9 => Route::to(urgent),
        _ => Route::to_all([urgent, audit]),
    }
}

fn triage_graph() -> CompiledGraph<Ticket> {
    StateGraph::<Ticket>::new()
        .add_node(triage)
        .add_node(urgent)
        .add_node(normal)
        .add_node(audit)
        .add_edge(START, triage)
        .add_conditional_edges(triage, by_priority, (urgent, normal, audit, END))
        .add_edge(urgent, END)
        .add_edge(normal, END)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn router_picks_a_node_several_nodes_or_end() {
    let graph = triage_graph();
    let run = |priority| {
        let graph = graph.clone();
        async move {
            graph
                .invoke(Ticket::update().priority(priority), &RunConfig::new())
                .await
                .unwrap()
        }
    };

    let out = run(0).await;
    assert_eq!(out.values.trace, ["triage@0"]);
    assert_eq!(out.steps, 1);

    let out = run(3).await;
    assert_eq!(out.values.trace, ["triage@0", "normal@1"]);
    assert_eq!(out.steps, 2);

    let out = run(7).await;
    assert_eq!(out.values.trace, ["triage@0", "urgent@1"]);

    // Two targets run together in the next superstep, in name order.
    let out = run(42).await;
    assert_eq!(out.values.trace, ["triage@0", "audit@1", "urgent@1"]);
    assert_eq!(out.steps, 2);
}

#[tokio::test]
async fn router_at_start_sees_the_input() {
    let graph = StateGraph::<Ticket>::new()
        .add_node(urgent)
        .add_node(normal)
        .add_node(audit)
        .add_conditional_edges(START, by_priority, (urgent, normal, audit, END))
        .compile()
        .unwrap();

    let out = graph
        .invoke(Ticket::update().priority(8), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["urgent@0"]);

    // Routing straight to END runs no superstep at all.
    let out = graph
        .invoke(Ticket::update().priority(0), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.steps, 0);
    assert!(out.values.trace.is_empty());
}

#[tokio::test]
async fn each_router_sees_pre_step_state_plus_only_its_own_tasks_writes() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = |who: &'static str, seen: &Arc<Mutex<Vec<String>>>| {
        let seen = seen.clone();
        move |s: &Ticket| {
            seen.lock().unwrap().push(format!(
                "router after {who}: left_mark={:?} right_mark={:?} total={} trace={:?}",
                s.left_mark, s.right_mark, s.total, s.trace
            ));
            // Route on what this router can see: its own write only.
            let own = if who == "left" {
                &s.left_mark
            } else {
                &s.right_mark
            };
            let sibling = if who == "left" {
                &s.right_mark
            } else {
                &s.left_mark
            };
            if !own.is_empty() && sibling.is_empty() {
                Route::to(audit)
            } else {
                Route::end()
            }
        }
    };

    let graph = StateGraph::<Ticket>::new()
        .add_node(right)
        .add_node(left)
        .add_node(audit)
        .add_edge(START, left)
        .add_edge(START, right)
        .add_conditional_edges(right, record("right", &seen), (audit, END))
        .add_conditional_edges(left, record("left", &seen), (audit, END))
        .compile()
        .unwrap();

    let out = graph
        .invoke(Ticket::update().total(100), &RunConfig::new())
        .await
        .unwrap();

    // Routers run in task order (name order): left, then right.
    assert_eq!(
        *seen.lock().unwrap(),
        [
            r#"router after left: left_mark="left wrote this" right_mark="" total=101 trace=["left@0"]"#,
            r#"router after right: left_mark="" right_mark="right wrote this" total=110 trace=["right@0"]"#,
        ]
    );
    // Both routers chose `audit` (scheduled once), and the committed state has both writes.
    assert_eq!(out.values.trace, ["left@0", "right@0", "audit@1"]);
    assert_eq!(out.values.left_mark, "left wrote this");
    assert_eq!(out.values.right_mark, "right wrote this");
    assert_eq!(out.values.total, 111);
}

#[tokio::test]
async fn a_lone_router_sees_its_own_task_writes() {
    let seen: Arc<Mutex<Vec<u32>>> = Arc::default();
    let log = seen.clone();
    let graph = StateGraph::<Ticket>::new()
        .add_node(left)
        .add_edge(START, left)
        .add_conditional_edges(
            left,
            move |s: &Ticket| {
                log.lock().unwrap().push(s.total);
                Route::end()
            },
            END,
        )
        .compile()
        .unwrap();
    graph
        .invoke(Ticket::update().total(5), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), [6]);
}

#[tokio::test]
async fn route_to_an_undeclared_target_is_a_run_error() {
    let graph = StateGraph::<Ticket>::new()
        .add_node(triage)
        .add_node(urgent)
        .add_node(normal)
        .add_edge(START, triage)
        // `normal` exists but is not declared for this router.
        .add_conditional_edges(
            triage,
            |s: &Ticket| {
                if s.priority > 5 {
                    Route::to(urgent)
                } else {
                    Route::to(normal)
                }
            },
            (urgent, END),
        )
        .compile()
        .unwrap();

    // The declared route works.
    let out = graph
        .invoke(Ticket::update().priority(9), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["triage@0", "urgent@1"]);

    let err = graph
        .invoke(Ticket::update().priority(1), &RunConfig::new())
        .await
        .unwrap_err();
    match err {
        RunError::UndeclaredRoute {
            source_node,
            target,
            declared,
        } => {
            assert_eq!(source_node, "triage");
            assert_eq!(target, "normal");
            assert_eq!(declared, ["urgent", "END"]);
        }
        other => panic!("expected UndeclaredRoute, got {other:?}"),
    }
}

#[tokio::test]
async fn routing_to_end_without_declaring_it_is_a_run_error() {
    let graph = StateGraph::<Ticket>::new()
        .add_node(triage)
        .add_node(urgent)
        .add_edge(START, triage)
        .add_conditional_edges(triage, |_: &Ticket| Route::end(), [urgent])
        .compile()
        .unwrap();
    let err = graph
        .invoke(Ticket::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            RunError::UndeclaredRoute { source_node, target, declared }
                if source_node == "triage" && target == "END" && declared == &["urgent"]
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn undeclared_route_from_start_names_start() {
    let graph = StateGraph::<Ticket>::new()
        .add_node(urgent)
        .add_node(normal)
        .add_conditional_edges(START, |_: &Ticket| Route::to(normal), [urgent])
        .compile()
        .unwrap();
    let err = graph
        .invoke(Ticket::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            RunError::UndeclaredRoute { source_node, target, .. }
                if source_node == "START" && target == "normal"
        ),
        "{err:?}"
    );
}
