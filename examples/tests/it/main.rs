//! The examples' tests in one test binary: the demo run as a user runs it (a real
//! process, killed and started again), its verdicts, and the agent's memory.

mod agent_memory;
mod demo_hardening;
mod demo_restart;
mod research_verdicts;
mod server_process;
