//! The main demo: a research and review pipeline on a durable SQLite thread.
//!
//! `plan` splits the topic into sub-questions; a router fans out one `research` task
//! per question with `Send`; `write` drafts a report from the findings; `review`
//! checks it and either sends follow-up research for weak findings (another `Send`
//! fan-out) or passes the draft to `approve`, which pauses for a human decision
//! (`ctx.interrupt`). Publish, reject, or send the draft back to `write` with
//! feedback. Progress streams to the terminal as it happens, and every superstep is
//! checkpointed to a SQLite file: kill the process at any point and run it again, and
//! it continues the same thread — tasks that had finished are not run again.
//!
//! Threads are named `research-1`, `research-2`, …; a run continues the newest one.
//! Running again once that thread has finished prints its report and changes nothing;
//! `--fresh` starts the next thread.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use stategraph::BuildError;
use stategraph::prelude::*;
use stategraph_sqlite::SqliteSaver;

/// The question the pipeline researches.
pub const TOPIC: &str = "Should a small team move its backend services to Rust?";

/// The SQLite file used when `--db` is not given (relative to the current directory).
pub const DEFAULT_DB: &str = "stategraph-demo.sqlite";

/// Prefix of the demo's thread ids (`research-1`, `research-2`, …).
pub const THREAD_PREFIX: &str = "research-";

/// The pipeline's state: one channel per field, each with its reducer.
#[derive(GraphState, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct Research {
    /// What is being researched.
    pub topic: String,
    /// Every question asked, follow-ups included.
    #[reducer(append)]
    pub questions: Vec<Query>,
    /// Findings by query id; parallel research tasks each add their own entry.
    #[reducer(merge)]
    pub findings: BTreeMap<String, Finding>,
    /// Every source cited by any finding.
    #[reducer(union)]
    pub sources: BTreeSet<String>,
    /// The current draft of the report.
    pub draft: String,
    /// How many drafts have been written.
    #[reducer(add)]
    pub drafts: u32,
    /// How many times the draft was reviewed.
    #[reducer(add)]
    pub reviews: u32,
    /// Follow-up questions the last review asked for (empty when it passed).
    pub follow_ups: Vec<Query>,
    /// Feedback from the human reviewer, oldest first.
    #[reducer(append)]
    pub feedback: Vec<String>,
    /// The human decision, once made.
    pub verdict: Option<Verdict>,
    /// The published report, once published.
    pub report: Option<String>,
}

/// One research question: a `Send` payload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Query {
    /// Stable id (`performance`, `hiring/follow-up`, …).
    pub id: String,
    /// The angle it belongs to.
    pub angle: String,
    /// The question.
    pub text: String,
}

/// What one research task found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// The angle it answers.
    pub angle: String,
    /// A one-line summary.
    pub summary: String,
    /// How well the sources support it, in percent.
    pub confidence: u8,
    /// Where it comes from.
    pub sources: Vec<String>,
}

/// The human reviewer's decision: the value `approve`'s interrupt resumes with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "decision", rename_all = "lowercase")]
pub enum Verdict {
    /// Publish the draft as the report.
    Publish,
    /// Write the draft again, taking this feedback into account.
    Revise {
        /// What to change.
        feedback: String,
    },
    /// Drop the report.
    Reject,
}

/// Findings below this confidence get a follow-up question.
const WEAK: u8 = 60;

/// The angles `plan` splits a topic into, with what this offline stand-in for a
/// search API "finds" for each (and how long it takes).
struct Angle {
    id: &'static str,
    question: &'static str,
    summary: &'static str,
    confidence: u8,
    sources: &'static [&'static str],
    millis: u64,
}

const ANGLES: &[Angle] = &[
    Angle {
        id: "performance",
        question: "How do latency and memory compare with the services we run today?",
        summary: "p99 latency 30-50% lower and memory 3-5x smaller in published rewrites",
        confidence: 85,
        sources: &[
            "rewrite case study: auth service",
            "web framework benchmarks",
        ],
        millis: 150,
    },
    Angle {
        id: "ecosystem",
        question: "Are the libraries we need (HTTP, PostgreSQL, gRPC, tracing) mature?",
        summary: "every dependency we use has a maintained crate with 1.0-level stability",
        confidence: 80,
        sources: &["crates.io download statistics", "library survey"],
        millis: 350,
    },
    Angle {
        id: "migration",
        question: "What does an incremental, service-by-service migration cost?",
        summary: "one service per quarter behind the existing API gateway, no big-bang cutover",
        confidence: 70,
        sources: &["migration post-mortem", "API gateway docs"],
        millis: 550,
    },
    Angle {
        id: "hiring",
        question: "How long until experienced developers are productive in Rust?",
        summary: "anecdotes range from two weeks to six months",
        confidence: 45,
        sources: &["developer forum thread"],
        millis: 800,
    },
];

const FOLLOW_UP: Angle = Angle {
    id: "follow-up",
    question: "What do teams that switched report about onboarding after six months?",
    summary: "most report productive reviewers within 2-3 months with pairing and a style guide",
    confidence: 75,
    sources: &["annual developer survey", "engineering blog: year one"],
    millis: 400,
};

async fn pause(millis: u64) {
    tokio::time::sleep(Duration::from_millis(millis)).await;
}

/// Splits the topic into one question per angle.
#[node]
pub async fn plan(state: &Research, ctx: &NodeContext) -> Result<ResearchUpdate, NodeError> {
    pause(150).await;
    let questions: Vec<Query> = ANGLES
        .iter()
        .map(|a| Query {
            id: a.id.into(),
            angle: a.id.into(),
            text: a.question.into(),
        })
        .collect();
    ctx.emit(format!(
        "split \"{}\" into {} questions",
        state.topic,
        questions.len()
    ))
    .await?;
    Ok(Research::update().questions(questions))
}

/// Answers one question (a `Send` target: its input is the query). An offline stand-in
/// for a search API: the answers are canned, the waiting is real.
#[node]
pub async fn research(query: &Query, ctx: &NodeContext) -> Result<ResearchUpdate, NodeError> {
    let angle = if query.id.ends_with("/follow-up") {
        &FOLLOW_UP
    } else {
        ANGLES
            .iter()
            .find(|a| a.id == query.id)
            .ok_or_else(|| NodeError::msg(format!("no search backend for `{}`", query.id)))?
    };
    ctx.emit(format!("[{}] searching", query.id)).await?;
    pause(angle.millis / 2).await;
    ctx.emit(format!(
        "[{}] reading {} source{}",
        query.id,
        angle.sources.len(),
        if angle.sources.len() == 1 { "" } else { "s" }
    ))
    .await?;
    pause(angle.millis / 2).await;
    ctx.emit(format!(
        "[{}] done, confidence {}%",
        query.id, angle.confidence
    ))
    .await?;
    let finding = Finding {
        angle: query.angle.clone(),
        summary: angle.summary.into(),
        confidence: angle.confidence,
        sources: angle.sources.iter().map(|s| s.to_string()).collect(),
    };
    Ok(Research::update()
        .findings([(query.id.clone(), finding)])
        .sources(angle.sources.iter().map(|s| s.to_string())))
}

/// The best finding per angle.
fn best_per_angle(state: &Research) -> BTreeMap<&str, &Finding> {
    let mut best: BTreeMap<&str, &Finding> = BTreeMap::new();
    for finding in state.findings.values() {
        let slot = best.entry(finding.angle.as_str()).or_insert(finding);
        if finding.confidence > slot.confidence {
            *slot = finding;
        }
    }
    best
}

/// Drafts the report from the best finding of each angle and the reviewer's feedback.
#[node]
pub async fn write(state: &Research, ctx: &NodeContext) -> Result<ResearchUpdate, NodeError> {
    pause(150).await;
    let best = best_per_angle(state);
    let mut draft = format!("# {}\n\n", state.topic);
    for (angle, finding) in &best {
        draft.push_str(&format!(
            "- {angle} ({}%): {} [{}]\n",
            finding.confidence,
            finding.summary,
            finding.sources.join("; ")
        ));
    }
    let average = best.values().map(|f| u32::from(f.confidence)).sum::<u32>()
        / u32::try_from(best.len().max(1)).unwrap_or(1);
    let call = if average >= 70 {
        "yes, one service at a time"
    } else {
        "not yet"
    };
    draft.push_str(&format!(
        "\nRecommendation: {call} (average confidence {average}%).\n"
    ));
    for note in &state.feedback {
        draft.push_str(&format!("Reviewer note addressed: {note}\n"));
    }
    ctx.emit(format!(
        "draft {} from {} findings, {} lines",
        state.drafts + 1,
        state.findings.len(),
        draft.lines().count()
    ))
    .await?;
    Ok(Research::update().draft(draft).drafts(1))
}

/// Checks the draft: every angle needs a finding of at least `WEAK` confidence, with
/// one follow-up question per weak angle.
#[node]
pub async fn review(state: &Research, ctx: &NodeContext) -> Result<ResearchUpdate, NodeError> {
    pause(100).await;
    let follow_ups: Vec<Query> = best_per_angle(state)
        .into_iter()
        .filter(|(angle, f)| {
            f.confidence < WEAK && !state.findings.contains_key(&format!("{angle}/follow-up"))
        })
        .map(|(angle, _)| Query {
            id: format!("{angle}/follow-up"),
            angle: angle.to_string(),
            text: FOLLOW_UP.question.into(),
        })
        .collect();
    let verdict = if follow_ups.is_empty() {
        "every angle is well supported".to_string()
    } else {
        let ids: Vec<&str> = follow_ups.iter().map(|q| q.id.as_str()).collect();
        format!("weak evidence, asking follow-ups: {}", ids.join(", "))
    };
    ctx.emit(verdict).await?;
    Ok(Research::update()
        .questions(follow_ups.clone())
        .follow_ups(follow_ups)
        .reviews(1))
}

/// Pauses for a human decision; on resume, `interrupt` returns it.
#[node]
pub fn approve(state: &Research, ctx: &NodeContext) -> Result<ResearchUpdate, NodeError> {
    let verdict: Verdict = ctx.interrupt(json!({
        "question": "publish this report?",
        "draft": state.draft,
        "sources": state.sources.len(),
    }))?;
    let mut update = Research::update().verdict(Some(verdict.clone()));
    if let Verdict::Revise { feedback } = verdict {
        update = update.feedback([feedback]);
    }
    Ok(update)
}

/// Publishes the approved draft.
#[node]
pub async fn publish(state: &Research, ctx: &NodeContext) -> Result<ResearchUpdate, NodeError> {
    pause(100).await;
    ctx.emit(format!(
        "published {} bytes citing {} sources",
        state.draft.len(),
        state.sources.len()
    ))
    .await?;
    Ok(Research::update().report(Some(state.draft.clone())))
}

fn fan_out(state: &Research) -> Route<Research> {
    Route::sends(
        state
            .questions
            .iter()
            .map(|q| stategraph::Send::new(research, q.clone())),
    )
}

fn after_review(state: &Research) -> Route<Research> {
    if state.follow_ups.is_empty() {
        Route::to(approve)
    } else {
        Route::sends(
            state
                .follow_ups
                .iter()
                .map(|q| stategraph::Send::new(research, q.clone())),
        )
    }
}

fn after_approval(state: &Research) -> Route<Research> {
    match state.verdict {
        Some(Verdict::Publish) => Route::to(publish),
        Some(Verdict::Revise { .. }) => Route::to(write),
        Some(Verdict::Reject) | None => Route::end(),
    }
}

/// Builds the pipeline, checkpointing to `saver`.
///
/// # Errors
/// A [`BuildError`] if the graph is malformed (it is not).
pub fn build(saver: SqliteSaver) -> Result<CompiledGraph<Research>, BuildError> {
    graph().compile_with(CompileOptions::new().checkpointer(saver))
}

/// The pipeline's graph, uncompiled: to compile with a checkpointer of your choice,
/// or to hand to a server that compiles it with its own.
pub fn graph() -> StateGraph<Research> {
    let mut graph = StateGraph::<Research>::new();
    graph
        .add_node(plan)
        .add_node(research)
        .add_node(write)
        .add_node(review)
        .add_node(approve)
        .add_node(publish)
        .add_edge(START, plan)
        .add_conditional_edges(plan, fan_out, [research])
        .add_edge(research, write)
        .add_edge(write, review)
        .add_conditional_edges(review, after_review, (research, approve))
        .add_conditional_edges(approve, after_approval, (publish, write, END))
        .add_edge(publish, END);
    graph
}

mod demo;

pub use demo::{Options, Outcome, USAGE, main, run};
