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
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::StreamExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use stategraph::checkpoint::{CheckpointError, CheckpointSaver};
use stategraph::prelude::*;
use stategraph::{BuildError, RunInput, StateSnapshot};
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

/// Command-line options of the demo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The SQLite file holding the threads.
    pub db: PathBuf,
    /// The thread to run or continue (default: the newest `research-N`).
    pub thread: Option<String>,
    /// Start a new thread instead of continuing.
    pub fresh: bool,
    /// Answer the approval question with "publish" instead of asking.
    pub yes: bool,
}

/// The demo's usage text.
pub const USAGE: &str = "\
usage: research_pipeline [--db PATH] [--thread ID] [--fresh] [--yes]

  --db PATH    SQLite file holding the threads (default: ./stategraph-demo.sqlite)
  --thread ID  run or continue this thread (default: the newest research-N)
  --fresh      start a new thread instead of continuing
  --yes        publish without asking (also the default when stdin is not a terminal)";

impl Options {
    /// Parses command-line arguments (without the program name).
    ///
    /// # Errors
    /// A message naming the unknown option or the option missing its value.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut options = Options {
            db: PathBuf::from(DEFAULT_DB),
            thread: None,
            fresh: false,
            yes: false,
        };
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let mut value = || {
                args.next()
                    .ok_or_else(|| format!("`{flag}` needs a value\n\n{USAGE}"))
            };
            match flag.as_str() {
                "--db" => options.db = PathBuf::from(value()?),
                "--thread" => options.thread = Some(value()?),
                "--fresh" => options.fresh = true,
                "--yes" | "-y" => options.yes = true,
                other => return Err(format!("unknown option `{other}`\n\n{USAGE}")),
            }
        }
        Ok(options)
    }
}

/// How a demo run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The thread finished (in this run or an earlier one).
    Finished {
        /// The thread.
        thread: String,
    },
    /// The thread is waiting for a decision nobody gave (stdin closed).
    Waiting {
        /// The thread.
        thread: String,
    },
}

fn thread_id(n: u32) -> String {
    format!("{THREAD_PREFIX}{n}")
}

/// The highest `N` of the file's `research-N` threads (0 when there is none).
async fn newest_thread(saver: &SqliteSaver) -> Result<u32, CheckpointError> {
    Ok(saver
        .list_threads()
        .await?
        .iter()
        .filter_map(|t| t.thread_id.strip_prefix(THREAD_PREFIX)?.parse::<u32>().ok())
        .max()
        .unwrap_or(0))
}

/// How the human's answers are obtained.
enum Answers {
    Auto,
    Terminal,
}

impl Answers {
    /// The verdict for a pending approval, or `None` when stdin closed.
    fn verdict(
        &self,
        out: &mut dyn Write,
        request: &serde_json::Value,
    ) -> std::io::Result<Option<Verdict>> {
        writeln!(out)?;
        if let Some(draft) = request["draft"].as_str() {
            for line in draft.lines() {
                writeln!(out, "    │ {line}")?;
            }
        }
        let question = request["question"].as_str().unwrap_or("approve?");
        if let Answers::Auto = self {
            writeln!(
                out,
                "  ? {question} → publish (answered automatically: --yes or no terminal)"
            )?;
            return Ok(Some(Verdict::Publish));
        }
        let stdin = std::io::stdin();
        loop {
            write!(
                out,
                "  ? {question} [y]es publish / [n]o reject / or type feedback to revise: "
            )?;
            out.flush()?;
            let mut line = String::new();
            if stdin.lock().read_line(&mut line)? == 0 {
                writeln!(out)?;
                return Ok(None);
            }
            match line.trim() {
                "" => continue,
                "y" | "yes" | "publish" => return Ok(Some(Verdict::Publish)),
                "n" | "no" | "reject" => return Ok(Some(Verdict::Reject)),
                feedback => {
                    return Ok(Some(Verdict::Revise {
                        feedback: feedback.to_string(),
                    }));
                }
            }
        }
    }
}

/// Streams one run of the thread, printing progress; returns the interrupts it paused
/// on (empty when it finished).
async fn stream_run(
    graph: &CompiledGraph<Research>,
    input: RunInput<Research>,
    config: &RunConfig,
    out: &mut dyn Write,
    started: Instant,
    finished_earlier: &BTreeSet<String>,
) -> Result<Vec<Interrupt>, Box<dyn std::error::Error>> {
    let modes =
        StreamMode::TASKS | StreamMode::CUSTOM | StreamMode::UPDATES | StreamMode::CHECKPOINTS;
    let mut events = graph.stream(input, config, modes);
    while let Some(event) = events.next().await {
        let at = started.elapsed().as_secs_f64();
        match event? {
            StreamEvent::TaskStart {
                step,
                id,
                node,
                input,
                ..
            } => {
                // Tasks whose writes an earlier process saved are reported by their
                // result (`resumed`), not started again.
                if finished_earlier.contains(&id) {
                    continue;
                }
                let what = input
                    .as_ref()
                    .and_then(|q| q["text"].as_str())
                    .map(|q| format!(" \"{q}\""))
                    .unwrap_or_default();
                writeln!(out, "{at:6.2}s step {step} ▶ {node}{what}")?;
            }
            StreamEvent::Custom { node, value } => {
                let text = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_string);
                writeln!(out, "{at:6.2}s          {node}: {text}")?;
            }
            StreamEvent::TaskResult {
                step,
                node,
                error,
                resumed,
                ..
            } => {
                if resumed {
                    writeln!(
                        out,
                        "{at:6.2}s step {step} ↺ {node}: finished before the restart, not run again"
                    )?;
                }
                if let Some(error) = error {
                    writeln!(out, "{at:6.2}s step {step} ✗ {node}: {error}")?;
                }
            }
            StreamEvent::Updates {
                step,
                node,
                updates,
                ..
            } => {
                let mut written = BTreeSet::new();
                for update in &updates {
                    for channel in Research::CHANNELS {
                        if update.writes_channel(channel.index) {
                            written.insert(channel.name);
                        }
                    }
                }
                let written: Vec<&str> = written.into_iter().collect();
                writeln!(
                    out,
                    "{at:6.2}s step {step} ✓ {node} wrote {}",
                    if written.is_empty() {
                        "nothing".to_string()
                    } else {
                        written.join(", ")
                    }
                )?;
            }
            StreamEvent::Checkpoint { metadata, next, .. } => {
                let next = if next.is_empty() {
                    "done".to_string()
                } else {
                    format!("next: {}", next.join(", "))
                };
                writeln!(
                    out,
                    "{at:6.2}s          saved checkpoint after step {} ({next})",
                    metadata.step
                )?;
            }
            StreamEvent::Interrupt { interrupts } => return Ok(interrupts),
            _ => {}
        }
    }
    Ok(Vec::new())
}

fn describe_pending(snapshot: &StateSnapshot<Research>) -> String {
    let done = snapshot.tasks.iter().filter(|t| t.has_writes).count();
    let mut text = format!(
        "from step {} (next: {})",
        snapshot.metadata.step.saturating_add(1),
        if snapshot.next.is_empty() {
            "only committing saved results".to_string()
        } else {
            snapshot.next.join(", ")
        }
    );
    if done > 0 {
        text.push_str(&format!(
            "; {done} of its {} tasks had finished before the restart",
            snapshot.tasks.len()
        ));
    }
    text
}

/// Prints how the thread ended; the whole report only when `full` (a run that asked
/// for approval has shown it already).
fn print_result(
    out: &mut dyn Write,
    thread: &str,
    state: &Research,
    full: bool,
) -> std::io::Result<()> {
    writeln!(out)?;
    match &state.report {
        Some(report) => {
            writeln!(
                out,
                "thread {thread} finished: published after {} drafts and {} reviews, {} findings, {} sources",
                state.drafts,
                state.reviews,
                state.findings.len(),
                state.sources.len()
            )?;
            for line in report.lines() {
                if full || line.starts_with("Recommendation") {
                    writeln!(out, "    │ {line}")?;
                }
            }
        }
        _ => writeln!(out, "thread {thread} finished: the report was rejected")?,
    }
    Ok(())
}

/// Runs the demo: continues the chosen thread (or starts one), streaming progress to
/// `out`, and asks for approval on the terminal unless `--yes` was given or stdin is
/// not a terminal.
///
/// # Errors
/// The database cannot be opened, the thread given with `--fresh --thread` exists
/// already, a node or checkpoint fails, or `out` cannot be written.
pub async fn run(
    options: &Options,
    out: &mut dyn Write,
) -> Result<Outcome, Box<dyn std::error::Error>> {
    let started = Instant::now();
    let saver = SqliteSaver::open(&options.db)?;
    let graph = build(saver.clone())?;
    let thread = match (&options.thread, options.fresh) {
        (Some(thread), false) => thread.clone(),
        (Some(thread), true) => {
            if graph
                .get_state(&RunConfig::new().thread(thread.as_str()))
                .await?
                .is_some()
            {
                return Err(format!(
                    "thread `{thread}` already exists in {}; drop `--fresh` to continue it, or pick another id",
                    options.db.display()
                )
                .into());
            }
            thread.clone()
        }
        (None, fresh) => {
            let newest = newest_thread(&saver).await?;
            if fresh || newest == 0 {
                let next = newest.checked_add(1).ok_or_else(|| {
                    format!(
                        "{} already has thread {}, the highest number a new thread can take; name one with `--thread`",
                        options.db.display(),
                        thread_id(newest)
                    )
                })?;
                thread_id(next)
            } else {
                thread_id(newest)
            }
        }
    };
    let config = RunConfig::new().thread(thread.as_str());
    let answers = if options.yes || !std::io::stdin().is_terminal() {
        Answers::Auto
    } else {
        Answers::Terminal
    };
    writeln!(
        out,
        "research pipeline · thread {thread} · checkpoints in {}",
        options.db.display()
    )?;

    let mut finished_earlier = BTreeSet::new();
    // The first run of a new thread starts it only if no other process just did.
    let mut run_config = config.clone();
    let mut input: RunInput<Research> = match graph.get_state(&config).await? {
        None => {
            writeln!(out, "starting thread {thread}: {TOPIC}")?;
            run_config = config.clone().new_thread_only();
            RunInput::Update(Research::update().topic(TOPIC))
        }
        Some(snapshot) if !snapshot.interrupts.is_empty() => {
            writeln!(
                out,
                "continuing thread {thread}: it is waiting for approval"
            )?;
            match answers.verdict(out, &snapshot.interrupts[0].value)? {
                Some(verdict) => RunInput::Command(Command::resume(verdict)),
                None => return waiting(out, &thread),
            }
        }
        // `next` leaves out tasks whose writes are saved; the thread is finished only
        // when its next step has no task at all.
        Some(snapshot) if !snapshot.tasks.is_empty() => {
            writeln!(
                out,
                "continuing thread {thread} {}",
                describe_pending(&snapshot)
            )?;
            finished_earlier.extend(
                snapshot
                    .tasks
                    .iter()
                    .filter(|t| t.has_writes)
                    .map(|t| t.id.clone()),
            );
            RunInput::Continue
        }
        Some(snapshot) => {
            writeln!(
                out,
                "thread {thread} already finished; nothing to do (run with --fresh to start a new thread)"
            )?;
            print_result(out, &thread, &snapshot.values, true)?;
            return Ok(Outcome::Finished { thread });
        }
    };

    loop {
        let interrupts = match stream_run(
            &graph,
            input,
            &run_config,
            out,
            started,
            &finished_earlier,
        )
        .await
        {
            Err(e) if matches!(e.downcast_ref(), Some(RunError::ThreadExists { .. })) => {
                return Err(format!(
                        "thread {thread} was started by another process at the same moment and runs there; run this command again to follow it"
                    )
                    .into());
            }
            result => result?,
        };
        run_config = config.clone();
        let Some(pending) = interrupts.first() else {
            break;
        };
        match answers.verdict(out, &pending.value)? {
            Some(verdict) => input = RunInput::Command(Command::resume(verdict)),
            None => return waiting(out, &thread),
        }
    }
    let state = graph
        .get_state(&config)
        .await?
        .ok_or_else(|| format!("thread `{thread}` vanished from {}", options.db.display()))?;
    print_result(out, &thread, &state.values, false)?;
    Ok(Outcome::Finished { thread })
}

fn waiting(out: &mut dyn Write, thread: &str) -> Result<Outcome, Box<dyn std::error::Error>> {
    writeln!(
        out,
        "no answer; thread {thread} keeps waiting for approval — run again to answer"
    )?;
    Ok(Outcome::Waiting {
        thread: thread.to_string(),
    })
}

/// The demo's entry point: parses `std::env::args`, runs, and reports errors on
/// stderr with a non-zero exit code.
pub async fn main() -> std::process::ExitCode {
    if std::env::args().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return std::process::ExitCode::SUCCESS;
    }
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            return std::process::ExitCode::from(2);
        }
    };
    match run(&options, &mut std::io::stdout()).await {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
