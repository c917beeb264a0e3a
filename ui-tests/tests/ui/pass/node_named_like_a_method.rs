//! A free node may share its name with methods and associated functions elsewhere in
//! the file, including another `#[node]`-free `impl` function of the same name.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct S {
    #[reducer(add)]
    n: u32,
}

struct Planner;

impl Planner {
    fn plan(&self, s: &S) -> u32 {
        s.n + 100
    }

    fn review(s: &S) -> u32 {
        s.n
    }
}

trait Reviewer {
    fn review(&self) -> u32 {
        0
    }
}

#[node]
fn plan(s: &S) -> SUpdate {
    S::update().n(s.n + 1)
}

impl Reviewer for Planner {}

mod nested {
    use stategraph::prelude::*;

    #[node]
    pub fn review(s: &super::S) -> super::SUpdate {
        super::S::update().n(s.n * 10)
    }
}

pub fn main() {
    let graph = StateGraph::<S>::new()
        .add_node(plan)
        .add_node(nested::review)
        .add_edge(START, plan)
        .add_edge(plan, nested::review)
        .add_edge(nested::review, END)
        .compile()
        .expect("compiles");
    let out = graph
        .invoke_blocking(S::update(), &RunConfig::new())
        .expect("runs");
    // plan adds 1 (n = 1), review adds 10 * 1.
    assert_eq!(out.values.n, 11);
    assert_eq!(Planner.plan(&out.values), 111);
    assert_eq!(Planner::review(&out.values), 11);
    assert_eq!(Reviewer::review(&Planner), 0);
}
