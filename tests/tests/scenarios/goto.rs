//! `Command::goto` adds destinations to a node's static edges; `goto(END)` adds
//! nothing; commands carry updates, loops and `Send`s.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Jump {
    /// `name@step`, in apply order.
    #[reducer(append)]
    trace: Vec<String>,
    #[reducer(add)]
    count: u32,
    /// Last value.
    note: String,
}

fn visit(ctx: &NodeContext) -> JumpUpdate {
    Jump::update().trace([format!("{}@{}", ctx.node(), ctx.step())])
}

macro_rules! tracing_nodes {
    ($($name:ident),* $(,)?) => {$(
        #[node]
        fn $name(_s: &Jump, ctx: &NodeContext) -> JumpUpdate {
            visit(ctx)
        }
    )*};
}

tracing_nodes!(y, z);

/// Static edge to `y` (declared in the graph) plus `goto(z)`.
#[node]
fn x_goto_z(_s: &Jump, ctx: &NodeContext) -> Command<Jump> {
    Command::goto(z).update(visit(ctx).note("x chose z"))
}

/// Static edge to `y` plus `goto(END)`.
#[node]
fn x_goto_end(_s: &Jump, ctx: &NodeContext) -> Command<Jump> {
    Command::goto(END).update(visit(ctx))
}

/// Static edge to `y` plus `goto(y)`.
#[node]
fn x_goto_y(_s: &Jump, ctx: &NodeContext) -> Command<Jump> {
    Command::goto(y).update(visit(ctx))
}

#[tokio::test]
async fn goto_adds_to_the_static_edges() {
    let graph = StateGraph::<Jump>::new()
        .add_node(x_goto_z)
        .add_node(y)
        .add_node(z)
        .add_edge(START, x_goto_z)
        .add_edge(x_goto_z, y)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Jump::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["x_goto_z@0", "y@1", "z@1"]);
    assert_eq!(out.values.note, "x chose z");
    assert_eq!(out.steps, 2);
}

#[tokio::test]
async fn goto_end_adds_nothing() {
    // The static edge still fires.
    let graph = StateGraph::<Jump>::new()
        .add_node(x_goto_end)
        .add_node(y)
        .add_edge(START, x_goto_end)
        .add_edge(x_goto_end, y)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Jump::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["x_goto_end@0", "y@1"]);

    // Without static edges, goto(END) ends the run.
    let graph = StateGraph::<Jump>::new()
        .add_node(x_goto_end)
        .add_edge(START, x_goto_end)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Jump::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["x_goto_end@0"]);
    assert_eq!(out.steps, 1);
}

#[tokio::test]
async fn goto_to_a_node_the_static_edge_already_schedules_runs_it_once() {
    let graph = StateGraph::<Jump>::new()
        .add_node(x_goto_y)
        .add_node(y)
        .add_edge(START, x_goto_y)
        .add_edge(x_goto_y, y)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Jump::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["x_goto_y@0", "y@1"]);
}

/// Several commands: their updates apply in emission order, their gotos add up.
#[node]
fn several(_s: &Jump, ctx: &NodeContext) -> Vec<Command<Jump>> {
    vec![
        Command::goto(z).update(Jump::update().trace([format!("first@{}", ctx.step())])),
        Command::new().update(Jump::update().trace([format!("second@{}", ctx.step())])),
        Command::goto(y).and_goto(END),
    ]
}

#[tokio::test]
async fn a_vec_of_commands_applies_updates_in_order_and_unions_gotos() {
    let graph = StateGraph::<Jump>::new()
        .add_node(several)
        .add_node(y)
        .add_node(z)
        .add_edge(START, several)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Jump::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["first@0", "second@0", "y@1", "z@1"]);
}

/// Loops on itself through `goto` until `count` reaches 3.
#[node]
async fn again(s: &Jump, ctx: &NodeContext) -> Command<Jump> {
    let cmd = Command::new().update(visit(ctx).count(1));
    if s.count + 1 < 3 {
        cmd.and_goto(again)
    } else {
        cmd.and_goto(END)
    }
}

#[tokio::test]
async fn goto_can_loop_and_counts_towards_the_recursion_limit() {
    let graph = StateGraph::<Jump>::new()
        .add_node(again)
        .add_edge(START, again)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Jump::update(), &RunConfig::new().recursion_limit(3))
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["again@0", "again@1", "again@2"]);
    assert_eq!(out.values.count, 3);

    let err = graph
        .invoke(Jump::update(), &RunConfig::new().recursion_limit(2))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::RecursionLimit { limit: 2 }),
        "{err:?}"
    );
}

#[node]
fn parcel(item: &u32, ctx: &NodeContext) -> JumpUpdate {
    Jump::update()
        .trace([format!("{}({item})@{}", ctx.node(), ctx.step())])
        .count(*item)
}

#[node]
fn dispatch(_s: &Jump, ctx: &NodeContext) -> Command<Jump> {
    Command::goto(stategraph::Send::new(parcel, 7u32))
        .and_goto(stategraph::Send::new(parcel, 5u32))
        .and_goto(y)
        .update(visit(ctx))
}

#[tokio::test]
async fn goto_can_send_payloads() {
    let graph = StateGraph::<Jump>::new()
        .add_node(dispatch)
        .add_node(parcel)
        .add_node(y)
        .add_edge(START, dispatch)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Jump::update(), &RunConfig::new())
        .await
        .unwrap();
    // Pull task `y` first, then the Sends in emission order.
    assert_eq!(
        out.values.trace,
        ["dispatch@0", "y@1", "parcel(7)@1", "parcel(5)@1"]
    );
    assert_eq!(out.values.count, 12);
}

#[node]
fn maybe(s: &Jump, ctx: &NodeContext) -> Option<Command<Jump>> {
    (s.count > 0).then(|| Command::goto(z).update(visit(ctx)))
}

#[tokio::test]
async fn none_writes_nothing_and_goes_nowhere_extra() {
    let graph = StateGraph::<Jump>::new()
        .add_node(maybe)
        .add_node(z)
        .add_edge(START, maybe)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Jump::update(), &RunConfig::new())
        .await
        .unwrap();
    assert!(out.values.trace.is_empty());
    assert_eq!(out.steps, 1);

    let out = graph
        .invoke(Jump::update().count(1), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["maybe@0", "z@1"]);
}

#[tokio::test]
async fn goto_to_a_node_outside_the_graph_is_a_run_error() {
    let mut elsewhere = StateGraph::<Jump>::new();
    let stranger = elsewhere.add_node_fn("stranger", |_: &Jump| Jump::update());

    let mut g = StateGraph::<Jump>::new();
    let jump = g.add_node_fn("jump", move |_: &Jump| Command::goto(&stranger));
    g.add_edge(START, &jump);
    let graph = g.compile().unwrap();

    let err = graph
        .invoke(Jump::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            RunError::UnknownNode { name, from } if name == "stranger" && from == "jump"
        ),
        "{err:?}"
    );
}
