//! Checkpoint namespaces: a subgraph's checkpoints live under its parent's thread, in
//! a namespace of their own. Each namespace is a chain of its own (latest, list,
//! writes, values, prune), `list_namespaces` names them, and whole-thread operations
//! (delete, copy) take every namespace.

use serde_json::json;
use stategraph::checkpoint::{
    CheckpointConfig, CheckpointSaver, CheckpointSource, ListOptions, PendingWrite,
    new_checkpoint_id,
};

use super::checkpoint;

fn in_ns(thread: &str, ns: &str) -> CheckpointConfig {
    let mut config = CheckpointConfig::thread(thread);
    config.checkpoint_ns = ns.to_string();
    config
}

/// Puts `n` chained checkpoints in namespace `ns`; returns their configs.
async fn chain_in(
    saver: &dyn CheckpointSaver,
    thread: &str,
    ns: &str,
    n: u64,
) -> Vec<CheckpointConfig> {
    let mut config = in_ns(thread, ns);
    let mut out = Vec::new();
    for version in 1..=n {
        let meta = stategraph::checkpoint::CheckpointMetadata::new(
            CheckpointSource::Loop,
            version as i64 - 1,
        );
        config = saver
            .put(&config, checkpoint(version), meta)
            .await
            .expect("put");
        assert_eq!(
            config.checkpoint_ns, ns,
            "put returns the namespace it stored in"
        );
        out.push(config.clone());
    }
    out
}

/// Namespaces of one thread are independent chains; whole-thread operations take
/// all of them.
pub async fn namespaces(saver: &dyn CheckpointSaver) {
    let thread = format!("ns-{}", new_checkpoint_id());
    let child = "research:0a1b2c3d";
    let grandchild = "research:0a1b2c3d|review:99ff";
    let root = chain_in(saver, &thread, "", 2).await;
    let kids = chain_in(saver, &thread, child, 3).await;
    let deep = chain_in(saver, &thread, grandchild, 1).await;

    assert_eq!(
        saver.list_namespaces(&thread).await.expect("namespaces"),
        ["", child, grandchild],
        "every namespace with checkpoints, sorted"
    );
    assert!(
        saver
            .list_namespaces(&format!("none-{}", new_checkpoint_id()))
            .await
            .expect("namespaces")
            .is_empty()
    );

    // The latest of each namespace is its own last put.
    for (ns, configs) in [("", &root), (child, &kids), (grandchild, &deep)] {
        let latest = saver
            .get_tuple(&in_ns(&thread, ns))
            .await
            .expect("get")
            .expect("a checkpoint");
        assert_eq!(latest.config, *configs.last().expect("one"), "ns {ns:?}");
        let listed = saver
            .list(&in_ns(&thread, ns), &ListOptions::new())
            .await
            .expect("list");
        assert_eq!(listed.len(), configs.len(), "ns {ns:?} lists only its own");
        assert!(listed.iter().all(|t| t.config.checkpoint_ns == ns));
    }
    // An id of one namespace is not found in another.
    let kid_id = kids[0].checkpoint_id.clone().expect("id");
    assert!(
        saver
            .get_tuple(&in_ns(&thread, "").at(kid_id.clone()))
            .await
            .expect("get")
            .is_none()
    );

    // Pending writes and values stay in their namespace.
    let write = PendingWrite {
        task_id: "t".into(),
        idx: 0,
        channel: "update".into(),
        value: json!({ "n": 1 }),
    };
    saver
        .put_writes(&kids[2], vec![write.clone()])
        .await
        .expect("put_writes");
    let with = saver
        .get_tuple(&kids[2])
        .await
        .expect("get")
        .expect("tuple");
    assert_eq!(with.pending_writes, [write]);
    let root_latest = saver
        .get_tuple(&root[1])
        .await
        .expect("get")
        .expect("tuple");
    assert!(root_latest.pending_writes.is_empty());
    let history = saver
        .channel_history(&in_ns(&thread, child), "count", 1, 3)
        .await
        .expect("history");
    assert_eq!(history.len(), 3, "the child's values, versions 1..=3");
    let root_history = saver
        .channel_history(&in_ns(&thread, ""), "count", 1, 3)
        .await
        .expect("history");
    assert_eq!(root_history.len(), 2, "the root's own values only");

    // Copy takes every namespace; delete removes every namespace.
    let copy = format!("ns-copy-{}", new_checkpoint_id());
    saver.copy_thread(&thread, &copy).await.expect("copy");
    assert_eq!(
        saver.list_namespaces(&copy).await.expect("namespaces"),
        ["", child, grandchild]
    );
    let copied = saver
        .list(&in_ns(&copy, child), &ListOptions::new())
        .await
        .expect("list");
    assert_eq!(copied.len(), 3);
    saver.delete_thread(&thread).await.expect("delete");
    assert!(saver.list_namespaces(&thread).await.expect("ns").is_empty());
    assert!(
        saver
            .get_tuple(&in_ns(&thread, child))
            .await
            .expect("get")
            .is_none()
    );
    assert_eq!(
        saver
            .list_namespaces(&copy)
            .await
            .expect("namespaces")
            .len(),
        3,
        "the copy is independent"
    );
}
