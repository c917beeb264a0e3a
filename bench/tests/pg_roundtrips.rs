//! The PostgreSQL saver's hot path counted in round trips through the bench's proxy:
//! a superstep's save under `Durability::Sync` — one `put_batch` of the step's last
//! task's writes and the new checkpoint, on a thread this process holds — waits for
//! the server once, lock check included, once its statements are prepared.
//!
//! Needs a server: set `STATEGRAPH_POSTGRES_URL` (skips without it, fails under
//! `CI=true`).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;
use stategraph::checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointSource,
    ListOptions, PendingWrite, SaveOp, StoredValue, new_checkpoint_id, now_rfc3339,
};
use stategraph_bench::roundtrips::{RoundTripProxy, upstream, via};
use stategraph_postgres::{PostgresOptions, PostgresSaver, connect_pool};

fn server() -> Option<String> {
    match std::env::var("STATEGRAPH_POSTGRES_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").map_or(true, |v| v != "true"),
                "STATEGRAPH_POSTGRES_URL is not set, and CI=true requires the PostgreSQL tests to run"
            );
            eprintln!("notice: pg_roundtrips skipped: set STATEGRAPH_POSTGRES_URL to run it");
            None
        }
    }
}

/// A checkpoint whose `counter` channel is at `version`.
fn checkpoint(version: u64) -> Checkpoint {
    Checkpoint {
        v: 1,
        id: new_checkpoint_id(),
        ts: now_rfc3339(),
        channel_values: BTreeMap::from([("counter".into(), StoredValue::Full(json!(version)))]),
        channel_versions: BTreeMap::from([("counter".into(), version)]),
        versions_seen: BTreeMap::new(),
        updated_channels: vec!["counter".into()],
        channel_bases: BTreeMap::new(),
        next: Vec::new(),
        barriers: BTreeMap::new(),
        schema_version: "test".into(),
        graph_version: "".into(),
    }
}

#[tokio::test]
async fn a_superstep_save_is_one_round_trip() {
    let Some(url) = server() else {
        return;
    };
    let schema = format!("rt_{}", new_checkpoint_id().to_lowercase());
    let proxy = RoundTripProxy::start(upstream(&url).unwrap())
        .await
        .unwrap();
    let options = PostgresOptions::new().schema(&schema).pool_size(1);
    let saver = PostgresSaver::connect_with(&via(&url, proxy.addr()).unwrap(), options)
        .await
        .unwrap();
    let thread = "rt";
    // Held: each save also checks, on the server, that the lock is still held.
    let lock = saver
        .lock_thread(thread, Duration::from_secs(5))
        .await
        .unwrap();
    let mut parent = saver
        .put(
            &CheckpointConfig::thread(thread),
            checkpoint(1),
            CheckpointMetadata::new(CheckpointSource::Input, -1),
        )
        .await
        .unwrap();
    let mut trips = Vec::new();
    for version in 2..=6 {
        let next = checkpoint(version);
        let id = next.id.clone();
        let ops = vec![
            SaveOp::Writes {
                config: parent.clone(),
                writes: vec![PendingWrite {
                    task_id: format!("task-{version}"),
                    idx: 0,
                    channel: "update".into(),
                    value: json!({"counter": version}),
                }],
            },
            SaveOp::Checkpoint {
                config: parent.clone(),
                checkpoint: next,
                metadata: CheckpointMetadata::new(CheckpointSource::Loop, version as i64 - 2),
            },
        ];
        let before = proxy.round_trips();
        saver.put_batch(ops).await.unwrap();
        trips.push(proxy.round_trips() - before);
        parent = CheckpointConfig::thread(thread).at(id);
    }
    // The first batch prepares the writes statement on the connection; every later
    // one is a single flight.
    assert_eq!(trips[1..], [1, 1, 1, 1], "round trips per save: {trips:?}");

    let stored = saver
        .list(&CheckpointConfig::thread(thread), &ListOptions::new())
        .await
        .unwrap();
    assert_eq!(stored.len(), 6);
    assert_eq!(stored[0].config, parent);
    assert!(stored[1..5].iter().all(|t| t.pending_writes.len() == 1));

    drop(lock);
    drop(saver);
    let pool = connect_pool(&url, &PostgresOptions::new()).await.unwrap();
    pool.get()
        .await
        .unwrap()
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
