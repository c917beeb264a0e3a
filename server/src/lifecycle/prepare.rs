//! Checking a run request before it is queued: every field honoured or refused
//! (never dropped), the thread and checkpoint it names, and the request the worker
//! will read back ([`RunKwargs`]).

use serde_json::{Map, Value};

use crate::app::{App, Found};
use crate::db::{NewRun, RunRow, RunStatus, ThreadRow, ThreadStatus};
use crate::error::ApiError;
use crate::events::Modes;
use crate::served::{RunRequest, Served};
use crate::wire::{
    CommandRequest, DurabilityRequest, IfNotExists, OnCompletion, RunConfigRequest, RunCreate,
    RunKwargs, node_list,
};

/// What a request's input lost on the way, said in the run's metadata.
#[derive(Default)]
struct Cleaned {
    /// The run has a command, which runs instead of its input.
    input_ignored: bool,
    /// Input keys the graph's state lacks.
    dropped: Vec<String>,
}

/// Checks a run request for `thread_id` (a new thread for a stateless run) without
/// writing anything; the run to queue.
pub(crate) async fn prepare_run(
    app: &App,
    thread_id: Option<String>,
    mut req: RunCreate,
) -> Result<NewRun, ApiError> {
    if req.assistant_id.is_empty() {
        return Err(ApiError::invalid(
            "$.assistant_id",
            "required: the graph to run (its name or assistant id)",
        ));
    }
    let assistant = app.find_assistant(&req.assistant_id).await?;
    let graph = assistant.graph.clone();
    start_from_assistant(&assistant, &mut req);
    let stateless = thread_id.is_none();
    let thread_id = thread_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let strategy = req.multitask_strategy.unwrap_or_default();
    let create_thread = stateless || req.if_not_exists == Some(IfNotExists::Create);
    let existing = existing_thread(app, &thread_id, create_thread, graph.as_ref()).await?;
    refuse_unserved(&req)?;
    let cleaned = clean_input(app, &mut req, graph.as_ref())?;
    let mut kwargs = kwargs_of(&req, graph.as_ref(), stateless)?;
    kwargs.graph_id = Some(graph.name().to_string());
    if let Some(url) = &req.webhook {
        let allow = &app.webhooks.config.allowed;
        let url = crate::webhook::check_url(url, allow)
            .await
            .map_err(|why| ApiError::invalid("$.webhook", why))?;
        kwargs.webhook = Some(url.to_string());
    }
    let request = RunRequest::of(&thread_id, "", kwargs.clone(), Map::new())?;
    graph.check(&request)?;
    check_against_thread(app, &thread_id, existing.as_ref(), &request).await?;
    let metadata = run_metadata(
        req.metadata.unwrap_or_default(),
        cleaned,
        graph.name(),
        &thread_id,
    );
    let mut thread_metadata = Map::new();
    thread_metadata.insert("graph_id".into(), graph.name().into());
    thread_metadata.insert("assistant_id".into(), assistant.id.clone().into());
    let run = RunRow {
        run_id: uuid::Uuid::new_v4().to_string(),
        thread_id,
        assistant_id: assistant.id.clone(),
        created_at: 0,
        updated_at: 0,
        status: RunStatus::Pending,
        metadata,
        multitask_strategy: strategy.as_str().to_string(),
        kwargs: serde_json::to_value(&kwargs).map_err(ApiError::internal)?,
        attempt: 0,
        cancel: None,
        output: None,
    };
    Ok(NewRun {
        row: run,
        create_thread,
        thread_metadata,
        delay: delay_of(req.after_seconds)?,
    })
}

/// The longest `after_seconds`: ten years.
const MOST_DELAY: f64 = 10.0 * 365.0 * 86_400.0;

/// `after_seconds`: how long the run waits before a worker may claim it.
fn delay_of(after_seconds: Option<f64>) -> Result<Option<std::time::Duration>, ApiError> {
    match after_seconds {
        None | Some(0.0) => Ok(None),
        Some(s) if s > MOST_DELAY => Err(ApiError::invalid(
            "$.after_seconds",
            format!("{s} seconds is more than ten years: give a shorter delay"),
        )),
        Some(s) => std::time::Duration::try_from_secs_f64(s)
            .map(Some)
            .map_err(|_| {
                ApiError::invalid(
                    "$.after_seconds",
                    format!("{s} is not a delay: give a number of seconds, 0 or more"),
                )
            }),
    }
}

/// The thread, if it exists: a 404 when it does not and the run may not create it,
/// a 409 when it runs another graph.
async fn existing_thread(
    app: &App,
    thread_id: &str,
    create_thread: bool,
    graph: &dyn Served,
) -> Result<Option<ThreadRow>, ApiError> {
    let existing = app.db.get_thread(thread_id.to_string()).await?;
    match &existing {
        None if !create_thread => Err(ApiError::not_found(format!("thread {thread_id}"))),
        Some(t) => match t.metadata.get("graph_id").and_then(Value::as_str) {
            Some(bound) if bound != graph.name() => Err(ApiError::conflict(format!(
                "thread {thread_id} runs graph `{bound}`, not `{}`: start a new thread for it",
                graph.name()
            ))),
            _ => Ok(existing),
        },
        None => Ok(None),
    }
}

/// A run of an assistant made through the API starts from its configuration and
/// context: the run's own `config` fields win (its `configurable` and `metadata`
/// merged over the assistant's, key by key), and so do its context's keys.
fn start_from_assistant(assistant: &Found, req: &mut RunCreate) {
    if !assistant.config.is_empty() {
        let mut config = assistant.config.clone();
        if let Some(Value::Object(run)) = req.config.take() {
            for (key, value) in run {
                match (config.get_mut(&key), value) {
                    (Some(Value::Object(base)), Value::Object(over))
                        if key == "configurable" || key == "metadata" =>
                    {
                        base.extend(over);
                    }
                    (_, value) => {
                        config.insert(key, value);
                    }
                }
            }
        }
        req.config = Some(Value::Object(config));
    }
    if !assistant.context.is_empty() {
        req.context = match req.context.take() {
            None | Some(Value::Null) => Some(Value::Object(assistant.context.clone())),
            Some(Value::Object(run)) => {
                let mut context = assistant.context.clone();
                context.extend(run);
                Some(Value::Object(context))
            }
            Some(other) => Some(other),
        };
    }
}

/// Options this server does not serve are refused, not ignored.
fn refuse_unserved(req: &RunCreate) -> Result<(), ApiError> {
    let given = |v: &Option<Value>| v.as_ref().is_some_and(|v| !v.is_null());
    let field = if given(&req.feedback_keys) {
        "feedback_keys"
    } else if given(&req.langsmith_tracer) {
        "langsmith_tracer"
    } else {
        return Ok(());
    };
    Err(ApiError::invalid(
        format!("$.{field}"),
        "not supported by this server: leave it out",
    ))
}

/// With a command, the command runs and the input is ignored (as on LangGraph
/// Platform; CopilotKit's adapter sends its state beside a resume); input keys the
/// state lacks are dropped. Strict input refuses both.
fn clean_input(app: &App, req: &mut RunCreate, graph: &dyn Served) -> Result<Cleaned, ApiError> {
    let mut cleaned = Cleaned {
        input_ignored: req.input.as_ref().is_some_and(|v| !v.is_null())
            && req.command.as_ref().is_some_and(|v| !v.is_null()),
        dropped: Vec::new(),
    };
    if cleaned.input_ignored {
        if app.limits.strict_input {
            return Err(ApiError::invalid(
                "$",
                "give `input` or `command`, not both",
            ));
        }
        req.input = None;
    }
    if !app.limits.strict_input {
        cleaned.dropped = drop_unknown_keys(&mut req.input, &graph.channel_names());
    }
    Ok(cleaned)
}

/// The request as the worker reads it back, every option checked.
fn kwargs_of(req: &RunCreate, graph: &dyn Served, stateless: bool) -> Result<RunKwargs, ApiError> {
    let command = match &req.command {
        None | Some(Value::Null) => None,
        Some(c) => Some(
            serde_json::from_value::<CommandRequest>(c.clone())
                .map_err(|e| ApiError::invalid("$.command", e.to_string()))?,
        ),
    };
    let subgraphs = req.stream_subgraphs.unwrap_or(false);
    Modes::parse(req.stream_mode.as_ref(), subgraphs)?;
    let config = run_config(req.config.as_ref())?;
    let nodes = graph.node_names();
    // LangGraph's clients may name the checkpoint in `configurable`.
    let checkpoint_id =
        crate::wire::checkpoint_id(req.checkpoint_id.as_ref(), req.checkpoint.as_ref()).or_else(
            || {
                config
                    .as_ref()
                    .and_then(|c| c.configurable.get("checkpoint_id"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            },
        );
    Ok(RunKwargs {
        input: req.input.clone(),
        command,
        stream_mode: match &req.stream_mode {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => vec!["values".to_string()],
        },
        stream_subgraphs: subgraphs,
        interrupt_before: node_list(req.interrupt_before.as_ref(), &nodes, "interrupt_before")?,
        interrupt_after: node_list(req.interrupt_after.as_ref(), &nodes, "interrupt_after")?,
        checkpoint_id,
        config,
        durability: req.durability.or(req.checkpoint_during.map(|during| {
            if during {
                DurabilityRequest::Async
            } else {
                DurabilityRequest::Exit
            }
        })),
        context: req.context.clone().filter(|c| !c.is_null()),
        on_completion: req.on_completion.unwrap_or(if stateless {
            OnCompletion::Delete
        } else {
            OnCompletion::Keep
        }),
        webhook: None,
        graph_id: None,
    })
}

/// A run from a checkpoint the thread lacks, or a resume of a thread that waits on
/// nothing, would be queued only to fail: refused now.
async fn check_against_thread(
    app: &App,
    thread_id: &str,
    existing: Option<&ThreadRow>,
    request: &RunRequest,
) -> Result<(), ApiError> {
    if let Some(id) = &request.checkpoint_id {
        let at = stategraph::checkpoint::CheckpointConfig::thread(thread_id.to_string()).at(id);
        let known = existing.is_some()
            && app
                .saver
                .get_tuple(&at)
                .await
                .map_err(ApiError::internal)?
                .is_some();
        if !known {
            return Err(ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                format!("thread {thread_id} has no checkpoint `{id}`: pick one from its history"),
            ));
        }
    }
    // A resume needs a thread that waits on an interrupt (or a run that may leave
    // it waiting).
    if request.command.as_ref().is_some_and(|c| c.resume.is_some())
        && existing.is_none_or(|t| {
            t.status != ThreadStatus::Busy && t.interrupts.as_array().is_none_or(Vec::is_empty)
        })
    {
        return Err(ApiError::conflict(format!(
            "thread {thread_id} is not waiting on an interrupt: there is nothing to resume"
        )));
    }
    Ok(())
}

/// The run's metadata: the client's, and what its input lost (also logged).
fn run_metadata(
    mut metadata: Map<String, Value>,
    cleaned: Cleaned,
    graph: &str,
    thread_id: &str,
) -> Map<String, Value> {
    if cleaned.input_ignored {
        tracing::warn!(
            graph,
            thread_id,
            "a run's input was ignored: it has a command"
        );
        metadata.insert(
            "input_ignored".into(),
            "the run has a command, which runs instead".into(),
        );
    }
    if !cleaned.dropped.is_empty() {
        tracing::warn!(
            graph,
            thread_id,
            keys = ?cleaned.dropped,
            "dropped input keys the graph's state lacks (Server::strict_input refuses them)"
        );
        metadata.insert("dropped_input_keys".into(), cleaned.dropped.into());
    }
    metadata
}

/// A run request's `config`: each field it honours, any other a 422 naming it.
fn run_config(config: Option<&Value>) -> Result<Option<RunConfigRequest>, ApiError> {
    let config = match config {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => serde_json::from_value::<RunConfigRequest>(v.clone())
            .map_err(|e| ApiError::invalid("$.config", e.to_string()))?,
    };
    for (field, value) in [
        ("recursion_limit", config.recursion_limit),
        ("max_concurrency", config.max_concurrency),
    ] {
        if value == Some(0) {
            return Err(ApiError::invalid(
                format!("$.config.{field}"),
                "must be at least 1",
            ));
        }
    }
    Ok(Some(config))
}

/// Takes the keys a run's input names that its graph's state lacks out of it, as
/// LangGraph drops them; their names, in order.
fn drop_unknown_keys(input: &mut Option<Value>, known: &[&str]) -> Vec<String> {
    let Some(Value::Object(map)) = input else {
        return Vec::new();
    };
    let dropped: Vec<String> = map
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .cloned()
        .collect();
    for key in &dropped {
        map.remove(key);
    }
    dropped
}
