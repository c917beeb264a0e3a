//! Node caching: a report pipeline runs twice on one thread. The second run changes
//! only the audience, so only the nodes that read it (and those downstream whose
//! input then changed) run; the rest are served from the cache, which lives in the
//! same SQLite file as the checkpoints.
//!
//! Run it with `cargo run -p stategraph-examples --example caching`
//! (`-- --db <path>` keeps the database; by default a temporary file is used).

use std::time::Duration;

use futures::StreamExt;
use stategraph::cache::CachePolicy;
use stategraph::prelude::*;
use stategraph_sqlite::SqliteSaver;

#[derive(GraphState, Clone, Debug, Default)]
struct Report {
    topic: String,
    audience: String,
    /// What `gather` found.
    facts: Vec<String>,
    /// What `analyze` made of them.
    analysis: String,
    /// `analysis` worded for `audience`.
    draft: String,
}

/// The slow part: reads only the topic.
#[node(reads(topic))]
async fn gather(r: &Report) -> ReportUpdate {
    tokio::time::sleep(Duration::from_millis(300)).await;
    Report::update().facts(vec![
        format!("{} is typed", r.topic),
        format!("{} is durable", r.topic),
    ])
}

#[node(reads(facts))]
async fn analyze(r: &Report) -> ReportUpdate {
    tokio::time::sleep(Duration::from_millis(200)).await;
    Report::update().analysis(format!("{} facts, all good", r.facts.len()))
}

#[node(reads(analysis, audience))]
fn write(r: &Report) -> ReportUpdate {
    Report::update().draft(format!("Dear {}: {}.", r.audience, r.analysis))
}

async fn run(
    graph: &CompiledGraph<Report>,
    thread: &RunConfig,
    input: ReportUpdate,
) -> Result<Report, Box<dyn std::error::Error>> {
    let started = std::time::Instant::now();
    let mut events = graph.stream(input, thread, StreamMode::UPDATES);
    while let Some(event) = events.next().await {
        if let StreamEvent::Updates { node, cached, .. } = event? {
            let how = if cached { "served from cache" } else { "ran" };
            println!("  {node:<8} {how}");
        }
    }
    println!("  ({} ms)", started.elapsed().as_millis());
    let state = graph
        .get_state(thread)
        .await?
        .ok_or("the thread was not saved")?;
    Ok(state.values)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = tempfile_dir()?;
    let path = match args.iter().position(|a| a == "--db") {
        Some(i) => args.get(i + 1).ok_or("--db needs a path")?.into(),
        None => dir.join("caching.sqlite"),
    };
    let saver = SqliteSaver::open(&path)?;
    let graph = StateGraph::<Report>::new()
        .add_node(gather)
        .add_node(analyze)
        .add_node(write)
        .add_edge(START, gather)
        .add_edge(gather, analyze)
        .add_edge(analyze, write)
        .add_edge(write, END)
        .cache([gather, analyze, write], CachePolicy::new())
        .compile_with(
            CompileOptions::new()
                .checkpointer(saver.clone())
                .cache(saver),
        )?;
    let thread = RunConfig::new().thread("report");
    graph.clear_cache(&thread).await?;

    println!("first run:");
    run(
        &graph,
        &thread,
        Report::update().topic("stategraph").audience("engineers"),
    )
    .await?;

    println!("second run, new audience:");
    let report = run(
        &graph,
        &thread,
        Report::update().topic("stategraph").audience("managers"),
    )
    .await?;
    println!("draft: {}", report.draft);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A fresh directory under the system's temporary directory.
fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("stategraph-caching-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
