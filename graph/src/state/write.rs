//! Writes to channels: what one task writes, how a superstep's writes are gathered
//! per channel and checked, and what changed.

use std::sync::Arc;

use super::change::{Change, ReduceError};
use super::channel::{ChannelInfo, ChannelKey};
use super::reducer::Reducer;

/// One channel's slot in a partial update.
#[derive(Clone, Debug, PartialEq)]
pub enum ChannelWrite<T, U> {
    /// Goes through the channel's reducer (for `append`: the items to append).
    Reduce(U),
    /// Replaces the value, bypassing the reducer; wins over the step's other writes to
    /// the channel (LangGraph's `Overwrite`).
    Overwrite(T),
}

/// Converts a builder argument into a channel's value or item type.
///
/// Implemented for the type itself and for `&str` into `String`.
#[diagnostic::on_unimplemented(
    message = "a value of type `{Self}` cannot be written to a channel of type `{T}`",
    label = "expected `{T}`",
    note = "a channel takes a value of its own type (a `String` channel also takes `&str` and `&String`)"
)]
pub trait IntoChannelValue<T> {
    /// Performs the conversion.
    fn into_channel_value(self) -> T;
}

impl<T> IntoChannelValue<T> for T {
    fn into_channel_value(self) -> T {
        self
    }
}

// Not listed in a mismatch's help: the note above says what a channel takes.
#[diagnostic::do_not_recommend]
impl IntoChannelValue<String> for &str {
    fn into_channel_value(self) -> String {
        self.to_owned()
    }
}

// Not listed in a mismatch's help: the note above says what a channel takes.
#[diagnostic::do_not_recommend]
impl IntoChannelValue<String> for &String {
    fn into_channel_value(self) -> String {
        self.clone()
    }
}

// Not listed in a mismatch's help: the note above says what a channel takes.
#[diagnostic::do_not_recommend]
impl<M: super::MessageLike> IntoChannelValue<super::MessageOp<M>> for M {
    fn into_channel_value(self) -> super::MessageOp<M> {
        super::MessageOp::Upsert(self)
    }
}

// Not listed in a mismatch's help: the note above says what a channel takes.
#[diagnostic::do_not_recommend]
impl<M> IntoChannelValue<super::MessageOp<M>> for super::RemoveMessage {
    fn into_channel_value(self) -> super::MessageOp<M> {
        super::MessageOp::Remove(self.0)
    }
}

// Not listed in a mismatch's help: the note above says what a channel takes.
#[diagnostic::do_not_recommend]
impl<M> IntoChannelValue<super::MessageOp<M>> for super::RemoveAllMessages {
    fn into_channel_value(self) -> super::MessageOp<M> {
        super::MessageOp::RemoveAll
    }
}

/// A superstep's writes were rejected; nothing was applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidUpdate {
    /// A last-value channel received more than one write in one superstep.
    #[error(
        "channel `{channel}` received {} writes in one superstep (from {}); a last-value channel takes one write per step: write it from one node, or give it a reducer such as `#[reducer(append)]`",
        writers.len(),
        writers.join(", ")
    )]
    ConcurrentWrites {
        /// The channel.
        channel: &'static str,
        /// The writers, in apply order.
        writers: Vec<String>,
    },
    /// A channel received more than one overwrite in one superstep.
    #[error(
        "channel `{channel}` received {} overwrites in one superstep (from {}); at most one write per step may bypass the reducer",
        writers.len(),
        writers.join(", ")
    )]
    ConcurrentOverwrites {
        /// The channel.
        channel: &'static str,
        /// The writers, in apply order.
        writers: Vec<String>,
    },
    /// The channel's reducer rejected the step's writes.
    #[error("channel `{channel}`: {source}")]
    Rejected {
        /// The channel.
        channel: &'static str,
        /// The reducer's reason.
        #[source]
        source: ReduceError,
    },
}

/// The channels a superstep changed, in channel order, with how each changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChangeSet {
    entries: Vec<(usize, Change)>,
}

impl ChangeSet {
    /// No changes.
    pub const fn new() -> Self {
        Self {
            entries: Vec::new(),
        }
    }

    /// Records a change to the channel at `index`. Generated code pushes in channel
    /// order; out-of-order pushes are sorted in.
    pub fn record(&mut self, index: usize, change: Change) {
        match self.entries.binary_search_by_key(&index, |e| e.0) {
            Ok(pos) => self.entries[pos].1 = self.entries[pos].1.then(change),
            Err(pos) => self.entries.insert(pos, (index, change)),
        }
    }

    /// Forgets every change, keeping the buffer.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Whether the channel changed.
    pub fn contains<S, T>(&self, key: ChannelKey<S, T>) -> bool {
        self.change_at(key.index()).is_some()
    }

    /// How the channel at `index` changed, if it did.
    pub fn change_at(&self, index: usize) -> Option<Change> {
        self.entries
            .binary_search_by_key(&index, |e| e.0)
            .ok()
            .map(|pos| self.entries[pos].1)
    }

    /// The changed channels' indices and changes, in channel order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, Change)> + '_ {
        self.entries.iter().copied()
    }

    /// Number of changed channels.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Folds in the changes of a later step (`Appended` then `Appended` stays
    /// `Appended` from the earlier position; anything else becomes `Replaced`).
    pub fn merge(&mut self, later: &ChangeSet) {
        for (index, change) in later.iter() {
            self.record(index, change);
        }
    }
}

/// One channel's writes within a superstep, gathered in apply order. Used by
/// generated `apply_writes`.
#[doc(hidden)]
pub struct Pending<T, U> {
    writers: Writers,
    updates: Vec<U>,
    overwrites: Vec<(usize, T)>,
}

/// The writers of a channel's reducer updates in one step, by write index. One
/// writer, the common case, needs no allocation.
#[derive(Default)]
struct Writers {
    first: Option<usize>,
    rest: Vec<usize>,
}

impl Writers {
    fn push(&mut self, writer: usize) {
        if self.first.is_none() {
            self.first = Some(writer);
        } else {
            self.rest.push(writer);
        }
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.first.into_iter().chain(self.rest.iter().copied())
    }
}

impl<T, U> Default for Pending<T, U> {
    fn default() -> Self {
        Self {
            writers: Writers::default(),
            updates: Vec::new(),
            overwrites: Vec::new(),
        }
    }
}

impl<T, U> Pending<T, U> {
    pub fn push(&mut self, writer: usize, write: ChannelWrite<T, U>) {
        match write {
            ChannelWrite::Reduce(u) => {
                self.writers.push(writer);
                self.updates.push(u);
            }
            ChannelWrite::Overwrite(t) => self.overwrites.push((writer, t)),
        }
    }

    /// Rejects conflicting overwrites and, when `single_write`, more than one write.
    pub fn check_writers(
        &self,
        channel: &ChannelInfo,
        single_write: bool,
        writers: &[Arc<str>],
    ) -> Result<(), InvalidUpdate> {
        let names = |mut order: Vec<usize>| -> Vec<String> {
            order.sort_unstable();
            order
                .into_iter()
                .filter_map(|i| writers.get(i).map(|w| w.to_string()))
                .collect()
        };
        if self.overwrites.len() > 1 {
            return Err(InvalidUpdate::ConcurrentOverwrites {
                channel: channel.name,
                writers: names(self.overwrites.iter().map(|w| w.0).collect()),
            });
        }
        if single_write && self.updates.len() + self.overwrites.len() > 1 {
            let all = self.writers.iter();
            return Err(InvalidUpdate::ConcurrentWrites {
                channel: channel.name,
                writers: names(all.chain(self.overwrites.iter().map(|w| w.0)).collect()),
            });
        }
        Ok(())
    }

    /// Checks the writes of a channel with a built-in reducer without applying them.
    pub fn check<R: Reducer<T, Update = U>>(
        &self,
        current: &T,
        channel: &ChannelInfo,
        writers: &[Arc<str>],
    ) -> Result<(), InvalidUpdate> {
        self.check_writers(channel, R::SINGLE_WRITE, writers)?;
        if self.overwrites.is_empty() && !self.updates.is_empty() {
            R::check(current, &self.updates).map_err(|source| InvalidUpdate::Rejected {
                channel: channel.name,
                source,
            })?;
        }
        Ok(())
    }

    /// Applies checked writes through a built-in reducer.
    pub fn commit<R: Reducer<T, Update = U>>(self, field: &mut T) -> Option<Change> {
        if let Some((_, value)) = self.overwrites.into_iter().next() {
            *field = value;
            Some(Change::Replaced)
        } else if self.updates.is_empty() {
            None
        } else {
            Some(R::reduce(field, self.updates))
        }
    }

    /// Applies checked writes through a user function (`#[reducer(with = path)]`).
    pub fn commit_with(self, field: &mut T, fold: impl Fn(&mut T, U)) -> Option<Change> {
        if let Some((_, value)) = self.overwrites.into_iter().next() {
            *field = value;
            Some(Change::Replaced)
        } else if self.updates.is_empty() {
            None
        } else {
            for u in self.updates {
                fold(field, u);
            }
            Some(Change::Replaced)
        }
    }
}
