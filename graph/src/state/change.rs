//! What a committed write did to a channel, and why a reducer refused one: the
//! vocabulary shared by the reducers and the message list.

/// How a committed write changed a channel; checkpoints use it to store deltas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The value was replaced or edited in place; a checkpoint stores it whole.
    Replaced,
    /// Items were only appended, starting at position `from`; a checkpoint may store
    /// just `value[from..]`.
    Appended {
        /// Length of the list before the step.
        from: usize,
    },
}

impl Change {
    /// The combined change of `self` followed by `later` (for checkpoints that span
    /// several steps).
    #[must_use]
    pub fn then(self, later: Change) -> Change {
        match (self, later) {
            (Change::Appended { from }, Change::Appended { .. }) => Change::Appended { from },
            _ => Change::Replaced,
        }
    }
}

/// Why a reducer rejected a superstep's writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReduceError {
    /// `add` would overflow the field's integer type.
    #[error("adding the step's writes overflows the channel's numeric type")]
    Overflow,
    /// A `messages` write removes an id that is not in the list.
    #[error("cannot remove message `{id}`: no message with that id is in the list")]
    UnknownMessageId {
        /// The id that was asked for.
        id: String,
    },
}
