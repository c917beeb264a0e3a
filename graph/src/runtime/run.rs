//! The entry points of a run: `invoke`, `invoke_blocking` and `stream`.

use tracing::Instrument;

use super::config::{RunConfig, RunInput, RunOutput};
use super::error::RunError;
use super::run_loop::Loop;
use crate::compile::CompiledGraph;
use crate::state::GraphState;
use crate::stream::{Emitter, RunStream, StreamMode};

impl<S: GraphState> CompiledGraph<S> {
    /// Runs the graph.
    ///
    /// `input` is either the state's update type — new input, applied through the
    /// reducers (to a default state, or with a checkpointer to the thread's latest
    /// state) — or `None`, which continues the thread from its saved checkpoint. The
    /// run ends when no task is left.
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Greeting {
    ///     name: String,
    ///     text: String,
    /// }
    ///
    /// #[node]
    /// async fn greet(g: &Greeting) -> GreetingUpdate {
    ///     Greeting::update().text(format!("hello, {}", g.name))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let graph = StateGraph::<Greeting>::new().add_node(greet).add_edge(START, greet).compile()?;
    /// let out = graph.invoke(Greeting::update().name("ada"), &RunConfig::new()).await?;
    /// assert_eq!(out.values.text, "hello, ada");
    /// assert_eq!(out.steps, 1);
    /// assert!(out.interrupts.is_empty()); // it finished rather than paused
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The first failing node's error ([`RunError::Node`]), rejected writes, a route
    /// outside its declared targets, the recursion limit, or a checkpoint failure.
    pub async fn invoke(
        &self,
        input: impl Into<RunInput<S>>,
        config: &RunConfig,
    ) -> Result<RunOutput<S>, RunError> {
        let span = tracing::info_span!("stategraph.run", thread_id = config.thread_id.as_deref());
        let input = input.into();
        async move {
            let mut lp = Loop::start(&self.graph, config, None).await?;
            lp.run(input).await
        }
        .instrument(span)
        .await
    }

    /// [`CompiledGraph::invoke`] for callers without an async runtime: runs the graph on
    /// a current-thread tokio runtime.
    ///
    /// # Errors
    /// As `invoke`, plus [`RunError::BlockingInsideRuntime`] when called from inside an
    /// async runtime (use `invoke(..).await` there).
    pub fn invoke_blocking(
        &self,
        input: impl Into<RunInput<S>>,
        config: &RunConfig,
    ) -> Result<RunOutput<S>, RunError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(RunError::BlockingInsideRuntime);
        }
        // Every driver compiled in: savers that talk to a server need I/O.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(RunError::Runtime)?;
        rt.block_on(self.invoke(input, config))
    }
}

/// Events a stream buffers before the run waits for the consumer.
const STREAM_BUFFER: usize = 64;

impl<S: GraphState> CompiledGraph<S> {
    /// Runs the graph like [`CompiledGraph::invoke`] — the same execution — and
    /// streams its events for `modes` (see [`crate::stream`] for their order). The run
    /// proceeds on a tokio task; it waits whenever the consumer is 64 events behind.
    /// Dropping the stream cancels the run: in-flight nodes are dropped, and with a
    /// checkpointer the thread stays at its last saved checkpoint, ready to continue.
    ///
    /// Must be called inside a tokio runtime; otherwise the stream yields
    /// [`RunError::NoRuntime`].
    ///
    /// ```
    /// use futures::StreamExt;
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Download {
    ///     #[reducer(add)]
    ///     bytes: u64,
    /// }
    ///
    /// #[node]
    /// async fn fetch(_: &Download, ctx: &NodeContext) -> Result<DownloadUpdate, NodeError> {
    ///     for percent in [50, 100] {
    ///         ctx.emit(percent).await?; // delivered while the node runs
    ///     }
    ///     Ok(Download::update().bytes(1024))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let graph = StateGraph::<Download>::new().add_node(fetch).add_edge(START, fetch).compile()?;
    /// let mut events = graph.stream(Download::update(), &RunConfig::new(), StreamMode::CUSTOM | StreamMode::VALUES);
    /// let mut seen = Vec::new();
    /// while let Some(event) = events.next().await {
    ///     match event? {
    ///         StreamEvent::Custom { value, .. } => seen.push(format!("{value}%")),
    ///         StreamEvent::Values { step, values } => seen.push(format!("step {step}: {} bytes", values.bytes)),
    ///         _ => {}
    ///     }
    /// }
    /// assert_eq!(seen, ["step -1: 0 bytes", "50%", "100%", "step 0: 1024 bytes"]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn stream(
        &self,
        input: impl Into<RunInput<S>>,
        config: &RunConfig,
        modes: StreamMode,
    ) -> RunStream<S> {
        let (tx, rx) = tokio::sync::mpsc::channel(STREAM_BUFFER);
        if tokio::runtime::Handle::try_current().is_err() {
            let _ = tx.try_send(Err(RunError::NoRuntime));
            return RunStream { rx, run: None };
        }
        let graph = self.graph.clone();
        let config = config.clone();
        let input = input.into();
        let emitter = Emitter {
            tx: tx.clone(),
            modes,
        };
        let span = tracing::info_span!("stategraph.run", thread_id = config.thread_id.as_deref());
        let run = tokio::spawn(
            async move {
                let result = async {
                    let mut lp = Loop::start(&graph, &config, Some(emitter)).await?;
                    lp.run(input).await
                }
                .await;
                if let Err(e) = result {
                    let _ = tx.send(Err(e)).await;
                }
            }
            .instrument(span),
        );
        RunStream { rx, run: Some(run) }
    }
}
