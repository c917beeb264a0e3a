//! Subgraphs: a compiled graph as a node of another, on every saver.
//!
//! - typed mappings in and out, three levels deep, and `Send` into a subgraph
//!   (map-reduce over whole sub-workflows);
//! - the child's checkpoints live under the parent's thread in the task's namespace;
//! - an interrupt inside a child pauses the whole run, shows its namespace, and a
//!   resume continues the child where it stopped: finished child tasks (also those of
//!   a `Send` fan-out inside the child) do not run again;
//! - interrupts in several parallel subgraphs resume by id;
//! - `SubgraphCheckpoints::None` runs the child in memory.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::json;
use stategraph::checkpoint::{CheckpointConfig, CheckpointSaver, InMemorySaver, ListOptions};
use stategraph::prelude::*;
use stategraph::store::Store as _;
use stategraph_postgres::{PostgresOptions, PostgresSaver};
use stategraph_sqlite::SqliteSaver;
use stategraph_tests::servers;

static RUNS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

/// Counts a run of `what` in the task's thread (tests run side by side).
fn count(ctx: &NodeContext, what: &str) {
    let key = format!("{}/{what}", ctx.thread_id().unwrap_or("-"));
    *RUNS.lock().unwrap().entry(key).or_default() += 1;
}

fn runs(thread: &str, what: &str) -> usize {
    RUNS.lock()
        .unwrap()
        .get(&format!("{thread}/{what}"))
        .copied()
        .unwrap_or(0)
}

// --- the states: a desk (parent) hands questions to research (child), which may ask
// --- a reviewer (grandchild) -----------------------------------------------------------

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Desk {
    question: String,
    #[reducer(append)]
    answers: Vec<String>,
    #[reducer(add)]
    reviews: u32,
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Research {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
    /// Sources to read in parallel (`Send` fan-out inside the child).
    sources: Vec<String>,
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Review {
    draft: String,
    verdict: String,
}

#[node]
fn plan(_: &Research, ctx: &NodeContext) -> ResearchUpdate {
    count(ctx, "plan");
    Research::update()
}

fn fan_out(r: &Research) -> Route<Research> {
    Route::sends(
        r.sources
            .iter()
            .map(|s| stategraph::Send::new(read, s.clone())),
    )
}

#[node]
fn read(source: &String, ctx: &NodeContext) -> Result<ResearchUpdate, NodeError> {
    count(ctx, &format!("read:{source}"));
    if source.starts_with("ask:") {
        let answer: String = ctx.interrupt(json!({ "source": source }))?;
        return Ok(Research::update().notes(vec![format!("{source}={answer}")]));
    }
    Ok(Research::update().notes(vec![format!("read {source}")]))
}

#[node]
fn write_up(r: &Research, ctx: &NodeContext) -> ResearchUpdate {
    count(ctx, "write_up");
    Research::update().notes(vec![format!("{} on {}", r.notes.len(), r.topic)])
}

fn research_graph() -> CompiledGraph<Research> {
    let mut g = StateGraph::<Research>::new();
    g.add_node(plan)
        .add_node(read)
        .add_node(write_up)
        .add_edge(START, plan)
        .add_conditional_edges(plan, fan_out, [read])
        .add_edge(read, write_up)
        .add_edge(write_up, END);
    g.compile().unwrap()
}

fn desk_graph(saver: Option<Arc<dyn CheckpointSaver>>) -> CompiledGraph<Desk> {
    let mut g = StateGraph::<Desk>::new();
    let research = g.add_subgraph(Subgraph::new(
        "research",
        research_graph(),
        |d: &Desk| {
            Research::update().topic(d.question.clone()).sources(
                d.question
                    .split(',')
                    .map(str::to_string)
                    .collect::<Vec<_>>(),
            )
        },
        |r: &Research| Desk::update().answers(r.notes.clone()),
    ));
    g.add_edge(START, &research).add_edge(&research, END);
    match saver {
        Some(saver) => g
            .compile_with(CompileOptions::new().shared_checkpointer(saver))
            .unwrap(),
        None => g.compile().unwrap(),
    }
}

/// Every saver a test runs on (PostgreSQL when configured; skipped visibly otherwise).
async fn savers(
    test: &str,
) -> Vec<(
    &'static str,
    Arc<dyn CheckpointSaver>,
    Option<tempfile::TempDir>,
)> {
    let mut out: Vec<(
        &'static str,
        Arc<dyn CheckpointSaver>,
        Option<tempfile::TempDir>,
    )> = vec![("memory", Arc::new(InMemorySaver::new()), None)];
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteSaver::open(dir.path().join("sub.sqlite")).unwrap();
    out.push(("sqlite", Arc::new(sqlite), Some(dir)));
    if let Some(url) = servers::postgres_url(&format!("subgraphs::{test}")) {
        let schema = servers::fresh_schema("sub");
        let pg = PostgresSaver::connect_with(&url, PostgresOptions::new().schema(&schema))
            .await
            .unwrap();
        out.push(("postgres", Arc::new(pg), None));
    }
    out
}

#[tokio::test]
async fn a_child_runs_with_typed_mappings_without_a_saver() {
    let g = desk_graph(None);
    let out = g
        .invoke(Desk::update().question("tides,moons"), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(
        out.values.answers,
        ["read tides", "read moons", "2 on tides,moons"]
    );
    assert!(out.interrupts.is_empty());
}

#[tokio::test]
async fn child_checkpoints_live_under_the_task_namespace() {
    for (name, saver, _dir) in savers("namespaces").await {
        let g = desk_graph(Some(saver.clone()));
        let thread = format!("ns-{name}");
        let config = RunConfig::new().thread(thread.as_str());
        let out = g
            .invoke(Desk::update().question("a,b"), &config)
            .await
            .unwrap();
        assert_eq!(
            out.values.answers,
            ["read a", "read b", "2 on a,b"],
            "{name}"
        );
        // The root namespace holds the parent's checkpoints only.
        let root = saver
            .list(
                &CheckpointConfig::thread(thread.as_str()),
                &ListOptions::default(),
            )
            .await
            .unwrap();
        assert!(
            root.iter().all(|t| t.config.checkpoint_ns.is_empty()),
            "{name}"
        );
        let parent_steps = root.len();
        assert!(parent_steps >= 2, "{name}: input and the research step");
        // The child's, under `research:<task>`.
        let task_ns = child_namespaces(&*saver, &thread).await;
        assert_eq!(task_ns.len(), 1, "{name}: one research task, one namespace");
        assert!(task_ns[0].starts_with("research:"), "{name}: {task_ns:?}");
        let mut child = CheckpointConfig::thread(thread.as_str());
        child.checkpoint_ns = task_ns[0].clone();
        let latest = saver
            .get_tuple(&child)
            .await
            .unwrap()
            .expect("child checkpoint");
        assert!(
            latest.checkpoint.next.is_empty(),
            "{name}: the child finished"
        );
        let history = saver.list(&child, &ListOptions::default()).await.unwrap();
        assert!(history.len() >= 4, "{name}: input, plan, reads, write_up");
    }
}

/// The namespaces of a thread's child checkpoints.
async fn child_namespaces(saver: &dyn CheckpointSaver, thread: &str) -> Vec<String> {
    let all = saver.list_namespaces(thread).await.unwrap();
    all.into_iter().filter(|ns| !ns.is_empty()).collect()
}

#[tokio::test]
async fn an_interrupt_in_a_child_fan_out_pauses_the_run_and_resumes_only_that_task() {
    for (name, saver, _dir) in savers("child_interrupt").await {
        let g = desk_graph(Some(saver.clone()));
        let thread = format!("ask-{name}");
        let config = RunConfig::new().thread(thread.as_str());
        let paused = g
            .invoke(Desk::update().question("x,ask:who,y"), &config)
            .await
            .unwrap();
        assert_eq!(paused.interrupts.len(), 1, "{name}");
        let interrupt = &paused.interrupts[0];
        assert_eq!(interrupt.node, "read", "{name}");
        assert_eq!(interrupt.value, json!({ "source": "ask:who" }), "{name}");
        assert!(
            interrupt.ns.starts_with("research:"),
            "{name}: {}",
            interrupt.ns
        );
        assert!(
            paused.values.answers.is_empty(),
            "{name}: the parent step did not commit"
        );
        // The run state shows the pending interrupt with its namespace.
        let state = g.get_state(&config).await.unwrap().unwrap();
        assert_eq!(state.interrupts, paused.interrupts, "{name}");
        assert_eq!(state.next, ["research"], "{name}");

        let done = g.invoke(Command::resume("ada"), &config).await.unwrap();
        assert!(done.interrupts.is_empty(), "{name}");
        assert_eq!(
            done.values.answers,
            ["read x", "ask:who=ada", "read y", "3 on x,ask:who,y"],
            "{name}"
        );
        // Finished child tasks ran once; the paused one ran again on resume.
        assert_eq!(runs(&thread, "plan"), 1, "{name}");
        assert_eq!(runs(&thread, "read:x"), 1, "{name}");
        assert_eq!(runs(&thread, "read:y"), 1, "{name}");
        assert_eq!(runs(&thread, "read:ask:who"), 2, "{name}");
        assert_eq!(runs(&thread, "write_up"), 1, "{name}");
    }
}

// --- parallel subgraphs: `Send` into a subgraph, several interrupts ---------------------

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Batch {
    topics: Vec<String>,
    #[reducer(append)]
    answers: Vec<String>,
}

fn batch_graph(saver: Arc<dyn CheckpointSaver>) -> CompiledGraph<Batch> {
    let mut g = StateGraph::<Batch>::new();
    let research = g.add_subgraph(Subgraph::new(
        "research",
        research_graph(),
        |_: &Batch| Research::update(),
        |r: &Research| Batch::update().answers(vec![r.notes.join("; ")]),
    ));
    let fan = research.clone();
    g.add_conditional_edges(
        START,
        move |b: &Batch| {
            Route::sends(b.topics.iter().map(|t| {
                stategraph::Send::new(
                    &fan,
                    Research::update().topic(t.clone()).sources(vec![t.clone()]),
                )
            }))
        },
        [&research],
    );
    g.add_edge(&research, END);
    g.compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

#[tokio::test]
async fn send_runs_a_subgraph_per_payload_and_parallel_interrupts_resume_by_id() {
    for (name, saver, _dir) in savers("parallel").await {
        let g = batch_graph(saver.clone());
        let thread = format!("batch-{name}");
        let config = RunConfig::new().thread(thread.as_str());
        let paused = g
            .invoke(
                Batch::update().topics(vec![
                    "ask:one".to_string(),
                    "plain".to_string(),
                    "ask:two".to_string(),
                ]),
                &config,
            )
            .await
            .unwrap();
        assert_eq!(
            paused.interrupts.len(),
            2,
            "{name}: {:?}",
            paused.interrupts
        );
        let mut by_source = BTreeMap::new();
        for i in &paused.interrupts {
            by_source.insert(i.value["source"].as_str().unwrap().to_string(), i.clone());
        }
        assert_ne!(by_source["ask:one"].ns, by_source["ask:two"].ns, "{name}");
        // A single value is ambiguous.
        let err = g.invoke(Command::resume("x"), &config).await.unwrap_err();
        assert!(
            matches!(err, RunError::AmbiguousResume { .. }),
            "{name}: {err}"
        );
        // Answer one, then the other, by id.
        let one = by_source["ask:one"].id.clone();
        let still = g
            .invoke(Command::resume_map([(one, "first")]), &config)
            .await
            .unwrap();
        assert_eq!(still.interrupts.len(), 1, "{name}");
        assert_eq!(still.interrupts[0].id, by_source["ask:two"].id, "{name}");
        let two = by_source["ask:two"].id.clone();
        let done = g
            .invoke(Command::resume_map([(two, "second")]), &config)
            .await
            .unwrap();
        assert!(done.interrupts.is_empty(), "{name}");
        let mut answers = done.values.answers.clone();
        answers.sort();
        assert_eq!(
            answers,
            [
                "ask:one=first; 1 on ask:one",
                "ask:two=second; 1 on ask:two",
                "read plain; 1 on plain",
            ],
            "{name}"
        );
        assert_eq!(runs(&thread, "read:plain"), 1, "{name}");
        assert_eq!(runs(&thread, "read:ask:one"), 2, "{name}");
        // A waiting subgraph task does not run while another one is answered.
        assert_eq!(runs(&thread, "read:ask:two"), 2, "{name}");
    }
}

// --- three levels: desk → research → review ---------------------------------------------

#[node]
fn judge(r: &Review, ctx: &NodeContext) -> Result<ReviewUpdate, NodeError> {
    count(ctx, "judge");
    let verdict: String = ctx.interrupt(json!({ "draft": r.draft }))?;
    Ok(Review::update().verdict(verdict))
}

fn three_levels(saver: Arc<dyn CheckpointSaver>) -> CompiledGraph<Desk> {
    let mut review = StateGraph::<Review>::new();
    review.add_node(judge).add_edge(START, judge);
    let review = review.compile().unwrap();

    let mut research = StateGraph::<Research>::new();
    let check = research.add_subgraph(Subgraph::new(
        "review",
        review,
        |r: &Research| Review::update().draft(format!("draft on {}", r.topic)),
        |v: &Review| Research::update().notes(vec![format!("verdict: {}", v.verdict)]),
    ));
    research
        .add_node(write_up)
        .add_edge(START, write_up)
        .add_edge(write_up, &check);
    let research = research.compile().unwrap();

    let mut desk = StateGraph::<Desk>::new();
    let sub = desk.add_subgraph(Subgraph::new(
        "research",
        research,
        |d: &Desk| Research::update().topic(d.question.clone()),
        |r: &Research| Desk::update().answers(r.notes.clone()).reviews(1),
    ));
    desk.add_edge(START, &sub);
    desk.compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

#[tokio::test]
async fn three_levels_pause_at_the_deepest_and_resume_there() {
    for (name, saver, _dir) in savers("three_levels").await {
        let g = three_levels(saver.clone());
        let thread = format!("deep-{name}");
        let config = RunConfig::new().thread(thread.as_str());
        let paused = g
            .invoke(Desk::update().question("eels"), &config)
            .await
            .unwrap();
        assert_eq!(paused.interrupts.len(), 1, "{name}");
        let ns = &paused.interrupts[0].ns;
        let segments: Vec<&str> = ns.split('|').collect();
        assert_eq!(segments.len(), 2, "{name}: {ns}");
        assert!(segments[0].starts_with("research:"), "{name}: {ns}");
        assert!(segments[1].starts_with("review:"), "{name}: {ns}");
        assert_eq!(
            paused.interrupts[0].value,
            json!({ "draft": "draft on eels" })
        );

        // The nested state: the parent's pending task carries research's state,
        // whose pending task carries review's, which waits on the interrupt.
        let plain = g.get_state(&config).await.unwrap().unwrap();
        assert!(
            plain.tasks[0].state.is_none(),
            "{name}: get_state stays shallow"
        );
        let state = g.get_state_subgraphs(&config).await.unwrap().unwrap();
        assert_eq!(state.tasks.len(), 1, "{name}");
        let research = state.tasks[0].state.as_deref().expect("research's state");
        assert_eq!(research.ns, segments[0], "{name}");
        assert_eq!(research.values["topic"], json!("eels"), "{name}");
        assert_eq!(research.values["notes"], json!(["0 on eels"]), "{name}");
        assert_eq!(research.next, ["review"], "{name}");
        let review = research.tasks[0].state.as_deref().expect("review's state");
        assert_eq!(review.ns, *ns, "{name}");
        assert_eq!(review.values["draft"], json!("draft on eels"), "{name}");
        assert_eq!(review.next, ["judge"], "{name}");
        assert_eq!(review.interrupts.len(), 1, "{name}");
        assert_eq!(review.interrupts, paused.interrupts, "{name}");
        assert_eq!(review.config.checkpoint_ns, *ns, "{name}");

        let done = g
            .invoke(Command::resume("approved"), &config)
            .await
            .unwrap();
        assert_eq!(
            done.values.answers,
            ["0 on eels", "verdict: approved"],
            "{name}"
        );
        assert_eq!(done.values.reviews, 1, "{name}");
        assert_eq!(runs(&thread, "write_up"), 1, "{name}: not re-run on resume");
        assert_eq!(runs(&thread, "judge"), 2, "{name}");
    }
}

// --- persistence: none -------------------------------------------------------------------

#[tokio::test]
async fn a_child_without_checkpoints_runs_in_memory_and_cannot_interrupt() {
    let saver: Arc<dyn CheckpointSaver> = Arc::new(InMemorySaver::new());
    let mut g = StateGraph::<Desk>::new();
    let sub = g.add_subgraph(
        Subgraph::new(
            "research",
            research_graph(),
            |d: &Desk| {
                Research::update().topic(d.question.clone()).sources(
                    d.question
                        .split(',')
                        .map(str::to_string)
                        .collect::<Vec<_>>(),
                )
            },
            |r: &Research| Desk::update().answers(r.notes.clone()),
        )
        .checkpoints(SubgraphCheckpoints::None),
    );
    g.add_edge(START, &sub);
    let g = g
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap();
    let config = RunConfig::new().thread("no-ckpt");
    let out = g
        .invoke(Desk::update().question("p,q"), &config)
        .await
        .unwrap();
    assert_eq!(out.values.answers, ["read p", "read q", "2 on p,q"]);
    assert_eq!(
        child_namespaces(&*saver, "no-ckpt").await,
        Vec::<String>::new(),
        "nothing saved for the child"
    );

    let err = g
        .invoke(
            Desk::update().question("ask:me"),
            &RunConfig::new().thread("no-ckpt-2"),
        )
        .await
        .unwrap_err();
    let mut chain = vec![err.to_string()];
    let mut source = std::error::Error::source(&err);
    while let Some(e) = source {
        chain.push(e.to_string());
        source = e.source();
    }
    let text = chain.join(" / ");
    assert!(text.contains("subgraph `research` failed"), "{text}");
    assert!(
        text.contains("`read`") && text.contains("checkpointer"),
        "{text}"
    );
}

// --- drawing ------------------------------------------------------------------------------

#[test]
fn mermaid_draws_each_subgraph_as_a_block_inside_its_parent() {
    let g = three_levels(Arc::new(InMemorySaver::new()));
    let chart = g.draw_mermaid();
    let lines: Vec<&str> = chart.lines().map(str::trim).collect();
    let at = |line: &str| {
        lines
            .iter()
            .position(|l| *l == line)
            .unwrap_or_else(|| panic!("no line `{line}` in\n{chart}"))
    };
    let outer = at("subgraph research [research]");
    let inner = at("subgraph research__review [review]");
    let judge_at = at("research__review__judge(judge)");
    let inner_start = at("research__review____start__ --> research__review__judge;");
    let write_up_at = at("research__write_up(write_up)");
    let ends: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| **l == "end")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(ends.len(), 2, "{chart}");
    // The review block sits inside the research block, the judge inside review.
    assert!(outer < write_up_at && write_up_at < ends[1], "{chart}");
    assert!(outer < inner && inner < judge_at && judge_at < inner_start && inner_start < ends[0]);
    assert!(ends[0] < ends[1], "{chart}");
    at("research__write_up --> research__review;");
    at("__start__ --> research;");
}

// --- the output mapping may route the parent -------------------------------------------

#[node]
fn after(_: &Desk) -> DeskUpdate {
    Desk::update().answers(["after ran"])
}

#[tokio::test]
async fn an_output_mapping_returning_a_command_routes_the_parent() {
    let mut g = StateGraph::<Desk>::new();
    let sub = g.add_subgraph(Subgraph::new(
        "research",
        research_graph(),
        |d: &Desk| {
            Research::update()
                .topic(d.question.clone())
                .sources(vec![d.question.clone()])
        },
        |r: &Research| Command::goto(after).update(Desk::update().answers(r.notes.clone())),
    ));
    g.add_node(after).add_edge(START, &sub);
    let plain = g.compile().unwrap();
    let out = plain
        .invoke(Desk::update().question("q"), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.answers, ["read q", "1 on q", "after ran"]);
    assert_eq!(out.steps, 2);
    let saved = g
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let config = RunConfig::new().thread("mapped-goto");
    let out = saved
        .invoke(Desk::update().question("q"), &config)
        .await
        .unwrap();
    assert_eq!(out.values.answers, ["read q", "1 on q", "after ran"]);
    assert_eq!(out.steps, 2);
}

// --- the store reaches into subgraphs -------------------------------------------------------

#[node]
async fn recall(r: &Research, ctx: &NodeContext) -> Result<ResearchUpdate, NodeError> {
    let item = ctx.store()?.get(&["users", "u1"], "prefs").await?;
    let unit = item
        .map(|i| i.value["unit"].to_string())
        .unwrap_or_default();
    Ok(Research::update().notes([format!("{} in {unit}", r.topic)]))
}

#[tokio::test]
async fn a_child_without_a_store_of_its_own_reaches_its_parent_s() {
    let store = Arc::new(stategraph::store::InMemoryStore::new());
    store
        .put(&["users", "u1"], "prefs", json!({ "unit": "celsius" }))
        .await
        .unwrap();
    let child = StateGraph::<Research>::new()
        .add_node(recall)
        .add_edge(START, recall)
        .compile()
        .unwrap();
    let mut g = StateGraph::<Desk>::new();
    let sub = g.add_subgraph(Subgraph::new(
        "research",
        child,
        |d: &Desk| Research::update().topic(d.question.clone()),
        |r: &Research| Desk::update().answers(r.notes.clone()),
    ));
    g.add_edge(START, &sub);
    let g = g
        .compile_with(CompileOptions::new().shared_store(store.clone()))
        .unwrap();
    let out = g
        .invoke(Desk::update().question("weather"), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.answers, ["weather in \"celsius\""]);
}

// --- update_state on a child's namespace ------------------------------------------------

#[tokio::test]
async fn update_subgraph_state_edits_a_child_at_its_namespace() {
    for (name, saver, _dir) in savers("update_child").await {
        let g = three_levels(saver.clone());
        let thread = format!("edit-{name}");
        let config = RunConfig::new().thread(thread.as_str());
        let paused = g
            .invoke(Desk::update().question("eels"), &config)
            .await
            .unwrap();
        let ns = paused.interrupts[0].ns.clone();
        let review = stategraph::SubgraphHandle::<Research, Review>::named("review");
        let written = g
            .update_subgraph_state(
                &config,
                &review,
                &ns,
                Review::update().draft("edited draft"),
            )
            .await
            .unwrap();
        assert_eq!(written.checkpoint_ns, ns, "{name}");
        let state = g.get_state_subgraphs(&config).await.unwrap().unwrap();
        let research = state.tasks[0].state.as_deref().unwrap();
        let child = research.tasks[0].state.as_deref().unwrap();
        assert_eq!(child.values["draft"], json!("edited draft"), "{name}");
        assert_eq!(
            child.next,
            ["judge"],
            "{name}: planned again after the edit"
        );

        // The child continues from the edit: `judge` asks again, about the new draft.
        let again = g.invoke(Command::resume("unused"), &config).await.unwrap();
        assert_eq!(again.interrupts.len(), 1, "{name}");
        assert_eq!(
            again.interrupts[0].value,
            json!({ "draft": "edited draft" })
        );
        assert_ne!(again.interrupts[0].id, paused.interrupts[0].id, "{name}");
        let done = g
            .invoke(Command::resume("approved"), &config)
            .await
            .unwrap();
        assert_eq!(
            done.values.answers,
            ["0 on eels", "verdict: approved"],
            "{name}"
        );
        assert_eq!(
            runs(&thread, "write_up"),
            1,
            "{name}: research was not re-run"
        );

        // A namespace that is not the handle's, or not there, is refused.
        let research_handle = stategraph::SubgraphHandle::<Desk, Research>::named("research");
        let err = g
            .update_subgraph_state(&config, &research_handle, &ns, Research::update())
            .await
            .unwrap_err();
        assert!(
            matches!(err, RunError::UnknownSubgraphState { .. }),
            "{err}"
        );
        let err = g
            .update_subgraph_state(&config, &review, "research:00|review:00", Review::update())
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("has no state in namespace"),
            "{err}"
        );
    }
}

// --- time travel at the parent level ---------------------------------------------------

#[tokio::test]
async fn forking_the_parent_before_a_subgraph_runs_the_child_again_in_a_new_namespace() {
    for (name, saver, _dir) in savers("fork").await {
        let g = desk_graph(Some(saver.clone()));
        let thread = format!("fork-{name}");
        let config = RunConfig::new().thread(thread.as_str());
        let first = g
            .invoke(Desk::update().question("a,b"), &config)
            .await
            .unwrap();
        assert_eq!(
            first.values.answers,
            ["read a", "read b", "2 on a,b"],
            "{name}"
        );
        let before = child_namespaces(&*saver, &thread).await;
        assert_eq!(before.len(), 1, "{name}");

        // Back to the input checkpoint, with another question: a fork.
        let history = g
            .get_state_history(&config, &stategraph::checkpoint::ListOptions::new())
            .await
            .unwrap();
        let input = history.iter().find(|s| s.metadata.step == -1).unwrap();
        let at = config
            .clone()
            .checkpoint(input.config.checkpoint_id.clone().unwrap());
        g.update_state_as(&at, Desk::update().question("c"), START)
            .await
            .unwrap();
        let second = g.invoke(None, &config).await.unwrap();
        assert_eq!(
            second.values.answers,
            ["read c", "1 on c"],
            "{name}: the fork does not see the first branch's answers"
        );
        let later = child_namespaces(&*saver, &thread).await;
        assert_eq!(
            later.len(),
            2,
            "{name}: the child ran again in a namespace of its own"
        );
        assert!(
            later.contains(&before[0]),
            "{name}: the first branch's child is kept"
        );
        assert_eq!(runs(&thread, "write_up"), 2, "{name}");
    }
}

// --- same state type: the child works on the parent's channels ---------------------------

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Doc {
    title: String,
    #[reducer(append)]
    log: Vec<String>,
    #[reducer(add)]
    edits: u32,
}

#[node]
fn revise(d: &Doc, ctx: &NodeContext) -> Result<DocUpdate, NodeError> {
    count(ctx, "revise");
    // The child sees the parent's channels as they are.
    let ok: bool = ctx.interrupt(json!({ "title": d.title, "entries": d.log.len() }))?;
    Ok(Doc::update()
        .log([format!("revised (ok: {ok})")])
        .title(format!("{} v2", d.title))
        .edits(1))
}

#[node]
fn polish(_: &Doc, ctx: &NodeContext) -> DocUpdate {
    count(ctx, "polish");
    Doc::update().log(["polished"]).edits(1)
}

#[node]
fn note(_: &Doc) -> DocUpdate {
    Doc::update().log(["sibling note"])
}

#[tokio::test]
async fn a_same_state_child_reads_and_writes_the_parent_s_channels_once() {
    for (name, saver, _dir) in savers("shared").await {
        let child = StateGraph::<Doc>::new()
            .add_node(revise)
            .add_node(polish)
            .add_edge(START, revise)
            .add_edge(revise, polish)
            .compile()
            .unwrap();
        let mut g = StateGraph::<Doc>::new();
        let sub = g.add_subgraph(Subgraph::shared("editor", child));
        g.add_node(note).add_edge(START, &sub).add_edge(START, note);
        let g = g
            .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
            .unwrap();
        let thread = format!("shared-{name}");
        let config = RunConfig::new().thread(thread.as_str());
        let paused = g
            .invoke(
                Doc::update().title("Tides").log(["draft"]).edits(3),
                &config,
            )
            .await
            .unwrap();
        assert_eq!(
            paused.interrupts[0].value,
            json!({ "title": "Tides", "entries": 1 }),
            "{name}: the child starts from the parent's state"
        );
        let done = g.invoke(Command::resume(true), &config).await.unwrap();
        assert_eq!(done.values.title, "Tides v2", "{name}");
        // The child's appends arrive once, beside the sibling's (in task order:
        // `editor` before `note`); `edits` (an `add`
        // channel the child changed) is the child's final value, 3 + 2.
        assert_eq!(
            done.values.log,
            ["draft", "revised (ok: true)", "polished", "sibling note"],
            "{name}"
        );
        assert_eq!(done.values.edits, 5, "{name}");
        assert_eq!(runs(&thread, "polish"), 1, "{name}");
        assert_eq!(runs(&thread, "revise"), 2, "{name}: paused, then answered");
    }
}
