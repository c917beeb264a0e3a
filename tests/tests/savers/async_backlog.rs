//! `Durability::Async` with a saver slower than the graph: the run waits for the
//! background saver once a bounded number of saves is queued, instead of queueing the
//! whole thread in memory (a long thread on SQLite grew its memory with its length).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use stategraph::BoxFuture;
use stategraph::NodeHandle;
use stategraph::checkpoint::CheckpointSaver;
use stategraph::prelude::*;
use stategraph_tests::intercept::{Intercepted, OnWrite, Write};

#[derive(GraphState, Clone, Debug, Default)]
struct Count {
    counter: u64,
}

/// Steps of the thread: 2 saves each (the task's writes, the checkpoint).
const STEPS: u64 = 3000;

/// Batches wait until the graph has run its last step (or half a second has passed), and
/// the largest batch is recorded.
struct GatedBatches {
    open: Arc<AtomicBool>,
    largest: AtomicUsize,
}

impl OnWrite for GatedBatches {
    fn before<'a>(&'a self, write: Write<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Write::Batch(ops) = write else {
                return;
            };
            self.largest.fetch_max(ops.len(), Ordering::SeqCst);
            let t0 = Instant::now();
            while !self.open.load(Ordering::SeqCst) && t0.elapsed() < Duration::from_millis(500) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    }
}

/// Runs `step` first, then again until `done` holds.
fn repeat_until<S: GraphState>(
    g: &mut StateGraph<S>,
    step: &NodeHandle<S>,
    done: impl Fn(&S) -> bool + Send + Sync + 'static,
) {
    let target = step.clone();
    g.add_edge(START, step).add_conditional_edges(
        step,
        move |s: &S| {
            if done(s) {
                Route::end()
            } else {
                Route::to(&target)
            }
        },
        (step, END),
    );
}

#[tokio::test]
async fn a_slow_saver_holds_back_an_async_run_instead_of_queueing_the_thread() {
    let open = Arc::new(AtomicBool::new(false));
    let saver = Arc::new(Intercepted::new(GatedBatches {
        open: open.clone(),
        largest: AtomicUsize::new(0),
    }));
    let mut g = StateGraph::<Count>::new();
    let step = g.add_node_fn("step", move |s: &Count| {
        if s.counter + 1 >= STEPS {
            open.store(true, Ordering::SeqCst);
        }
        Count::update().counter(s.counter + 1)
    });
    repeat_until(&mut g, &step, |s: &Count| s.counter >= STEPS);
    let graph = g
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap();
    let config = RunConfig::new()
        .thread("long")
        .recursion_limit(STEPS as usize + 10)
        .durability(Durability::Async);
    let out = graph
        .invoke(Count::update().counter(0u64), &config)
        .await
        .unwrap();
    assert_eq!(out.values.counter, STEPS);
    // Everything landed: the input checkpoint and one per step.
    assert_eq!(saver.inner.checkpoint_count(), STEPS as usize + 1);
    let saved = graph.get_state(&config).await.unwrap().unwrap();
    assert_eq!(saved.values.counter, STEPS);
    // Unbounded, the first gated batch let the graph queue all 6,000 saves; bounded,
    // the run stops at 1,024 queued saves (plus the one that reached the bound).
    let largest = saver.hook.largest.load(Ordering::SeqCst);
    assert!(
        largest <= 1025,
        "the largest background batch held {largest} saves of {}",
        2 * STEPS
    );
}

#[derive(GraphState, Clone, Debug, Default)]
struct Seen {
    /// The checkpoints stored when each step's task ran.
    #[reducer(append)]
    stored: Vec<usize>,
}

/// The in-memory saver's saves are over when called: an `Async` run stores each
/// checkpoint as it makes it instead of queueing it for a background batch, so every
/// step finds the previous one stored. A saver that does not say so is still saved
/// in the background (the test above).
#[tokio::test]
async fn an_async_run_on_the_in_memory_saver_stores_each_save_as_it_comes() {
    let saver = Arc::new(InMemorySaver::new());
    assert!(saver.saves_inline());
    assert!(
        !Intercepted::new(GatedBatches {
            open: Arc::new(AtomicBool::new(true)),
            largest: AtomicUsize::new(0),
        })
        .saves_inline()
    );
    let mut g = StateGraph::<Seen>::new();
    let seen = saver.clone();
    let step = g.add_node_fn("step", move |_: &Seen| {
        Seen::update().stored([seen.checkpoint_count()])
    });
    repeat_until(&mut g, &step, |s: &Seen| s.stored.len() >= 5);
    let graph = g
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap();
    let config = RunConfig::new()
        .thread("inline")
        .durability(Durability::Async);
    let out = graph.invoke(Seen::update(), &config).await.unwrap();
    // The input checkpoint, then one more before each next step.
    assert_eq!(out.values.stored, [1, 2, 3, 4, 5]);
    assert_eq!(saver.checkpoint_count(), 6);
}
