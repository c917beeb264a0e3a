//! The subgraph chain of the subgraph crash test: a parent chain whose steps are
//! subgraphs, each child fanning out over several `Send` tasks per round. Every task
//! appends `{stage}|{task id}` to the task log as it starts (see [`TASK_LOG_VAR`]) — the stage
//! names the parent node, which is also the first part of the child's checkpoint
//! namespace (`stage3:<digest>`), so a log line can be matched with the saved writes
//! of its namespace.
//!
//! [`TASK_LOG_VAR`]: crate::workloads::TASK_LOG_VAR

use std::sync::Arc;
use std::time::Duration;

use stategraph::checkpoint::CheckpointSaver;
use stategraph::prelude::*;

use crate::workloads::log_task;

/// Per child round, `step_plan` fans out [`CHILD_WIDTH`] `step_work` tasks by `Send`.
pub const CHILD_WIDTH: u64 = 3;

/// The parent's state: what the stages' children did.
#[derive(GraphState, Clone, Debug, Default, PartialEq)]
pub struct Pipeline {
    /// Rounds each child runs.
    pub rounds: u64,
    /// `s{stage}r{round}w{k}` per child work task, in apply order.
    #[reducer(append)]
    pub done: Vec<String>,
    /// Sum of the children's totals.
    #[reducer(add)]
    pub total: u64,
}

/// A child's state: two supersteps per round (`step_plan`, then the work tasks).
#[derive(GraphState, Clone, Debug, Default, PartialEq)]
pub struct Stage {
    /// Which parent stage runs this child.
    pub stage: u64,
    /// Rounds to run.
    pub rounds: u64,
    /// Rounds planned so far.
    #[reducer(add)]
    pub round: u64,
    /// `s{stage}r{round}w{k}` per work task, in apply order.
    #[reducer(append)]
    pub done: Vec<String>,
    /// Sum of the work tasks' contributions.
    #[reducer(add)]
    pub total: u64,
}

/// The parent node (and namespace prefix) of stage `i`.
pub fn stage_name(i: u64) -> String {
    format!("stage{i}")
}

#[node]
fn step_plan(s: &Stage, ctx: &NodeContext) -> StageUpdate {
    log_task(&format!("{}|{}:step_plan", stage_name(s.stage), ctx.step()));
    Stage::update().round(1)
}

/// A child work item.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct StageItem {
    stage: u64,
    round: u64,
    k: u64,
}

#[node]
async fn step_work(item: &StageItem, ctx: &NodeContext) -> StageUpdate {
    // Logged as it starts: a run cut by a kill shows in the log.
    log_task(&format!(
        "{}|{}:step_work:send{}",
        stage_name(item.stage),
        ctx.step(),
        item.k
    ));
    // Long enough that kills land inside children, with some tasks' writes saved.
    tokio::time::sleep(Duration::from_millis(1 + item.k * 2)).await;
    Stage::update()
        .done([format!("s{}r{}w{}", item.stage, item.round, item.k)])
        .total(item.stage * 100 + item.round * 10 + item.k)
}

/// The child: `step_plan` → `CHILD_WIDTH` × `step_work` → `step_plan` … for `rounds`.
fn child_graph() -> CompiledGraph<Stage> {
    StateGraph::<Stage>::new()
        .add_node(step_plan)
        .add_node(step_work)
        .add_edge(START, step_plan)
        .add_conditional_edges(
            step_plan,
            |s: &Stage| {
                if s.round > s.rounds {
                    return Route::end();
                }
                Route::sends(
                    (0..CHILD_WIDTH)
                        .map(|k| {
                            stategraph::Send::new(
                                step_work,
                                StageItem {
                                    stage: s.stage,
                                    round: s.round,
                                    k,
                                },
                            )
                        })
                        .collect::<Vec<_>>(),
                )
            },
            (step_work, END),
        )
        .add_edge(step_work, step_plan)
        .compile()
        .expect("the child graph compiles")
}

/// The parent: `stage0` → `stage1` → … → `stage{stages-1}`, each a subgraph running
/// the child with the parent's `rounds`. Each time a stage's task starts (also when it
/// continues its child) it logs `|{step}:stage{i}`, the parent task's key.
pub fn pipeline_graph(saver: Arc<dyn CheckpointSaver>, stages: u64) -> CompiledGraph<Pipeline> {
    let child = child_graph();
    let mut g = StateGraph::<Pipeline>::new();
    let mut prev = None;
    for i in 0..stages {
        let handle = g.add_subgraph(Subgraph::new(
            stage_name(i),
            child.clone(),
            move |p: &Pipeline| {
                // The stage runs at parent step `i`: a chain, one stage per step.
                log_task(&format!("|{i}:{}", stage_name(i)));
                Stage::update().stage(i).rounds(p.rounds)
            },
            |c: &Stage| Pipeline::update().done(c.done.clone()).total(c.total),
        ));
        match &prev {
            None => g.add_edge(START, &handle),
            Some(p) => g.add_edge(p, &handle),
        };
        prev = Some(handle);
    }
    if let Some(p) = &prev {
        g.add_edge(p, END);
    }
    g.compile_with(CompileOptions::new().shared_checkpointer(saver))
        .expect("the pipeline graph compiles")
}

/// The log key of a saved write: `{namespace's node}|{task id}` (`|{task id}` at the
/// root), as the tasks of [`pipeline_graph`] log themselves.
pub fn write_key(ns: &str, task_id: &str) -> String {
    let stage = ns.split(':').next().unwrap_or_default();
    format!("{stage}|{task_id}")
}
