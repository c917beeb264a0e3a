//! The order checks of the conformance suite: `list` order, `before` and `limit`, and
//! a thread ordered by the chain its checkpoints were stored in, never by their ids
//! (which come from clocks).

use std::time::{Duration, SystemTime};

use stategraph::checkpoint::{
    CheckpointConfig, CheckpointSaver, CheckpointSource, ListOptions, new_checkpoint_id_at,
};

use super::{chain, checkpoint, id, ids, metadata, tag};

/// `list` is newest first; `before` excludes that id and newer; `limit` caps.
pub async fn list_order_before_limit(saver: &dyn CheckpointSaver) {
    let thread = format!("list-{}", tag());
    let configs = chain(saver, &thread, 5).await;
    let all: Vec<String> = configs.iter().rev().map(id).collect();
    let config = CheckpointConfig::thread(&thread);
    let listed = saver
        .list(&config, &ListOptions::new())
        .await
        .expect("list");
    assert_eq!(ids(&listed), all);
    let before = saver
        .list(&config, &ListOptions::new().before(id(&configs[3])))
        .await
        .expect("list");
    assert_eq!(ids(&before), all[2..]);
    let limited = saver
        .list(&config, &ListOptions::new().limit(2))
        .await
        .expect("list");
    assert_eq!(ids(&limited), all[..2]);
    let both = saver
        .list(
            &config,
            &ListOptions::new().before(id(&configs[3])).limit(2),
        )
        .await
        .expect("list");
    assert_eq!(ids(&both), all[2..4]);
    let none = saver
        .list(&config, &ListOptions::new().limit(0))
        .await
        .expect("list");
    assert!(none.is_empty());
}

/// A thread's order is the order its checkpoints were stored in, never their ids:
/// three checkpoints written by a process whose clock ran an hour ahead, then two by
/// one with the right clock (smaller ids), stay in the order written for `get_tuple`,
/// `list`, `before`, `list_threads` and `prune`.
pub async fn order_follows_the_chain_not_the_clock(saver: &dyn CheckpointSaver) {
    let thread = format!("skew-{}", tag());
    let ahead = SystemTime::now() + Duration::from_secs(3600);
    let mut config = CheckpointConfig::thread(&thread);
    let mut configs = Vec::new();
    for version in 1..=5u64 {
        let mut checkpoint = checkpoint(version);
        if version <= 3 {
            checkpoint.id = new_checkpoint_id_at(ahead + Duration::from_millis(version));
        }
        let source = if version == 1 {
            CheckpointSource::Input
        } else {
            CheckpointSource::Loop
        };
        config = saver
            .put(&config, checkpoint, metadata(source, version as i64 - 2))
            .await
            .expect("put");
        configs.push(config.clone());
    }
    assert!(
        id(&configs[3]) < id(&configs[2]),
        "the right clock's ids sort before the fast clock's"
    );
    let thread_config = CheckpointConfig::thread(&thread);
    let latest = saver
        .get_tuple(&thread_config)
        .await
        .expect("get")
        .expect("latest exists");
    assert_eq!(latest.config, configs[4], "the latest is the last stored");
    assert_eq!(latest.parent_config.as_ref(), Some(&configs[3]));
    assert_eq!(latest.checkpoint.channel_versions["count"], 5);

    let newest_first: Vec<String> = configs.iter().rev().map(id).collect();
    let listed = saver
        .list(&thread_config, &ListOptions::new())
        .await
        .expect("list");
    assert_eq!(ids(&listed), newest_first);
    let before = saver
        .list(&thread_config, &ListOptions::new().before(id(&configs[3])))
        .await
        .expect("list");
    assert_eq!(ids(&before), newest_first[2..]);
    let before = saver
        .list(
            &thread_config,
            &ListOptions::new().before(id(&configs[1])).limit(5),
        )
        .await
        .expect("list");
    assert_eq!(ids(&before), newest_first[4..]);

    let info = saver
        .list_threads()
        .await
        .expect("list_threads")
        .into_iter()
        .find(|t| t.thread_id == thread)
        .expect("the thread is listed");
    assert_eq!(info.latest_checkpoint_id, id(&configs[4]));
    assert_eq!(info.latest_step, 3);
    assert_eq!(info.checkpoint_count, 5);

    saver.prune(&thread, 2).await.expect("prune");
    let kept = saver
        .list(&thread_config, &ListOptions::new())
        .await
        .expect("list");
    assert_eq!(ids(&kept), newest_first[..2], "prune keeps the last stored");
    let latest = saver
        .get_tuple(&thread_config)
        .await
        .expect("get")
        .expect("latest exists");
    assert_eq!(latest.config, configs[4]);

    // A checkpoint put again keeps its place.
    let again = saver
        .get_tuple(&configs[3])
        .await
        .expect("get")
        .expect("kept");
    saver
        .put(&configs[2], again.checkpoint, again.metadata)
        .await
        .expect("put again");
    let latest = saver
        .get_tuple(&thread_config)
        .await
        .expect("get")
        .expect("latest exists");
    assert_eq!(
        latest.config, configs[4],
        "a replaced checkpoint keeps its place"
    );
    saver.delete_thread(&thread).await.expect("delete");
}
