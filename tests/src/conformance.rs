//! The generic saver conformance suite: every `CheckpointSaver` must pass it.
//!
//! Call [`run_all`] with a saver; each check uses its own thread ids (prefixed by a
//! fresh random tag), so a shared database can run it repeatedly.

mod namespaces;
mod order;

pub use namespaces::namespaces;
pub use order::{list_order_before_limit, order_follows_the_chain_not_the_clock};

use std::collections::BTreeMap;

use serde_json::json;
use stategraph::checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointSource,
    ListOptions, PendingWrite, SaveOp, StoredValue, new_checkpoint_id, now_rfc3339,
};

fn tag() -> String {
    new_checkpoint_id()
}

/// A checkpoint whose channel `count` is at `version` with value `version`, and an
/// append channel `log` with one item per version (a full value every 4 versions).
pub fn checkpoint(version: u64) -> Checkpoint {
    let mut channel_values = BTreeMap::new();
    channel_values.insert("count".to_string(), StoredValue::Full(json!(version)));
    let log = if version % 4 == 1 {
        StoredValue::Full(json!((1..=version).collect::<Vec<_>>()))
    } else {
        StoredValue::Append(json!([version]))
    };
    channel_values.insert("log".to_string(), log);
    let base = ((version - 1) / 4) * 4 + 1;
    Checkpoint {
        v: 1,
        id: new_checkpoint_id(),
        ts: now_rfc3339(),
        channel_values,
        channel_versions: BTreeMap::from([("count".into(), version), ("log".into(), version)]),
        versions_seen: BTreeMap::new(),
        updated_channels: vec!["count".into(), "log".into()],
        channel_bases: BTreeMap::from([("log".into(), base)]),
        next: Vec::new(),
        barriers: BTreeMap::new(),
        schema_version: "test".into(),
        graph_version: "".into(),
    }
}

fn metadata(source: CheckpointSource, step: i64) -> CheckpointMetadata {
    let mut m = CheckpointMetadata::new(source, step);
    m.extra.insert(
        "owner".into(),
        json!(if step % 2 == 0 { "even" } else { "odd" }),
    );
    m
}

/// Puts `n` chained checkpoints (an input then loops); returns their configs.
async fn chain(saver: &dyn CheckpointSaver, thread: &str, n: u64) -> Vec<CheckpointConfig> {
    let mut config = CheckpointConfig::thread(thread);
    let mut out = Vec::new();
    for version in 1..=n {
        let step = version as i64 - 2;
        let source = if step < 0 {
            CheckpointSource::Input
        } else {
            CheckpointSource::Loop
        };
        config = saver
            .put(&config, checkpoint(version), metadata(source, step))
            .await
            .expect("put");
        out.push(config.clone());
    }
    out
}

fn ids(tuples: &[stategraph::checkpoint::CheckpointTuple]) -> Vec<String> {
    tuples
        .iter()
        .map(|t| t.config.checkpoint_id.clone().unwrap_or_default())
        .collect()
}

fn id(config: &CheckpointConfig) -> String {
    config.checkpoint_id.clone().unwrap_or_default()
}

/// Runs every check.
pub async fn run_all(saver: &dyn CheckpointSaver) {
    unknown_thread_and_checkpoint(saver).await;
    latest_specific_and_parent(saver).await;
    list_order_before_limit(saver).await;
    order_follows_the_chain_not_the_clock(saver).await;
    list_filters(saver).await;
    pending_writes(saver).await;
    special_writes_replace(saver).await;
    put_batch(saver).await;
    channel_history(saver).await;
    list_threads(saver).await;
    delete_thread(saver).await;
    copy_thread(saver).await;
    prune(saver).await;
    thread_locks(saver).await;
    namespaces(saver).await;
}

/// Unknown threads and ids give `None` and empty lists, never errors.
pub async fn unknown_thread_and_checkpoint(saver: &dyn CheckpointSaver) {
    let thread = format!("unknown-{}", tag());
    let config = CheckpointConfig::thread(&thread);
    assert!(saver.get_tuple(&config).await.expect("get").is_none());
    assert!(
        saver
            .list(&config, &ListOptions::new())
            .await
            .expect("list")
            .is_empty()
    );
    chain(saver, &thread, 1).await;
    let missing = config.clone().at("ffffffffffffffffffffffff");
    assert!(saver.get_tuple(&missing).await.expect("get").is_none());
}

/// Latest vs specific checkpoint, and parent configs.
pub async fn latest_specific_and_parent(saver: &dyn CheckpointSaver) {
    let thread = format!("latest-{}", tag());
    let configs = chain(saver, &thread, 3).await;
    let latest = saver
        .get_tuple(&CheckpointConfig::thread(&thread))
        .await
        .expect("get")
        .expect("latest exists");
    assert_eq!(latest.config, configs[2]);
    assert_eq!(latest.parent_config.as_ref(), Some(&configs[1]));
    assert_eq!(latest.checkpoint.channel_versions["count"], 3);
    assert_eq!(
        latest.checkpoint.channel_values["log"],
        StoredValue::Append(json!([3]))
    );
    assert_eq!(latest.metadata.step, 1);
    let first = saver
        .get_tuple(&configs[0])
        .await
        .expect("get")
        .expect("first exists");
    assert_eq!(first.config, configs[0]);
    assert_eq!(first.parent_config, None);
    assert_eq!(first.metadata.source, CheckpointSource::Input);
    let middle = saver
        .get_tuple(&configs[1])
        .await
        .expect("get")
        .expect("middle exists");
    assert_eq!(middle.parent_config.as_ref(), Some(&configs[0]));
}

/// Metadata filters: equality on every given key.
pub async fn list_filters(saver: &dyn CheckpointSaver) {
    let thread = format!("filter-{}", tag());
    let configs = chain(saver, &thread, 5).await;
    let config = CheckpointConfig::thread(&thread);
    let list = |options: ListOptions| {
        let config = config.clone();
        async move { ids(&saver.list(&config, &options).await.expect("list")) }
    };
    assert_eq!(
        list(ListOptions::new().filter("source", "input")).await,
        [id(&configs[0])]
    );
    // Versions 1..=5 are steps -1..=3; even steps are owned by "even".
    assert_eq!(
        list(ListOptions::new().filter("step", 2)).await,
        [id(&configs[3])]
    );
    assert_eq!(
        list(
            ListOptions::new()
                .filter("source", "loop")
                .filter("owner", "odd")
        )
        .await,
        [id(&configs[4]), id(&configs[2])]
    );
    assert_eq!(
        list(ListOptions::new().filter("owner", "even")).await,
        [id(&configs[3]), id(&configs[1])]
    );
    assert!(
        list(ListOptions::new().filter("source", "fork"))
            .await
            .is_empty()
    );
    assert!(list(ListOptions::new().filter("nope", 1)).await.is_empty());
}

fn write(task: &str, idx: u32, value: serde_json::Value) -> PendingWrite {
    PendingWrite {
        task_id: task.into(),
        idx,
        channel: "update".into(),
        value,
    }
}

/// A batch stores its checkpoints and writes as the matching calls would, in order:
/// writes for a checkpoint put earlier in the same batch, idempotent writes, and a
/// chain of checkpoints whose latest is the batch's last.
pub async fn put_batch(saver: &dyn CheckpointSaver) {
    let thread = format!("batch-{}", tag());
    let first = checkpoint(1);
    let second = checkpoint(2);
    let root = CheckpointConfig::thread(&thread);
    let first_at = root.clone().at(&first.id);
    let second_at = root.clone().at(&second.id);
    saver
        .put_batch(vec![
            SaveOp::Checkpoint {
                config: root.clone(),
                checkpoint: first.clone(),
                metadata: metadata(CheckpointSource::Input, -1),
            },
            SaveOp::Writes {
                config: first_at.clone(),
                writes: vec![write("t1", 0, json!("a"))],
            },
            SaveOp::Writes {
                config: first_at.clone(),
                writes: vec![write("t1", 0, json!("ignored")), write("t1", 1, json!("b"))],
            },
            SaveOp::Checkpoint {
                config: first_at.clone(),
                checkpoint: second.clone(),
                metadata: metadata(CheckpointSource::Loop, 0),
            },
        ])
        .await
        .expect("put_batch");
    let latest = saver.get_tuple(&root).await.expect("get").expect("stored");
    assert_eq!(latest.config, second_at);
    assert_eq!(latest.parent_config.as_ref(), Some(&first_at));
    assert_eq!(latest.checkpoint, second);
    let parent = saver
        .get_tuple(&first_at)
        .await
        .expect("get")
        .expect("stored");
    let mut writes: Vec<(u32, serde_json::Value)> = parent
        .pending_writes
        .iter()
        .map(|w| (w.idx, w.value.clone()))
        .collect();
    writes.sort_by_key(|w| w.0);
    assert_eq!(writes, [(0, json!("a")), (1, json!("b"))]);
    assert_eq!(
        saver
            .list(&root, &ListOptions::new())
            .await
            .expect("list")
            .len(),
        2
    );
}

/// Pending writes come back with their checkpoint, are idempotent per (task, index),
/// and a new checkpoint starts with none.
pub async fn pending_writes(saver: &dyn CheckpointSaver) {
    let thread = format!("writes-{}", tag());
    let configs = chain(saver, &thread, 1).await;
    saver
        .put_writes(
            &configs[0],
            vec![write("t1", 0, json!(1)), write("t1", 1, json!(2))],
        )
        .await
        .expect("put_writes");
    saver
        .put_writes(&configs[0], vec![write("t1", 0, json!(1))])
        .await
        .expect("put_writes again");
    saver
        .put_writes(&configs[0], vec![write("t2", 0, json!(3))])
        .await
        .expect("put_writes t2");
    let t = saver
        .get_tuple(&configs[0])
        .await
        .expect("get")
        .expect("exists");
    let mut got: Vec<(String, u32, serde_json::Value)> = t
        .pending_writes
        .iter()
        .map(|w| (w.task_id.clone(), w.idx, w.value.clone()))
        .collect();
    got.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    assert_eq!(
        got,
        [
            ("t1".into(), 0, json!(1)),
            ("t1".into(), 1, json!(2)),
            ("t2".into(), 0, json!(3))
        ]
    );
    let next = saver
        .put(
            &configs[0],
            checkpoint(2),
            metadata(CheckpointSource::Loop, 0),
        )
        .await
        .expect("put");
    let t = saver.get_tuple(&next).await.expect("get").expect("exists");
    assert!(t.pending_writes.is_empty());
    let listed = saver
        .list(&CheckpointConfig::thread(&thread), &ListOptions::new())
        .await
        .expect("list");
    assert_eq!(
        listed[1].pending_writes.len(),
        3,
        "list returns pending writes too"
    );
}

/// Channel values are kept per version and read back by range.
pub async fn channel_history(saver: &dyn CheckpointSaver) {
    let thread = format!("history-{}", tag());
    let configs = chain(saver, &thread, 6).await;
    let h = saver
        .channel_history(&configs[5], "log", 5, 6)
        .await
        .expect("history");
    assert_eq!(
        h,
        [
            (5, StoredValue::Full(json!([1, 2, 3, 4, 5]))),
            (6, StoredValue::Append(json!([6])))
        ]
    );
    let none = saver
        .channel_history(&configs[5], "nope", 0, 10)
        .await
        .expect("history");
    assert!(none.is_empty());
    assert_eq!(
        saver.max_version(&configs[5], "log").await.expect("max"),
        Some(6)
    );
    assert_eq!(
        saver.max_version(&configs[5], "nope").await.expect("max"),
        None
    );
}

/// `list_threads` names every thread with checkpoints, in thread-id order, with its
/// count and newest checkpoint; a deleted thread is gone from it.
pub async fn list_threads(saver: &dyn CheckpointSaver) {
    let prefix = format!("threads-{}-", tag());
    let b = chain(saver, &format!("{prefix}b"), 3).await;
    let a = chain(saver, &format!("{prefix}a"), 1).await;
    let gone = format!("{prefix}c");
    chain(saver, &gone, 2).await;
    saver.delete_thread(&gone).await.expect("delete");
    let mine: Vec<_> = saver
        .list_threads()
        .await
        .expect("list_threads")
        .into_iter()
        .filter(|t| t.thread_id.starts_with(&prefix))
        .collect();
    let names: Vec<&str> = mine.iter().map(|t| t.thread_id.as_str()).collect();
    assert_eq!(names, [format!("{prefix}a"), format!("{prefix}b")]);
    for (info, configs) in mine.iter().zip([&a, &b]) {
        let latest = configs.last().expect("a chain has checkpoints");
        assert_eq!(info.checkpoint_count, configs.len() as u64);
        assert_eq!(info.latest_checkpoint_id, id(latest));
        assert_eq!(info.latest_step, configs.len() as i64 - 2);
        let tuple = saver.get_tuple(latest).await.expect("get").expect("latest");
        assert_eq!(info.latest_ts, tuple.checkpoint.ts);
    }
}

/// Deleting a thread removes everything of it and nothing else; unknown is a no-op.
pub async fn delete_thread(saver: &dyn CheckpointSaver) {
    let keep = format!("keep-{}", tag());
    let gone = format!("gone-{}", tag());
    chain(saver, &keep, 2).await;
    let configs = chain(saver, &gone, 2).await;
    saver
        .put_writes(&configs[1], vec![write("t", 0, json!(0))])
        .await
        .expect("put_writes");
    saver.delete_thread(&gone).await.expect("delete");
    saver
        .delete_thread(&format!("never-{}", tag()))
        .await
        .expect("delete unknown");
    assert!(
        saver
            .get_tuple(&CheckpointConfig::thread(&gone))
            .await
            .expect("get")
            .is_none()
    );
    assert!(
        saver
            .channel_history(&configs[1], "count", 0, 10)
            .await
            .expect("h")
            .is_empty()
    );
    let kept = saver
        .list(&CheckpointConfig::thread(&keep), &ListOptions::new())
        .await
        .expect("list");
    assert_eq!(kept.len(), 2);
}

/// Copying a thread copies its checkpoints, writes and values.
pub async fn copy_thread(saver: &dyn CheckpointSaver) {
    let from = format!("from-{}", tag());
    let to = format!("to-{}", tag());
    let configs = chain(saver, &from, 3).await;
    saver
        .put_writes(&configs[2], vec![write("t", 0, json!("w"))])
        .await
        .expect("put_writes");
    saver.copy_thread(&from, &to).await.expect("copy");
    let original = saver
        .list(&CheckpointConfig::thread(&from), &ListOptions::new())
        .await
        .expect("list");
    let copy = saver
        .list(&CheckpointConfig::thread(&to), &ListOptions::new())
        .await
        .expect("list");
    assert_eq!(ids(&copy), ids(&original));
    assert_eq!(copy[0].pending_writes, original[0].pending_writes);
    assert_eq!(copy[0].config.thread_id, to);
    let h = saver
        .channel_history(&CheckpointConfig::thread(&to), "log", 1, 3)
        .await
        .expect("history");
    assert_eq!(h.len(), 3);
    saver.delete_thread(&from).await.expect("delete");
    assert_eq!(
        saver
            .list(&CheckpointConfig::thread(&to), &ListOptions::new())
            .await
            .expect("list")
            .len(),
        3,
        "the copy is independent of the original"
    );
}

/// Pruning keeps the newest checkpoints and every value they still need.
pub async fn prune(saver: &dyn CheckpointSaver) {
    let thread = format!("prune-{}", tag());
    let configs = chain(saver, &thread, 7).await;
    for config in [&configs[1], &configs[6]] {
        saver
            .put_writes(config, vec![write("t", 0, json!(id(config)))])
            .await
            .expect("put_writes");
    }
    saver.prune(&thread, 2).await.expect("prune");
    let left = saver
        .list(&CheckpointConfig::thread(&thread), &ListOptions::new())
        .await
        .expect("list");
    assert_eq!(ids(&left), [id(&configs[6]), id(&configs[5])]);
    let kept = &left[0].pending_writes;
    assert_eq!(
        kept.len(),
        1,
        "a kept checkpoint keeps its writes: {kept:?}"
    );
    assert_eq!(kept[0].value, json!(id(&configs[6])));
    // Version 7 of `log` is a delta on the full value at version 5, which belonged to
    // a pruned checkpoint: it must still be there.
    let h = saver
        .channel_history(&configs[6], "log", 5, 7)
        .await
        .expect("history");
    assert_eq!(h.iter().map(|(v, _)| *v).collect::<Vec<_>>(), [5, 6, 7]);
    let old = saver
        .channel_history(&configs[6], "count", 1, 4)
        .await
        .expect("history");
    assert!(
        old.is_empty(),
        "values no kept checkpoint needs are removed: {old:?}"
    );
    saver
        .prune(&format!("never-{}", tag()), 1)
        .await
        .expect("prune unknown");
}

/// Special writes (channels starting with `__`) replace; a task's own writes do not.
pub async fn special_writes_replace(saver: &dyn CheckpointSaver) {
    let thread = format!("special-{}", tag());
    let configs = chain(saver, &thread, 1).await;
    let special = |v: &str| PendingWrite {
        task_id: "t".into(),
        idx: u32::MAX,
        channel: "__error__".into(),
        value: json!(v),
    };
    saver
        .put_writes(&configs[0], vec![special("first")])
        .await
        .expect("put_writes");
    saver
        .put_writes(&configs[0], vec![special("second")])
        .await
        .expect("put_writes");
    saver
        .put_writes(&configs[0], vec![write("t", 0, json!("own"))])
        .await
        .expect("put_writes");
    saver
        .put_writes(&configs[0], vec![write("t", 0, json!("again"))])
        .await
        .expect("put_writes");
    let t = saver
        .get_tuple(&configs[0])
        .await
        .expect("get")
        .expect("exists");
    let mut got: Vec<(u32, serde_json::Value)> = t
        .pending_writes
        .iter()
        .map(|w| (w.idx, w.value.clone()))
        .collect();
    got.sort_by_key(|(i, _)| *i);
    assert_eq!(got, [(0, json!("own")), (u32::MAX, json!("second"))]);
}

/// One writer per thread: a second lock on a held thread waits, then fails with
/// `ThreadBusy` naming it; another thread is free meanwhile; dropping the guard lets a
/// waiting caller in. Needs a tokio runtime with its time driver.
pub async fn thread_locks(saver: &dyn CheckpointSaver) {
    use std::time::{Duration, Instant};

    use stategraph::checkpoint::CheckpointError;

    let thread = format!("locked-{}", tag());
    let other = format!("free-{}", tag());
    let held = saver
        .lock_thread(&thread, Duration::ZERO)
        .await
        .expect("lock a free thread");
    assert_eq!(held.thread_id(), thread);

    let started = Instant::now();
    let err = saver
        .lock_thread(&thread, Duration::from_millis(150))
        .await
        .expect_err("a held thread is busy");
    let CheckpointError::ThreadBusy { thread_id, waited } = &err else {
        panic!("expected ThreadBusy, got {err:?}");
    };
    assert_eq!(thread_id, &thread);
    assert!(*waited >= Duration::from_millis(150), "{waited:?}");
    assert!(started.elapsed() >= Duration::from_millis(150));
    let message = err.to_string();
    assert!(
        message.contains(&thread) && message.contains("RunConfig::lock_timeout"),
        "{message}"
    );

    let free = saver
        .lock_thread(&other, Duration::ZERO)
        .await
        .expect("another thread is free");

    // A waiting caller gets the thread once the holder lets go.
    let started = Instant::now();
    let release = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        drop(held);
    };
    let (_, next) = futures::join!(release, saver.lock_thread(&thread, Duration::from_secs(10)));
    let next = next.expect("the released thread");
    assert!(started.elapsed() >= Duration::from_millis(100));
    assert!(started.elapsed() < Duration::from_secs(10));
    drop((next, free));
    // Released again: free at once.
    drop(
        saver
            .lock_thread(&thread, Duration::from_secs(5))
            .await
            .expect("free again"),
    );
}
