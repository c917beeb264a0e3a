//! Node caching: unchanged inputs are served from the cache, changed inputs re-run
//! exactly the nodes that read them (and those downstream whose inputs then change),
//! accumulators do not go stale from their own writes, `Send` payloads are keyed by
//! hash, entries expire, and hits show in the stream and the run history.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use stategraph::cache::{CachePolicy, InMemoryCache};
use stategraph::checkpoint::ListOptions;
use stategraph::prelude::*;
use stategraph::{BuildProblem, NodeHandle, Send};

/// Calls per node name, so each test counts its own graph's calls.
#[derive(Default)]
struct Calls(std::sync::Mutex<BTreeMap<String, usize>>);

impl Calls {
    fn hit(&self, node: &str) {
        *self.0.lock().unwrap().entry(node.to_string()).or_default() += 1;
    }
    fn take(&self) -> BTreeMap<String, usize> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Article {
    topic: String,
    style: String,
    sources: Vec<String>,
    summary: String,
    title: String,
}

/// START → fetch → summarize → END, and START → format → END.
fn pipeline(calls: Arc<Calls>, cache: Arc<InMemoryCache>) -> CompiledGraph<Article> {
    pipeline_with_fetch(calls, cache).0
}

/// The pipeline and its `fetch` node.
fn pipeline_with_fetch(
    calls: Arc<Calls>,
    cache: Arc<InMemoryCache>,
) -> (CompiledGraph<Article>, NodeHandle<Article>) {
    let mut g = StateGraph::<Article>::new();
    let c = calls.clone();
    let fetch = g.add_node_fn("fetch", move |a: &Article| {
        c.hit("fetch");
        // Topics of equal length fetch the same sources: lets a changed input leave
        // the output unchanged.
        Article::update().sources(vec![format!("source-{}", a.topic.len())])
    });
    let c = calls.clone();
    let summarize = g.add_node_fn("summarize", move |a: &Article| {
        c.hit("summarize");
        Article::update().summary(a.sources.join("+"))
    });
    let c = calls;
    let format = g.add_node_fn("format", move |a: &Article| {
        c.hit("format");
        Article::update().title(format!("[{}]", a.style))
    });
    g.add_edge(START, &fetch)
        .add_edge(&fetch, &summarize)
        .add_edge(&summarize, END)
        .add_edge(START, &format)
        .add_edge(&format, END);
    g.reads(&fetch, Article::TOPIC)
        .reads(&summarize, Article::SOURCES)
        .reads(&format, Article::STYLE);
    for node in [&fetch, &summarize, &format] {
        g.cache(node, CachePolicy::new());
    }
    let graph = g
        .compile_with(
            CompileOptions::new()
                .checkpointer(InMemorySaver::new())
                .shared_cache(cache),
        )
        .unwrap();
    (graph, fetch)
}

fn input(topic: &str, style: &str) -> ArticleUpdate {
    Article::update().topic(topic).style(style)
}

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(n, c)| (n.to_string(), *c)).collect()
}

#[tokio::test]
async fn an_unchanged_input_reruns_nothing_and_the_history_marks_the_hits() {
    let calls = Arc::new(Calls::default());
    let g = pipeline(calls.clone(), Arc::new(InMemoryCache::new()));
    let cfg = RunConfig::new().thread("t");
    let first = g.invoke(input("rust", "plain"), &cfg).await.unwrap();
    assert_eq!(
        calls.take(),
        counts(&[("fetch", 1), ("format", 1), ("summarize", 1)])
    );
    let second = g.invoke(input("rust", "plain"), &cfg).await.unwrap();
    assert_eq!(
        calls.take(),
        BTreeMap::new(),
        "everything came from the cache"
    );
    assert_eq!(second.values, first.values);
    assert_eq!(second.values.summary, "source-4");

    let history = g
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap();
    let mut cached: Vec<(i64, String, bool)> = history
        .iter()
        .flat_map(|s| s.metadata.steps.iter())
        .flat_map(|step| {
            step.tasks
                .iter()
                .map(move |t| (step.step, t.node.clone(), t.cached))
        })
        .collect();
    cached.sort();
    // Steps 0-1 are the first run, 3-4 the second (2 is the second run's input).
    assert_eq!(
        cached,
        [
            (0, "fetch".to_string(), false),
            (0, "format".to_string(), false),
            (1, "summarize".to_string(), false),
            (3, "fetch".to_string(), true),
            (3, "format".to_string(), true),
            (4, "summarize".to_string(), true),
        ]
    );
}

#[tokio::test]
async fn a_changed_channel_reruns_its_readers_and_downstream_nodes_whose_input_changed() {
    let calls = Arc::new(Calls::default());
    let g = pipeline(calls.clone(), Arc::new(InMemoryCache::new()));
    let cfg = RunConfig::new().thread("t");
    g.invoke(input("rust", "plain"), &cfg).await.unwrap();
    calls.take();

    // Only `format` reads `style`.
    let out = g.invoke(input("rust", "bold"), &cfg).await.unwrap();
    assert_eq!(calls.take(), counts(&[("format", 1)]));
    assert_eq!(out.values.title, "[bold]");

    // A new topic of another length: fetch's output changes, so summarize re-runs.
    let out = g.invoke(input("golang", "bold"), &cfg).await.unwrap();
    assert_eq!(calls.take(), counts(&[("fetch", 1), ("summarize", 1)]));
    assert_eq!(out.values.summary, "source-6");

    // A new topic of the same length: fetch re-runs, writes the same sources, and
    // summarize (whose input did not change) is served from the cache.
    let out = g.invoke(input("python", "bold"), &cfg).await.unwrap();
    assert_eq!(calls.take(), counts(&[("fetch", 1)]));
    assert_eq!(out.values.summary, "source-6");
}

#[tokio::test]
async fn the_cache_is_per_thread() {
    let calls = Arc::new(Calls::default());
    let g = pipeline(calls.clone(), Arc::new(InMemoryCache::new()));
    g.invoke(input("rust", "plain"), &RunConfig::new().thread("a"))
        .await
        .unwrap();
    calls.take();
    g.invoke(input("rust", "plain"), &RunConfig::new().thread("b"))
        .await
        .unwrap();
    assert_eq!(
        calls.take(),
        counts(&[("fetch", 1), ("format", 1), ("summarize", 1)])
    );
}

#[derive(GraphState, Clone, Debug, Default)]
struct Counter {
    #[reducer(add)]
    total: u64,
    label: String,
}

static TICKS: AtomicUsize = AtomicUsize::new(0);

/// Reads `total` and `label`, and adds to `total`.
#[node(reads(total, label))]
fn tick(_c: &Counter) -> CounterUpdate {
    TICKS.fetch_add(1, Ordering::SeqCst);
    Counter::update().total(1)
}

#[tokio::test]
async fn an_accumulator_does_not_go_stale_from_its_own_writes() {
    let g = StateGraph::<Counter>::new()
        .add_node(tick)
        .add_edge(START, tick)
        .add_edge(tick, END)
        .cache(tick, CachePolicy::new())
        .compile_with(
            CompileOptions::new()
                .checkpointer(InMemorySaver::new())
                .cache(InMemoryCache::new()),
        )
        .unwrap();
    let cfg = RunConfig::new().thread("t");
    TICKS.store(0, Ordering::SeqCst);
    let out = g.invoke(Counter::update().label("x"), &cfg).await.unwrap();
    assert_eq!((out.values.total, TICKS.load(Ordering::SeqCst)), (1, 1));
    // `total` changed only by tick's own write: tick is not stale, its recorded write
    // is reused.
    let out = g.invoke(Counter::update(), &cfg).await.unwrap();
    assert_eq!((out.values.total, TICKS.load(Ordering::SeqCst)), (2, 1));
    let staleness = g.staleness(&cfg, tick).await.unwrap();
    assert!(!staleness.stale, "{staleness:?}");
    // Someone else writing `total` does make it stale.
    g.update_state(&cfg, Counter::update().total(10))
        .await
        .unwrap();
    let staleness = g.staleness(&cfg, tick).await.unwrap();
    assert!(staleness.stale);
    assert_eq!(staleness.changed.len(), 1);
    assert_eq!(staleness.changed[0].channel, "total");
    assert!(staleness.changed[0].current_version > staleness.changed[0].seen_version);
    let out = g.invoke(Counter::update(), &cfg).await.unwrap();
    assert_eq!((out.values.total, TICKS.load(Ordering::SeqCst)), (13, 2));
}

#[derive(GraphState, Clone, Debug, Default)]
struct Fan {
    items: Vec<u64>,
    #[reducer(append)]
    doubled: Vec<u64>,
}

static WORKS: AtomicUsize = AtomicUsize::new(0);

#[node]
fn split(_f: &Fan) -> Option<FanUpdate> {
    None
}

#[node]
fn double(item: &u64) -> FanUpdate {
    WORKS.fetch_add(1, Ordering::SeqCst);
    Fan::update().doubled([item * 2])
}

#[tokio::test]
async fn send_payloads_are_cached_by_their_hash() {
    let g = StateGraph::<Fan>::new()
        .add_node(split)
        .add_node(double)
        .add_edge(START, split)
        .add_conditional_edges(
            split,
            |f: &Fan| Route::sends(f.items.iter().map(|&i| Send::new(double, i))),
            [double],
        )
        .add_edge(double, END)
        .cache(double, CachePolicy::new())
        .compile_with(CompileOptions::new().cache(InMemoryCache::new()))
        .unwrap();
    let cfg = RunConfig::new().thread("t");
    WORKS.store(0, Ordering::SeqCst);
    let out = g
        .invoke(Fan::update().items(vec![1, 2, 3]), &cfg)
        .await
        .unwrap();
    assert_eq!(out.values.doubled, [2, 4, 6]);
    assert_eq!(WORKS.swap(0, Ordering::SeqCst), 3);
    // Without a checkpointer each run starts from a fresh state; the cache is kept.
    let out = g
        .invoke(Fan::update().items(vec![3, 4, 1]), &cfg)
        .await
        .unwrap();
    assert_eq!(out.values.doubled, [6, 8, 2], "results in emission order");
    assert_eq!(WORKS.swap(0, Ordering::SeqCst), 1, "only 4 is new");
    assert!(matches!(
        g.staleness(&cfg, double).await,
        Err(RunError::PayloadKeyedCache { .. })
    ));
    assert_eq!(g.clear_node_cache(&cfg, double).await.unwrap(), 4);
}

#[derive(GraphState, Clone, Debug, Default)]
struct Quote {
    symbol: String,
    price: u64,
}

static LOOKUPS: AtomicUsize = AtomicUsize::new(0);

#[node(reads(symbol))]
fn price(q: &Quote) -> QuoteUpdate {
    LOOKUPS.fetch_add(1, Ordering::SeqCst);
    Quote::update().price(q.symbol.len() as u64)
}

#[tokio::test(start_paused = true)]
async fn entries_expire_after_their_ttl() {
    let g = StateGraph::<Quote>::new()
        .add_node(price)
        .add_edge(START, price)
        .add_edge(price, END)
        .cache(price, CachePolicy::new().ttl(Duration::from_secs(60)))
        .compile_with(
            CompileOptions::new()
                .checkpointer(InMemorySaver::new())
                .cache(InMemoryCache::new()),
        )
        .unwrap();
    let cfg = RunConfig::new().thread("t");
    let run = || g.invoke(Quote::update().symbol("ACME"), &cfg);
    LOOKUPS.store(0, Ordering::SeqCst);
    run().await.unwrap();
    tokio::time::advance(Duration::from_secs(59)).await;
    run().await.unwrap();
    assert_eq!(LOOKUPS.load(Ordering::SeqCst), 1, "still fresh after 59 s");
    assert!(!g.staleness(&cfg, price).await.unwrap().stale);
    tokio::time::advance(Duration::from_secs(2)).await;
    let staleness = g.staleness(&cfg, price).await.unwrap();
    assert!(staleness.stale && staleness.expired && staleness.changed.is_empty());
    run().await.unwrap();
    assert_eq!(LOOKUPS.load(Ordering::SeqCst), 2, "expired after 61 s");
    // The new entry has a new expiry.
    tokio::time::advance(Duration::from_secs(30)).await;
    run().await.unwrap();
    assert_eq!(LOOKUPS.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn cache_hits_are_marked_in_updates_and_task_events() {
    let calls = Arc::new(Calls::default());
    let g = pipeline(calls.clone(), Arc::new(InMemoryCache::new()));
    let cfg = RunConfig::new().thread("t");
    g.invoke(input("rust", "plain"), &cfg).await.unwrap();
    let mut events = g.stream(
        input("rust", "bold"),
        &cfg,
        StreamMode::UPDATES | StreamMode::TASKS,
    );
    let mut starts = Vec::new();
    let mut updates = Vec::new();
    let mut results = Vec::new();
    while let Some(event) = events.next().await {
        match event.unwrap() {
            StreamEvent::TaskStart { node, cached, .. } => starts.push((node, cached)),
            StreamEvent::Updates { node, cached, .. } => updates.push((node, cached)),
            StreamEvent::TaskResult { node, cached, .. } => results.push((node, cached)),
            _ => {}
        }
    }
    let expected = vec![
        ("fetch".to_string(), true),
        ("format".to_string(), false),
        ("summarize".to_string(), true),
    ];
    assert_eq!(starts, expected);
    assert_eq!(updates, expected);
    assert_eq!(results, expected);
}

#[tokio::test]
async fn staleness_names_the_changed_channels_and_clearing_forces_a_rerun() {
    let calls = Arc::new(Calls::default());
    let (g, fetch) = pipeline_with_fetch(calls.clone(), Arc::new(InMemoryCache::new()));
    let cfg = RunConfig::new().thread("t");
    let never = g.staleness(&cfg, &fetch).await.unwrap();
    assert!(never.stale && !never.recorded);

    g.invoke(input("rust", "plain"), &cfg).await.unwrap();
    calls.take();
    let fresh = g.staleness(&cfg, &fetch).await.unwrap();
    assert!(!fresh.stale && fresh.recorded && fresh.changed.is_empty());

    g.update_state(&cfg, Article::update().topic("go"))
        .await
        .unwrap();
    let stale = g.staleness(&cfg, &fetch).await.unwrap();
    assert!(stale.stale);
    let changed: Vec<&str> = stale.changed.iter().map(|c| c.channel.as_str()).collect();
    assert_eq!(changed, ["topic"]);

    assert_eq!(g.clear_node_cache(&cfg, &fetch).await.unwrap(), 1);
    assert!(!g.staleness(&cfg, &fetch).await.unwrap().recorded);
    g.invoke(input("go", "plain"), &cfg).await.unwrap();
    // fetch re-ran (cleared and stale); its sources changed, so summarize did too.
    assert_eq!(calls.take(), counts(&[("fetch", 1), ("summarize", 1)]));
    assert_eq!(g.clear_cache(&cfg).await.unwrap(), 3);
    g.invoke(input("go", "plain"), &cfg).await.unwrap();
    assert_eq!(
        calls.take(),
        counts(&[("fetch", 1), ("format", 1), ("summarize", 1)])
    );
}

#[tokio::test]
async fn a_node_that_declares_no_reads_goes_stale_when_any_channel_changes() {
    let mut g = StateGraph::<Article>::new();
    let all = g.add_node_fn("all", |a: &Article| {
        Article::update().summary(a.topic.clone())
    });
    g.add_edge(START, &all).cache(&all, CachePolicy::new());
    let g = g
        .compile_with(
            CompileOptions::new()
                .checkpointer(InMemorySaver::new())
                .cache(InMemoryCache::new()),
        )
        .unwrap();
    let cfg = RunConfig::new().thread("t");
    g.invoke(input("rust", "plain"), &cfg).await.unwrap();
    // Its own write to `summary` does not count.
    assert!(!g.staleness(&cfg, &all).await.unwrap().stale);
    g.update_state(&cfg, Article::update().title("t"))
        .await
        .unwrap();
    let staleness = g.staleness(&cfg, &all).await.unwrap();
    let changed: Vec<&str> = staleness
        .changed
        .iter()
        .map(|c| c.channel.as_str())
        .collect();
    assert_eq!(changed, ["title"]);
}

#[test]
fn a_cache_policy_needs_a_known_node_and_a_store() {
    let mut g = StateGraph::<Quote>::new();
    g.add_node(price)
        .add_edge(START, price)
        .add_edge(price, END);
    g.cache(price, CachePolicy::new());
    let err = g.compile().unwrap_err();
    assert_eq!(
        err.problems,
        [BuildProblem::MissingCacheStore {
            name: "price".to_string()
        }]
    );
    assert!(err.to_string().contains("CompileOptions::cache"));

    let mut other = StateGraph::<Quote>::new();
    let ghost = other.add_node_fn("ghost", |_q: &Quote| Quote::update());
    g.cache(&ghost, CachePolicy::new());
    let err = g
        .compile_with(CompileOptions::new().cache(InMemoryCache::new()))
        .unwrap_err();
    assert_eq!(
        err.problems,
        [BuildProblem::UnknownCacheNode {
            name: "ghost".to_string()
        }]
    );
}

#[tokio::test]
async fn cache_calls_without_a_store_or_policy_are_clear_errors() {
    let g = StateGraph::<Quote>::new()
        .add_node(price)
        .add_edge(START, price)
        .compile()
        .unwrap();
    let cfg = RunConfig::new().thread("t");
    assert!(matches!(
        g.clear_cache(&cfg).await,
        Err(RunError::NoCacheStore)
    ));
    let g = StateGraph::<Quote>::new()
        .add_node(price)
        .add_edge(START, price)
        .compile_with(CompileOptions::new().cache(InMemoryCache::new()))
        .unwrap();
    let err = g.staleness(&cfg, price).await.unwrap_err();
    assert!(matches!(&err, RunError::NotCached { node } if node == "price"));
    assert!(err.to_string().contains("StateGraph::cache"));
}
