//! [`StateGraph::add_node_async`]: a node from an async closure, for nodes that
//! capture what they need (a model client, a tool set, a connection pool).

use std::future::Future;
use std::sync::Arc;

use crate::builder::StateGraph;
use crate::node::{NodeContext, NodeError, NodeHandle, NodeReturn, Runner, TaskInput};
use crate::state::GraphState;

impl<S: GraphState> StateGraph<S> {
    /// Adds a node from an async closure and returns a handle that names it in
    /// edges, routes and `goto`. The closure gets its own copy of the state and of
    /// the task's [`NodeContext`], so its future owns what it uses and may capture
    /// shared values (clone an `Arc` into the `async move` block).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Doc {
    ///     text: String,
    ///     words: usize,
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let stop_words = Arc::new(vec!["the".to_string(), "a".to_string()]);
    /// let mut graph = StateGraph::<Doc>::new();
    /// let count = graph.add_node_async("count", move |doc: Doc, _ctx: NodeContext| {
    ///     let stop_words = stop_words.clone();
    ///     async move {
    ///         tokio::task::yield_now().await;
    ///         let words = doc
    ///             .text
    ///             .split_whitespace()
    ///             .filter(|w| !stop_words.iter().any(|s| s == w))
    ///             .count();
    ///         Doc::update().words(words)
    ///     }
    /// });
    /// graph.add_edge(START, &count);
    /// let graph = graph.compile()?;
    /// let out = graph.invoke(Doc::update().text("the cat saw a dog"), &RunConfig::new()).await?;
    /// assert_eq!(out.values.words, 3);
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_node_async<F, Fut, R>(&mut self, name: impl Into<Arc<str>>, f: F) -> NodeHandle<S>
    where
        F: Fn(S, NodeContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: NodeReturn<State = S>,
    {
        let name: Arc<str> = name.into();
        let runner = Runner::Async(Arc::new(
            move |input: TaskInput<'_, S>, ctx: &NodeContext| {
                let state = match input {
                    TaskInput::State(s) => Some(s),
                    TaskInput::Payload(p) => p.downcast_ref::<S>(),
                };
                match state {
                    Some(s) => {
                        let running = f(s.clone(), ctx.clone());
                        Box::pin(async move { running.await.into_output() })
                    }
                    None => {
                        let error = NodeError::msg(format!(
                            "node `{}` takes the state; its `Send` payload is of another type",
                            ctx.node()
                        ));
                        Box::pin(std::future::ready(Err(error)))
                    }
                }
            },
        ));
        self.push_state_node(name.clone(), runner);
        NodeHandle::new(name)
    }
}
