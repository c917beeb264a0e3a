//! The demo's command line: options, the streamed run in the terminal, the
//! approval prompt, and what a finished or waiting thread prints.

use std::collections::BTreeSet;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use futures::StreamExt;
use stategraph::checkpoint::{CheckpointError, CheckpointSaver};
use stategraph::prelude::*;
use stategraph::{RunInput, StateSnapshot};
use stategraph_sqlite::SqliteSaver;

use super::{DEFAULT_DB, Research, THREAD_PREFIX, TOPIC, Verdict, build};

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
