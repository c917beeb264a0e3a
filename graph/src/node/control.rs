//! The values that steer a graph from inside a node or a router: [`Command`],
//! [`Route`], [`Resume`], and the destinations [`IntoGoto`] accepts.

use std::fmt;

use super::def::{NodeDef, NodeHandle};
use super::handoff::Handoff;
use super::naming::NamedNode;
use super::output::{End, Goto, NodeOutput, NodeResult, NodeReturn};
use super::send;
use crate::state::GraphState;

impl<S: GraphState> NodeOutput<S> {
    fn push(&mut self, command: Command<S>) {
        self.writes.extend(command.update);
        self.goto.extend(command.goto);
        if command.parent.is_some() {
            self.parent = command.parent;
        }
    }
}

impl<S: GraphState> NodeReturn for Command<S> {
    type State = S;
    fn into_output(self) -> NodeResult<S> {
        let mut out = NodeOutput::empty();
        out.push(self);
        Ok(out)
    }
}

impl<S: GraphState> NodeReturn for Vec<Command<S>> {
    type State = S;
    fn into_output(self) -> NodeResult<S> {
        let mut out = NodeOutput::empty();
        for command in self {
            out.push(command);
        }
        Ok(out)
    }
}

/// Destinations of routes and `goto`: nodes taking the state, `END`, or a `Send`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a route or goto destination in a graph over `{S}`",
    label = "expected a node taking `&{S}`, `END`, or a `Send`",
    note = "a node whose input is a payload is reached with `stategraph::Send::new(node, payload)`"
)]
pub trait IntoGoto<S> {
    /// The destination.
    fn into_goto(self) -> Goto<S>;
}

impl<S: GraphState> IntoGoto<S> for NodeDef<S, S> {
    fn into_goto(self) -> Goto<S> {
        Goto::Node(self.name_of())
    }
}

impl<S: GraphState> IntoGoto<S> for NodeHandle<S, S> {
    fn into_goto(self) -> Goto<S> {
        Goto::Node(self.name_of())
    }
}

impl<S: GraphState> IntoGoto<S> for &NodeHandle<S, S> {
    fn into_goto(self) -> Goto<S> {
        Goto::Node(self.name_of())
    }
}

impl<S: GraphState, C: GraphState> IntoGoto<S> for super::def::SubgraphHandle<S, C> {
    fn into_goto(self) -> Goto<S> {
        Goto::Node(self.name_of())
    }
}

impl<S: GraphState, C: GraphState> IntoGoto<S> for &super::def::SubgraphHandle<S, C> {
    fn into_goto(self) -> Goto<S> {
        Goto::Node(self.name_of())
    }
}

impl<S> IntoGoto<S> for End {
    fn into_goto(self) -> Goto<S> {
        Goto::End
    }
}

/// A destination chosen at run time, e.g. a node named in a request. A node that is
/// not in the graph is refused when the command runs.
impl<S> IntoGoto<S> for Goto<S> {
    fn into_goto(self) -> Goto<S> {
        self
    }
}

impl<S> IntoGoto<S> for send::Send<S> {
    fn into_goto(self) -> Goto<S> {
        Goto::Send(self)
    }
}

/// A node's instruction: an optional update plus destinations added to its static
/// edges (LangGraph's `Command`).
///
/// Returned by a node, it routes from inside the node; given to `invoke`,
/// `Command::resume(answer)` answers a paused thread (see [`NodeContext::interrupt`](super::NodeContext::interrupt)).
///
/// ```
/// use stategraph::prelude::*;
///
/// #[derive(GraphState, Clone, Debug, Default)]
/// struct Ticket {
///     urgent: bool,
///     #[reducer(append)]
///     log: Vec<String>,
/// }
///
/// #[node]
/// fn triage(t: &Ticket) -> Command<Ticket> {
///     let next = if t.urgent { page } else { queue };
///     Command::goto(next).update(Ticket::update().log(["triaged"]))
/// }
///
/// #[node]
/// fn page(_: &Ticket) -> TicketUpdate {
///     Ticket::update().log(["paged on-call"])
/// }
///
/// #[node]
/// fn queue(_: &Ticket) -> TicketUpdate {
///     Ticket::update().log(["queued"])
/// }
///
/// let graph = StateGraph::<Ticket>::new()
///     .add_node(triage)
///     .add_node(page)
///     .add_node(queue)
///     .add_edge(START, triage)
///     .compile()?;
/// let out = graph.invoke_blocking(Ticket::update().urgent(true), &RunConfig::new())?;
/// assert_eq!(out.values.log, ["triaged", "paged on-call"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Command<S: GraphState> {
    pub(crate) update: Option<S::Update>,
    pub(crate) goto: Vec<Goto<S>>,
    pub(crate) resume: Option<Resume>,
    pub(crate) parent: Option<Handoff>,
}

/// Answers to pending interrupts, given with [`Command::resume`] or
/// [`Command::resume_map`].
#[derive(Clone, Debug, PartialEq)]
pub enum Resume {
    /// One answer, for the only pending interrupt.
    Value(serde_json::Value),
    /// Answers by interrupt id; interrupts not named stay pending.
    Map(std::collections::BTreeMap<String, serde_json::Value>),
    /// A value that failed to serialize (reported when the command is run).
    Invalid(String),
}

impl<S: GraphState> Command<S> {
    /// A command that writes nothing and goes nowhere extra.
    pub fn new() -> Self {
        Self {
            update: None,
            goto: Vec::new(),
            resume: None,
            parent: None,
        }
    }

    /// Hands control to the parent graph (LangGraph's `Command(graph=PARENT)`): the
    /// subgraph this node runs in stops, and the parent applies `command` — its
    /// update and destinations — as the result of the subgraph's node. The
    /// supervisor and swarm patterns route between specialists this way. `command`
    /// is a `Command` of the *parent's* state, so its update must be the parent's
    /// update type.
    ///
    /// The node's own writes in this command are not applied (the child stops). In
    /// the root graph, which has no parent, the run fails with
    /// [`RunError::ParentCommand`](crate::RunError::ParentCommand).
    pub fn parent<P: GraphState>(command: Command<P>) -> Self {
        Self {
            parent: Some(Handoff {
                command: Box::new(command),
                state: std::any::type_name::<P>(),
            }),
            ..Self::new()
        }
    }

    /// Resumes a paused thread: `value` answers its only pending interrupt (pass it
    /// to `invoke`). Combine with `.update(..)` to write first, or `.and_goto(..)` to
    /// add tasks to the paused step.
    pub fn resume(value: impl serde::Serialize) -> Self {
        let resume = match serde_json::to_value(value) {
            Ok(v) => Resume::Value(v),
            Err(e) => Resume::Invalid(e.to_string()),
        };
        Self {
            resume: Some(resume),
            ..Self::new()
        }
    }

    /// Resumes several pending interrupts, by id. Only the named ones resume.
    pub fn resume_map<K: Into<String>, V: serde::Serialize>(
        answers: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let mut map = std::collections::BTreeMap::new();
        for (k, v) in answers {
            match serde_json::to_value(v) {
                Ok(v) => {
                    map.insert(k.into(), v);
                }
                Err(e) => {
                    return Self {
                        resume: Some(Resume::Invalid(e.to_string())),
                        ..Self::new()
                    };
                }
            }
        }
        Self {
            resume: Some(Resume::Map(map)),
            ..Self::new()
        }
    }

    /// A command going to `target` (a node, `END`, or a `Send`) in addition to the
    /// node's static edges. `END` adds nothing.
    pub fn goto(target: impl IntoGoto<S>) -> Self {
        Self::new().and_goto(target)
    }

    /// Adds another destination.
    #[must_use]
    pub fn and_goto(mut self, target: impl IntoGoto<S>) -> Self {
        self.goto.push(target.into_goto());
        self
    }

    /// Sets the update this command writes.
    #[must_use]
    pub fn update(mut self, update: S::Update) -> Self {
        self.update = Some(update);
        self
    }
}

impl<S: GraphState> Default for Command<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: GraphState> fmt::Debug for Command<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Command")
            .field("update", &self.update)
            .field("goto", &self.goto)
            .field("resume", &self.resume)
            .finish()
    }
}

/// What a router returns: nodes, `END`, or `Send`s.
pub struct Route<S> {
    pub(crate) gotos: Vec<Goto<S>>,
}

impl<S> Route<S> {
    /// Go to one node (or `END`).
    pub fn to(target: impl IntoGoto<S>) -> Self {
        Self {
            gotos: vec![target.into_goto()],
        }
    }

    /// End this path.
    pub fn end() -> Self {
        Self {
            gotos: vec![Goto::End],
        }
    }

    /// Go to several nodes; each runs in the next superstep.
    pub fn to_all<T: IntoGoto<S>>(targets: impl IntoIterator<Item = T>) -> Self {
        Self {
            gotos: targets.into_iter().map(IntoGoto::into_goto).collect(),
        }
    }

    /// Fan out: each `Send` runs its node on its payload in the next superstep. Zero
    /// sends schedule nothing.
    pub fn sends(sends: impl IntoIterator<Item = send::Send<S>>) -> Self {
        Self {
            gotos: sends.into_iter().map(Goto::Send).collect(),
        }
    }

    /// Adds another destination.
    #[must_use]
    pub fn and(mut self, target: impl IntoGoto<S>) -> Self {
        self.gotos.push(target.into_goto());
        self
    }
}

impl<S: GraphState> From<NodeDef<S, S>> for Route<S> {
    fn from(node: NodeDef<S, S>) -> Self {
        Route::to(node)
    }
}

impl<S> From<End> for Route<S> {
    fn from(_: End) -> Self {
        Route::end()
    }
}

impl<S> From<Vec<send::Send<S>>> for Route<S> {
    fn from(sends: Vec<send::Send<S>>) -> Self {
        Route::sends(sends)
    }
}

impl<S> fmt::Debug for Route<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.gotos).finish()
    }
}
