//! `stategraph`: inspect the threads a checkpoint saver stored, without the code that
//! wrote them.
//!
//! Every run of a graph compiled with a checkpointer leaves a *thread* of checkpoints
//! behind. This command reads them straight from the store — a SQLite file written by
//! `stategraph_sqlite::SqliteSaver` (`--db PATH`) or a PostgreSQL database written by
//! `stategraph_postgres::PostgresSaver` (`--url postgres://...`, with `--schema` when
//! the saver used one) — and rebuilds each channel's value as JSON from the stored
//! whole values and appended deltas (see [`stategraph::checkpoint::channel_values`]).
//!
//! ```text
//! stategraph --db demo.sqlite threads                   # every thread, its status
//! stategraph --db demo.sqlite history research-1 -n 5   # its newest 5 checkpoints
//! stategraph --db demo.sqlite show research-1           # the latest checkpoint in full
//! stategraph --db demo.sqlite show research-1 e467d321  # a checkpoint by short id
//! stategraph --db demo.sqlite diff research-1 @2 @5     # what steps 2 and 5 differ in
//! stategraph --db demo.sqlite delete research-1         # asks first; --yes to skip
//! stategraph --url postgres://me:pw@db:5432/app --json threads
//! STATEGRAPH_POSTGRES_URL=postgres://me:pw@db:5432/app stategraph threads
//! ```
//!
//! `stategraph studio` serves the Studio web page (see [`stategraph_studio`]) over
//! the same store, read-only, on 127.0.0.1 until Ctrl-C:
//!
//! ```text
//! stategraph --db demo.sqlite studio                    # studio at http://127.0.0.1:PORT/studio
//! stategraph --db demo.sqlite studio --addr 127.0.0.1:8765
//! ```
//!
//! `stategraph store` reads a long-term memory store (`stategraph_sqlite::SqliteStore`
//! or `stategraph_postgres::PostgresStore`) in the same file or database; see
//! [`store`] for how namespaces are written:
//!
//! ```text
//! stategraph --db app.sqlite store ls --prefix users        # namespaces under users
//! stategraph --db app.sqlite store get users/u-42 prefs     # one item
//! stategraph --db app.sqlite store search users --filter '{"theme": "dark"}' -n 20
//! stategraph --db app.sqlite store rm users/u-42 prefs      # delete one item
//! ```
//!
//! The PostgreSQL URL can come from the `STATEGRAPH_POSTGRES_URL` environment
//! variable ([`URL_ENV`]); an explicit `--db` wins over it. Reading PostgreSQL needs
//! the `postgres` feature (on by default); a build without it reads SQLite files only
//! and says so when given a URL.
//!
//! Checkpoints are shown by a short id (see [`ids`]): the last 8 characters of the
//! id, its random part, since a thread's ids share a long timestamp prefix. A
//! checkpoint is named by its id, short id or another unique suffix, a unique prefix,
//! or `@STEP`; a name that fits several is an error listing them.
//!
//! Inspecting never creates a store: a missing file, or a database or schema without
//! a saver's tables, is an error. An existing store is opened as its saver opens it
//! (a SQLite file is switched to write-ahead logging, and tables of an older version
//! of the saver are upgraded).
//!
//! `threads` gives each thread's status (failed, interrupted, finished or running;
//! see [`writes::ThreadStatus`]). `show` lists the channel values, the nodes planned
//! next (with `Send` payloads), the writes of the next step's tasks stored so far
//! (reserved write indices by name: `error`, `interrupt`, `resume`), and the
//! interrupts those tasks raised. `diff` lists each JSON path at which the two
//! checkpoints' values differ (see [`jsondiff`]).
//!
//! # Output
//! Tables fit the output width (see [`layout`]): `--width`, else `COLUMNS`, else the
//! terminal's width, else 100. A value that does not fit is cut to one line ending in
//! `…`, or wrapped with `show --wrap`.
//!
//! With `--json` each command prints one JSON object, whole values included (the
//! serialized [`inspect`] report): `threads` → [`ThreadsReport`](inspect::ThreadsReport),
//! `history` → [`HistoryReport`](inspect::HistoryReport), `show` →
//! [`ShowReport`](inspect::ShowReport), `diff` → [`DiffReport`](inspect::DiffReport),
//! `delete` → [`DeleteReport`](inspect::DeleteReport), `prune` →
//! [`PruneReport`](inspect::PruneReport). Field names are stable.
//!
//! # Exit codes
//! [`exit`] lists them: 0 success, 1 any other failure, 2 a wrong command line, 3 a
//! missing or foreign `--db` file, or a `--url` database or `--schema` without a
//! saver's tables (inspecting never creates a store), 4 a malformed or unreachable
//! `--url` (or any URL, in a build without the `postgres` feature), 5 an unknown
//! thread, 6 an unknown checkpoint or a name that fits several, 7 a `delete` that was
//! not confirmed, 8 a `store get` or `store rm` of an item that is not there (a bad
//! `--filter` or namespace is 2, a file or database without store tables 3). Errors
//! go to standard error and say how to go on.
//!
//! # Deleting
//! `delete` asks on the terminal before removing a thread; `--yes` skips the
//! question, and without a terminal (a script, a pipe) it refuses unless `--yes` is
//! given. It holds the thread's writer lock while deleting, so a thread that a run is
//! writing is not deleted under it.
//!
//! # As a library
//! [`run`] executes a parsed [`Cli`] against a [`Target`], writing to any output and
//! asking through any [`Confirm`]; the binary is a thin wrapper around it.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod error;
pub mod ids;
pub mod inspect;
/// The JSON-path diff `diff` lists (the Studio's, [`stategraph_studio::diff`]).
pub use stategraph_studio::diff as jsondiff;
pub mod layout;
pub mod render;
pub mod store;
pub mod studio;
mod target;
pub mod writes;

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use serde::Serialize;

pub use error::{CliError, exit};
use inspect::Inspector;
pub use target::Target;

/// How long `delete` waits for a run writing the thread to finish.
const DELETE_LOCK_WAIT: Duration = Duration::from_secs(5);

/// The command line.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "stategraph",
    version,
    about = "Inspect the threads a stategraph checkpoint saver stored (SQLite or PostgreSQL)",
    after_help = "Checkpoints are shown by a short id: the last 8 characters of the id (more when needed to tell a thread's checkpoints apart). Name one by its whole id, that short id or any unique suffix, a unique prefix, or @STEP (its superstep; @-1 is the input).\n\nTables fit the width: --width, else the COLUMNS environment variable, else the terminal's width, else 100. Values that do not fit are cut to one line ending in `…` (`show --wrap` wraps them instead); --json prints them whole.\n\nExit codes: 0 ok, 1 failure, 2 usage, 3 missing database (file, or tables), 4 bad or unreachable URL (or a build without PostgreSQL support), 5 unknown thread, 6 unknown or ambiguous checkpoint, 7 delete not confirmed, 8 unknown store item."
)]
pub struct Cli {
    /// The SQLite file a SqliteSaver wrote (must exist). Taken over a URL from the
    /// environment.
    #[arg(long, value_name = "PATH", global = true)]
    pub db: Option<PathBuf>,
    /// The PostgreSQL database a PostgresSaver wrote: postgres://user:password@host:5432/db
    /// [env: STATEGRAPH_POSTGRES_URL, used when neither --url nor --db is given].
    #[arg(long, value_name = "URL", global = true)]
    pub url: Option<String>,
    /// The URL from the environment ([`URL_ENV`]), kept apart from `--url` so that an
    /// explicit `--db` wins over it while `--db` with `--url` is an error.
    #[arg(long = "url-from-env", env = URL_ENV, hide = true, global = true)]
    pub env_url: Option<String>,
    /// The PostgreSQL schema holding the saver's tables, if not the default one.
    #[arg(long, value_name = "NAME", global = true)]
    pub schema: Option<String>,
    /// Print one JSON object for scripts instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// Read a subgraph's checkpoints: the namespace `namespaces` lists (default: the
    /// root graph's). Applies to history, show and diff.
    #[arg(long, value_name = "NS", global = true)]
    pub ns: Option<String>,
    /// The output width in characters [default: $COLUMNS, else the terminal's, else 100].
    #[arg(long, value_name = "N", global = true, value_parser = clap::value_parser!(u16).range(1..))]
    pub width: Option<u16>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The environment variable that gives `--url` when the command line does not.
pub const URL_ENV: &str = "STATEGRAPH_POSTGRES_URL";

/// The subcommands.
#[derive(Clone, Debug, PartialEq, Eq, Subcommand)]
pub enum Command {
    /// List every stored thread: its status, newest step and checkpoint.
    ///
    /// STATUS is judged from the newest checkpoint and its pending writes: failed (a
    /// task of the next step recorded an error), interrupted (a task waits for an
    /// answer), finished (nothing is planned), running (tasks are planned: a run is
    /// working on the thread, stopped at a breakpoint, or was stopped and can be
    /// continued).
    Threads,
    /// List a thread's checkpoint namespaces: the root graph's and each subgraph
    /// task's (`node:digest`, nested levels joined by `|`), with their checkpoints,
    /// latest step and status. Read one with `--ns NS history|show|diff`.
    Namespaces {
        /// The thread id.
        thread: String,
    },
    /// List a thread's checkpoints, newest first.
    History {
        /// The thread id.
        thread: String,
        /// Only the newest N checkpoints.
        #[arg(long, short = 'n', value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        limit: Option<u64>,
    },
    /// Show a checkpoint: channel values, next nodes, pending writes, interrupts.
    ///
    /// Values wider than the output are cut to one line ending in `…`; --wrap shows
    /// them whole, wrapped onto several lines.
    Show {
        /// The thread id.
        thread: String,
        /// The checkpoint: id, short id, unique prefix or suffix, or @STEP (default:
        /// the latest).
        checkpoint: Option<String>,
        /// Wrap long values onto several lines instead of cutting them.
        #[arg(long)]
        wrap: bool,
    },
    /// List what differs between two checkpoints of a thread, one row per JSON path.
    ///
    /// Each row is a path (`$.drafts[2]`, `$.report.title`; the channel is its first
    /// key), whether it was added, removed or changed, and the values in A and B, cut
    /// to fit the width (--json has them whole).
    Diff {
        /// The thread id.
        thread: String,
        /// The first checkpoint (id, short id, prefix, suffix or @STEP).
        a: String,
        /// The second checkpoint (id, short id, prefix, suffix or @STEP).
        b: String,
    },
    /// Delete a thread and everything stored for it (asks first).
    Delete {
        /// The thread id.
        thread: String,
        /// Delete without asking.
        #[arg(long, short)]
        yes: bool,
    },
    /// Keep only the newest checkpoints of a thread (per namespace), deleting the older
    /// ones and their writes (asks first); `--all` does it to every thread.
    Prune {
        /// The thread id.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        thread: Option<String>,
        /// Every stored thread.
        #[arg(long)]
        all: bool,
        /// How many of the newest checkpoints to keep.
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        keep: u64,
        /// Prune without asking.
        #[arg(long, short)]
        yes: bool,
    },
    /// Serve the Studio web page over the stored threads, read-only, until Ctrl-C.
    ///
    /// Prints `studio at http://ADDR/studio`: open it in a browser to see each
    /// thread's graph (as its checkpoints recorded it), timeline, values and diffs.
    Studio {
        /// The address to listen on (a port of 0 picks a free one).
        #[arg(long, value_name = "HOST:PORT", default_value = studio::DEFAULT_ADDR)]
        addr: String,
    },
    /// Inspect a long-term memory store: list namespaces, show, search or delete items.
    ///
    /// Namespaces are written as labels separated by `/` (users/u-42); labels cannot
    /// contain `.` or, on the command line, `/`.
    Store {
        /// What to do.
        #[command(subcommand)]
        command: store::StoreCommand,
    },
}

impl Cli {
    /// The store named by `--db` or `--url` (or [`URL_ENV`], when `--db` is not given).
    ///
    /// # Errors
    /// A usage error when neither is given, both are, or `--schema` comes without a
    /// URL.
    pub fn target(&self) -> Result<Target, clap::Error> {
        use clap::CommandFactory;
        use clap::error::ErrorKind;
        let url = match (&self.db, &self.url) {
            (None, None) => self.env_url.as_ref().filter(|u| !u.trim().is_empty()),
            (_, url) => url.as_ref(),
        };
        match (&self.db, url) {
            (Some(_), Some(_)) => Err(Cli::command().error(
                ErrorKind::ArgumentConflict,
                "give either --db or --url, not both",
            )),
            (Some(_), None) if self.schema.is_some() => Err(Cli::command().error(
                ErrorKind::ArgumentConflict,
                "--schema applies to a PostgreSQL --url, not to a SQLite --db",
            )),
            (Some(path), None) => Ok(Target::Sqlite(path.clone())),
            (None, Some(url)) => Ok(Target::Postgres {
                url: url.clone(),
                schema: self.schema.clone(),
            }),
            (None, None) => Err(Cli::command().error(
                ErrorKind::MissingRequiredArgument,
                format!("say where the threads are: --db PATH for a SQLite file, or --url postgres://... (or {URL_ENV}) for PostgreSQL"),
            )),
        }
    }

    /// The output width: `--width`, else `COLUMNS`, else the terminal's, else 100.
    pub fn output_width(&self) -> usize {
        layout::output_width(self.width.map(usize::from))
    }
}

/// Asks the user to confirm a destructive step.
pub trait Confirm {
    /// `Some(answer)`, or `None` when there is no one to ask (no terminal).
    ///
    /// # Errors
    /// Reading the answer failed.
    fn confirm(&mut self, question: &str) -> std::io::Result<Option<bool>>;
}

/// Asks on the terminal: the question on standard error, a `y`/`yes` answer (any
/// case) on standard input. No terminal on standard input means no one to ask.
#[derive(Clone, Copy, Debug, Default)]
pub struct TerminalConfirm;

impl Confirm for TerminalConfirm {
    fn confirm(&mut self, question: &str) -> std::io::Result<Option<bool>> {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return Ok(None);
        }
        let mut err = std::io::stderr();
        write!(err, "{question} [y/N] ")?;
        err.flush()?;
        let mut answer = String::new();
        stdin.lock().read_line(&mut answer)?;
        let answer = answer.trim().to_ascii_lowercase();
        Ok(Some(answer == "y" || answer == "yes"))
    }
}

fn emit<T: Serialize>(
    out: &mut dyn Write,
    json: bool,
    report: &T,
    text: impl FnOnce(&T) -> String,
) -> Result<(), CliError> {
    let io = |source| CliError::Io {
        action: "write the output",
        source,
    };
    if json {
        let encoded =
            serde_json::to_string_pretty(report).map_err(|e| io(std::io::Error::other(e)))?;
        writeln!(out, "{encoded}").map_err(io)?;
    } else {
        out.write_all(text(report).as_bytes()).map_err(io)?;
    }
    out.flush().map_err(io)
}

/// Runs `cli`'s command against `target`, writing the report to `out` and asking
/// `confirm` before a `delete` without `--yes`.
///
/// # Errors
/// A [`CliError`] naming what failed; [`CliError::exit_code`] gives the exit code.
pub async fn run(
    cli: &Cli,
    target: &Target,
    out: &mut dyn Write,
    confirm: &mut dyn Confirm,
) -> Result<(), CliError> {
    if let Command::Store { command } = &cli.command {
        let store = target.open_store().await?;
        let text = store::run(
            command,
            store.as_ref(),
            &target.to_string(),
            cli.json,
            cli.output_width(),
        )
        .await?;
        let io = |source| CliError::Io {
            action: "write the output",
            source,
        };
        out.write_all(text.as_bytes()).map_err(io)?;
        return out.flush().map_err(io);
    }
    let saver = target.open().await?;
    if let Command::Studio { addr } = &cli.command {
        return studio::serve(saver, target.to_string(), addr, out, studio::ctrl_c()).await;
    }
    let inspector = Inspector::new(saver.as_ref(), target.to_string())
        .in_namespace(cli.ns.clone().unwrap_or_default());
    let json = cli.json;
    let width = cli.output_width();
    match &cli.command {
        Command::Threads => emit(out, json, &inspector.threads().await?, |r| {
            render::threads(r, width)
        }),
        Command::Namespaces { thread } => {
            emit(out, json, &inspector.namespaces(thread).await?, |r| {
                render::namespaces(r, width)
            })
        }
        Command::History { thread, limit } => {
            let limit = limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
            emit(out, json, &inspector.history(thread, limit).await?, |r| {
                render::history(r, width)
            })
        }
        Command::Show {
            thread,
            checkpoint,
            wrap,
        } => {
            let report = inspector.show(thread, checkpoint.as_deref()).await?;
            let overflow = if *wrap {
                layout::Overflow::Wrap
            } else {
                layout::Overflow::Truncate
            };
            emit(out, json, &report, |r| render::show(r, width, overflow))
        }
        Command::Diff { thread, a, b } => {
            emit(out, json, &inspector.diff(thread, a, b).await?, |r| {
                render::diff(r, width)
            })
        }
        Command::Delete { thread, yes } => {
            let info = inspector.thread(thread).await?;
            if !yes {
                let question = format!(
                    "delete thread `{}` ({} checkpoints) from {target}?",
                    info.thread_id, info.checkpoint_count
                );
                ask(confirm, &question, thread, "delete")?;
            }
            let _writer = saver.lock_thread(thread, DELETE_LOCK_WAIT).await?;
            let report = inspector.delete(&info).await?;
            emit(out, json, &report, |r| render::delete(r, width))
        }
        Command::Prune {
            thread,
            all,
            keep,
            yes,
        } => {
            let threads = match thread {
                Some(t) if !all => vec![inspector.thread(t).await?],
                _ => saver.list_threads().await?,
            };
            if !yes {
                let question = match thread {
                    Some(t) if !all => {
                        format!("prune thread `{t}` to its {keep} newest checkpoints in {target}?")
                    }
                    _ => format!(
                        "prune all {} threads to their {keep} newest checkpoints in {target}?",
                        threads.len()
                    ),
                };
                let which = if *all {
                    "*"
                } else {
                    thread.as_deref().unwrap_or("*")
                };
                ask(confirm, &question, which, "prune")?;
            }
            let keep = usize::try_from(*keep).unwrap_or(usize::MAX);
            let report = inspector.prune(&threads, keep, DELETE_LOCK_WAIT).await?;
            emit(out, json, &report, |r| render::prune(r, width))
        }
        Command::Store { .. } | Command::Studio { .. } => Ok(()),
    }
}

/// Asks before a destructive step; an error when there is no one to ask or the
/// answer is no.
fn ask(
    confirm: &mut dyn Confirm,
    question: &str,
    thread: &str,
    action: &'static str,
) -> Result<(), CliError> {
    let answer = confirm.confirm(question).map_err(|source| CliError::Io {
        action: "read the answer",
        source,
    })?;
    match answer {
        None => Err(CliError::NoTerminal {
            thread_id: thread.to_string(),
            action,
        }),
        Some(false) => Err(CliError::Declined {
            thread_id: thread.to_string(),
            action,
        }),
        Some(true) => Ok(()),
    }
}
