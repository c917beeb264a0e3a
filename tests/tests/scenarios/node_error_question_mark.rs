//! `?` works in nodes whatever their error type:
//! - in a node returning `Result<_, NodeError>`, on `std::io::Error`,
//!   `serde_json::Error`, a boxed error, `anyhow::Error` and a message;
//! - `ctx.interrupt(..)?` and `ctx.emit(..)?` in nodes returning `NodeError`,
//!   `Box<dyn Error + Send + Sync>`, `anyhow::Error` or an error type of one's own:
//!   the run pauses and resumes the same way in each;
//! - `?` on a `NodeError` in code returning `Box<dyn Error>`.

use std::error::Error;

use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;
use stategraph::{ContextError, NodeDef, RunError};

#[derive(GraphState, Clone, Debug, Default)]
struct Job {
    path: String,
    json: String,
    boxed: bool,
    anyhow: bool,
    #[reducer(add)]
    total: u64,
    #[reducer(append)]
    log: Vec<String>,
}

#[node]
fn load(job: &Job) -> Result<JobUpdate, NodeError> {
    let mut total = 0;
    if !job.path.is_empty() {
        total += std::fs::read_to_string(&job.path)?.len() as u64; // std::io::Error
    }
    if !job.json.is_empty() {
        total += serde_json::from_str::<u64>(&job.json)?; // serde_json::Error
    }
    if job.boxed {
        let boxed: Box<dyn Error + Send + Sync> = "a boxed error".into();
        Err(boxed)?;
    }
    if job.anyhow {
        Err(anyhow::anyhow!("an anyhow error"))?;
    }
    if total == 0 {
        return Err(format!("nothing to load for {job:?}").into());
    }
    Ok(Job::update().total(total))
}

fn run_load(job: JobUpdate) -> Result<Job, RunError> {
    let graph = StateGraph::<Job>::new()
        .add_node(load)
        .add_edge(START, load)
        .compile()
        .expect("compiles");
    graph
        .invoke_blocking(job, &RunConfig::new())
        .map(|out| out.values)
}

fn node_error(job: JobUpdate) -> String {
    let err = run_load(job).expect_err("the node fails");
    let source = err.node_error().expect("a node error");
    assert!(matches!(&err, RunError::Node { node, .. } if node == "load"));
    source.to_string()
}

#[test]
fn question_mark_converts_every_error_kind_into_node_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("input.txt");
    std::fs::write(&file, "12345").expect("write");
    let ok = run_load(
        Job::update()
            .path(file.display().to_string())
            .json("10".to_string()),
    )
    .expect("runs");
    assert_eq!(ok.total, 15);

    let err = run_load(Job::update().path("/no/such/file".to_string())).expect_err("io");
    let source = err.node_error().expect("a node error");
    let io = source
        .downcast_ref::<std::io::Error>()
        .expect("the io::Error itself");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);

    let err = run_load(Job::update().json("not json".to_string())).expect_err("json");
    assert!(
        err.node_error()
            .and_then(|e| e.downcast_ref::<serde_json::Error>())
            .is_some()
    );

    assert_eq!(node_error(Job::update().boxed(true)), "a boxed error");
    assert_eq!(node_error(Job::update().anyhow(true)), "an anyhow error");
    assert!(node_error(Job::update()).starts_with("nothing to load"));
}

#[test]
fn question_mark_on_a_node_error_works_in_code_returning_a_boxed_error() {
    fn main_like() -> Result<(), Box<dyn Error>> {
        load::call(&Job::default())?;
        Ok(())
    }
    let err = main_like().expect_err("nothing to load");
    assert!(err.to_string().starts_with("nothing to load"), "{err}");
}

/// An error type of one's own, with the context's error as a source.
#[derive(Debug, thiserror::Error)]
enum ReviewError {
    #[error("the review was interrupted")]
    Context(#[from] ContextError),
}

/// The same, forwarding to it.
#[derive(Debug, thiserror::Error)]
enum Transparent {
    #[error(transparent)]
    Context(#[from] ContextError),
}

#[node]
async fn with_node_error(_: &Job, ctx: &NodeContext) -> Result<JobUpdate, NodeError> {
    ctx.emit("asking").await?;
    let answer: String = ctx.interrupt("approve?")?;
    Ok(Job::update().log([format!("node error: {answer}")]))
}

#[node]
async fn with_boxed(_: &Job, ctx: &NodeContext) -> Result<JobUpdate, Box<dyn Error + Send + Sync>> {
    ctx.emit("asking").await?;
    let answer: String = ctx.interrupt("approve?")?;
    Ok(Job::update().log([format!("boxed: {answer}")]))
}

#[node]
async fn with_anyhow(_: &Job, ctx: &NodeContext) -> anyhow::Result<JobUpdate> {
    ctx.emit("asking").await?;
    let answer: String = ctx.interrupt("approve?")?;
    Ok(Job::update().log([format!("anyhow: {answer}")]))
}

#[node]
fn with_own(_: &Job, ctx: &NodeContext) -> Result<JobUpdate, ReviewError> {
    let answer: String = ctx.interrupt("approve?")?;
    Ok(Job::update().log([format!("own: {answer}")]))
}

#[node]
fn with_transparent(_: &Job, ctx: &NodeContext) -> Result<JobUpdate, Transparent> {
    let answer: String = ctx.interrupt("approve?")?;
    Ok(Job::update().log([format!("transparent: {answer}")]))
}

async fn pauses_then_resumes(node: NodeDef<Job>, expected: &str) {
    let graph = StateGraph::<Job>::new()
        .add_node(node)
        .add_edge(START, node)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .expect("compiles");
    let config = RunConfig::new().thread(expected);
    let paused = graph.invoke(Job::update(), &config).await.expect("pauses");
    assert_eq!(paused.interrupts.len(), 1, "{expected}: the node paused");
    assert_eq!(paused.interrupts[0].value, "approve?");
    let done = graph
        .invoke(Command::resume("yes"), &config)
        .await
        .expect("resumes");
    assert!(done.interrupts.is_empty());
    assert_eq!(done.values.log, [format!("{expected}: yes")]);
}

#[tokio::test]
async fn ctx_calls_propagate_with_question_mark_whatever_the_node_s_error_type() {
    pauses_then_resumes(with_node_error, "node error").await;
    pauses_then_resumes(with_boxed, "boxed").await;
    pauses_then_resumes(with_anyhow, "anyhow").await;
    pauses_then_resumes(with_own, "own").await;
    pauses_then_resumes(with_transparent, "transparent").await;
}

#[test]
fn a_pause_inside_an_own_error_type_is_still_recognized_as_a_pause() {
    // Without a checkpointer a pause cannot be kept: the run says so, rather than
    // reporting the wrapped pause as the node failing.
    let graph = StateGraph::<Job>::new()
        .add_node(with_own)
        .add_edge(START, with_own)
        .compile()
        .expect("compiles");
    let err = graph
        .invoke_blocking(Job::update(), &RunConfig::new())
        .expect_err("an interrupt needs a checkpointer");
    assert!(
        matches!(err, RunError::InterruptWithoutCheckpointer { .. }),
        "{err}"
    );
}
