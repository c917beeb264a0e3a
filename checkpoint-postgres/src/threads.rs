//! Whole-thread operations: listing threads, deleting, copying and pruning them.

use deadpool_postgres::Client;
use stategraph::checkpoint::record::{
    LatestStep, LatestTs, Place, THREAD_TABLES, THREADS_SQL, checkpoint_what,
};
use stategraph::checkpoint::{NeededVersions, ThreadInfo};

use crate::store::{Result, decode, decode_checkpoint, read_tx};

/// The thread's namespaces that hold checkpoints, sorted.
pub(crate) async fn list_namespaces(client: &mut Client, thread_id: &str) -> Result<Vec<String>> {
    let tx = read_tx(client).await?;
    let stmt = tx
        .prepare_cached(
            "SELECT DISTINCT checkpoint_ns FROM stategraph_checkpoints
             WHERE thread_id = $1 ORDER BY checkpoint_ns",
        )
        .await?;
    let rows = tx.query(&stmt, &[&thread_id]).await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        out.push(row.try_get::<_, String>(0)?);
    }
    Ok(out)
}

pub(crate) async fn list_threads(client: &mut Client, limit: usize) -> Result<Vec<ThreadInfo>> {
    let tx = read_tx(client).await?;
    // Planned at each call, not cached with the connection: a listing is rare, and a
    // plan made while the tables were small must not outlive their growth.
    let rows = tx.query(THREADS_SQL, &[]).await?;
    let mut out: Vec<ThreadInfo> = Vec::new();
    for row in &rows {
        let thread_id: String = row.try_get(0)?;
        if out.last().is_some_and(|t| t.thread_id == thread_id) {
            continue;
        }
        let count: i64 = row.try_get(1)?;
        let id: String = row.try_get(2)?;
        let ns: String = row.try_get(5)?;
        let what = checkpoint_what(
            &id,
            Place {
                thread: &thread_id,
                ns: &ns,
            },
        );
        let latest: LatestTs = decode(row, 3, limit, || what.clone())?;
        let meta: LatestStep = decode(row, 4, limit, || format!("metadata of {what}"))?;
        out.push(ThreadInfo {
            checkpoint_count: u64::try_from(count).unwrap_or(0),
            latest_checkpoint_id: id,
            latest_step: meta.step,
            latest_ts: latest.ts,
            thread_id,
        });
    }
    tx.commit().await?;
    out.sort_by(|a, b| a.thread_id.cmp(&b.thread_id));
    Ok(out)
}

/// Deletes every row of `thread_id`, and its fence unless a process holds the thread
/// (its advisory lock, `key`): the holder's saves check that fence.
pub(crate) async fn delete_thread(client: &mut Client, thread_id: &str, key: i64) -> Result<()> {
    let tx = client.transaction().await?;
    for table in THREAD_TABLES.iter().chain(&["stategraph_cache"]) {
        tx.execute(
            &format!("DELETE FROM {table} WHERE thread_id = $1"),
            &[&thread_id],
        )
        .await?;
    }
    // The transaction-level lock keeps the thread free until the delete commits.
    tx.execute(
        "DELETE FROM stategraph_thread_locks
         WHERE thread_id = $1 AND pg_try_advisory_xact_lock($2)",
        &[&thread_id, &key],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

pub(crate) async fn copy_thread(client: &mut Client, from: &str, to: &str) -> Result<()> {
    if from == to {
        return Ok(());
    }
    let tx = client.transaction().await?;
    for table in THREAD_TABLES {
        tx.execute(&format!("DELETE FROM {table} WHERE thread_id = $1"), &[&to])
            .await?;
    }
    tx.execute(
        "INSERT INTO stategraph_checkpoints
         (thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, value_channels, metadata,
          seq)
         SELECT $2, checkpoint_ns, checkpoint_id, parent_id, checkpoint, value_channels, metadata,
             seq
         FROM stategraph_checkpoints WHERE thread_id = $1",
        &[&from, &to],
    )
    .await?;
    tx.execute(
        "INSERT INTO stategraph_writes
         (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value)
         SELECT $2, checkpoint_ns, checkpoint_id, task_id, idx, channel, value
         FROM stategraph_writes WHERE thread_id = $1",
        &[&from, &to],
    )
    .await?;
    tx.execute(
        "INSERT INTO stategraph_values (thread_id, checkpoint_ns, channel, version, value)
         SELECT $2, checkpoint_ns, channel, version, value
         FROM stategraph_values WHERE thread_id = $1",
        &[&from, &to],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

pub(crate) async fn prune(
    client: &mut Client,
    limit: usize,
    thread_id: &str,
    keep: usize,
) -> Result<()> {
    let keep = i64::try_from(keep).unwrap_or(i64::MAX);
    let tx = client.transaction().await?;
    let namespaces: Vec<String> = tx
        .query(
            "SELECT checkpoint_ns FROM stategraph_checkpoints WHERE thread_id = $1
             UNION SELECT checkpoint_ns FROM stategraph_values WHERE thread_id = $1",
            &[&thread_id],
        )
        .await?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<std::result::Result<_, _>>()?;
    for ns in &namespaces {
        let place = Place {
            thread: thread_id,
            ns,
        };
        let dropped = "SELECT checkpoint_id FROM stategraph_checkpoints
             WHERE thread_id = $1 AND checkpoint_ns = $2
             ORDER BY seq DESC, checkpoint_id DESC OFFSET $3";
        tx.execute(
            &format!(
                "DELETE FROM stategraph_writes WHERE thread_id = $1 AND checkpoint_ns = $2
                 AND checkpoint_id IN ({dropped})"
            ),
            &[&thread_id, ns, &keep],
        )
        .await?;
        tx.execute(
            &format!(
                "DELETE FROM stategraph_checkpoints WHERE thread_id = $1 AND checkpoint_ns = $2
                 AND checkpoint_id IN ({dropped})"
            ),
            &[&thread_id, ns, &keep],
        )
        .await?;

        // Per channel, the version ranges the kept checkpoints restore from.
        let mut needed = NeededVersions::new();
        let rows = tx
            .query(
                "SELECT checkpoint_id, checkpoint FROM stategraph_checkpoints
                 WHERE thread_id = $1 AND checkpoint_ns = $2",
                &[&thread_id, ns],
            )
            .await?;
        for row in &rows {
            let id: String = row.try_get(0)?;
            let checkpoint = decode_checkpoint(row, 1, limit, &checkpoint_what(&id, place))?;
            needed.add(&checkpoint);
        }
        let rows = tx
            .query(
                "SELECT channel, version FROM stategraph_values
                 WHERE thread_id = $1 AND checkpoint_ns = $2",
                &[&thread_id, ns],
            )
            .await?;
        let (mut channels, mut versions) = (Vec::new(), Vec::new());
        for row in &rows {
            let channel: String = row.try_get(0)?;
            let version: i64 = row.try_get(1)?;
            if !needed.contains(&channel, version) {
                channels.push(channel);
                versions.push(version);
            }
        }
        if !channels.is_empty() {
            tx.execute(
                "DELETE FROM stategraph_values v
                 USING unnest($3::text[], $4::bigint[]) AS d(channel, version)
                 WHERE v.thread_id = $1 AND v.checkpoint_ns = $2
                   AND v.channel = d.channel AND v.version = d.version",
                &[&thread_id, ns, &channels, &versions],
            )
            .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}
