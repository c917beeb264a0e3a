//! A type named like a state's generated `<State>Update` is fine in another module or
//! behind a `cfg` that leaves it out (and a state declared in a function body works
//! like one in a module).

use stategraph::prelude::*;

mod drafts {
    /// Not the state's update: it lives in another module.
    #[derive(Debug, PartialEq)]
    pub struct ReportUpdate(pub &'static str);
}

/// Compiled out: it does not clash with the generated `ReportUpdate`.
#[cfg(any())]
struct ReportUpdate;

#[derive(GraphState, Clone, Debug, Default)]
struct Report {
    #[reducer(add)]
    revisions: u32,
}

#[node]
fn revise(report: &Report) -> ReportUpdate {
    Report::update().revisions(report.revisions + 1)
}

pub fn main() {
    #[derive(GraphState, Clone, Debug, Default)]
    struct Job {
        steps: u32,
    }

    #[node]
    fn step(job: &Job) -> JobUpdate {
        Job::update().steps(job.steps + 1)
    }

    let report = StateGraph::<Report>::new()
        .add_node(revise)
        .add_edge(START, revise)
        .add_edge(revise, END)
        .compile()
        .expect("compiles")
        .invoke_blocking(Report::update(), &RunConfig::new())
        .expect("runs");
    assert_eq!(report.values.revisions, 1);
    assert_eq!(drafts::ReportUpdate("x"), drafts::ReportUpdate("x"));

    let job = StateGraph::<Job>::new()
        .add_node(step)
        .add_edge(START, step)
        .add_edge(step, END)
        .compile()
        .expect("compiles")
        .invoke_blocking(Job::update().steps(4), &RunConfig::new())
        .expect("runs");
    assert_eq!(job.values.steps, 5);
}
