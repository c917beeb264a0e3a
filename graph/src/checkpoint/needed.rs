//! Which stored channel values a set of checkpoints restores from: what a prune must
//! keep. Shared by every saver that stores values apart from checkpoints.

use std::collections::BTreeMap;

use super::types::Checkpoint;

/// Per channel, the value versions some checkpoint of a set restores from, as
/// sorted, disjoint ranges. Add the kept checkpoints, then ask about each stored
/// value.
#[derive(Debug, Default)]
pub struct NeededVersions {
    ranges: BTreeMap<String, Vec<(u64, u64)>>,
    merged: bool,
}

impl NeededVersions {
    /// Nothing needed yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds what `checkpoint` restores from.
    pub fn add(&mut self, checkpoint: &Checkpoint) {
        for (channel, from, to) in needed_ranges(checkpoint) {
            self.ranges.entry(channel).or_default().push((from, to));
        }
        self.merged = false;
    }

    /// Whether version `version` of `channel` is needed (a version below 0, as a
    /// damaged row might hold, never is).
    pub fn contains(&mut self, channel: &str, version: i64) -> bool {
        if !self.merged {
            for ranges in self.ranges.values_mut() {
                *ranges = merged(std::mem::take(ranges));
            }
            self.merged = true;
        }
        let (Ok(version), Some(ranges)) = (u64::try_from(version), self.ranges.get(channel)) else {
            return false;
        };
        let after = ranges.partition_point(|&(from, _)| from <= version);
        after > 0 && version <= ranges[after - 1].1
    }
}

/// Sorted, disjoint ranges covering the same versions as `ranges`.
fn merged(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (from, to) in ranges {
        match out.last_mut() {
            Some(last) if from <= last.1.saturating_add(1) => last.1 = last.1.max(to),
            _ => out.push((from, to)),
        }
    }
    out
}

/// The value versions a restore of `checkpoint` reads: per channel, the inclusive
/// range from its base version to its current version.
pub fn needed_ranges(checkpoint: &Checkpoint) -> Vec<(String, u64, u64)> {
    checkpoint
        .channel_versions
        .iter()
        .map(|(channel, &version)| {
            let base = checkpoint
                .channel_bases
                .get(channel)
                .copied()
                .unwrap_or(version);
            (channel.clone(), base.min(version), version)
        })
        .collect()
}

/// The (channel, version) values a restore of `checkpoint` reads, one by one. Ranges
/// can be huge in a corrupted checkpoint; prefer [`needed_ranges`].
pub fn needed_values(checkpoint: &Checkpoint) -> Vec<(String, u64)> {
    needed_ranges(checkpoint)
        .into_iter()
        .flat_map(|(channel, from, to)| {
            // Bounded: a real thread never has this many versions of one channel.
            (from..=to).take(1 << 20).map(move |v| (channel.clone(), v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_ranges_are_sorted_and_disjoint() {
        assert_eq!(
            merged(vec![(5, 7), (1, 2), (3, 3), (6, 9), (12, 12)]),
            [(1, 3), (5, 9), (12, 12)]
        );
        assert!(merged(Vec::new()).is_empty());
    }

    fn checkpoint(versions: &[(&str, u64)], bases: &[(&str, u64)]) -> Checkpoint {
        let map = |pairs: &[(&str, u64)]| pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect();
        Checkpoint {
            v: crate::checkpoint::CHECKPOINT_FORMAT,
            id: String::new(),
            ts: String::new(),
            channel_values: BTreeMap::new(),
            channel_versions: map(versions),
            versions_seen: BTreeMap::new(),
            updated_channels: Vec::new(),
            channel_bases: map(bases),
            next: Vec::new(),
            barriers: BTreeMap::new(),
            schema_version: "".into(),
            graph_version: "".into(),
        }
    }

    #[test]
    fn needed_versions_cover_each_checkpoint_s_base_to_current() {
        let a = checkpoint(&[("log", 7)], &[("log", 5)]);
        let b = checkpoint(&[("log", 2), ("n", 4)], &[]);
        let mut needed = NeededVersions::new();
        needed.add(&a);
        needed.add(&b);
        let log: Vec<i64> = (0..9).filter(|&v| needed.contains("log", v)).collect();
        assert_eq!(log, [2, 5, 6, 7]);
        assert!(needed.contains("n", 4));
        assert!(!needed.contains("n", 3));
        assert!(!needed.contains("other", 1));
        assert!(!needed.contains("log", -1));
    }
}
