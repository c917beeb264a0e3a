//! [`ToolNode`]: runs the tool calls of the model's last message, concurrently, and
//! answers each with a tool message; [`tools_condition`]: routes to it while the
//! model asks for tools.

use std::sync::Arc;

use futures::future::join_all;
use stategraph::prelude::*;
use stategraph::{MessageChunk, NodeHandle};

use crate::state::{AgentState, pending_tool_calls};
use crate::tool::Tools;

/// Runs the tool calls the conversation's last (assistant) message asks for, all at
/// once, and answers each with one tool message, in the order of the calls. A call
/// that fails — an unknown tool, arguments that do not decode, the tool's own error
/// — is answered with an error message the model can read (`Error: ...`), not a
/// failed run. Each answer is also sent to the run's stream in
/// `StreamMode::MESSAGES`.
#[derive(Clone, Debug)]
pub struct ToolNode {
    tools: Arc<Tools>,
}

/// How an error tool message starts.
pub const TOOL_ERROR_PREFIX: &str = "Error: ";

impl ToolNode {
    /// A node running `tools`.
    pub fn new(tools: Tools) -> Self {
        Self {
            tools: Arc::new(tools),
        }
    }

    /// The tools it runs.
    pub fn tools(&self) -> &Tools {
        &self.tools
    }

    /// The answers to the calls of the last message of `messages`, in call order.
    pub async fn answer(&self, messages: &[Message]) -> Vec<Message> {
        let calls = pending_tool_calls(messages);
        let runs = calls.iter().map(|call| async move {
            let content = match self.tools.call(&call.name, call.arguments.clone()).await {
                Ok(text) => text,
                Err(e) => format!("{TOOL_ERROR_PREFIX}{e}"),
            };
            Message::tool(call.id.clone(), content).with_id(format!("tool-{}", call.id))
        });
        join_all(runs).await
    }

    /// Adds it to `graph` as the node `name`; returns its handle.
    pub fn add_to<S: AgentState>(&self, graph: &mut StateGraph<S>, name: &str) -> NodeHandle<S> {
        let node = self.clone();
        graph.add_node_async(name, move |state: S, ctx: NodeContext| {
            let node = node.clone();
            async move {
                let answers = node.answer(state.messages()).await;
                for a in &answers {
                    ctx.emit_message(MessageChunk::whole(a, "")).await;
                }
                Command::new().update(S::add_messages(answers))
            }
        })
    }
}

/// A router for the edge after the model: to `tools` while the model's last
/// message asks for tool calls, else to `END` — LangGraph's `tools_condition`.
///
/// ```
/// use stategraph::prelude::*;
/// use stategraph_agent::{MessagesState, ToolNode, Tools, tools_condition};
///
/// let mut graph = StateGraph::<MessagesState>::new();
/// let agent = graph.add_node_fn("agent", |_: &MessagesState| {
///     MessagesState::update().messages([Message::assistant("Hello.")])
/// });
/// let tools = ToolNode::new(Tools::new()).add_to(&mut graph, "tools");
/// graph.add_edge(START, &agent).add_edge(&tools, &agent);
/// graph.add_conditional_edges(&agent, tools_condition(&tools), (&tools, END));
/// let out = graph
///     .compile()?
///     .invoke_blocking(MessagesState::update(), &RunConfig::new())?;
/// assert_eq!(out.values.messages[0].content, "Hello.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn tools_condition<S: AgentState>(
    tools: &NodeHandle<S>,
) -> impl Fn(&S) -> Route<S> + Send + Sync + 'static {
    let tools = tools.clone();
    move |state: &S| {
        if pending_tool_calls(state.messages()).is_empty() {
            Route::end()
        } else {
            Route::to(tools.clone())
        }
    }
}
