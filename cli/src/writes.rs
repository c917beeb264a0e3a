//! What a checkpoint's pending writes say: the names of the runtime's reserved write
//! indices, the interrupts raised, and the status of a thread whose newest checkpoint
//! it is.
//!
//! The reserved channels and index ranges are the library's
//! ([`stategraph::checkpoint::writes`]); the status and the interrupts are judged as
//! the Studio judges them ([`stategraph_studio::status`]).

/// The name of a reserved write index, or `None` for a task's own write.
pub use stategraph::checkpoint::writes::index_name as idx_name;
pub use stategraph_studio::status::{ThreadStatus, interrupts};

#[cfg(test)]
mod tests {
    use super::*;
    use stategraph::checkpoint::writes::{IDX_INTERRUPT, IDX_RESUME};

    #[test]
    fn reserved_indices_have_names_and_task_indices_have_none() {
        assert_eq!(idx_name(4_294_967_295).as_deref(), Some("error"));
        assert_eq!(idx_name(IDX_INTERRUPT).as_deref(), Some("interrupt"));
        assert_eq!(idx_name(IDX_INTERRUPT + 2).as_deref(), Some("interrupt+2"));
        assert_eq!(idx_name(IDX_RESUME).as_deref(), Some("resume"));
        assert_eq!(idx_name(IDX_RESUME + 1).as_deref(), Some("resume+1"));
        assert_eq!(idx_name(0), None);
        assert_eq!(idx_name(IDX_RESUME - 1), None);
    }
}
