//! The vocabulary of pending writes, part of the storage format: the channels a
//! task's own writes use, the runtime's reserved records (errors, interrupts,
//! answers, rejected attempts), and the index ranges they occupy. Savers and tools
//! that read stored threads (the `stategraph` command) use these names instead of
//! copies.

use super::types::PendingWrite;

/// A task's partial update.
pub const WRITE_UPDATE: &str = "update";
/// A task's `goto` destination.
pub const WRITE_GOTO: &str = "goto";
/// A task's `Send`.
pub const WRITE_SEND: &str = "send";
/// A task's error (its index is [`IDX_ERROR`]).
pub const WRITE_ERROR: &str = "__error__";
/// An interrupt a task raised (indices from [`IDX_INTERRUPT`]).
pub const WRITE_INTERRUPT: &str = "__interrupt__";
/// An answer to a task's interrupt (indices from [`IDX_RESUME`]).
pub const WRITE_RESUME: &str = "__resume__";
/// An attempt of the next step whose writes were rejected when applied (task
/// `__rejected__`, index = the attempt's number, value = the error). Its tasks run
/// again under new ids.
pub const WRITE_REJECTED: &str = "__rejected__";
/// A task that finished without writing anything, so it is not run again.
pub const WRITE_DONE: &str = "__done__";
/// The task-id prefix of a resume command's own writes (its update and `goto`),
/// saved on the paused checkpoint it resumed as `__command__:{n}`.
pub const COMMAND_TASK: &str = "__command__";

/// The index of a task's error record. Reserved indices sit above any task's own
/// writes; savers keep the first write per (task, index), so each kind of record
/// has its own range.
pub const IDX_ERROR: u32 = u32::MAX;
/// The index of a task's first interrupt; the n-th (from 0) is this plus n.
pub const IDX_INTERRUPT: u32 = u32::MAX - 1_000_000;
/// The index of a task's first stored answer; the n-th (from 0) is this plus n.
pub const IDX_RESUME: u32 = u32::MAX - 2_000_000;

impl PendingWrite {
    /// Whether this is a runtime record (`__error__`, `__interrupt__`, `__resume__`,
    /// `__rejected__`, `__done__`) rather than one of the task's own writes. Savers
    /// store a task's own write once (the first copy stays) but replace a runtime
    /// record.
    pub fn is_runtime_record(&self) -> bool {
        self.channel.starts_with("__")
    }

    /// Whether this records what went wrong or what is pending (an error, an
    /// interrupt, an answer, a rejected attempt) rather than a task's output (its
    /// updates, gotos, sends, or the mark of a task that wrote nothing).
    pub fn is_outcome_record(&self) -> bool {
        matches!(
            self.channel.as_str(),
            WRITE_ERROR | WRITE_INTERRUPT | WRITE_RESUME | WRITE_REJECTED
        )
    }
}

/// The name of a reserved write index (`error`, `interrupt`, `interrupt+1`,
/// `resume`, ...), or `None` for a task's own write index.
pub fn index_name(idx: u32) -> Option<String> {
    let named = |name: &str, n: u32| {
        if n == 0 {
            name.to_string()
        } else {
            format!("{name}+{n}")
        }
    };
    match idx {
        IDX_ERROR => Some("error".to_string()),
        i if i >= IDX_INTERRUPT => Some(named("interrupt", i - IDX_INTERRUPT)),
        i if i >= IDX_RESUME => Some(named("resume", i - IDX_RESUME)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_indices_are_named_and_own_indices_are_not() {
        assert_eq!(index_name(0), None);
        assert_eq!(index_name(IDX_RESUME - 1), None);
        assert_eq!(index_name(IDX_ERROR).as_deref(), Some("error"));
        assert_eq!(index_name(IDX_INTERRUPT).as_deref(), Some("interrupt"));
        assert_eq!(
            index_name(IDX_INTERRUPT + 2).as_deref(),
            Some("interrupt+2")
        );
        assert_eq!(index_name(IDX_RESUME + 1).as_deref(), Some("resume+1"));
    }
}
