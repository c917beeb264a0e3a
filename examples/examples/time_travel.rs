//! Time travel: list a thread's history, go back to an earlier checkpoint, change what
//! a node decided there, and run on from it. The new branch diverges; the old one
//! stays in the history.
//!
//! Run it with `cargo run -p stategraph-examples --example time_travel`.

use stategraph::StateSnapshot;
use stategraph::checkpoint::ListOptions;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Launch {
    product: String,
    #[reducer(append)]
    ideas: Vec<String>,
    tagline: String,
    announcement: String,
}

#[node]
fn brainstorm(launch: &Launch) -> LaunchUpdate {
    Launch::update().ideas([
        format!("{}: state you can trust", launch.product),
        format!("{}: workflows that survive restarts", launch.product),
        format!("{}: typed graphs, checked at compile time", launch.product),
    ])
}

/// Picks the first idea; the fork below overrides this decision.
#[node]
fn choose(launch: &Launch) -> LaunchUpdate {
    Launch::update().tagline(launch.ideas.first().cloned().unwrap_or_default())
}

#[node]
fn announce(launch: &Launch) -> LaunchUpdate {
    Launch::update().announcement(format!("Announcing {}", launch.tagline))
}

fn short(id: Option<&str>) -> &str {
    id.map_or("-", |id| &id[id.len().saturating_sub(6)..])
}

fn print_history(history: &[StateSnapshot<Launch>]) {
    println!(
        "  {:<8} {:<8} {:>4}  {:<9} next        tagline",
        "id", "parent", "step", "source"
    );
    for s in history {
        println!(
            "  {:<8} {:<8} {:>4}  {:<9} {:<11} {}",
            short(s.config.checkpoint_id.as_deref()),
            short(
                s.parent_config
                    .as_ref()
                    .and_then(|p| p.checkpoint_id.as_deref())
            ),
            s.metadata.step,
            format!("{:?}", s.metadata.source),
            s.next.join(","),
            if s.values.tagline.is_empty() {
                "-"
            } else {
                &s.values.tagline
            },
        );
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let graph = StateGraph::<Launch>::new()
        .add_node(brainstorm)
        .add_node(choose)
        .add_node(announce)
        .add_edge(START, brainstorm)
        .add_edge(brainstorm, choose)
        .add_edge(choose, announce)
        .add_edge(announce, END)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))?;
    let thread = RunConfig::new().thread("launch");

    let first = graph
        .invoke(Launch::update().product("stategraph"), &thread)
        .await?;
    println!("original: {}", first.values.announcement);

    let history = graph
        .get_state_history(&thread, &ListOptions::new())
        .await?;
    println!("\nhistory, newest first:");
    print_history(&history);

    // Go back to the checkpoint where `choose` was about to run, and record a
    // different decision as if `choose` had made it. That writes a new checkpoint
    // whose parent is the old one: a branch.
    let before_choice = history
        .iter()
        .find(|s| s.next == ["choose"])
        .ok_or("no checkpoint before `choose`")?;
    let at = before_choice
        .config
        .checkpoint_id
        .clone()
        .ok_or("a listed checkpoint has an id")?;
    let other_idea = before_choice
        .values
        .ideas
        .last()
        .cloned()
        .ok_or("brainstorm wrote ideas")?;
    println!(
        "\nforking from checkpoint {} with tagline {other_idea:?}",
        short(Some(&at))
    );
    let branch = graph
        .update_state_as(
            &thread.clone().checkpoint(at),
            Launch::update().tagline(other_idea),
            choose,
        )
        .await?;

    // Continue the branch: only `announce` runs.
    let branch_id = branch
        .checkpoint_id
        .ok_or("update_state names its checkpoint")?;
    let forked = graph
        .invoke(None, &thread.clone().checkpoint(branch_id))
        .await?;
    println!(
        "fork: {} ({} superstep)",
        forked.values.announcement, forked.steps
    );

    let latest = graph.get_state(&thread).await?.ok_or("the thread exists")?;
    println!("latest state of the thread: {}", latest.values.announcement);

    let history = graph
        .get_state_history(&thread, &ListOptions::new())
        .await?;
    println!("\nhistory with both branches, newest first:");
    print_history(&history);
    let announcements: Vec<&str> = history
        .iter()
        .filter(|s| s.next.is_empty())
        .map(|s| s.values.announcement.as_str())
        .collect();
    println!("\nfinished branches: {}", announcements.join(" | "));
    Ok(())
}
