//! The pure parts of a superstep, with no I/O and no runtime: task ids, where a
//! node's `goto`s and routes lead, and when a join fires.
use std::sync::Arc;

use super::error::RunError;
use super::frontier::Frontier;
use crate::compile::{Branch, Graph};
use crate::node::Goto;
use crate::state::GraphState;

/// Task ids of a step: `{step}:{node}` for tasks scheduled by edges (one per node),
/// `{step}:{node}:send{k}` for the k-th `Send` task. Adding a task to a paused step
/// never changes the ids of the others. After `reruns` rejected attempts of the step
/// (see [`persist::WRITE_REJECTED`]) every id ends in `:rerun{reruns}`, so the
/// rejected attempts' saved writes are not taken for this one's.
pub(crate) fn task_ids<'a>(
    step: i64,
    reruns: u32,
    tasks: impl Iterator<Item = (&'a str, bool)>,
) -> Vec<String> {
    use std::fmt::Write as _;
    let mut sends = 0;
    tasks
        .map(|(node, is_send)| {
            // Sized up front: `format!` would grow the string piece by piece.
            let mut id = String::with_capacity(node.len() + 48);
            if is_send {
                sends += 1;
                let _ = write!(id, "{step}:{node}:send{}", sends - 1);
            } else {
                let _ = write!(id, "{step}:{node}");
            }
            if reruns > 0 {
                let _ = write!(id, ":rerun{reruns}");
            }
            id
        })
        .collect()
}

pub(super) fn lookup<S: GraphState>(
    g: &Graph<S>,
    name: &Arc<str>,
    from: &str,
) -> Result<usize, RunError> {
    g.index
        .get(name)
        .copied()
        .ok_or_else(|| RunError::UnknownNode {
            name: name.to_string(),
            from: from.to_string(),
        })
}

pub(super) fn schedule<S: GraphState>(
    g: &Graph<S>,
    goto: Goto<S>,
    from: &str,
    next: &mut Frontier,
) -> Result<(), RunError> {
    match goto {
        Goto::End => {}
        Goto::Node(name) => {
            let i = lookup(g, &name, from)?;
            if !g.nodes[i].takes_state {
                return Err(RunError::PayloadNodeWithoutPayload {
                    node: name.to_string(),
                    from: from.to_string(),
                });
            }
            next.pull(i);
        }
        Goto::Send(send) => {
            let i = lookup(g, &send.node, from)?;
            next.push(i, send.payload);
        }
    }
    Ok(())
}

pub(super) fn follow_route<S: GraphState>(
    g: &Graph<S>,
    branch: &Branch<S>,
    view: &S,
    from: &str,
    next: &mut Frontier,
) -> Result<Vec<String>, RunError> {
    let route = (branch.router)(view);
    let mut chosen = Vec::with_capacity(route.gotos.len());
    for goto in route.gotos {
        let declared = match &goto {
            Goto::End => branch.declares_end,
            Goto::Node(name) => g
                .index
                .get(name)
                .is_some_and(|i| branch.declared.contains(i)),
            Goto::Send(send) => g
                .index
                .get(&send.node)
                .is_some_and(|i| branch.declared.contains(i)),
        };
        if !declared {
            return Err(RunError::UndeclaredRoute {
                source_node: from.to_string(),
                target: goto.endpoint().to_string(),
                declared: branch.declared_names.clone(),
            });
        }
        chosen.push(goto.endpoint().to_string());
        schedule(g, goto, from, next)?;
    }
    Ok(chosen)
}
