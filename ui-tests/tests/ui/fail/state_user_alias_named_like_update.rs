//! A user type alias named like the generated `<State>Update`.

#[derive(stategraph::GraphState, Clone, Debug, Default)]
pub(crate) struct Research {
    topic: String,
}

pub(crate) type ResearchUpdate = Option<String>;

fn main() {}
