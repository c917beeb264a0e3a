//! Checkpoint storage: 1000 supersteps each appending a 1 KiB string keep every
//! checkpoint within ~3× the data (append channels store deltas, with a whole value
//! again each time the length doubles), and any checkpoint restores exactly; the
//! durability modes end in the same state, `Exit` writing one checkpoint per run.

use std::sync::Arc;

use stategraph::checkpoint::{CheckpointSource, InMemorySaver, ListOptions};
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Big {
    #[reducer(append)]
    items: Vec<String>,
    /// Supersteps done.
    counter: u64,
    /// Where to stop.
    target: u64,
}

const ITEM_BYTES: usize = 1024;
const MIB: usize = 1024 * 1024;

/// The `n`-th item: 1 KiB, distinct per `n`.
fn item(n: u64) -> String {
    let head = format!("item-{n:05}-");
    let fill = char::from(b'a' + u8::try_from(n % 26).unwrap());
    let mut s = head;
    while s.len() < ITEM_BYTES {
        s.push(fill);
    }
    s
}

#[node]
fn grow(s: &Big) -> BigUpdate {
    Big::update()
        .items([item(s.counter)])
        .counter(s.counter + 1)
}

fn looping(saver: &Arc<InMemorySaver>) -> CompiledGraph<Big> {
    StateGraph::<Big>::new()
        .add_node(grow)
        .add_edge(START, grow)
        .add_conditional_edges(
            grow,
            |s: &Big| {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_one_kib_appends_store_within_three_times_the_data_and_restore_exactly() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = looping(&saver);
    let cfg = RunConfig::new().thread("state_big").recursion_limit(1010);

    let out = graph
        .invoke(Big::update().target(1000), &cfg)
        .await
        .unwrap();
    assert_eq!(out.steps, 1000);
    assert_eq!(out.values.counter, 1000);
    assert_eq!(out.values.items.len(), 1000);
    assert!(
        out.values
            .items
            .iter()
            .zip(0..)
            .all(|(s, n)| *s == item(n) && s.len() == ITEM_BYTES)
    );

    let bytes = saver.stored_value_bytes();
    println!(
        "state_big: {} checkpoints, stored_value_bytes = {bytes} ({:.3} MiB; data = {} bytes)",
        saver.checkpoint_count(),
        bytes as f64 / MIB as f64,
        1000 * ITEM_BYTES
    );
    assert!(
        bytes <= 3 * MIB,
        "stored {bytes} bytes for 1000 × 1 KiB, over 3 MiB"
    );
    // Not suspiciously small either: every item is stored at least once.
    assert!(bytes >= 1000 * ITEM_BYTES, "{bytes}");

    // Every checkpoint is kept: the input and one per superstep.
    assert_eq!(saver.checkpoint_count(), 1001);

    // The latest checkpoint restores exactly the run's final values.
    let latest = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(latest.values, out.values);
    assert_eq!(latest.metadata.step, 999);
    assert!(latest.next.is_empty());

    // An old checkpoint restores exactly its own state.
    for step in [0_i64, 1, 2, 3, 255, 256, 500, 511, 512, 513, 998] {
        let at = graph
            .get_state_history(
                &cfg,
                &ListOptions::new()
                    .filter("source", "loop")
                    .filter("step", step),
            )
            .await
            .unwrap();
        assert_eq!(at.len(), 1, "step {step}");
        let id = at[0].config.checkpoint_id.clone().unwrap();
        let snap = graph
            .get_state(&cfg.clone().checkpoint(id))
            .await
            .unwrap()
            .unwrap();
        let len = usize::try_from(step).unwrap() + 1;
        assert_eq!(snap.values.items.len(), len, "step {step}");
        assert_eq!(snap.values.items, out.values.items[..len], "step {step}");
        assert_eq!(snap.values.counter, u64::try_from(len).unwrap());
        assert_eq!(snap.values, at[0].values);
        assert_eq!(snap.next, ["grow"]);
    }
    let input = graph
        .get_state_history(&cfg, &ListOptions::new().filter("source", "input"))
        .await
        .unwrap();
    assert_eq!(input.len(), 1);
    assert_eq!(input[0].metadata.step, -1);
    assert!(input[0].values.items.is_empty());
    assert_eq!(input[0].values.target, 1000);

    // Continuing the thread from the restored state appends after the 1000 items.
    let more = graph
        .invoke(Big::update().target(1003), &cfg)
        .await
        .unwrap();
    assert_eq!(more.values.items.len(), 1003);
    assert_eq!(more.values.items[..1000], out.values.items[..]);
    assert_eq!(more.values.items[1002], item(1002));
    assert_eq!(
        graph.get_state(&cfg).await.unwrap().unwrap().values,
        more.values
    );
}

async fn run_with(durability: Durability, target: u64) -> (Big, usize, Arc<InMemorySaver>) {
    let saver = Arc::new(InMemorySaver::new());
    let graph = looping(&saver);
    let cfg = RunConfig::new().thread("d").durability(durability);
    let out = graph
        .invoke(Big::update().target(target), &cfg)
        .await
        .unwrap();
    assert_eq!(out.steps, usize::try_from(target).unwrap());
    let restored = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(restored.values, out.values, "{durability:?}");
    assert!(restored.next.is_empty(), "{durability:?}");
    assert_eq!(
        out.checkpoint.as_ref(),
        Some(&restored.config),
        "{durability:?}"
    );
    (out.values, saver.checkpoint_count(), saver)
}

#[tokio::test]
async fn durability_modes_end_in_the_same_state() {
    let target = 40;
    let (sync, sync_count, _) = run_with(Durability::Sync, target).await;
    let (asynchronous, async_count, _) = run_with(Durability::Async, target).await;
    let (exit, exit_count, exit_saver) = run_with(Durability::Exit, target).await;

    assert_eq!(sync.items.len(), 40);
    assert_eq!(sync, asynchronous);
    assert_eq!(sync, exit);

    // Sync and Async: the input and one per superstep. Exit: one at the end.
    assert_eq!(sync_count, 1 + 40);
    assert_eq!(async_count, sync_count);
    assert_eq!(exit_count, 1);

    // The `Exit` checkpoint is the last superstep's.
    let graph = looping(&exit_saver);
    let cfg = RunConfig::new().thread("d");
    let only = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(only.metadata.source, CheckpointSource::Loop);
    assert_eq!(only.metadata.step, 39);
    assert_eq!(only.parent_config, None);

    // A new input on that thread with `Exit` writes exactly one more checkpoint, and
    // the thread carries on.
    let out = graph
        .invoke(
            Big::update().target(45),
            &cfg.clone().durability(Durability::Exit),
        )
        .await
        .unwrap();
    assert_eq!(out.steps, 5);
    assert_eq!(out.values.items.len(), 45);
    assert_eq!(exit_saver.checkpoint_count(), 2);
    let last = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(last.values, out.values);
    assert_eq!(last.parent_config.as_ref(), Some(&only.config));
    assert_eq!(last.metadata.step, 45);
}

#[tokio::test]
async fn async_durability_stores_the_same_checkpoints_as_sync() {
    let (_, _, sync_saver) = run_with(Durability::Sync, 25).await;
    let (_, _, async_saver) = run_with(Durability::Async, 25).await;
    let sync_graph = looping(&sync_saver);
    let async_graph = looping(&async_saver);
    let cfg = RunConfig::new().thread("d");
    let shape = |h: Vec<stategraph::StateSnapshot<Big>>| {
        h.into_iter()
            .map(|s| (s.metadata.step, s.metadata.source, s.values, s.next))
            .collect::<Vec<_>>()
    };
    let sync = shape(
        sync_graph
            .get_state_history(&cfg, &ListOptions::new())
            .await
            .unwrap(),
    );
    let asynchronous = shape(
        async_graph
            .get_state_history(&cfg, &ListOptions::new())
            .await
            .unwrap(),
    );
    assert_eq!(sync.len(), 26);
    assert_eq!(sync, asynchronous);
    assert_eq!(
        sync_saver.stored_value_bytes(),
        async_saver.stored_value_bytes()
    );
}
