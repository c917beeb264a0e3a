//! The agent toolkit's tests in one test binary.

mod agent;
mod openai;
mod tool_macro;
