//! A research pipeline: plan sub-questions, fan out one search per question with
//! `Send`, gather the findings, and loop through review until the draft is good enough.
//! Prints the graph as Mermaid and the run's result.
//!
//! Run it with `cargo run -p stategraph-examples --example research_pipeline`.

use std::collections::BTreeMap;

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(append)]
    questions: Vec<String>,
    #[reducer(merge)]
    findings: BTreeMap<String, String>,
    draft: String,
    #[reducer(add)]
    revisions: u32,
}

/// Splits the topic into sub-questions.
#[node]
fn plan(state: &Research) -> ResearchUpdate {
    let questions =
        ["what is it", "who uses it", "how fast is it"].map(|q| format!("{}: {q}?", state.topic));
    Research::update().questions(questions)
}

/// Answers one sub-question (a `Send` target: its input is the question).
#[node]
async fn search(question: &String) -> ResearchUpdate {
    // A real node would call a search API here.
    let answer = format!("{} words of notes", question.len() * 7);
    Research::update().findings([(question.clone(), answer)])
}

/// Writes (or rewrites) the draft from the findings.
#[node]
fn write(state: &Research) -> ResearchUpdate {
    let body: Vec<String> = state
        .findings
        .iter()
        .map(|(q, a)| format!("- {q} {a}"))
        .collect();
    Research::update()
        .draft(format!("# {}\n{}", state.topic, body.join("\n")))
        .revisions(1)
}

fn fan_out(state: &Research) -> Route<Research> {
    Route::sends(
        state
            .questions
            .iter()
            .map(|q| stategraph::Send::new(search, q.clone())),
    )
}

fn review(state: &Research) -> Route<Research> {
    if state.revisions < 2 {
        Route::to(write)
    } else {
        Route::end()
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let graph = StateGraph::<Research>::new()
        .add_node(plan)
        .add_node(search)
        .add_node(write)
        .add_edge(START, plan)
        .add_conditional_edges(plan, fan_out, [search])
        .add_edge(search, write)
        .add_conditional_edges(write, review, (write, END))
        .compile()?;

    println!("{}", graph.draw_mermaid());

    let out = graph
        .invoke(Research::update().topic("stategraph"), &RunConfig::new())
        .await?;
    println!("finished in {} supersteps", out.steps);
    println!("{}", out.values.draft);
    println!("revisions: {}", out.values.revisions);
    Ok(())
}
