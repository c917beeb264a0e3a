//! An untracked channel needs no serde impls: it never reaches a checkpoint. (It does
//! need `Clone`, `Default` and `Debug`, because the state derives them.)

use std::sync::Arc;

use stategraph::prelude::*;

/// A handle with no serde impls.
#[derive(Clone, Debug, Default)]
struct Client {
    calls: Arc<std::sync::atomic::AtomicU32>,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[channel(untracked)]
    client: Client,
    #[channel(untracked)]
    #[reducer(append)]
    scratch: Vec<Client>,
}

pub fn main() {
    let client = Client::default();
    let mut state = Research::default();
    let update = Research::update()
        .topic("rust")
        .client(client.clone())
        .scratch([client]);
    assert!(format!("{update:?}").contains("<untracked>"));
    state
        .apply_writes(vec![Write::new("setup", update)])
        .expect("applies");
    assert_eq!(state.topic, "rust");
    assert_eq!(state.scratch.len(), 1);
    assert_eq!(
        Research::CLIENT.info().persistence,
        stategraph::Persistence::Untracked
    );
    assert!(state.encode_channel(Research::CLIENT.index()).unwrap().is_none());
    let _ = state.client.calls.load(std::sync::atomic::Ordering::Relaxed);
}
