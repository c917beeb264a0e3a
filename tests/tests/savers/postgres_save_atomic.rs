//! The PostgreSQL saver sends a save's statements back to back in one transaction
//! (one round trip): a statement the server refuses, anywhere in a `put_batch`,
//! leaves nothing of the batch stored, and the connection is usable afterwards (not
//! left inside an aborted or open transaction).
//!
//! Needs a server: set `STATEGRAPH_POSTGRES_URL` (see `stategraph_tests::servers`).

use serde_json::json;
use stategraph::checkpoint::{
    CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointSource, ListOptions,
    PendingWrite, SaveOp,
};
use stategraph_postgres::{PostgresOptions, PostgresSaver};
use stategraph_tests::{conformance, servers};

fn write(task: &str, channel: &str) -> PendingWrite {
    PendingWrite {
        task_id: task.into(),
        idx: 0,
        channel: channel.into(),
        value: json!({"n": 1}),
    }
}

fn checkpoint_op(parent: &CheckpointConfig, version: u64) -> (SaveOp, String) {
    let checkpoint = conformance::checkpoint(version);
    let id = checkpoint.id.clone();
    let op = SaveOp::Checkpoint {
        config: parent.clone(),
        checkpoint,
        metadata: CheckpointMetadata::new(CheckpointSource::Loop, version as i64),
    };
    (op, id)
}

/// Rows of the thread in the saver's three tables (checkpoints, writes, values).
async fn rows(url: &str, schema: &str, thread: &str) -> [i64; 3] {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut out = [0; 3];
    for (n, table) in ["checkpoints", "writes", "values"].iter().enumerate() {
        out[n] = client
            .query_one(
                &format!("SELECT count(*) FROM {schema}.stategraph_{table} WHERE thread_id = $1"),
                &[&thread],
            )
            .await
            .unwrap()
            .get(0);
    }
    out
}

#[tokio::test]
async fn a_refused_statement_anywhere_in_a_batch_leaves_nothing_stored() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = servers::fresh_schema("atomic");
    // One connection: every save below goes through the same one, so a save that
    // left it inside a transaction would show in the next.
    let saver =
        PostgresSaver::connect_with(&url, PostgresOptions::new().schema(&schema).pool_size(1))
            .await
            .unwrap();
    let thread = "atomic";
    let first = saver
        .put(
            &CheckpointConfig::thread(thread),
            conformance::checkpoint(1),
            CheckpointMetadata::new(CheckpointSource::Input, -1),
        )
        .await
        .unwrap();
    let before = rows(&url, &schema, thread).await;
    assert_eq!(before, [1, 0, 2], "one checkpoint and its two values");

    // PostgreSQL text cannot hold a NUL character: the server refuses the statement
    // carrying it, after the statements before it have run.
    let bad = || SaveOp::Writes {
        config: first.clone(),
        writes: vec![write("t-bad", "bad\0channel")],
    };
    let good = || SaveOp::Writes {
        config: first.clone(),
        writes: vec![write("t-good", "update")],
    };
    let batches: Vec<(&str, Vec<SaveOp>)> = vec![
        (
            "refused last",
            vec![good(), checkpoint_op(&first, 2).0, bad()],
        ),
        (
            "refused first",
            vec![bad(), good(), checkpoint_op(&first, 2).0],
        ),
        (
            "refused between",
            vec![checkpoint_op(&first, 2).0, bad(), good()],
        ),
    ];
    for (what, ops) in batches {
        let err = saver.put_batch(ops).await.expect_err(what);
        assert!(
            err.to_string().contains("put_batch"),
            "{what}: the error names the operation: {err}"
        );
        assert_eq!(
            rows(&url, &schema, thread).await,
            before,
            "{what}: nothing of the batch is stored"
        );
        let latest = saver
            .get_tuple(&CheckpointConfig::thread(thread))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(latest.config, first, "{what}");
        assert!(latest.pending_writes.is_empty(), "{what}");
    }
    // A refused `put` and `put_writes` alike.
    let mut refused = conformance::checkpoint(2);
    refused.id = "bad\0id".into();
    saver
        .put(
            &first,
            refused,
            CheckpointMetadata::new(CheckpointSource::Loop, 0),
        )
        .await
        .expect_err("a checkpoint id with a NUL is refused");
    saver
        .put_writes(
            &first,
            vec![write("t-good", "update"), write("t-bad", "bad\0")],
        )
        .await
        .expect_err("a channel with a NUL is refused");
    assert_eq!(rows(&url, &schema, thread).await, before);

    // The same connection then stores a whole batch, in order.
    let (op2, id2) = checkpoint_op(&first, 2);
    let second = CheckpointConfig::thread(thread).at(&id2);
    let (op3, id3) = checkpoint_op(&second, 3);
    saver
        .put_batch(vec![
            good(),
            op2,
            SaveOp::Writes {
                config: second.clone(),
                writes: vec![write("t-2", "update")],
            },
            op3,
        ])
        .await
        .unwrap();
    let listed = saver
        .list(&CheckpointConfig::thread(thread), &ListOptions::new())
        .await
        .unwrap();
    let ids: Vec<_> = listed
        .iter()
        .map(|t| t.config.checkpoint_id.clone().unwrap())
        .collect();
    let first_id = first.checkpoint_id.clone().unwrap();
    assert_eq!(
        ids,
        [id3, id2, first_id],
        "newest first, in the batch's order"
    );
    assert_eq!(listed[1].pending_writes.len(), 1);
    assert_eq!(listed[2].pending_writes.len(), 1);

    drop(saver);
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}
