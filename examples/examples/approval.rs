//! An expense approval that waits for a human, across processes.
//!
//! The first run submits an expense, reviews it and pauses for a decision; the thread
//! is saved in a SQLite file. A later run — a new process — answers and finishes:
//!
//! ```text
//! cargo run -p stategraph-examples --example approval
//! cargo run -p stategraph-examples --example approval -- --decide approve
//! ```
//!
//! Options: `--db PATH` (default `approval.sqlite` in the system temp directory),
//! `--thread ID` (default `expense-1`), `--decide approve|reject`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::json;
use stategraph::prelude::*;
use stategraph_sqlite::SqliteSaver;

#[derive(GraphState, Clone, Debug, Default)]
struct Expense {
    description: String,
    amount_cents: u64,
    decision: Option<Decision>,
    #[reducer(append)]
    log: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Decision {
    Approve,
    Reject,
}

#[node]
fn check(expense: &Expense) -> ExpenseUpdate {
    let note = if expense.amount_cents > 100_000 {
        "over the 1000.00 limit"
    } else {
        "within limits"
    };
    Expense::update().log([format!("checked: {note}")])
}

/// Pauses until a person decides; on resume, `interrupt` returns the decision.
#[node]
fn review(expense: &Expense, ctx: &NodeContext) -> Result<ExpenseUpdate, NodeError> {
    let decision: Decision = ctx.interrupt(json!({
        "question": "approve this expense?",
        "description": expense.description,
        "amount": format!("{}.{:02}", expense.amount_cents / 100, expense.amount_cents % 100),
    }))?;
    Ok(Expense::update()
        .decision(Some(decision))
        .log([format!("reviewed: {decision:?}")]))
}

#[node]
fn pay(_: &Expense) -> ExpenseUpdate {
    Expense::update().log(["paid"])
}

#[node]
fn notify(_: &Expense) -> ExpenseUpdate {
    Expense::update().log(["submitter notified of the rejection"])
}

fn route(expense: &Expense) -> Route<Expense> {
    match expense.decision {
        Some(Decision::Approve) => Route::to(pay),
        _ => Route::to(notify),
    }
}

struct Args {
    db: PathBuf,
    thread: String,
    decide: Option<Decision>,
}

fn args() -> Result<Args, String> {
    let mut args = Args {
        db: std::env::temp_dir().join("approval.sqlite"),
        thread: "expense-1".into(),
        decide: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--db" => args.db = PathBuf::from(value()?),
            "--thread" => args.thread = value()?,
            "--decide" => {
                args.decide = Some(match value()?.as_str() {
                    "approve" => Decision::Approve,
                    "reject" => Decision::Reject,
                    other => return Err(format!("--decide takes approve or reject, not {other}")),
                })
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(args)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
    let graph = StateGraph::<Expense>::new()
        .add_node(check)
        .add_node(review)
        .add_node(pay)
        .add_node(notify)
        .add_edge(START, check)
        .add_edge(check, review)
        .add_conditional_edges(review, route, (pay, notify))
        .compile_with(CompileOptions::new().checkpointer(SqliteSaver::open(&args.db)?))?;
    let thread = RunConfig::new().thread(args.thread.as_str());

    let out = match (graph.get_state(&thread).await?, args.decide) {
        (None, _) => {
            println!("submitting a new expense on thread `{}`", args.thread);
            let input = Expense::update()
                .description("conference travel")
                .amount_cents(184_250u64);
            graph.invoke(input, &thread).await?
        }
        (Some(state), None) if !state.interrupts.is_empty() => {
            println!("thread `{}` is waiting for a decision", args.thread);
            graph.invoke(None, &thread).await?
        }
        (Some(_), Some(decision)) => {
            println!("resuming thread `{}` with {decision:?}", args.thread);
            graph.invoke(Command::resume(decision), &thread).await?
        }
        (Some(state), None) => {
            println!(
                "thread `{}` already finished: {:?}",
                args.thread, state.values.log
            );
            return Ok(());
        }
    };

    if let Some(interrupt) = out.interrupts.first() {
        println!("paused at `{}`: {}", interrupt.node, interrupt.value);
        println!(
            "decide in a new process: cargo run -p stategraph-examples --example approval -- --db {} --thread {} --decide approve",
            args.db.display(),
            args.thread
        );
    } else {
        println!("finished: {:?}", out.values.log);
    }
    Ok(())
}
