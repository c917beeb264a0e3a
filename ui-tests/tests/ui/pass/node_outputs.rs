use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct S {
    #[reducer(add)]
    n: u32,
}

#[derive(Debug)]
struct Oops;
impl std::fmt::Display for Oops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("oops")
    }
}
impl std::error::Error for Oops {}

#[node]
fn plain(_: &S) -> SUpdate {
    S::update().n(1u32)
}

#[node]
async fn with_ctx(_: &S, ctx: &NodeContext) -> SUpdate {
    S::update().n(ctx.step() as u32)
}

#[node]
fn command(_: &S) -> Command<S> {
    Command::goto(END).update(S::update().n(1u32))
}

#[node]
fn commands(_: &S) -> Vec<Command<S>> {
    vec![Command::new().update(S::update().n(1u32))]
}

#[node]
fn maybe(_: &S) -> Option<SUpdate> {
    None
}

#[node]
async fn fallible(_: &S) -> Result<Option<Command<S>>, Oops> {
    Ok(None)
}

#[node(name = "renamed")]
fn named(_: &S) -> SUpdate {
    S::update()
}

#[node]
fn payload(item: &String) -> SUpdate {
    S::update().n(item.len() as u32)
}

pub fn main() {
    let graph = StateGraph::<S>::new()
        .add_node(plain)
        .add_node(with_ctx)
        .add_node(command)
        .add_node(commands)
        .add_node(maybe)
        .add_node(fallible)
        .add_node(named)
        .add_node(payload)
        .add_edge(START, plain)
        .add_edge(plain, with_ctx)
        .add_edge([with_ctx, plain], command)
        .add_edge((command, plain), commands)
        .add_edge(commands, maybe)
        .add_edge(maybe, fallible)
        .add_edge(fallible, named)
        .add_conditional_edges(
            named,
            |_: &S| Route::sends([stategraph::Send::new(payload, "abc".to_string())]),
            [payload],
        )
        .compile()
        .unwrap();
    assert_eq!(named.name(), "renamed");
    let out = graph.invoke_blocking(S::update(), &RunConfig::new()).unwrap();
    assert!(out.values.n > 0);
    let _ = plain::call(&S::default());
}
