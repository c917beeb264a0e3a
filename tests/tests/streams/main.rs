//! Streaming, subgraphs, state edits and what a server reads of a graph (its shape,
//! version, JSON and run config), in one test binary.

mod graph_shape_recorded;
mod graph_version;
mod mermaid;
mod serde_events;
mod server_json;
mod server_run_config;
mod server_shape;
mod stream_backpressure;
mod stream_drop;
mod stream_golden;
mod stream_live;
mod stream_modes;
mod stream_smoke;
mod subgraph_handoffs;
mod subgraph_stream;
mod subgraphs;
mod update_state;
