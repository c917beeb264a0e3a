use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Team {
    request: String,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Specialist {
    notes: String,
}

#[node]
fn handoff(_: &Team) -> TeamUpdate {
    Team::update()
}

#[node]
fn triage(_: &Specialist) -> Command<Specialist> {
    Command::parent(Command::goto(handoff).update(Specialist::update().notes("to billing")))
}

fn main() {}
