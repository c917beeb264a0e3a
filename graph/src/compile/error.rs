//! What `compile` reports: every [`BuildProblem`] found, in one [`BuildError`].

use std::fmt;

/// One problem found by `compile`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildProblem {
    /// Nothing leaves `START`.
    #[error(
        "no edge leaves START: add `add_edge(START, <first node>)` or a conditional edge from START"
    )]
    NoEntry,
    /// Two nodes share a name.
    #[error("node `{name}` is added more than once: node names must be unique")]
    DuplicateNode {
        /// The name.
        name: String,
    },
    /// A node name the graph reserves.
    #[error("node name `{name}` is reserved for the graph's START/END: rename the node")]
    ReservedName {
        /// The name.
        name: String,
    },
    /// A node name with a character used in task paths and channel keys.
    #[error("node name `{name}` contains `{character}`, which node names cannot contain")]
    InvalidCharacter {
        /// The name.
        name: String,
        /// The offending character.
        character: char,
    },
    /// An empty node name.
    #[error("a node has an empty name")]
    EmptyName,
    /// An edge starts at a node that was never added.
    #[error(
        "edge from `{source_node}` to `{target}` (added at {added_at}): `{source_node}` is not a node of this graph; add it with `add_node`"
    )]
    UnknownSource {
        /// The missing source.
        source_node: String,
        /// The edge's target.
        target: String,
        /// Where the edge was added (`file:line:column`).
        added_at: String,
    },
    /// An edge ends at a node that was never added.
    #[error(
        "edge from `{source_node}` to `{target}` (added at {added_at}): `{target}` is not a node of this graph; add it with `add_node`"
    )]
    UnknownTarget {
        /// The edge's source.
        source_node: String,
        /// The missing target.
        target: String,
        /// Where the edge was added (`file:line:column`).
        added_at: String,
    },
    /// A conditional edge declares a target that was never added.
    #[error(
        "conditional edge from `{source_node}` (added at {added_at}) declares target `{target}`, which is not a node of this graph; add it with `add_node`"
    )]
    UnknownRouteTarget {
        /// The router's source.
        source_node: String,
        /// The missing target.
        target: String,
        /// Where the conditional edge was added (`file:line:column`).
        added_at: String,
    },
    /// An edge targets a node whose input is a `Send` payload.
    #[error(
        "edge from `{source_node}` to `{target}`: `{target}` takes a `Send` payload, not the state; reach it with `stategraph::Send::new`"
    )]
    EdgeToPayloadNode {
        /// The edge's source.
        source_node: String,
        /// The payload node.
        target: String,
    },
    /// `START` inside a join.
    #[error("a join cannot wait for START: join sources must be nodes")]
    StartInJoin,
    /// A breakpoint names a node that was never added.
    #[error("interrupt {when} `{name}`, which is not a node of this graph")]
    UnknownInterruptNode {
        /// `before` or `after`.
        when: &'static str,
        /// The name.
        name: String,
    },
    /// A retry policy for a node that was never added.
    #[error("retry policy for `{name}`, which is not a node of this graph")]
    UnknownRetryNode {
        /// The name.
        name: String,
    },
    /// A cache policy or declared reads for a node that was never added.
    #[error("cache policy or reads for `{name}`, which is not a node of this graph")]
    UnknownCacheNode {
        /// The name.
        name: String,
    },
    /// `defer` names a node that was never added.
    #[error("`defer` names `{name}`, which is not a node of this graph; add it with `add_node`")]
    UnknownDeferredNode {
        /// The name.
        name: String,
    },
    /// Nodes have cache policies but the graph has no cache store.
    #[error(
        "`{name}` has a cache policy but the graph has no cache store: compile with \
         `CompileOptions::cache(..)` (e.g. `InMemoryCache::new()` or a durable saver)"
    )]
    MissingCacheStore {
        /// The first such node.
        name: String,
    },
}

/// The graph could not be compiled; `problems` lists everything found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the graph has {} problem{}:{}", problems.len(), if problems.len() == 1 { "" } else { "s" }, ListProblems(problems))]
pub struct BuildError {
    /// Every problem, in declaration order.
    pub problems: Vec<BuildProblem>,
}

struct ListProblems<'a>(&'a [BuildProblem]);

impl fmt::Display for ListProblems<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in self.0 {
            write!(f, "\n  - {p}")?;
        }
        Ok(())
    }
}
