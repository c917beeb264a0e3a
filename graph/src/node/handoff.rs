//! [`Handoff`]: a command for a parent graph, carried out of a subgraph by
//! [`Command::parent`](super::Command::parent).

/// A command for the parent graph, carried out of a subgraph by
/// [`Command::parent`](super::Command::parent): the parent's own `Command`, erased while it crosses the
/// child's runtime.
pub struct Handoff {
    pub(crate) command: Box<dyn std::any::Any + std::marker::Send + Sync>,
    /// The state type of the graph the command is for.
    pub(crate) state: &'static str,
}

impl std::fmt::Debug for Handoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Handoff(Command<{}>)", self.state)
    }
}
