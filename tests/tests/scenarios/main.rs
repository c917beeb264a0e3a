//! The graph scenarios in one test binary: building, routing, sends, joins, interrupts,
//! failures and retries, the state derive and the library's shape. One binary per
//! concern instead of one per file keeps the suite fast on small machines.

mod architecture;
mod blocking;
mod build_errors;
mod closure_nodes;
mod conditional_routing;
mod deferred_nodes;
mod failures;
mod fan_out_fan_in;
mod goto;
mod hygiene;
mod interrupt_breakpoints;
mod interrupt_durability;
mod interrupt_dynamic;
mod interrupt_parallel;
mod interrupt_replay;
mod interrupt_resume_command;
mod joins;
mod langgraph_differences;
mod leases;
mod linear_chain;
mod node_custom_names;
mod node_error_question_mark;
mod node_panics;
mod plain_edges;
mod recursion_limit;
mod resume_validation;
mod retries;
mod run_context;
mod sends;
mod smoke;
mod state_derive;
mod state_derive_aliases;
mod state_props;
mod sync_nodes;
