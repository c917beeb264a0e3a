//! The in-memory saver's stored forms of a checkpoint (with its metadata and parent)
//! and of a pending write: one buffer each, in the [compact](super::compact) form,
//! rebuilt into the public types when read.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Map;

use super::compact::{Damaged, LongStrings, Names, Read, Reader, Writer, pack_shared};
use super::types::{
    Checkpoint, CheckpointMetadata, CheckpointSource, PendingWrite, PlannedTask, StepRecord,
    StoredValue, TaskRecord,
};

/// How a channel value of a stored checkpoint is held.
const VALUE_ELSEWHERE: u8 = 0;
const VALUE_FULL: u8 = 1;
const VALUE_APPEND: u8 = 2;

/// A stored checkpoint, its metadata and its parent's id. The id is the saver's key;
/// the schema and graph versions are shared with every checkpoint of the graph.
#[derive(Clone)]
pub(crate) struct PackedEntry {
    body: Box<[u8]>,
    schema_version: Arc<str>,
    graph_version: Arc<str>,
}

impl PackedEntry {
    /// Packs a checkpoint whose values held elsewhere are named by `elsewhere`
    /// (written as a mark, filled in again by the reader).
    pub(crate) fn pack(
        scratch: &mut Vec<u8>,
        names: &mut Names,
        checkpoint: &Checkpoint,
        elsewhere: impl Fn(&str) -> bool,
        metadata: &CheckpointMetadata,
        parent: Option<&str>,
    ) -> Self {
        scratch.clear();
        let mut w = Writer {
            out: scratch,
            names,
            sharing: None,
        };
        write_checkpoint(&mut w, checkpoint, elsewhere);
        write_metadata(&mut w, metadata);
        w.opt_str(parent);
        Self {
            body: Box::from(&scratch[..]),
            schema_version: checkpoint.schema_version.clone(),
            graph_version: checkpoint.graph_version.clone(),
        }
    }

    /// The checkpoint (with `id`) and its metadata and parent; a value held elsewhere
    /// is read by `elsewhere(channel, version)`.
    pub(crate) fn unpack(
        &self,
        names: &Names,
        id: &str,
        elsewhere: impl Fn(&str, Option<u64>) -> StoredValue,
    ) -> Read<(Checkpoint, CheckpointMetadata, Option<String>)> {
        let mut r = Reader {
            bytes: &self.body,
            names,
            long: &[],
        };
        let checkpoint = self.read_checkpoint(&mut r, id, elsewhere)?;
        let metadata = read_metadata(&mut r)?;
        let parent = r.opt_string()?;
        Ok((checkpoint, metadata, parent))
    }

    /// The checkpoint alone.
    pub(crate) fn checkpoint(
        &self,
        names: &Names,
        id: &str,
        elsewhere: impl Fn(&str, Option<u64>) -> StoredValue,
    ) -> Read<Checkpoint> {
        let mut r = Reader {
            bytes: &self.body,
            names,
            long: &[],
        };
        self.read_checkpoint(&mut r, id, elsewhere)
    }

    fn read_checkpoint(
        &self,
        r: &mut Reader<'_>,
        id: &str,
        elsewhere: impl Fn(&str, Option<u64>) -> StoredValue,
    ) -> Read<Checkpoint> {
        let v = u32::try_from(r.uint()?).map_err(|_| Damaged)?;
        let ts = r.string()?;
        let marks = r.list(|r| {
            let name = r.name()?;
            let value = match r.byte()? {
                VALUE_ELSEWHERE => None,
                VALUE_FULL => Some(StoredValue::Full(r.value()?)),
                VALUE_APPEND => Some(StoredValue::Append(r.value()?)),
                _ => return Err(Damaged),
            };
            Ok((name, value))
        })?;
        let channel_versions = r.versions()?;
        let channel_values = marks
            .into_iter()
            .map(|(name, value)| {
                let value =
                    value.unwrap_or_else(|| elsewhere(&name, channel_versions.get(&name).copied()));
                (name, value)
            })
            .collect();
        let versions_seen = r
            .list(|r| Ok((r.name()?, r.versions()?)))?
            .into_iter()
            .collect();
        let updated_channels = r.list(Reader::name)?;
        let channel_bases = r.versions()?;
        let next = r.list(|r| {
            let node = r.name()?;
            let payload = match r.byte()? {
                0 => None,
                _ => Some(r.value()?),
            };
            Ok(PlannedTask { node, payload })
        })?;
        let barriers = r
            .list(|r| {
                let join = usize::try_from(r.uint()?).map_err(|_| Damaged)?;
                Ok((join, r.list(Reader::name)?))
            })?
            .into_iter()
            .collect();
        Ok(Checkpoint {
            v,
            id: id.to_string(),
            ts,
            channel_values,
            channel_versions,
            versions_seen,
            updated_channels,
            channel_bases,
            next,
            barriers,
            schema_version: self.schema_version.clone(),
            graph_version: self.graph_version.clone(),
        })
    }
}

fn write_checkpoint(w: &mut Writer<'_>, c: &Checkpoint, elsewhere: impl Fn(&str) -> bool) {
    w.uint(u64::from(c.v));
    w.str(&c.ts);
    w.len(c.channel_values.len());
    for (name, value) in &c.channel_values {
        w.name(name);
        match value {
            _ if elsewhere(name) => w.byte(VALUE_ELSEWHERE),
            StoredValue::Full(v) => {
                w.byte(VALUE_FULL);
                w.value(v);
            }
            StoredValue::Append(v) => {
                w.byte(VALUE_APPEND);
                w.value(v);
            }
        }
    }
    w.versions(c.channel_versions.len(), c.channel_versions.iter());
    w.len(c.versions_seen.len());
    for (node, seen) in &c.versions_seen {
        w.name(node);
        w.versions(seen.len(), seen.iter());
    }
    w.len(c.updated_channels.len());
    for name in &c.updated_channels {
        w.name(name);
    }
    w.versions(c.channel_bases.len(), c.channel_bases.iter());
    w.len(c.next.len());
    for task in &c.next {
        w.name(&task.node);
        match &task.payload {
            Some(p) => {
                w.byte(1);
                w.value(p);
            }
            None => w.byte(0),
        }
    }
    w.len(c.barriers.len());
    for (&join, sources) in &c.barriers {
        w.uint(join as u64);
        w.len(sources.len());
        for s in sources {
            w.name(s);
        }
    }
}

fn source_byte(source: CheckpointSource) -> u8 {
    match source {
        CheckpointSource::Input => 0,
        CheckpointSource::Loop => 1,
        CheckpointSource::Update => 2,
        CheckpointSource::Fork => 3,
    }
}

fn write_metadata(w: &mut Writer<'_>, m: &CheckpointMetadata) {
    w.byte(source_byte(m.source));
    w.int(m.step);
    w.len(m.parents.len());
    for (ns, id) in &m.parents {
        w.str(ns);
        w.str(id);
    }
    w.opt_str(m.run_id.as_deref());
    w.len(m.steps.len());
    for step in &m.steps {
        w.int(step.step);
        w.versions(step.input_versions.len(), step.input_versions.iter());
        w.len(step.tasks.len());
        for t in &step.tasks {
            w.str(&t.id);
            w.name(&t.node);
            w.uint(t.duration_us);
            w.byte(u8::from(t.wrote) | u8::from(t.resumed) << 1 | u8::from(t.cached) << 2);
            w.len(t.routed_to.len());
            for to in &t.routed_to {
                w.name(to);
            }
        }
    }
    w.len(m.extra.len());
    for (k, v) in &m.extra {
        w.str(k);
        w.value(v);
    }
}

fn read_metadata(r: &mut Reader<'_>) -> Read<CheckpointMetadata> {
    let source = match r.byte()? {
        0 => CheckpointSource::Input,
        1 => CheckpointSource::Loop,
        2 => CheckpointSource::Update,
        3 => CheckpointSource::Fork,
        _ => return Err(Damaged),
    };
    let step = r.int()?;
    let parents: BTreeMap<String, String> = r
        .list(|r| Ok((r.string()?, r.string()?)))?
        .into_iter()
        .collect();
    let run_id = r.opt_string()?;
    let steps = r.list(|r| {
        let step = r.int()?;
        let input_versions = r.versions()?;
        let tasks = r.list(|r| {
            let id = r.string()?;
            let node = r.name()?;
            let duration_us = r.uint()?;
            let flags = r.byte()?;
            Ok(TaskRecord {
                id,
                node,
                duration_us,
                wrote: flags & 1 != 0,
                resumed: flags & 2 != 0,
                cached: flags & 4 != 0,
                routed_to: r.list(Reader::name)?,
            })
        })?;
        Ok(StepRecord {
            step,
            input_versions,
            tasks,
        })
    })?;
    let n = r.len()?;
    let mut extra = Map::new();
    for _ in 0..n {
        let k = r.string()?;
        extra.insert(k, r.value()?);
    }
    Ok(CheckpointMetadata {
        source,
        step,
        parents,
        run_id,
        steps,
        extra,
    })
}

/// A stored pending write: its task id and index (the key), channel and value; the
/// value's long strings are shared by content with the rest of the namespace.
#[derive(Clone)]
pub(crate) struct PackedWrite {
    body: Box<[u8]>,
    long: Box<[Arc<str>]>,
}

impl PackedWrite {
    pub(crate) fn pack(
        scratch: &mut Vec<u8>,
        names: &mut Names,
        strings: &mut LongStrings,
        write: &PendingWrite,
    ) -> Self {
        let (body, long) = pack_shared(scratch, names, strings, |w| {
            w.str(&write.task_id);
            w.uint(u64::from(write.idx));
            w.name(&write.channel);
            w.value(&write.value);
        });
        Self { body, long }
    }

    /// Its key: the task id and index.
    pub(crate) fn key<'a>(&'a self, names: &'a Names) -> Read<(&'a str, u32)> {
        let mut r = self.reader(names);
        let task_id = r.str()?;
        let idx = u32::try_from(r.uint()?).map_err(|_| Damaged)?;
        Ok((task_id, idx))
    }

    pub(crate) fn unpack(&self, names: &Names) -> Read<PendingWrite> {
        let mut r = self.reader(names);
        let task_id = r.string()?;
        let idx = u32::try_from(r.uint()?).map_err(|_| Damaged)?;
        let channel = r.name()?;
        let value = r.value()?;
        Ok(PendingWrite {
            task_id,
            idx,
            channel,
            value,
        })
    }

    fn reader<'a>(&'a self, names: &'a Names) -> Reader<'a> {
        Reader {
            bytes: &self.body,
            names,
            long: &self.long,
        }
    }
}
