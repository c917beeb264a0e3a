//! `Command::parent`: a node inside a subgraph routes its *parent* to another node with
//! an update of the parent's type (the supervisor / swarm hand-off).

use std::error::Error as _;

use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Team {
    request: String,
    #[reducer(append)]
    log: Vec<String>,
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Specialist {
    request: String,
    #[reducer(append)]
    notes: Vec<String>,
}

#[node]
fn billing_work(s: &Specialist) -> SpecialistUpdate {
    Specialist::update().notes(vec![format!("billing looked at {}", s.request)])
}

/// Refunds are not billing's job: hand the parent over to the refunds specialist.
#[node]
fn billing_triage(s: &Specialist) -> Command<Specialist> {
    if s.request.contains("refund") {
        return Command::parent(
            Command::goto(refunds_desk()).update(Team::update().log(["billing → refunds"])),
        );
    }
    Command::goto(billing_work)
}

#[node]
fn refunds_work(s: &Specialist) -> SpecialistUpdate {
    Specialist::update().notes(vec![format!("refunded {}", s.request)])
}

/// The parent's refunds node, named from inside a child built before the parent.
fn refunds_desk() -> stategraph::SubgraphHandle<Team, Specialist> {
    stategraph::SubgraphHandle::named("refunds")
}

fn specialist(entry: impl Fn(&mut StateGraph<Specialist>)) -> CompiledGraph<Specialist> {
    let mut g = StateGraph::<Specialist>::new();
    entry(&mut g);
    g.compile().unwrap()
}

fn team() -> CompiledGraph<Team> {
    let billing = specialist(|g| {
        g.add_node(billing_triage)
            .add_node(billing_work)
            .add_edge(START, billing_triage);
    });
    let refunds = specialist(|g| {
        g.add_node(refunds_work).add_edge(START, refunds_work);
    });
    let mut team = StateGraph::<Team>::new();
    let to_child = |t: &Team| Specialist::update().request(t.request.clone());
    let billing = team.add_subgraph(Subgraph::new(
        "billing",
        billing,
        to_child,
        |s: &Specialist| Team::update().log(s.notes.clone()),
    ));
    team.add_subgraph(Subgraph::new(
        "refunds",
        refunds,
        to_child,
        |s: &Specialist| Team::update().log(s.notes.clone()),
    ));
    team.add_edge(START, &billing);
    team.compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

#[tokio::test]
async fn a_child_hands_the_parent_to_another_specialist() {
    let g = team();
    let config = RunConfig::new().thread("refund");
    let out = g
        .invoke(Team::update().request("refund order 7"), &config)
        .await
        .unwrap();
    // Billing's own writes are not applied: only the hand-off's update, then the
    // refunds specialist's result.
    assert_eq!(
        out.values.log,
        ["billing → refunds", "refunded refund order 7"]
    );
    assert_eq!(out.steps, 2);
}

#[tokio::test]
async fn without_a_hand_off_the_child_finishes_normally() {
    let g = team();
    let out = g
        .invoke(
            Team::update().request("invoice 3"),
            &RunConfig::new().thread("invoice"),
        )
        .await
        .unwrap();
    assert_eq!(out.values.log, ["billing looked at invoice 3"]);
}

#[node]
fn rogue(_: &Team) -> Command<Team> {
    Command::parent(Command::<Team>::goto(END))
}

#[tokio::test]
async fn a_hand_off_from_the_root_graph_is_a_clear_error() {
    let g = StateGraph::<Team>::new()
        .add_node(rogue)
        .add_edge(START, rogue)
        .compile()
        .unwrap();
    let err = g
        .invoke(Team::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::ParentCommand { node, .. } if node == "rogue"),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("does not run inside a subgraph"),
        "{err}"
    );
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Other {
    x: u32,
}

#[node]
fn wrong_parent(_: &Specialist) -> Command<Specialist> {
    Command::parent(Command::<Other>::goto(END))
}

#[tokio::test]
async fn a_hand_off_of_another_graph_s_command_names_both_types() {
    let child = specialist(|g| {
        g.add_node(wrong_parent).add_edge(START, wrong_parent);
    });
    let mut team = StateGraph::<Team>::new();
    let sub = team.add_subgraph(Subgraph::new(
        "confused",
        child,
        |_: &Team| Specialist::update(),
        |_: &Specialist| Team::update(),
    ));
    team.add_edge(START, &sub);
    let g = team.compile().unwrap();
    let err = g
        .invoke(Team::update(), &RunConfig::new())
        .await
        .unwrap_err();
    let text = err.source().map(ToString::to_string).unwrap_or_default();
    assert!(
        text.contains("Command<streams::subgraph_handoffs::Other>"),
        "{text}"
    );
    assert!(text.contains("streams::subgraph_handoffs::Team"), "{text}");
}
