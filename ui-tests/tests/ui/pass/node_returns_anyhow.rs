//! A node may return `Result<_, anyhow::Error>`; `?` on an `anyhow::Error` also works
//! in code returning `NodeError`, and with the `anyhow` feature `?` on a `NodeError`
//! works in code returning `anyhow::Result`.

use anyhow::Context as _;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct S {
    text: String,
    #[reducer(add)]
    n: i64,
}

#[node]
fn parse(s: &S) -> anyhow::Result<SUpdate> {
    let n: i64 = s.text.parse().context("`text` must be a number")?;
    Ok(S::update().n(n))
}

fn double(n: i64) -> anyhow::Result<i64> {
    n.checked_mul(2).context("overflow")
}

#[node]
async fn twice(s: &S) -> Result<SUpdate, NodeError> {
    Ok(S::update().n(double(s.n)?))
}

fn checked(n: i64) -> Result<i64, NodeError> {
    if n < 0 {
        return Err("negative".into());
    }
    Ok(n)
}

fn via_anyhow(n: i64) -> anyhow::Result<i64> {
    Ok(checked(n)?)
}

pub fn main() {
    let graph = StateGraph::<S>::new()
        .add_node(parse)
        .add_node(twice)
        .add_edge(START, parse)
        .add_edge(parse, twice)
        .add_edge(twice, END)
        .compile()
        .expect("compiles");
    let out = graph
        .invoke_blocking(S::update().text("21"), &RunConfig::new())
        .expect("runs");
    assert_eq!(out.values.n, 63);
    assert_eq!(via_anyhow(-1).unwrap_err().to_string(), "negative");

    let err = graph
        .invoke_blocking(S::update().text("x"), &RunConfig::new())
        .expect_err("`x` is not a number");
    let RunError::Node { node, source, .. } = &err else {
        panic!("expected a node error, got {err}");
    };
    assert_eq!(node, "parse");
    assert_eq!(source.to_string(), "`text` must be a number");
}
