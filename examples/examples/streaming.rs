//! Streams a run's progress to the terminal as it happens: each node's update when
//! its step commits, live progress messages from inside a node, and the state after
//! every superstep.
//!
//! Run it with `cargo run -p stategraph-examples --example streaming`.

use std::time::Duration;

use futures::StreamExt;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Build {
    #[reducer(append)]
    artifacts: Vec<String>,
    #[reducer(add)]
    warnings: u32,
}

#[node]
async fn fetch(_: &Build, ctx: &NodeContext) -> Result<BuildUpdate, NodeError> {
    for crate_name in ["serde", "tokio", "futures"] {
        tokio::time::sleep(Duration::from_millis(40)).await;
        ctx.emit(format!("downloaded {crate_name}")).await?;
    }
    Ok(Build::update().artifacts(["vendor/"]))
}

#[node]
async fn compile(_: &Build, ctx: &NodeContext) -> Result<BuildUpdate, NodeError> {
    for percent in [25, 50, 75, 100] {
        tokio::time::sleep(Duration::from_millis(40)).await;
        ctx.emit(serde_json::json!({ "compiled_percent": percent }))
            .await?;
    }
    Ok(Build::update().artifacts(["target/app"]).warnings(2u32))
}

#[node]
fn package(build: &Build) -> BuildUpdate {
    Build::update().artifacts([format!("app.tar.gz ({} files)", build.artifacts.len())])
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let graph = StateGraph::<Build>::new()
        .add_node(fetch)
        .add_node(compile)
        .add_node(package)
        .add_edge(START, fetch)
        .add_edge(fetch, compile)
        .add_edge(compile, package)
        .compile()?;

    let modes = StreamMode::UPDATES | StreamMode::CUSTOM | StreamMode::VALUES;
    let mut events = graph.stream(Build::update(), &RunConfig::new(), modes);
    let started = std::time::Instant::now();
    while let Some(event) = events.next().await {
        let at = started.elapsed().as_millis();
        match event? {
            StreamEvent::Custom { node, value } => println!("{at:>5} ms  {node:<8} … {value}"),
            StreamEvent::Updates { node, updates, .. } => {
                println!("{at:>5} ms  {node:<8} done: {updates:?}")
            }
            StreamEvent::Values { step, values } => println!(
                "{at:>5} ms  step {step:>2} state: {} artifacts, {} warnings",
                values.artifacts.len(),
                values.warnings
            ),
            other => println!("{at:>5} ms  {:?}", other.mode()),
        }
    }
    Ok(())
}
