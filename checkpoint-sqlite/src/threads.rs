//! Whole-thread operations: listing threads, deleting, copying and pruning them.

use rusqlite::Connection;
use stategraph::checkpoint::record::{
    LatestStep, LatestTs, Place, THREAD_TABLES, THREADS_SQL, checkpoint_what,
};
use stategraph::checkpoint::{NeededVersions, ThreadInfo};

use crate::store::{Result, decode, decode_checkpoint, read_tx, write_tx};

/// The thread's namespaces that hold checkpoints, sorted.
pub(crate) fn list_namespaces(conn: &mut Connection, thread_id: &str) -> Result<Vec<String>> {
    let tx = read_tx(conn)?;
    let mut stmt = tx.prepare_cached(
        "SELECT DISTINCT checkpoint_ns FROM stategraph_checkpoints
         WHERE thread_id = ?1 ORDER BY checkpoint_ns",
    )?;
    let rows = stmt.query_map([thread_id], |row| row.get::<_, String>(0))?;
    let out = rows.collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(out)
}

pub(crate) fn list_threads(conn: &mut Connection, limit: usize) -> Result<Vec<ThreadInfo>> {
    let tx = read_tx(conn)?;
    let mut out: Vec<ThreadInfo> = Vec::new();
    {
        let mut stmt = tx.prepare_cached(THREADS_SQL)?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let thread_id: String = row.get(0)?;
            if out.last().is_some_and(|t| t.thread_id == thread_id) {
                continue;
            }
            let count: i64 = row.get(1)?;
            let id: String = row.get(2)?;
            let ns: String = row.get(5)?;
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
    }
    tx.commit()?;
    out.sort_by(|a, b| a.thread_id.cmp(&b.thread_id));
    Ok(out)
}

pub(crate) fn delete_thread(conn: &mut Connection, thread_id: &str) -> Result<()> {
    let tx = write_tx(conn)?;
    for table in THREAD_TABLES.iter().chain(&["stategraph_cache"]) {
        tx.execute(
            &format!("DELETE FROM {table} WHERE thread_id = ?1"),
            [thread_id],
        )?;
    }
    tx.commit()?;
    Ok(())
}

pub(crate) fn copy_thread(conn: &mut Connection, from: &str, to: &str) -> Result<()> {
    if from == to {
        return Ok(());
    }
    let tx = write_tx(conn)?;
    for table in THREAD_TABLES {
        tx.execute(&format!("DELETE FROM {table} WHERE thread_id = ?1"), [to])?;
    }
    tx.execute(
        "INSERT INTO stategraph_checkpoints
         (thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, value_channels, metadata,
          seq)
         SELECT ?2, checkpoint_ns, checkpoint_id, parent_id, checkpoint, value_channels, metadata,
             seq
         FROM stategraph_checkpoints WHERE thread_id = ?1",
        [from, to],
    )?;
    tx.execute(
        "INSERT INTO stategraph_writes
         (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value)
         SELECT ?2, checkpoint_ns, checkpoint_id, task_id, idx, channel, value
         FROM stategraph_writes WHERE thread_id = ?1",
        [from, to],
    )?;
    tx.execute(
        "INSERT INTO stategraph_values (thread_id, checkpoint_ns, channel, version, value)
         SELECT ?2, checkpoint_ns, channel, version, value
         FROM stategraph_values WHERE thread_id = ?1",
        [from, to],
    )?;
    tx.commit()?;
    Ok(())
}

pub(crate) fn prune(
    conn: &mut Connection,
    limit: usize,
    thread_id: &str,
    keep: usize,
) -> Result<()> {
    let keep = i64::try_from(keep).unwrap_or(i64::MAX);
    let tx = write_tx(conn)?;
    let namespaces: Vec<String> = tx
        .prepare(
            "SELECT checkpoint_ns FROM stategraph_checkpoints WHERE thread_id = ?1
             UNION SELECT checkpoint_ns FROM stategraph_values WHERE thread_id = ?1",
        )?
        .query_map([thread_id], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for ns in &namespaces {
        let place = Place {
            thread: thread_id,
            ns,
        };
        let dropped = "SELECT checkpoint_id FROM stategraph_checkpoints
             WHERE thread_id = ?1 AND checkpoint_ns = ?2
             ORDER BY seq DESC LIMIT -1 OFFSET ?3";
        tx.execute(
            &format!(
                "DELETE FROM stategraph_writes WHERE thread_id = ?1 AND checkpoint_ns = ?2
                 AND checkpoint_id IN ({dropped})"
            ),
            (thread_id, ns, keep),
        )?;
        tx.execute(
            &format!(
                "DELETE FROM stategraph_checkpoints WHERE thread_id = ?1 AND checkpoint_ns = ?2
                 AND checkpoint_id IN ({dropped})"
            ),
            (thread_id, ns, keep),
        )?;

        // Per channel, the version ranges the kept checkpoints restore from.
        let mut needed = NeededVersions::new();
        {
            let mut stmt = tx.prepare(
                "SELECT checkpoint_id, checkpoint FROM stategraph_checkpoints
                 WHERE thread_id = ?1 AND checkpoint_ns = ?2",
            )?;
            let mut rows = stmt.query((thread_id, ns))?;
            while let Some(row) = rows.next()? {
                let id: String = row.get(0)?;
                let checkpoint = decode_checkpoint(row, 1, limit, &checkpoint_what(&id, place))?;
                needed.add(&checkpoint);
            }
        }
        let stored: Vec<(String, i64)> = tx
            .prepare(
                "SELECT channel, version FROM stategraph_values
                 WHERE thread_id = ?1 AND checkpoint_ns = ?2",
            )?
            .query_map((thread_id, ns), |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut delete = tx.prepare(
            "DELETE FROM stategraph_values
             WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND channel = ?3 AND version = ?4",
        )?;
        for (channel, version) in stored {
            if !needed.contains(&channel, version) {
                delete.execute((thread_id, ns, &channel, version))?;
            }
        }
    }
    tx.commit()?;
    Ok(())
}
