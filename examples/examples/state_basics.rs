//! Typed state in one file: define it, build partial updates, apply a superstep's
//! writes through the reducers, and look at what a checkpoint would store.
//!
//! Run it with `cargo run -p stategraph-examples --example state_basics`.

use std::collections::BTreeMap;

use stategraph::prelude::*;

fn keep_max(best: &mut f64, candidate: f64) {
    if candidate > *best {
        *best = candidate;
    }
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
    #[reducer(add)]
    steps: u32,
    #[reducer(merge)]
    scores: BTreeMap<String, f64>,
    #[reducer(messages)]
    chat: Vec<Message>,
    #[reducer(with = keep_max)]
    best: f64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut state = Research::default();

    // Two nodes ran in the same superstep; their writes apply in task order.
    let changed = state.apply_writes(vec![
        Write::new(
            "planner",
            Research::update()
                .topic("typed graph workflows")
                .notes(["outline the state"])
                .steps(1)
                .chat([Message::user("What should we research?")]),
        ),
        Write::new(
            "scorer",
            Research::update()
                .notes(["score the sources"])
                .steps(1)
                .scores([("docs.rs", 0.9), ("blog", 0.4)])
                .best(0.9),
        ),
    ])?;
    println!("after step 1: {state:#?}");
    let names: Vec<&str> = changed
        .iter()
        .map(|(i, _)| Research::CHANNELS[i].name)
        .collect();
    println!("changed channels: {names:?}");

    // A last-value channel takes one write per superstep: this step is rejected whole.
    let conflict = state.apply_writes(vec![
        Write::new("a", Research::update().topic("one").steps(1)),
        Write::new("b", Research::update().topic("two")),
    ]);
    if let Err(err) = conflict {
        println!("rejected: {err}");
    }
    println!("steps is still {}", state.steps);

    // A checkpoint stores what an append-style channel gained, not the whole list.
    let from = state
        .channel_len(Research::NOTES.index())
        .unwrap_or_default();
    state.apply_writes(vec![Write::new(
        "writer",
        Research::update().notes(["draft the summary"]),
    )])?;
    let delta = state.encode_channel_since(Research::NOTES.index(), from)?;
    println!("notes delta stored for step 3: {delta}");
    println!("schema version: {}", Research::SCHEMA_VERSION);
    Ok(())
}
