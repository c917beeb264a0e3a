//! Backpressure: a consumer that stops reading stops the run once the stream's buffer
//! (64 events) is full — node calls and custom emits stay bounded — and each event
//! read lets it go on; drained, the run completes with every event.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use stategraph::prelude::*;

/// Events the stream buffers before the run waits.
const BUFFER: usize = 64;
/// Slack for the event a blocked run holds while waiting for a free slot.
const SLACK: usize = 3;

/// Polls `counter` until it has not moved for 50 ms (real time, bounded); returns
/// its value.
async fn settle(counter: &AtomicUsize) -> usize {
    let mut seen = counter.load(Ordering::SeqCst);
    let mut still = 0;
    for _ in 0..5_000 {
        tokio::time::sleep(Duration::from_millis(1)).await;
        let now = counter.load(Ordering::SeqCst);
        if now == seen {
            still += 1;
            if still == 50 {
                break;
            }
        } else {
            still = 0;
            seen = now;
        }
    }
    seen
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Count {
    #[reducer(add)]
    n: u64,
}

static STEPS: AtomicUsize = AtomicUsize::new(0);

#[node]
fn step_once(_: &Count) -> CountUpdate {
    STEPS.fetch_add(1, Ordering::SeqCst);
    Count::update().n(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_consumer_slows_the_run() {
    let graph = StateGraph::<Count>::new()
        .add_node(step_once)
        .add_edge(START, step_once)
        .add_conditional_edges(
            step_once,
            |s: &Count| {
                if s.n < 1000 {
                    Route::to(step_once)
                } else {
                    Route::end()
                }
            },
            (step_once, END),
        )
        .compile()
        .unwrap();
    let mut stream = graph.stream(Count::update(), &RunConfig::new(), StreamMode::VALUES);
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(first, StreamEvent::Values { step: -1, values } if values.n == 0));

    // Not polling: the run fills the buffer, then waits.
    let blocked = settle(&STEPS).await;
    assert!(
        blocked <= BUFFER + SLACK,
        "{blocked} node calls with one event read"
    );
    assert!(blocked >= BUFFER / 2, "the run went ahead into the buffer");

    // Each event read frees one slot: one more step.
    for read in 1..=5 {
        let event = stream.next().await.unwrap().unwrap();
        assert!(matches!(event, StreamEvent::Values { step, .. } if step == read - 1));
        let now = settle(&STEPS).await;
        assert_eq!(
            now,
            blocked + usize::try_from(read).unwrap(),
            "after {read} more reads"
        );
    }

    // Draining completes the run.
    let mut values = vec![-1, 0, 1, 2, 3, 4];
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            StreamEvent::Values { step, values: s } => {
                assert_eq!(s.n, u64::try_from(step + 1).unwrap());
                values.push(step);
            }
            other => panic!("unexpected {:?}", other.mode()),
        }
    }
    assert_eq!(values.len(), 1001);
    assert_eq!(values, (-1..1000).collect::<Vec<i64>>());
    assert_eq!(STEPS.load(Ordering::SeqCst), 1000);
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Talk {
    #[reducer(add)]
    said: u64,
}

static EMITTED: AtomicUsize = AtomicUsize::new(0);

#[node]
async fn talk(_: &Talk, ctx: &NodeContext) -> Result<TalkUpdate, NodeError> {
    for k in 0..500u32 {
        ctx.emit(k).await?;
        EMITTED.fetch_add(1, Ordering::SeqCst);
    }
    Ok(Talk::update().said(500))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_consumer_slows_a_node_emitting_custom_events() {
    let graph = StateGraph::<Talk>::new()
        .add_node(talk)
        .add_edge(START, talk)
        .compile()
        .unwrap();
    let mut stream = graph.stream(
        Talk::update(),
        &RunConfig::new(),
        StreamMode::CUSTOM | StreamMode::VALUES,
    );
    assert!(matches!(
        stream.next().await.unwrap().unwrap(),
        StreamEvent::Values { step: -1, .. }
    ));
    let blocked = settle(&EMITTED).await;
    assert!(blocked <= BUFFER + SLACK, "{blocked} emits returned");
    assert!(blocked >= BUFFER / 2, "the node went ahead into the buffer");

    let mut customs = 0u32;
    let mut last = None;
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            StreamEvent::Custom { value, .. } => {
                assert_eq!(value, serde_json::json!(customs));
                customs += 1;
            }
            StreamEvent::Values { step, values } => last = Some((step, values.said)),
            other => panic!("unexpected {:?}", other.mode()),
        }
    }
    assert_eq!(customs, 500);
    assert_eq!(last, Some((0, 500)));
    assert_eq!(EMITTED.load(Ordering::SeqCst), 500);
}
