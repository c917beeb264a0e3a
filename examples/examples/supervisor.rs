//! A supervisor hands a customer request to specialist subgraphs.
//!
//! The `desk` graph's `supervisor` routes each request to a specialist: `research`
//! (answers questions) or `billing` (money). Each specialist is a compiled graph of
//! its own with its own state, added with `add_subgraph` and typed mappings in and
//! out. When research finds the request is about a refund, it hands the desk over to
//! billing with `Command::parent` — the swarm hand-off. Billing asks a human to approve
//! any refund over 100 EUR: the interrupt inside the subgraph pauses the whole run,
//! the thread is saved with the child's checkpoints under their namespace, and the
//! resume continues billing exactly where it stopped.
//!
//! ```text
//! cargo run -p stategraph-examples --example supervisor            # asks before a big refund
//! cargo run -p stategraph-examples --example supervisor -- --yes   # approves by itself
//! ```
//!
//! Approval is automatic with `--yes` or when stdin is not a terminal.

use std::io::{BufRead, IsTerminal, Write};

use serde_json::json;
use stategraph::SubgraphHandle;
use stategraph::prelude::*;

/// The desk: the request, who handled it, and the answer.
#[derive(GraphState, Clone, Debug, Default)]
struct Desk {
    request: String,
    #[reducer(append)]
    log: Vec<String>,
    answer: Option<String>,
}

/// A specialist's working state (both specialists share its shape).
#[derive(GraphState, Clone, Debug, Default)]
struct Case {
    request: String,
    #[reducer(append)]
    notes: Vec<String>,
    reply: Option<String>,
}

// --- the supervisor ---------------------------------------------------------------

#[node]
fn supervisor(desk: &Desk) -> DeskUpdate {
    let note = match &desk.answer {
        Some(_) => "supervisor: answered, closing".to_string(),
        None => format!("supervisor: routing {:?}", desk.request),
    };
    Desk::update().log([note])
}

fn route(desk: &Desk) -> Route<Desk> {
    if desk.answer.is_some() {
        return Route::end();
    }
    let request = desk.request.to_lowercase();
    if request.contains("invoice") || request.contains("charge") {
        Route::to(billing_desk())
    } else {
        Route::to(research_desk())
    }
}

fn billing_desk() -> SubgraphHandle<Desk, Case> {
    SubgraphHandle::named("billing")
}

fn research_desk() -> SubgraphHandle<Desk, Case> {
    SubgraphHandle::named("research")
}

// --- the research specialist ------------------------------------------------------

/// Looks the request up; a refund is billing's business, so it hands the desk over
/// (the desk goes to billing instead of back to the supervisor).
#[node]
fn investigate(case: &Case) -> Command<Case> {
    if case.request.to_lowercase().contains("refund") {
        return Command::parent(
            Command::goto(billing_desk())
                .update(Desk::update().log(["research: a refund, handing over to billing"])),
        );
    }
    Command::new().update(Case::update().notes([format!("looked up {:?}", case.request)]))
}

#[node]
fn answer(case: &Case) -> CaseUpdate {
    Case::update().reply(Some(format!(
        "our docs cover this ({} note)",
        case.notes.len()
    )))
}

// --- the billing specialist -------------------------------------------------------

/// The amount in EUR mentioned in the request (the first number), if any.
fn amount(request: &str) -> u32 {
    request
        .split(|c: char| !c.is_ascii_digit())
        .find(|w| !w.is_empty())
        .and_then(|w| w.parse().ok())
        .unwrap_or(0)
}

#[node]
fn assess(case: &Case) -> CaseUpdate {
    Case::update().notes([format!("amount {} EUR", amount(&case.request))])
}

/// A refund over 100 EUR needs a person's approval: the whole run pauses here.
#[node]
fn approve(case: &Case, ctx: &NodeContext) -> Result<CaseUpdate, NodeError> {
    let eur = amount(&case.request);
    if eur <= 100 {
        return Ok(Case::update().notes(["small amount, approved by policy"]));
    }
    let approved: bool = ctx.interrupt(json!({ "approve refund (EUR)": eur }))?;
    let note = if approved {
        "approved by a human"
    } else {
        "declined by a human"
    };
    Ok(Case::update().notes([note.to_string()]))
}

#[node]
fn settle(case: &Case) -> CaseUpdate {
    let approved = case.notes.iter().any(|n| n.contains("approved"));
    let eur = amount(&case.request);
    let reply = if approved {
        format!("refunded {eur} EUR")
    } else {
        format!("refund of {eur} EUR declined")
    };
    Case::update().reply(Some(reply))
}

// --- the graphs ---------------------------------------------------------------------

fn specialist_in(desk: &Desk) -> CaseUpdate {
    Case::update().request(desk.request.clone())
}

/// A specialist's result goes back to the supervisor with its notes and reply.
fn specialist_out(name: &'static str) -> impl Fn(&Case) -> Command<Desk> {
    move |case: &Case| {
        let notes: Vec<String> = case.notes.iter().map(|n| format!("{name}: {n}")).collect();
        Command::goto(supervisor).update(Desk::update().log(notes).answer(case.reply.clone()))
    }
}

fn desk() -> Result<CompiledGraph<Desk>, Box<dyn std::error::Error>> {
    let research = StateGraph::<Case>::new()
        .add_node(investigate)
        .add_node(answer)
        .add_edge(START, investigate)
        .add_edge(investigate, answer)
        .compile()?;
    let billing = StateGraph::<Case>::new()
        .add_node(assess)
        .add_node(approve)
        .add_node(settle)
        .add_edge(START, assess)
        .add_edge(assess, approve)
        .add_edge(approve, settle)
        .compile()?;
    let mut desk = StateGraph::<Desk>::new();
    let research = desk.add_subgraph(Subgraph::new(
        "research",
        research,
        specialist_in,
        specialist_out("research"),
    ));
    let billing = desk.add_subgraph(Subgraph::new(
        "billing",
        billing,
        specialist_in,
        specialist_out("billing"),
    ));
    desk.add_node(supervisor)
        .add_edge(START, supervisor)
        .add_conditional_edges(supervisor, route, (&research, &billing, END));
    Ok(desk.compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))?)
}

fn ask(question: &str, auto: bool) -> bool {
    if auto {
        println!("{question} yes (automatic)");
        return true;
    }
    print!("{question} [y/N] ");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    matches!(line.trim(), "y" | "Y" | "yes")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let auto = std::env::args().any(|a| a == "--yes") || !std::io::stdin().is_terminal();
    let desk = desk()?;
    let requests = [
        ("ticket-1", "How do I export my data?"),
        ("ticket-2", "I want a refund of 240 EUR for order 7"),
    ];
    for (thread, request) in requests {
        println!("== {thread}: {request}");
        let config = RunConfig::new().thread(thread);
        let mut out = desk
            .invoke(Desk::update().request(request), &config)
            .await?;
        while let Some(pending) = out.interrupts.first() {
            let subgraph = pending.ns.split(':').next().unwrap_or_default();
            println!(
                "paused in subgraph `{subgraph}` at `{}`: {}",
                pending.node, pending.value
            );
            let approved = ask("approve?", auto);
            out = desk.invoke(Command::resume(approved), &config).await?;
        }
        for line in &out.values.log {
            println!("  {line}");
        }
        println!(
            "{thread} answered: {}",
            out.values.answer.as_deref().unwrap_or("(no answer)")
        );
    }
    Ok(())
}
