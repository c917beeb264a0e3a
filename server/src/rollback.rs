//! Rolling a run back: the thread as it was before the run, its pending interrupts
//! included.
//!
//! A run either saved checkpoints of its own, or — resuming a paused thread — only
//! added writes to the paused checkpoint it started from (its answers, its command's
//! update, the outputs of the tasks it resumed); often both. Rolling back makes the
//! checkpoint the run started from the thread's latest again, as a copy that carries
//! only the pending writes that checkpoint had before the run: the interrupts it
//! waited on wait again, and nothing of the run is left.

use std::collections::BTreeSet;

use serde_json::Map;
use stategraph::RunConfig;
use stategraph::checkpoint::writes::{COMMAND_TASK, WRITE_INTERRUPT, WRITE_RESUME};
use stategraph::checkpoint::{
    CheckpointConfig, CheckpointSaver, CheckpointSource, CheckpointTuple, GRAPH_SHAPE_KEY,
    ListOptions, PendingWrite, new_checkpoint_id, now_rfc3339,
};

use crate::app::App;
use crate::db::RunRow;
use crate::error::ApiError;

/// The thread's latest checkpoint when a run that may add writes to it started:
/// its id and which pending writes it had.
#[derive(Clone, Debug)]
pub(crate) struct Before {
    id: String,
    writes: BTreeSet<(String, u32)>,
}

/// What a resuming run (a command, or no input) starts from; `None` for other runs,
/// which never write to a checkpoint they did not make.
pub(crate) async fn before(app: &App, run: &RunRow) -> Option<Before> {
    let resumes = run.kwargs.get("command").is_some_and(|c| !c.is_null())
        || run
            .kwargs
            .get("input")
            .is_none_or(serde_json::Value::is_null);
    if !resumes {
        return None;
    }
    let at = CheckpointConfig::thread(run.thread_id.clone());
    let tuple = app.saver.get_tuple(&at).await.ok()??;
    Some(Before {
        id: tuple.checkpoint.id.clone(),
        writes: keys(&tuple.pending_writes),
    })
}

fn keys(writes: &[PendingWrite]) -> BTreeSet<(String, u32)> {
    writes.iter().map(|w| (w.task_id.clone(), w.idx)).collect()
}

/// Undoes what `run` wrote (see the module docs); `before` is what its worker saw
/// when it started it, if it looked.
pub(crate) async fn roll_back(
    app: &App,
    run: &RunRow,
    before: Option<&Before>,
) -> Result<(), ApiError> {
    let saver = app.saver.as_ref();
    let thread = run.thread_id.as_str();
    // The stopped run's last saves may still be landing: they hold the thread's lock
    // until they have, so taking it waits for them. No other run of the thread starts
    // before this one is finished.
    let lock = saver
        .lock_thread(thread, RunConfig::DEFAULT_LOCK_TIMEOUT)
        .await
        .map_err(ApiError::internal)?;
    let mut filter = Map::new();
    filter.insert("run_id".into(), run.run_id.clone().into());
    let options = ListOptions {
        filter,
        ..ListOptions::default()
    };
    let own = saver
        .list(&CheckpointConfig::thread(thread), &options)
        .await
        .map_err(ApiError::internal)?;
    let start = match own.last() {
        // The run's first checkpoint follows the one it started from.
        Some(first) => match first
            .parent_config
            .as_ref()
            .and_then(|c| c.checkpoint_id.clone())
        {
            Some(parent) => parent,
            // The run started the thread: nothing was before it.
            None => {
                drop(lock);
                return app
                    .saver
                    .delete_thread(thread)
                    .await
                    .map_err(ApiError::internal);
            }
        },
        None => match before {
            Some(b) => b.id.clone(),
            // Nothing saved, and nothing it could have written to.
            None => return Ok(()),
        },
    };
    let at = CheckpointConfig::thread(thread).at(start.clone());
    let Some(tuple) = saver.get_tuple(&at).await.map_err(ApiError::internal)? else {
        return Ok(());
    };
    let keep = writes_before(&tuple, before.filter(|b| b.id == start));
    if own.is_empty() && keep.len() == tuple.pending_writes.len() {
        // The run neither saved nor wrote anything.
        return Ok(());
    }
    put_copy(saver, tuple, keep).await?;
    drop(lock);
    Ok(())
}

/// The pending writes `start` had before the run: those its worker saw, or — when
/// it did not look (another attempt took the run over) — every write but the run's
/// own kinds: answers, command writes, and what tasks that waited on an interrupt
/// wrote after it was answered.
fn writes_before(start: &CheckpointTuple, seen: Option<&Before>) -> Vec<PendingWrite> {
    if let Some(seen) = seen {
        return start
            .pending_writes
            .iter()
            .filter(|w| seen.writes.contains(&(w.task_id.clone(), w.idx)))
            .cloned()
            .collect();
    }
    let waited: BTreeSet<&str> = start
        .pending_writes
        .iter()
        .filter(|w| w.channel == WRITE_INTERRUPT)
        .map(|w| w.task_id.as_str())
        .collect();
    start
        .pending_writes
        .iter()
        .filter(|w| w.channel != WRITE_RESUME && !w.task_id.starts_with(COMMAND_TASK))
        .filter(|w| w.channel == WRITE_INTERRUPT || !waited.contains(w.task_id.as_str()))
        .cloned()
        .collect()
}

/// Saves `start` again as the thread's latest checkpoint (a child of it that
/// changes nothing), carrying `writes`.
async fn put_copy(
    saver: &dyn CheckpointSaver,
    start: CheckpointTuple,
    writes: Vec<PendingWrite>,
) -> Result<(), ApiError> {
    let CheckpointTuple {
        config,
        mut checkpoint,
        mut metadata,
        ..
    } = start;
    checkpoint.id = new_checkpoint_id();
    checkpoint.ts = now_rfc3339();
    // Every value is where `start` keeps it, at the same versions.
    checkpoint.channel_values.clear();
    checkpoint.versions_seen.clear();
    checkpoint.updated_channels.clear();
    metadata.source = CheckpointSource::Fork;
    metadata.run_id = None;
    metadata.steps.clear();
    metadata.extra.remove(GRAPH_SHAPE_KEY);
    let copy = saver
        .put(&config, checkpoint, metadata)
        .await
        .map_err(ApiError::internal)?;
    if !writes.is_empty() {
        saver
            .put_writes(&copy, writes)
            .await
            .map_err(ApiError::internal)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use stategraph::checkpoint::{
        CHECKPOINT_FORMAT, Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSource,
        CheckpointTuple, PendingWrite, new_checkpoint_id,
    };

    use super::{Before, writes_before};

    fn write(task: &str, idx: u32, channel: &str) -> PendingWrite {
        PendingWrite {
            task_id: task.into(),
            idx,
            channel: channel.into(),
            value: json!(null),
        }
    }

    /// A paused checkpoint after a resume began on it: `2:other` had finished
    /// before the pause, `2:ask` waited on an interrupt; the resume added its answer,
    /// its command's update and `2:ask`'s output.
    fn resumed() -> CheckpointTuple {
        let checkpoint = Checkpoint {
            v: CHECKPOINT_FORMAT,
            id: new_checkpoint_id(),
            ts: String::new(),
            channel_values: Default::default(),
            channel_versions: Default::default(),
            versions_seen: Default::default(),
            updated_channels: Vec::new(),
            channel_bases: Default::default(),
            next: Vec::new(),
            barriers: Default::default(),
            schema_version: "1".into(),
            graph_version: "g".into(),
        };
        CheckpointTuple {
            config: CheckpointConfig::thread("t").at(checkpoint.id.clone()),
            checkpoint,
            metadata: CheckpointMetadata::new(CheckpointSource::Loop, 1),
            parent_config: None,
            pending_writes: vec![
                write("2:other", 0, "update"),
                write("2:ask", 1_000_000, "__interrupt__"),
                write("2:ask", 2_000_000, "__resume__"),
                write("__command__:0", 0, "update"),
                write("2:ask", 0, "update"),
            ],
        }
    }

    fn keys(writes: &[PendingWrite]) -> Vec<(String, u32)> {
        writes.iter().map(|w| (w.task_id.clone(), w.idx)).collect()
    }

    #[test]
    fn without_a_note_of_the_start_the_runs_own_kinds_of_write_are_dropped() {
        let kept = writes_before(&resumed(), None);
        assert_eq!(
            keys(&kept),
            [("2:other".to_string(), 0), ("2:ask".to_string(), 1_000_000)]
        );
    }

    #[test]
    fn with_a_note_of_the_start_exactly_the_writes_it_had_are_kept() {
        let t = resumed();
        let seen = Before {
            id: t.checkpoint.id.clone(),
            writes: [("2:other".to_string(), 0)].into_iter().collect(),
        };
        assert_eq!(
            keys(&writes_before(&t, Some(&seen))),
            [("2:other".to_string(), 0)]
        );
    }
}
