//! Time travel: invoking with an older checkpoint id writes a `fork` checkpoint
//! (parent = that checkpoint, step + 1), re-runs only what was next from there (not
//! the nodes before it, and ignoring the old branch's saved writes), and keeps the old
//! branch intact while the new branch becomes the thread's latest.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use stategraph::StateSnapshot;
use stategraph::checkpoint::{
    CheckpointConfig, CheckpointSaver, CheckpointSource, InMemorySaver, ListOptions,
};
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Flow {
    /// `name@step`, in apply order.
    #[reducer(append)]
    trace: Vec<String>,
    #[reducer(add)]
    total: u64,
}

static RUNS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

fn visit(ctx: &NodeContext, amount: u64) -> FlowUpdate {
    let key = format!("{}/{}", ctx.thread_id().unwrap_or("-"), ctx.node());
    *RUNS.lock().unwrap().entry(key).or_default() += 1;
    Flow::update()
        .trace([format!("{}@{}", ctx.node(), ctx.step())])
        .total(amount)
}

fn runs(thread: &str) -> [usize; 3] {
    let runs = RUNS.lock().unwrap();
    ["a", "b", "c"].map(|n| runs.get(&format!("{thread}/{n}")).copied().unwrap_or(0))
}

#[node]
fn a(_s: &Flow, ctx: &NodeContext) -> FlowUpdate {
    visit(ctx, 1)
}

#[node]
async fn b(_s: &Flow, ctx: &NodeContext) -> FlowUpdate {
    tokio::task::yield_now().await;
    visit(ctx, 10)
}

#[node]
fn c(_s: &Flow, ctx: &NodeContext) -> FlowUpdate {
    visit(ctx, 100)
}

fn chain(saver: &Arc<InMemorySaver>) -> CompiledGraph<Flow> {
    StateGraph::<Flow>::new()
        .add_node(a)
        .add_node(b)
        .add_node(c)
        .add_edge(START, a)
        .add_edge(a, b)
        .add_edge(b, c)
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap()
}

fn id_of(s: &StateSnapshot<Flow>) -> String {
    s.config.checkpoint_id.clone().unwrap()
}

async fn history(graph: &CompiledGraph<Flow>, thread: &str) -> Vec<StateSnapshot<Flow>> {
    graph
        .get_state_history(&RunConfig::new().thread(thread), &ListOptions::new())
        .await
        .unwrap()
}

#[tokio::test]
async fn forking_after_a_reruns_only_b_and_c_and_keeps_the_old_branch() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = chain(&saver);
    let thread = "travel";
    let cfg = RunConfig::new().thread(thread);

    let original = graph.invoke(Flow::update(), &cfg).await.unwrap();
    assert_eq!(original.values.trace, ["a@0", "b@1", "c@2"]);
    let old = history(&graph, thread).await;
    assert_eq!(old.len(), 4);
    let old_ids: Vec<String> = old.iter().map(id_of).collect();

    // The checkpoint after `a`: loop step 0, `b` next.
    let after_a = old
        .iter()
        .find(|s| s.metadata.source == CheckpointSource::Loop && s.metadata.step == 0)
        .unwrap()
        .clone();
    assert_eq!(after_a.next, ["b"]);
    assert_eq!(after_a.values.trace, ["a@0"]);
    // The original run saved b's writes on that checkpoint; a fork must not reuse them.
    let stored = saver
        .get_tuple(&CheckpointConfig::thread(thread).at(id_of(&after_a)))
        .await
        .unwrap()
        .unwrap();
    assert!(
        !stored.pending_writes.is_empty(),
        "b's writes were saved on the checkpoint"
    );

    let out = graph
        .invoke(None, &cfg.clone().checkpoint(id_of(&after_a)))
        .await
        .unwrap();
    assert_eq!(runs(thread), [1, 2, 2], "a must not re-run; b and c must");
    assert_eq!(out.steps, 2);
    // The fork checkpoint is step 1; the re-run steps carry on after it.
    assert_eq!(out.values.trace, ["a@0", "b@2", "c@3"]);
    assert_eq!(out.values.total, 111);

    let all = history(&graph, thread).await;
    assert_eq!(saver.checkpoint_count(), 7);
    assert_eq!(all.len(), 7);
    // The new branch is newest: c, b, the fork; then the old branch, untouched.
    let steps: Vec<(i64, CheckpointSource)> = all
        .iter()
        .map(|s| (s.metadata.step, s.metadata.source))
        .collect();
    use CheckpointSource::{Fork, Input, Loop};
    assert_eq!(
        steps,
        [
            (3, Loop),
            (2, Loop),
            (1, Fork),
            (2, Loop),
            (1, Loop),
            (0, Loop),
            (-1, Input)
        ]
    );
    let fork = &all[2];
    assert_eq!(fork.parent_config.as_ref(), Some(&after_a.config));
    assert_eq!(fork.metadata.parents.get(""), Some(&id_of(&after_a)));
    assert_eq!(fork.metadata.step, after_a.metadata.step + 1);
    assert_eq!(fork.values, after_a.values);
    assert_eq!(fork.next, ["b"]);
    assert_eq!(all[1].parent_config.as_ref(), Some(&fork.config));
    assert_eq!(all[0].parent_config.as_ref(), Some(&all[1].config));
    assert_eq!(all[0].values, out.values);
    assert_eq!(out.checkpoint.as_ref(), Some(&all[0].config));

    // Latest is the new branch's end.
    let latest = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(latest.config, all[0].config);
    assert_eq!(latest.values, out.values);
    assert!(latest.next.is_empty());

    // The old branch: still listed, each checkpoint as it was.
    assert_eq!(all[3..].iter().map(id_of).collect::<Vec<_>>(), old_ids);
    for before in &old {
        let now = graph
            .get_state(&cfg.clone().checkpoint(id_of(before)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            now.values, before.values,
            "old-branch checkpoint step {} changed after the fork",
            before.metadata.step
        );
        assert_eq!(now.next, before.next);
        assert_eq!(now.parent_config, before.parent_config);
        assert_eq!(now.metadata, before.metadata);
    }
}

#[tokio::test]
async fn forking_from_the_input_checkpoint_reruns_everything() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = chain(&saver);
    let thread = "from-input";
    let cfg = RunConfig::new().thread(thread);
    graph.invoke(Flow::update(), &cfg).await.unwrap();
    let input = history(&graph, thread).await.pop().unwrap();
    assert_eq!(input.metadata.source, CheckpointSource::Input);

    let out = graph
        .invoke(None, &cfg.clone().checkpoint(id_of(&input)))
        .await
        .unwrap();
    assert_eq!(runs(thread), [2, 2, 2]);
    assert_eq!(out.values.trace, ["a@1", "b@2", "c@3"]);
    let all = history(&graph, thread).await;
    assert_eq!(all.len(), 4 + 4);
    let fork = &all[3];
    assert_eq!(fork.metadata.source, CheckpointSource::Fork);
    assert_eq!(fork.metadata.step, 0);
    assert_eq!(fork.parent_config.as_ref(), Some(&input.config));
    assert_eq!(fork.next, ["a"]);
}

#[tokio::test]
async fn forking_from_the_last_checkpoint_runs_nothing() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = chain(&saver);
    let thread = "from-end";
    let cfg = RunConfig::new().thread(thread);
    let first = graph.invoke(Flow::update(), &cfg).await.unwrap();
    let last = first.checkpoint.clone().unwrap().checkpoint_id.unwrap();

    let out = graph
        .invoke(None, &cfg.clone().checkpoint(last.clone()))
        .await
        .unwrap();
    assert_eq!(out.steps, 0);
    assert_eq!(out.values, first.values);
    assert_eq!(runs(thread), [1, 1, 1]);
    let all = history(&graph, thread).await;
    assert_eq!(all.len(), 5);
    assert_eq!(all[0].metadata.source, CheckpointSource::Fork);
    assert_eq!(all[0].metadata.step, 3);
    assert_eq!(
        all[0]
            .parent_config
            .as_ref()
            .and_then(|p| p.checkpoint_id.clone()),
        Some(last)
    );
}

#[tokio::test]
async fn two_forks_of_one_checkpoint_are_separate_branches() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = chain(&saver);
    let thread = "twice";
    let cfg = RunConfig::new().thread(thread);
    graph.invoke(Flow::update(), &cfg).await.unwrap();
    let after_b = history(&graph, thread)
        .await
        .into_iter()
        .find(|s| s.metadata.step == 1)
        .unwrap();
    assert_eq!(after_b.next, ["c"]);

    let one = graph
        .invoke(None, &cfg.clone().checkpoint(id_of(&after_b)))
        .await
        .unwrap();
    let two = graph
        .invoke(None, &cfg.clone().checkpoint(id_of(&after_b)))
        .await
        .unwrap();
    assert_eq!(one.values, two.values);
    assert_eq!(one.values.trace, ["a@0", "b@1", "c@3"]);
    assert_ne!(one.checkpoint, two.checkpoint);
    assert_eq!(runs(thread), [1, 1, 3]);
    let all = history(&graph, thread).await;
    // Original 4 + (fork + c) twice; both forks hang off `after_b`.
    assert_eq!(all.len(), 8);
    let forks: Vec<&StateSnapshot<Flow>> = all
        .iter()
        .filter(|s| s.metadata.source == CheckpointSource::Fork)
        .collect();
    assert_eq!(forks.len(), 2);
    assert!(
        forks
            .iter()
            .all(|f| f.parent_config.as_ref() == Some(&after_b.config))
    );
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Grow {
    /// `grow@step`: differs between branches, whose steps differ.
    #[reducer(append)]
    items: Vec<String>,
    counter: u64,
    target: u64,
}

#[node]
fn grow(s: &Grow, ctx: &NodeContext) -> GrowUpdate {
    Grow::update()
        .items([format!("grow@{}", ctx.step())])
        .counter(s.counter + 1)
}

fn growing(saver: &Arc<InMemorySaver>) -> CompiledGraph<Grow> {
    StateGraph::<Grow>::new()
        .add_node(grow)
        .add_edge(START, grow)
        .add_conditional_edges(
            grow,
            |s: &Grow| {
                if s.counter < s.target {
                    Route::to(grow)
                } else {
                    Route::end()
                }
            },
            (grow, END),
        )
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap()
}

/// Every checkpoint of the thread, by id, restored as stored.
async fn restore_all(graph: &CompiledGraph<Grow>, thread: &str) -> BTreeMap<String, Grow> {
    let cfg = RunConfig::new().thread(thread);
    let mut out = BTreeMap::new();
    for s in graph
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap()
    {
        let id = s.config.checkpoint_id.clone().unwrap();
        let again = graph
            .get_state(&cfg.clone().checkpoint(id.clone()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            again.values, s.values,
            "history and get_state agree on {id}"
        );
        out.insert(id, s.values);
    }
    out
}

#[tokio::test]
async fn branches_of_a_delta_channel_never_see_each_others_values() {
    // 20 appends (whole values and deltas), a fork at step 7 that appends other
    // items, then a fork of the old branch at step 15: every checkpoint of every branch
    // restores exactly what it held when written.
    let saver = Arc::new(InMemorySaver::new());
    let graph = growing(&saver);
    let thread = "branches";
    let cfg = RunConfig::new().thread(thread);
    let original = graph.invoke(Grow::update().target(20), &cfg).await.unwrap();
    let expected: Vec<String> = (0..20).map(|s| format!("grow@{s}")).collect();
    assert_eq!(original.values.items, expected);
    let before_forks = restore_all(&graph, thread).await;
    assert_eq!(before_forks.len(), 21);

    let at_step = |step: i64, source: CheckpointSource| {
        let graph = graph.clone();
        let cfg = cfg.clone();
        async move {
            graph
                .get_state_history(
                    &cfg,
                    &ListOptions::new()
                        .filter("step", step)
                        .filter("source", serde_json_source(source)),
                )
                .await
                .unwrap()
                .into_iter()
                .map(|s| s.config.checkpoint_id.unwrap())
                .collect::<Vec<_>>()
        }
    };

    // Fork 1 from step 7 (8 items): the new branch's steps are shifted by one.
    let step7 = at_step(7, CheckpointSource::Loop).await;
    assert_eq!(step7.len(), 1);
    let one = graph
        .invoke(None, &cfg.clone().checkpoint(step7[0].clone()))
        .await
        .unwrap();
    let mut branch1: Vec<String> = (0..8).map(|s| format!("grow@{s}")).collect();
    branch1.extend((9..21).map(|s| format!("grow@{s}")));
    assert_eq!(one.values.items, branch1);

    // Fork 2 from the old branch's step 15.
    let step15 = at_step(15, CheckpointSource::Loop).await;
    assert_eq!(
        step15.len(),
        2,
        "the old branch's and the new branch's step 15"
    );
    let old15 = step15
        .iter()
        .find(|id| before_forks.contains_key(*id))
        .unwrap()
        .clone();
    let two = graph
        .invoke(None, &cfg.clone().checkpoint(old15))
        .await
        .unwrap();
    let mut branch2: Vec<String> = (0..16).map(|s| format!("grow@{s}")).collect();
    branch2.extend((17..21).map(|s| format!("grow@{s}")));
    assert_eq!(two.values.items, branch2);

    // Every old checkpoint is unchanged; every new one holds a prefix of its branch.
    let after = restore_all(&graph, thread).await;
    for (id, values) in &before_forks {
        assert_eq!(&after[id], values, "old-branch checkpoint {id} changed");
    }
    for (id, values) in &after {
        if before_forks.contains_key(id) {
            continue;
        }
        let n = values.items.len();
        assert!(
            values.items[..] == branch1[..n.min(branch1.len())]
                || values.items[..] == branch2[..n.min(branch2.len())],
            "new checkpoint {id} holds {:?}",
            values.items
        );
        assert_eq!(values.counter, u64::try_from(n).unwrap());
    }
    assert_eq!(
        graph.get_state(&cfg).await.unwrap().unwrap().values,
        two.values
    );
}

fn serde_json_source(source: CheckpointSource) -> String {
    serde_json::to_value(source)
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}
