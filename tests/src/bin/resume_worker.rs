//! A process that starts or resumes the refund approval of the resume-validation
//! tests, so a resume can come from a process that never ran the node.
//!
//! ```text
//! resume_worker <sqlite-file> start          runs until the approval pauses
//! resume_worker <sqlite-file> resume <json>  answers the approval with <json>
//! ```
//!
//! Prints `paused`, `approved by <name>` or `refused: <error>` (exit code 4 for a
//! refused answer, 1 for any other error).

use std::process::ExitCode;

use serde_json::json;
use stategraph::prelude::*;
use stategraph_sqlite::SqliteSaver;

#[derive(GraphState, Clone, Debug, Default)]
struct Refund {
    amount: u32,
    approved_by: Option<String>,
}

#[node]
fn approve(r: &Refund, ctx: &NodeContext) -> Result<RefundUpdate, NodeError> {
    let who: String = ctx.interrupt(json!({ "approve refund of": r.amount }))?;
    Ok(Refund::update().approved_by(Some(who)))
}

/// The run's own error, or why the worker could not run it.
enum Failure {
    Run(RunError),
    Setup(String),
}

async fn run(args: &[String]) -> Result<RunOutput<Refund>, Failure> {
    let saver = SqliteSaver::open(&args[1]).map_err(|e| Failure::Run(RunError::Checkpoint(e)))?;
    let graph = StateGraph::<Refund>::new()
        .add_node(approve)
        .add_edge(START, approve)
        .compile_with(CompileOptions::new().checkpointer(saver))
        .map_err(|e| Failure::Setup(e.to_string()))?;
    let thread = RunConfig::new().thread("refund");
    let result = match (args[2].as_str(), args.get(3)) {
        ("start", None) => graph.invoke(Refund::update().amount(120u32), &thread).await,
        ("resume", Some(answer)) => {
            let answer: serde_json::Value = serde_json::from_str(answer)
                .map_err(|e| Failure::Setup(format!("the answer is not JSON: {e}")))?;
            graph.invoke(Command::resume(answer), &thread).await
        }
        _ => {
            return Err(Failure::Setup(
                "usage: resume_worker <sqlite-file> start|resume <json>".into(),
            ));
        }
    };
    result.map_err(Failure::Run)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: resume_worker <sqlite-file> start|resume <json>");
        return ExitCode::from(2);
    }
    match run(&args).await {
        Ok(out) if !out.interrupts.is_empty() => {
            println!("paused");
            ExitCode::SUCCESS
        }
        Ok(out) => {
            println!("approved by {}", out.values.approved_by.unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(Failure::Run(e @ RunError::InvalidResume { .. })) => {
            println!("refused: {e}");
            ExitCode::from(4)
        }
        Err(Failure::Run(e)) => {
            println!("error: {e}");
            ExitCode::from(1)
        }
        Err(Failure::Setup(message)) => {
            println!("error: {message}");
            ExitCode::from(1)
        }
    }
}
