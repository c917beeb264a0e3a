//! The PostgreSQL saver stores a `put_batch` with one statement per table, however many
//! ops it holds. The result must be what storing the ops one after another leaves, also
//! when a key comes twice in the batch: a checkpoint stored again (its latest row, at
//! its first place in the thread's order), a channel value at the same version (the
//! latest), a special write of a task stored twice (the latest), a task's own write
//! stored twice (the first), a checkpoint stored before the batch and again in it (it
//! keeps its place in the thread's order).
//!
//! Each case runs its ops on two threads of one schema: one `put_batch` per op on the
//! first, one `put_batch` of all the ops on the second; the three tables must then hold
//! the same rows for both, thread ids aside, and a checkpoint's order number (`seq`) as
//! its place in its namespace: a batch may leave numbers unused. A thread this process
//! holds must be numbered alike, though its saves give the numbers themselves once
//! they know the highest.
//!
//! Needs a server: set `STATEGRAPH_POSTGRES_URL` (see `stategraph_tests::servers`).

use serde_json::json;
use stategraph::checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointSource,
    ListOptions, PendingWrite, SaveOp, StoredValue,
};
use stategraph_postgres::{PostgresOptions, PostgresSaver};
use stategraph_tests::{conformance, servers};

/// An op of a case, on whichever thread the case runs it.
#[derive(Clone)]
enum Op {
    /// A checkpoint on the namespace, with the parent id and the metadata's step.
    Checkpoint(&'static str, Option<String>, Box<Checkpoint>, i64),
    /// Writes of the checkpoint id on the namespace.
    Writes(&'static str, String, Vec<PendingWrite>),
}

impl Op {
    fn on(&self, thread: &str) -> SaveOp {
        let config = |ns: &str, id: Option<&String>| CheckpointConfig {
            thread_id: thread.to_string(),
            checkpoint_ns: ns.to_string(),
            checkpoint_id: id.cloned(),
        };
        match self {
            Op::Checkpoint(ns, parent, checkpoint, step) => SaveOp::Checkpoint {
                config: config(ns, parent.as_ref()),
                checkpoint: Checkpoint::clone(checkpoint),
                metadata: CheckpointMetadata::new(CheckpointSource::Loop, *step),
            },
            Op::Writes(ns, id, writes) => SaveOp::Writes {
                config: config(ns, Some(id)),
                writes: writes.clone(),
            },
        }
    }
}

/// A checkpoint op.
fn cp(ns: &'static str, parent: Option<String>, checkpoint: Checkpoint, step: i64) -> Op {
    Op::Checkpoint(ns, parent, Box::new(checkpoint), step)
}

fn write(task: &str, idx: u32, channel: &str, n: i64) -> PendingWrite {
    PendingWrite {
        task_id: task.into(),
        idx,
        channel: channel.into(),
        value: json!({ "n": n }),
    }
}

/// Every row of the thread in the saver's three tables, as JSON text without the
/// thread id and with a checkpoint's place in its namespace for its number, sorted.
async fn dump(client: &tokio_postgres::Client, schema: &str, thread: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (table, place) in [
        (
            "checkpoints",
            "- 'seq' || jsonb_build_object('place',
                 rank() OVER (PARTITION BY checkpoint_ns ORDER BY seq))",
        ),
        ("values", ""),
        ("writes", ""),
    ] {
        let rows = client
            .query(
                &format!(
                    "SELECT '{table} ' || (to_jsonb(t) - 'thread_id' {place})::text
                     FROM {schema}.stategraph_{table} AS t WHERE thread_id = $1"
                ),
                &[&thread],
            )
            .await
            .unwrap();
        out.extend(rows.iter().map(|r| r.get::<_, String>(0)));
    }
    out.sort();
    out
}

/// The server's URL, a fresh schema and a saver on it; `None` without a server.
async fn saver() -> Option<(String, String, PostgresSaver)> {
    let url = servers::postgres_url(module_path!())?;
    let schema = servers::fresh_schema("fold");
    let saver = PostgresSaver::connect_with(&url, PostgresOptions::new().schema(&schema))
        .await
        .unwrap();
    Some((url, schema, saver))
}

/// Runs `before` op by op on both threads, then `ops` op by op on the first and as one
/// batch on the second, and checks that both threads hold the same rows.
async fn same_as_one_by_one(case: &str, before: &[Op], ops: &[Op]) {
    let Some((url, schema, saver)) = saver().await else {
        return;
    };
    let (one_by_one, folded) = ("one-by-one", "folded");
    for thread in [one_by_one, folded] {
        for op in before {
            saver.put_batch(vec![op.on(thread)]).await.unwrap();
        }
    }
    for op in ops {
        saver.put_batch(vec![op.on(one_by_one)]).await.unwrap();
    }
    let batch = ops.iter().map(|op| op.on(folded)).collect();
    if let Err(e) = saver.put_batch(batch).await {
        panic!("{case}: the batch is refused: {e}");
    }
    same_rows(case, &url, &schema, saver, [one_by_one, folded]).await;
}

/// Checks that thread `threads[1]` holds the rows `threads[0]` holds and reads back
/// alike; then drops the schema.
async fn same_rows(case: &str, url: &str, schema: &str, saver: PostgresSaver, threads: [&str; 2]) {
    let [expected_thread, thread] = threads;
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let expected = dump(&client, schema, expected_thread).await;
    assert!(!expected.is_empty(), "{case}");
    assert_eq!(
        dump(&client, schema, thread).await,
        expected,
        "{case}: {thread} holds the rows of {expected_thread}"
    );
    // And the saver reads both threads back alike.
    for ns in ["", "child"] {
        let list = |thread: &str| CheckpointConfig {
            thread_id: thread.to_string(),
            checkpoint_ns: ns.to_string(),
            checkpoint_id: None,
        };
        let a = saver
            .list(&list(expected_thread), &ListOptions::new())
            .await
            .unwrap();
        let b = saver
            .list(&list(thread), &ListOptions::new())
            .await
            .unwrap();
        let ids = |l: &[stategraph::checkpoint::CheckpointTuple]| -> Vec<_> {
            l.iter()
                .map(|t| (t.config.checkpoint_id.clone(), t.pending_writes.len()))
                .collect()
        };
        assert_eq!(ids(&b), ids(&a), "{case}: the order of namespace {ns:?}");
    }
    drop(client);
    drop(saver);
    let (url, schema) = (url.to_string(), schema.to_string());
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}

/// Runs each batch of `batches` on a thread this process holds and on one it does
/// not: a holder numbers the thread's checkpoints itself once its saves know the
/// highest number, and must number them as the server does for a thread nobody holds.
async fn held_same_as_free(case: &str, batches: &[Vec<Op>]) {
    let Some((url, schema, saver)) = saver().await else {
        return;
    };
    let (free, held) = ("free", "held");
    let lock = saver
        .lock_thread(held, std::time::Duration::from_secs(5))
        .await
        .unwrap();
    for batch in batches {
        for thread in [free, held] {
            let ops = batch.iter().map(|op| op.on(thread)).collect();
            if let Err(e) = saver.put_batch(ops).await {
                panic!("{case}: a batch on {thread} is refused: {e}");
            }
        }
    }
    drop(lock);
    same_rows(case, &url, &schema, saver, [free, held]).await;
}

/// A checkpoint whose id is `id`'s, at `version`, with `count` as its counter.
fn checkpoint_as(id: &str, version: u64, count: i64) -> Checkpoint {
    let mut checkpoint = conformance::checkpoint(version);
    checkpoint.id = id.to_string();
    checkpoint
        .channel_values
        .insert("count".into(), StoredValue::Full(json!(count)));
    checkpoint
}

#[tokio::test]
async fn a_checkpoint_stored_twice_in_a_batch_keeps_its_first_place_and_its_last_row() {
    let (a, b) = (conformance::checkpoint(1), conformance::checkpoint(2));
    let a_again = checkpoint_as(&a.id, 3, 30);
    let ops = [
        cp("", None, a.clone(), 0),
        cp("", Some(a.id.clone()), b.clone(), 1),
        cp("", None, a_again, 7),
        cp("", Some(b.id.clone()), conformance::checkpoint(4), 2),
    ];
    same_as_one_by_one("stored twice", &[], &ops).await;
}

#[tokio::test]
async fn a_checkpoint_stored_before_the_batch_and_again_in_it_keeps_its_place() {
    let (a, b, c) = (
        conformance::checkpoint(1),
        conformance::checkpoint(2),
        conformance::checkpoint(3),
    );
    let before = [
        cp("", None, a.clone(), 0),
        cp("", Some(a.id.clone()), b.clone(), 1),
    ];
    let ops = [
        cp("", Some(b.id.clone()), c.clone(), 2),
        // `a` again: it keeps its place, before `b`; the next checkpoint follows `c`.
        cp("", None, checkpoint_as(&a.id, 1, 10), 5),
        cp("", Some(c.id.clone()), conformance::checkpoint(4), 3),
        cp("", Some(c.id.clone()), checkpoint_as(&b.id, 2, 20), 6),
    ];
    same_as_one_by_one("stored before", &before, &ops).await;
}

#[tokio::test]
async fn a_channel_value_at_the_same_version_twice_in_a_batch_keeps_the_latest() {
    // Two checkpoints giving `count` version 2 different values.
    let first = checkpoint_as(&conformance::checkpoint(2).id, 2, 200);
    let second = checkpoint_as(&conformance::checkpoint(2).id, 2, 201);
    let ops = [
        cp("", None, first.clone(), 0),
        cp("", Some(first.id.clone()), second, 1),
    ];
    same_as_one_by_one("value twice", &[], &ops).await;
}

#[tokio::test]
async fn writes_stored_twice_in_a_batch_keep_the_first_own_write_and_the_last_record() {
    let a = conformance::checkpoint(1);
    let before = [cp("", None, a.clone(), 0)];
    let at = a.id.clone();
    let ops = [
        Op::Writes(
            "",
            at.clone(),
            vec![
                write("t1", 0, "count", 1),
                write("t1", 7, "__error__", 1),
                write("t2", 0, "__interrupt__", 1),
            ],
        ),
        Op::Writes(
            "",
            at.clone(),
            vec![
                // Own write again: the first stays.
                write("t1", 0, "count", 2),
                // Records again: the latest replaces them.
                write("t1", 7, "__error__", 2),
                write("t2", 0, "__interrupt__", 2),
            ],
        ),
        // A task's own write over a record of the same key does not replace it, a
        // record over a task's own write does.
        Op::Writes("", at.clone(), vec![write("t2", 0, "count", 3)]),
        Op::Writes("", at.clone(), vec![write("t3", 0, "count", 4)]),
        Op::Writes("", at, vec![write("t3", 0, "__error__", 5)]),
    ];
    same_as_one_by_one("writes twice", &before, &ops).await;
}

#[tokio::test]
async fn a_batch_of_many_namespaces_numbers_each_in_op_order() {
    let (a, b, c, d) = (
        conformance::checkpoint(1),
        conformance::checkpoint(2),
        conformance::checkpoint(3),
        conformance::checkpoint(4),
    );
    let (x, y) = (conformance::checkpoint(1), conformance::checkpoint(2));
    let before = [cp("child", None, x.clone(), 0)];
    let ops = [
        cp("", None, a.clone(), 0),
        Op::Writes("", a.id.clone(), vec![write("t", 0, "count", 1)]),
        cp("child", Some(x.id.clone()), y.clone(), 1),
        cp("", Some(a.id.clone()), b.clone(), 1),
        Op::Writes("child", y.id.clone(), vec![write("t", 0, "count", 2)]),
        cp("", Some(b.id.clone()), c.clone(), 2),
        cp("child", Some(y.id.clone()), checkpoint_as(&x.id, 1, 9), 2),
        cp("", Some(c.id.clone()), d, 3),
    ];
    same_as_one_by_one("namespaces", &before, &ops).await;
}

#[tokio::test]
async fn a_held_thread_numbers_its_checkpoints_as_the_server_does() {
    let [a, b, c, d, e, f, g] = [1, 2, 3, 4, 5, 6, 7].map(conformance::checkpoint);
    let [x, y, z, w] = [1, 2, 3, 4].map(conformance::checkpoint);
    let one = |op: Op| vec![op];
    let batches = [
        // The first save of the thread finds the highest number; the next ones know it.
        one(cp("", None, a.clone(), 0)),
        vec![
            Op::Writes("", a.id.clone(), vec![write("t", 0, "count", 1)]),
            cp("", Some(a.id.clone()), b.clone(), 1),
        ],
        // Another namespace is numbered apart.
        one(cp("child", None, x.clone(), 0)),
        one(cp("child", Some(x.id.clone()), y.clone(), 1)),
        // A checkpoint stored again keeps its place; the next one follows the highest.
        one(cp("", None, checkpoint_as(&a.id, 1, 10), 5)),
        one(cp("", Some(b.id.clone()), c.clone(), 2)),
        // Several checkpoints in one batch; then single saves again.
        vec![
            cp("", Some(c.id.clone()), d.clone(), 3),
            cp("child", Some(y.id.clone()), z.clone(), 2),
            cp("", Some(d.id.clone()), e.clone(), 4),
        ],
        // The next save finds the highest again: one of a checkpoint stored before
        // finds it past that checkpoint's own number.
        one(cp("", None, checkpoint_as(&b.id, 2, 21), 6)),
        one(cp("", Some(e.id.clone()), f.clone(), 5)),
        one(cp("child", None, checkpoint_as(&y.id, 2, 20), 3)),
        one(cp("child", Some(z.id.clone()), w, 4)),
        one(Op::Writes(
            "",
            e.id.clone(),
            vec![write("t", 0, "count", 2)],
        )),
        // A task's own write stored again (a key stored already) keeps the first.
        vec![
            Op::Writes("", e.id.clone(), vec![write("t", 0, "count", 3)]),
            cp("", Some(f.id.clone()), g, 6),
        ],
    ];
    held_same_as_free("held", &batches).await;
}
