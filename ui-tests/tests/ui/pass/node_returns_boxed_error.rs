//! A node may return `Result<_, Box<dyn Error + Send + Sync>>` and use `?` on any
//! error inside; the run reports the node's error.

use stategraph::prelude::*;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(GraphState, Clone, Debug, Default)]
struct S {
    text: String,
    #[reducer(add)]
    n: i64,
}

#[node]
fn parse(s: &S) -> Result<SUpdate, Box<dyn std::error::Error + Send + Sync>> {
    let n: i64 = s.text.parse()?;
    Ok(S::update().n(n))
}

#[node]
async fn check(s: &S) -> Result<Option<SUpdate>, BoxError> {
    if s.n < 0 {
        return Err("negative".into());
    }
    Ok(None)
}

fn graph() -> CompiledGraph<S> {
    StateGraph::<S>::new()
        .add_node(parse)
        .add_node(check)
        .add_edge(START, parse)
        .add_edge(parse, check)
        .add_edge(check, END)
        .compile()
        .expect("compiles")
}

pub fn main() {
    let out = graph()
        .invoke_blocking(S::update().text("42"), &RunConfig::new())
        .expect("runs");
    assert_eq!(out.values.n, 42);

    let err = graph()
        .invoke_blocking(S::update().text("x"), &RunConfig::new())
        .expect_err("`x` is not a number");
    match &err {
        RunError::Node { node, source, .. } => {
            assert_eq!(node, "parse");
            assert!(
                source.downcast_ref::<std::num::ParseIntError>().is_some(),
                "the node's own error is kept: {source:?}"
            );
        }
        other => panic!("expected a node error, got {other}"),
    }

    let err = graph()
        .invoke_blocking(S::update().text("-3"), &RunConfig::new())
        .expect_err("negative");
    assert!(err.to_string().contains("negative"), "{err}");
}
