//! `Send` fan-out: zero Sends schedule nothing, a thousand all run and reduce, and Send
//! tasks apply in emission order after the pull tasks, whatever order they finish in.

use std::time::Duration;

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Batch {
    /// `name@step` (or `name(payload)@step`), in apply order.
    #[reducer(append)]
    trace: Vec<String>,
    /// Items to fan out, in the order to send them.
    items: Vec<u64>,
    /// Each Send task appends its payload.
    #[reducer(append)]
    processed: Vec<u64>,
    #[reducer(add)]
    total: u64,
}

#[node]
fn plan(_s: &Batch, ctx: &NodeContext) -> BatchUpdate {
    Batch::update().trace([format!("{}@{}", ctx.node(), ctx.step())])
}

#[node]
async fn process(item: &u64) -> BatchUpdate {
    let micros = rand::random_range(0..=3_000u64);
    tokio::time::sleep(Duration::from_micros(micros)).await;
    Batch::update().processed([*item]).total(*item)
}

#[node]
fn summarize(_s: &Batch, ctx: &NodeContext) -> BatchUpdate {
    Batch::update().trace([format!("{}@{}", ctx.node(), ctx.step())])
}

fn map_reduce() -> CompiledGraph<Batch> {
    StateGraph::<Batch>::new()
        .add_node(summarize)
        .add_node(process)
        .add_node(plan)
        .add_edge(START, plan)
        .add_conditional_edges(
            plan,
            |s: &Batch| {
                Route::sends(
                    s.items
                        .iter()
                        .map(|&i| stategraph::Send::new(process, i))
                        .collect::<Vec<_>>(),
                )
            },
            [process],
        )
        .add_edge(process, summarize)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn zero_sends_schedule_nothing() {
    let out = map_reduce()
        .invoke(Batch::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.steps, 1);
    assert_eq!(out.values.trace, ["plan@0"]);
    assert!(out.values.processed.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_sends_all_run_and_apply_in_emission_order() {
    // A scrambled emission order: neither payload order nor finish order.
    let items: Vec<u64> = (0..1000u64).map(|i| (i * 7919) % 1000).collect();
    let graph = map_reduce();
    for run in 0..3 {
        let out = graph
            .invoke(Batch::update().items(items.clone()), &RunConfig::new())
            .await
            .unwrap();
        assert_eq!(out.values.processed, items, "run {run}");
        assert_eq!(out.values.total, (0..1000u64).sum::<u64>());
        // All thousand tasks are one superstep; summarize runs once after them.
        assert_eq!(out.values.trace, ["plan@0", "summarize@2"]);
        assert_eq!(out.steps, 3);
    }
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Mail {
    #[reducer(append)]
    trace: Vec<String>,
}

fn visit(ctx: &NodeContext) -> MailUpdate {
    Mail::update().trace([format!("{}@{}", ctx.node(), ctx.step())])
}

#[node]
fn alpha(_s: &Mail, ctx: &NodeContext) -> MailUpdate {
    visit(ctx)
}

#[node]
fn beta(_s: &Mail, ctx: &NodeContext) -> MailUpdate {
    visit(ctx)
}

#[node]
fn zeta(_s: &Mail, ctx: &NodeContext) -> MailUpdate {
    visit(ctx)
}

/// Named to sort before every other node: Send tasks must still apply last.
#[node]
async fn aaa_courier(letter: &String, ctx: &NodeContext) -> MailUpdate {
    // Earlier letters take longer, so they finish last.
    let delay = 5 - u64::try_from(letter.len()).unwrap().min(5);
    tokio::time::sleep(Duration::from_millis(delay)).await;
    Mail::update().trace([format!("{}({letter})@{}", ctx.node(), ctx.step())])
}

#[tokio::test]
async fn sends_from_several_routers_follow_the_emitting_task_order_after_pull_tasks() {
    let graph = StateGraph::<Mail>::new()
        // Added in reverse name order.
        .add_node(zeta)
        .add_node(beta)
        .add_node(alpha)
        .add_node(aaa_courier)
        .add_edge(START, beta)
        .add_edge(START, alpha)
        .add_conditional_edges(
            beta,
            |_: &Mail| {
                Route::sends([stategraph::Send::new(aaa_courier, "b-1".to_string())]).and(zeta)
            },
            (aaa_courier, zeta),
        )
        .add_conditional_edges(
            alpha,
            |_: &Mail| {
                Route::sends([
                    stategraph::Send::new(aaa_courier, "a".to_string()),
                    stategraph::Send::new(aaa_courier, "a-2".to_string()),
                    stategraph::Send::new(aaa_courier, "a-333".to_string()),
                ])
            },
            [aaa_courier],
        )
        .compile()
        .unwrap();

    let out = graph
        .invoke(Mail::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(
        out.values.trace,
        [
            "alpha@0",
            "beta@0",
            "zeta@1",
            "aaa_courier(a)@1",
            "aaa_courier(a-2)@1",
            "aaa_courier(a-333)@1",
            "aaa_courier(b-1)@1",
        ]
    );
}

#[tokio::test]
async fn the_same_payload_sent_twice_runs_twice() {
    let graph = StateGraph::<Mail>::new()
        .add_node(alpha)
        .add_node(aaa_courier)
        .add_edge(START, alpha)
        .add_conditional_edges(
            alpha,
            |_: &Mail| {
                Route::sends(["x", "x"].map(|l| stategraph::Send::new(aaa_courier, l.to_string())))
            },
            [aaa_courier],
        )
        .compile()
        .unwrap();
    let out = graph
        .invoke(Mail::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(
        out.values.trace,
        ["alpha@0", "aaa_courier(x)@1", "aaa_courier(x)@1"]
    );
}

#[tokio::test]
async fn a_send_to_an_undeclared_node_is_a_run_error() {
    let graph = StateGraph::<Mail>::new()
        .add_node(alpha)
        .add_node(zeta)
        .add_node(aaa_courier)
        .add_edge(START, alpha)
        .add_conditional_edges(
            alpha,
            |_: &Mail| Route::sends([stategraph::Send::new(aaa_courier, "lost".to_string())]),
            [zeta],
        )
        .compile()
        .unwrap();
    let err = graph
        .invoke(Mail::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            RunError::UndeclaredRoute { source_node, target, .. }
                if source_node == "alpha" && target == "aaa_courier"
        ),
        "{err:?}"
    );
}

/// Emits one Send through its `Command` (when the node returns); its router emits
/// another afterwards.
#[node]
fn courier_hub(_s: &Mail, ctx: &NodeContext) -> Command<Mail> {
    Command::goto(stategraph::Send::new(aaa_courier, "from-goto".to_string())).update(visit(ctx))
}

#[tokio::test]
async fn a_nodes_goto_sends_are_emitted_before_its_routers_sends() {
    // The node's Command is emitted when the node returns; its router runs after the
    // node. Send tasks apply in emission order, so the goto Send comes first.
    let graph = StateGraph::<Mail>::new()
        .add_node(courier_hub)
        .add_node(aaa_courier)
        .add_edge(START, courier_hub)
        .add_conditional_edges(
            courier_hub,
            |_: &Mail| {
                Route::sends([stategraph::Send::new(
                    aaa_courier,
                    "from-router".to_string(),
                )])
            },
            [aaa_courier],
        )
        .compile()
        .unwrap();
    let out = graph
        .invoke(Mail::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(
        out.values.trace,
        [
            "courier_hub@0",
            "aaa_courier(from-goto)@1",
            "aaa_courier(from-router)@1",
        ]
    );
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Parcel {
    label: String,
    #[reducer(append)]
    delivered: Vec<String>,
}

#[node]
fn sorter(_s: &Parcel) -> Option<ParcelUpdate> {
    None
}

#[node]
fn deliver(p: &Parcel) -> ParcelUpdate {
    Parcel::update().delivered([format!("node got {}", p.label)])
}

fn parcels(labels: &[&str]) -> Vec<Parcel> {
    labels
        .iter()
        .map(|l| Parcel {
            label: (*l).to_string(),
            ..Parcel::default()
        })
        .collect()
}

#[tokio::test]
async fn a_send_to_a_state_node_runs_it_on_the_payload() {
    let graph = StateGraph::<Parcel>::new()
        .add_node(sorter)
        .add_node(deliver)
        .add_edge(START, sorter)
        .add_conditional_edges(
            sorter,
            |_: &Parcel| {
                Route::sends(
                    parcels(&["p1", "p2"])
                        .into_iter()
                        .map(|p| stategraph::Send::new(deliver, p)),
                )
            },
            [deliver],
        )
        .compile()
        .unwrap();
    let out = graph
        .invoke(Parcel::update().label("state"), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.delivered, ["node got p1", "node got p2"]);
}

#[tokio::test]
async fn a_send_to_a_closure_node_runs_it_on_the_payload() {
    let mut g = StateGraph::<Parcel>::new();
    let deliver_fn = g.add_node_fn("deliver_fn", |p: &Parcel| {
        Parcel::update().delivered([format!("closure got {}", p.label)])
    });
    let target = deliver_fn.clone();
    g.add_node(sorter)
        .add_edge(START, sorter)
        .add_conditional_edges(
            sorter,
            move |_: &Parcel| {
                Route::sends(
                    parcels(&["p1", "p2"])
                        .into_iter()
                        .map(|p| stategraph::Send::new(&target, p)),
                )
            },
            [&deliver_fn],
        );
    let graph = g.compile().unwrap();
    let out = graph
        .invoke(Parcel::update().label("state"), &RunConfig::new())
        .await
        .unwrap();
    // Like any Send target, the closure's input is the payload, not the state.
    assert_eq!(out.values.delivered, ["closure got p1", "closure got p2"]);
}
