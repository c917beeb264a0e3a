//! `#[node(name = "..")]` gives a node a runtime name that is not a Rust identifier
//! (`fetch page`, `summarize-v2`), and that name is the node's everywhere: edges,
//! routes, `Send`, the context, streams, history, `update_state_as` and breakpoints.

use stategraph::checkpoint::{InMemorySaver, ListOptions};
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Page {
    #[reducer(append)]
    log: Vec<String>,
}

#[node(name = "fetch page")]
fn fetch(_: &Page, ctx: &NodeContext) -> PageUpdate {
    Page::update().log([format!("ran as `{}`", ctx.node())])
}

#[node(name = "summarize-v2")]
fn summarize(_: &Page) -> PageUpdate {
    Page::update().log(["summarized"])
}

#[node(name = "per item")]
fn per_item(n: &u32) -> PageUpdate {
    Page::update().log([format!("item {n}")])
}

fn fan_out(_: &Page) -> Route<Page> {
    Route::sends([
        stategraph::Send::new(per_item, 1u32),
        stategraph::Send::new(per_item, 2u32),
    ])
}

fn graph(options: CompileOptions) -> CompiledGraph<Page> {
    StateGraph::<Page>::new()
        .add_node(fetch)
        .add_node(summarize)
        .add_node(per_item)
        .add_edge(START, fetch)
        .add_edge(fetch, summarize)
        .add_conditional_edges(summarize, fan_out, per_item)
        .compile_with(options)
        .expect("custom names are valid node names")
}

#[tokio::test]
async fn a_custom_name_is_the_node_s_name_in_runs_streams_and_history() {
    let saver = InMemorySaver::new();
    let g = graph(CompileOptions::new().checkpointer(saver));
    let mut names: Vec<&str> = g.node_names().collect();
    names.sort_unstable();
    assert_eq!(names, ["fetch page", "per item", "summarize-v2"]);

    let config = RunConfig::new().thread("names");
    let mut stream = g.stream(Page::update(), &config, StreamMode::UPDATES);
    let mut updated = Vec::new();
    while let Some(event) = futures::StreamExt::next(&mut stream).await {
        if let StreamEvent::Updates { node, .. } = event.expect("the run succeeds") {
            updated.push(node);
        }
    }
    assert_eq!(
        updated,
        ["fetch page", "summarize-v2", "per item", "per item"]
    );

    let state = g
        .get_state(&config)
        .await
        .expect("state")
        .expect("the thread has a checkpoint");
    assert_eq!(
        state.values.log,
        ["ran as `fetch page`", "summarized", "item 1", "item 2"]
    );
    let history = g
        .get_state_history(&config, &ListOptions::default())
        .await
        .expect("history");
    let ran: Vec<String> = history
        .iter()
        .rev()
        .flat_map(|s| s.metadata.steps.iter())
        .flat_map(|step| step.tasks.iter().map(|t| t.node.clone()))
        .collect();
    assert_eq!(ran, ["fetch page", "summarize-v2", "per item", "per item"]);
}

#[tokio::test]
async fn update_state_as_and_breakpoints_take_the_custom_name() {
    let saver = InMemorySaver::new();
    let g = graph(
        CompileOptions::new()
            .checkpointer(saver)
            .interrupt_before([summarize]),
    );
    let config = RunConfig::new().thread("breakpoint");
    let paused = g.invoke(Page::update(), &config).await.expect("pauses");
    assert_eq!(paused.interrupts.len(), 1);
    assert_eq!(paused.interrupts[0].node, "summarize-v2");

    // Written as `fetch page`: what follows it (`summarize-v2`) is next.
    g.update_state_as(&config, Page::update().log(["edited"]), fetch)
        .await
        .expect("updates as the custom-named node");
    let state = g
        .get_state(&config)
        .await
        .expect("state")
        .expect("the thread has a checkpoint");
    assert_eq!(state.next, ["summarize-v2"]);
}
