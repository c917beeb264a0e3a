//! A node's pause: the [`Interrupt`] it raises and the ids interrupts get.

use std::fmt;

use super::error::NodeError;

/// A pause requested by a node through [`NodeContext::interrupt`](super::NodeContext::interrupt): the run stops
/// after the step's other tasks finish and reports it; resuming with
/// `Command::resume(..)` re-runs the node, and the same `interrupt` call then returns
/// the resume value.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Interrupt {
    /// Stable for the checkpoint it was raised on; a fork raises it again with a new id.
    pub id: String,
    /// The node that asked.
    pub node: String,
    /// What it asked with (`null` for a static breakpoint).
    pub value: serde_json::Value,
    /// The checkpoint namespace of the graph the node belongs to: empty for the root
    /// graph, a subgraph's path (`node:task|node:task`) for a node inside one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ns: String,
}

impl fmt::Display for Interrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ns.is_empty() {
            write!(
                f,
                "node `{}` is waiting for input (interrupt {})",
                self.node, self.id
            )
        } else {
            write!(
                f,
                "node `{}` of subgraph `{}` is waiting for input (interrupt {})",
                self.node, self.ns, self.id
            )
        }
    }
}

impl std::error::Error for Interrupt {}

impl NodeError {
    /// The interrupt this error carries, if the node paused rather than failed.
    pub fn as_interrupt(&self) -> Option<&Interrupt> {
        let mut current: Option<&(dyn std::error::Error + 'static)> = Some(&*self.inner);
        while let Some(e) = current {
            if let Some(i) = e.downcast_ref::<Interrupt>() {
                return Some(i);
            }
            current = e.source();
        }
        None
    }
}

/// The id of interrupt number `n` of a task: stable for the task's checkpoint.
pub(crate) fn interrupt_id(task_key: &str, n: usize) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{task_key}#{n}").as_bytes());
    digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
}
