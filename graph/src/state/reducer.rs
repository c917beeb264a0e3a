//! Built-in reducers and the traits that say which field types each one folds.
//!
//! A reducer is a zero-sized marker (`Append`, `Add`, ...) implementing
//! [`Reducer<T>`] for the field types it understands. Each marker's impl is gated by a
//! small capability trait ([`Sequence`], [`Addable`], [`Mergeable`], [`SetLike`],
//! [`MessageList`]) whose `on_unimplemented` message is what a user sees when a
//! reducer is put on a field it cannot fold.
//!
//! Reducing is two-phase so a superstep is applied all-or-nothing: `check` sees every
//! write of the step and may reject them without touching the value; `reduce` then
//! cannot fail.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash};

use super::change::{Change, ReduceError};
use super::message::{MessageLike, MessageOp, fold_messages};

/// Folds a superstep's writes into a field of type `T`.
///
/// Implemented by the built-in reducer markers. `check` must accept exactly the
/// updates `reduce` can apply; `reduce` is only called after `check` succeeded.
pub trait Reducer<T>: 'static {
    /// What one write to the channel carries.
    type Update;
    /// Whether the channel accepts at most one write per superstep.
    const SINGLE_WRITE: bool = false;

    /// Validates the step's writes, in order, without changing the value.
    ///
    /// # Errors
    /// A [`ReduceError`] when the writes cannot be applied.
    fn check(current: &T, updates: &[Self::Update]) -> Result<(), ReduceError> {
        let _ = (current, updates);
        Ok(())
    }

    /// Applies the step's writes in order.
    fn reduce(current: &mut T, updates: Vec<Self::Update>) -> Change;
}

/// The default reducer: the channel holds the last value written, and accepts one
/// write per superstep.
#[derive(Debug, Clone, Copy)]
pub struct LastValue;

impl<T: 'static> Reducer<T> for LastValue {
    type Update = T;
    const SINGLE_WRITE: bool = true;

    fn reduce(current: &mut T, updates: Vec<T>) -> Change {
        if let Some(value) = updates.into_iter().last() {
            *current = value;
        }
        Change::Replaced
    }
}

/// `#[reducer(append)]`: the update is a list of items appended in order.
#[derive(Debug, Clone, Copy)]
pub struct Append;

impl<T: Sequence + 'static> Reducer<T> for Append {
    type Update = Vec<T::Item>;

    fn reduce(current: &mut T, updates: Vec<Self::Update>) -> Change {
        let from = current.len();
        for items in updates {
            current.extend_items(items);
        }
        Change::Appended { from }
    }
}

/// `#[reducer(add)]`: the update is a number added to the value.
#[derive(Debug, Clone, Copy)]
pub struct Add;

impl<T: Addable + 'static> Reducer<T> for Add {
    type Update = T;

    fn check(current: &T, updates: &[T]) -> Result<(), ReduceError> {
        let mut acc = current.clone();
        for u in updates {
            acc = acc.checked_add(u).ok_or(ReduceError::Overflow)?;
        }
        Ok(())
    }

    fn reduce(current: &mut T, updates: Vec<T>) -> Change {
        for u in &updates {
            // `check` ran first, so every sum fits.
            if let Some(sum) = current.checked_add(u) {
                *current = sum;
            }
        }
        Change::Replaced
    }
}

/// `#[reducer(merge)]`: the update is a list of `(key, value)` entries inserted in
/// order; a later write wins per key.
#[derive(Debug, Clone, Copy)]
pub struct Merge;

impl<T: Mergeable + 'static> Reducer<T> for Merge {
    type Update = Vec<(T::Key, T::Value)>;

    fn reduce(current: &mut T, updates: Vec<Self::Update>) -> Change {
        for entries in updates {
            for (k, v) in entries {
                current.insert_entry(k, v);
            }
        }
        Change::Replaced
    }
}

/// `#[reducer(union)]`: the update is a list of items inserted into the set.
#[derive(Debug, Clone, Copy)]
pub struct Union;

impl<T: SetLike + 'static> Reducer<T> for Union {
    type Update = Vec<T::Item>;

    fn reduce(current: &mut T, updates: Vec<Self::Update>) -> Change {
        for items in updates {
            for item in items {
                current.insert_item(item);
            }
        }
        Change::Replaced
    }
}

/// `#[reducer(messages)]`: an id-aware message list. See [`MessageOp`].
#[derive(Debug, Clone, Copy)]
pub struct Messages;

impl<T: MessageList + 'static> Reducer<T> for Messages {
    type Update = Vec<MessageOp<T::Message>>;

    fn check(current: &T, updates: &[Self::Update]) -> Result<(), ReduceError> {
        super::message::check_messages(current.messages(), updates.iter().flatten())
    }

    fn reduce(current: &mut T, updates: Vec<Self::Update>) -> Change {
        fold_messages(current.messages_mut(), updates.into_iter().flatten())
    }
}

/// List types the `append` reducer extends.
#[diagnostic::on_unimplemented(
    message = "reducer `append` cannot be used on a field of type `{Self}`",
    label = "`append` needs a list field",
    note = "`append` works on `Vec<T>` and `VecDeque<T>`; use `add` for numbers or `with = path` for a custom fold"
)]
pub trait Sequence {
    /// The list's item type.
    type Item;
    /// Number of items.
    fn len(&self) -> usize;
    /// Whether the list is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Appends items at the end.
    fn extend_items(&mut self, items: Vec<Self::Item>);
    /// The items from position `from` on (empty when `from` is past the end).
    fn items_from(&self, from: usize) -> impl Iterator<Item = &Self::Item>;
}

impl<T> Sequence for Vec<T> {
    type Item = T;
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn extend_items(&mut self, items: Vec<T>) {
        self.extend(items);
    }
    fn items_from(&self, from: usize) -> impl Iterator<Item = &T> {
        self.get(from..).unwrap_or_default().iter()
    }
}

impl<T> Sequence for VecDeque<T> {
    type Item = T;
    fn len(&self) -> usize {
        VecDeque::len(self)
    }
    fn extend_items(&mut self, items: Vec<T>) {
        self.extend(items);
    }
    fn items_from(&self, from: usize) -> impl Iterator<Item = &T> {
        self.iter().skip(from)
    }
}

/// Numbers the `add` reducer sums.
#[diagnostic::on_unimplemented(
    message = "reducer `add` cannot be used on a field of type `{Self}`",
    label = "`add` needs a numeric field",
    note = "`add` works on integer and floating-point fields; use `append` for lists or `with = path` for a custom fold"
)]
pub trait Addable: Clone {
    /// `self + other`, or `None` on overflow.
    fn checked_add(&self, other: &Self) -> Option<Self>;
}

macro_rules! addable_int {
    ($($t:ty)*) => {$(
        impl Addable for $t {
            fn checked_add(&self, other: &Self) -> Option<Self> {
                <$t>::checked_add(*self, *other)
            }
        }
    )*};
}
addable_int!(u8 u16 u32 u64 u128 usize i8 i16 i32 i64 i128 isize);

macro_rules! addable_float {
    ($($t:ty)*) => {$(
        impl Addable for $t {
            fn checked_add(&self, other: &Self) -> Option<Self> {
                Some(*self + *other)
            }
        }
    )*};
}
addable_float!(f32 f64);

/// Maps the `merge` reducer inserts into.
#[diagnostic::on_unimplemented(
    message = "reducer `merge` cannot be used on a field of type `{Self}`",
    label = "`merge` needs a map field",
    note = "`merge` works on `BTreeMap<K, V>` and `HashMap<K, V>`; use `append` for lists or `union` for sets"
)]
pub trait Mergeable {
    /// The map's key type.
    type Key;
    /// The map's value type.
    type Value;
    /// Inserts or replaces one entry.
    fn insert_entry(&mut self, key: Self::Key, value: Self::Value);
}

impl<K: Ord, V> Mergeable for BTreeMap<K, V> {
    type Key = K;
    type Value = V;
    fn insert_entry(&mut self, key: K, value: V) {
        self.insert(key, value);
    }
}

impl<K: Eq + Hash, V, H: BuildHasher> Mergeable for HashMap<K, V, H> {
    type Key = K;
    type Value = V;
    fn insert_entry(&mut self, key: K, value: V) {
        self.insert(key, value);
    }
}

/// Sets the `union` reducer inserts into.
#[diagnostic::on_unimplemented(
    message = "reducer `union` cannot be used on a field of type `{Self}`",
    label = "`union` needs a set field",
    note = "`union` works on `BTreeSet<T>` and `HashSet<T>`"
)]
pub trait SetLike {
    /// The set's item type.
    type Item;
    /// Inserts one item.
    fn insert_item(&mut self, item: Self::Item);
}

impl<T: Ord> SetLike for BTreeSet<T> {
    type Item = T;
    fn insert_item(&mut self, item: T) {
        self.insert(item);
    }
}

impl<T: Eq + Hash, H: BuildHasher> SetLike for HashSet<T, H> {
    type Item = T;
    fn insert_item(&mut self, item: T) {
        self.insert(item);
    }
}

/// Lists of messages the `messages` reducer maintains.
#[diagnostic::on_unimplemented(
    message = "reducer `messages` cannot be used on a field of type `{Self}`",
    label = "`messages` needs a `Vec` of messages",
    note = "`messages` works on `Vec<M>` where `M` implements `stategraph::MessageLike` (for example `stategraph::Message`)"
)]
pub trait MessageList: Sequence<Item = Self::Message> {
    /// The message type.
    type Message: MessageLike;
    /// The messages in order.
    fn messages(&self) -> &[Self::Message];
    /// The list, to edit.
    fn messages_mut(&mut self) -> &mut Vec<Self::Message>;
}

impl<M: MessageLike> MessageList for Vec<M> {
    type Message = M;
    fn messages(&self) -> &[M] {
        self
    }
    fn messages_mut(&mut self) -> &mut Vec<M> {
        self
    }
}

/// A user function given as `#[reducer(with = path)]`: `fn(&mut T, U)`.
#[diagnostic::on_unimplemented(
    message = "`with = ..` must name a reducer function `fn(&mut {T}, {U})`, not `{Self}`",
    label = "expected a function `fn(&mut {T}, {U})`",
    note = "the function folds one update into the field; the update type is the field's type unless `update = Type` is given"
)]
pub trait WithReducer<T, U> {
    /// Folds one update into the value.
    fn fold(&self, current: &mut T, update: U);
}

impl<F, T, U> WithReducer<T, U> for F
where
    F: Fn(&mut T, U),
{
    fn fold(&self, current: &mut T, update: U) {
        self(current, update);
    }
}
