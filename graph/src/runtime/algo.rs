//! The pure parts of a superstep, with no I/O and no runtime (LangGraph's
//! `_algo`): task ids, which writes a step applies, where a node's edges, `goto`s
//! and routes lead, and when a join fires. Unit-tested below without running a
//! graph.

use std::sync::Arc;

use super::error::RunError;
use super::frontier::{Frontier, Task};
use crate::compile::{Branch, Graph};
use crate::node::{Goto, NodeOutput};
use crate::state::{GraphState, Write};

/// Task ids of a step: `{step}:{node}` for tasks scheduled by edges (one per node),
/// `{step}:{node}:send{k}` for the k-th `Send` task. Adding a task to a paused step
/// never changes the ids of the others. After `reruns` rejected attempts of the step
/// (see [`WRITE_REJECTED`](super::persist::WRITE_REJECTED)) every id ends in `:rerun{reruns}`, so the
/// rejected attempts' saved writes are not taken for this one's.
pub(crate) fn task_ids<'a>(
    step: i64,
    reruns: u32,
    tasks: impl Iterator<Item = (&'a str, bool)>,
) -> Vec<String> {
    use std::fmt::Write as _;
    let mut sends = 0;
    tasks
        .map(|(node, is_send)| {
            // Sized up front: `format!` would grow the string piece by piece.
            let mut id = String::with_capacity(node.len() + 48);
            if is_send {
                sends += 1;
                let _ = write!(id, "{step}:{node}:send{}", sends - 1);
            } else {
                let _ = write!(id, "{step}:{node}");
            }
            if reruns > 0 {
                let _ = write!(id, ":rerun{reruns}");
            }
            id
        })
        .collect()
}

pub(super) fn lookup<S: GraphState>(
    g: &Graph<S>,
    name: &Arc<str>,
    from: &str,
) -> Result<usize, RunError> {
    g.index
        .get(name)
        .copied()
        .ok_or_else(|| RunError::UnknownNode {
            name: name.to_string(),
            from: from.to_string(),
        })
}

pub(super) fn schedule<S: GraphState>(
    g: &Graph<S>,
    goto: Goto<S>,
    from: &str,
    next: &mut Frontier,
) -> Result<(), RunError> {
    match goto {
        Goto::End => {}
        Goto::Node(name) => {
            let i = lookup(g, &name, from)?;
            if !g.nodes[i].takes_state {
                return Err(RunError::PayloadNodeWithoutPayload {
                    node: name.to_string(),
                    from: from.to_string(),
                });
            }
            next.pull(i);
        }
        Goto::Send(send) => {
            let i = lookup(g, &send.node, from)?;
            next.push(i, send.payload);
        }
    }
    Ok(())
}

pub(super) fn follow_route<S: GraphState>(
    g: &Graph<S>,
    branch: &Branch<S>,
    view: &S,
    from: &str,
    next: &mut Frontier,
) -> Result<Vec<String>, RunError> {
    let route = (branch.router)(view);
    let mut chosen = Vec::with_capacity(route.gotos.len());
    for goto in route.gotos {
        let declared = match &goto {
            Goto::End => branch.declares_end,
            Goto::Node(name) => g
                .index
                .get(name)
                .is_some_and(|i| branch.declared.contains(i)),
            Goto::Send(send) => g
                .index
                .get(&send.node)
                .is_some_and(|i| branch.declared.contains(i)),
        };
        if !declared {
            return Err(RunError::UndeclaredRoute {
                source_node: from.to_string(),
                target: goto.endpoint().to_string(),
                declared: branch.declared_names.clone(),
            });
        }
        chosen.push(goto.endpoint().to_string());
        schedule(g, goto, from, next)?;
    }
    Ok(chosen)
}

/// The writes of the tasks that finished (a task waiting on an interrupt has no
/// output), in task order: what a paused step reports as its values.
#[inline]
pub(super) fn finished_writes<S: GraphState>(
    g: &Graph<S>,
    tasks: &[Task],
    outputs: &[Option<NodeOutput<S>>],
) -> Vec<Write<S>> {
    tasks
        .iter()
        .zip(outputs)
        .filter_map(|(t, out)| out.as_ref().map(|o| (t, o)))
        .flat_map(|(t, o)| {
            let name = g.nodes[t.node].name.clone();
            o.writes
                .iter()
                .cloned()
                .map(move |u| Write::new(name.clone(), u))
        })
        .collect()
}

/// Takes the step's updates out of `outputs` as writes in task order (the `goto`s
/// stay, for [`plan_next`]). With `keep_own`, each task's own updates are also
/// returned, per task, for routers that see only their own task's writes.
#[inline]
pub(super) fn take_writes<S: GraphState>(
    g: &Graph<S>,
    tasks: &[Task],
    outputs: &mut [NodeOutput<S>],
    keep_own: bool,
) -> (Vec<Write<S>>, Vec<Vec<S::Update>>) {
    let mut writes = Vec::with_capacity(tasks.len());
    let mut own = Vec::new();
    for (task, out) in tasks.iter().zip(outputs) {
        let updates = std::mem::take(&mut out.writes);
        let writer = &g.nodes[task.node].name;
        if keep_own {
            own.push(updates.clone());
        }
        writes.extend(updates.into_iter().map(|u| Write {
            writer: writer.clone(),
            update: u,
        }));
    }
    (writes, own)
}

/// Whether the step's routers each need a view of their own: with one task the
/// post-step state is that task's view.
#[inline]
pub(super) fn routers_need_own_views<S: GraphState>(g: &Graph<S>, tasks: &[Task]) -> bool {
    tasks.len() > 1 && tasks.iter().any(|t| !g.nodes[t.node].branches.is_empty())
}

/// What the routers of a committed step read.
pub(super) struct RouterViews<'a, S: GraphState> {
    /// The state after the step.
    pub(super) state: &'a S,
    /// The state before the step, when routers need views of their own: each then
    /// sees it plus its own task's writes (`own`).
    pub(super) pre_step: Option<&'a S>,
    pub(super) own: &'a [Vec<S::Update>],
    /// The step number, for errors.
    pub(super) step: usize,
}

/// Plans the next step from a committed one, task by task in task order: static
/// edges, join arrivals, the task's own `goto`s (so its `Send`s come first), then its
/// routers. `on_route(task, chosen)` gets what each task's routers chose.
///
/// # Errors
/// A route to an undeclared or unknown node, or a bad `goto`.
#[inline]
pub(super) fn plan_next<S: GraphState>(
    g: &Graph<S>,
    tasks: &[Task],
    outputs: Vec<NodeOutput<S>>,
    views: &RouterViews<'_, S>,
    next: &mut Frontier,
    barriers: &mut [Vec<bool>],
    mut on_route: impl FnMut(usize, Vec<String>),
) -> Result<(), RunError> {
    for (i, (task, NodeOutput { goto, .. })) in tasks.iter().zip(outputs).enumerate() {
        let node = &g.nodes[task.node];
        next.from(|| node.name.to_string());
        for &t in &node.edges {
            next.pull(t);
        }
        for &j in &node.joins {
            if let Some(pos) = g.joins[j].sources.iter().position(|&s| s == task.node) {
                barriers[j][pos] = true;
            }
        }
        next.from(|| format!("goto:{}", node.name));
        for target in goto {
            schedule(g, target, &node.name, next)?;
        }
        if node.branches.is_empty() {
            continue;
        }
        let view = match (views.pre_step, views.own.get(i)) {
            (Some(pre), Some(own)) => {
                let mut view = pre.clone();
                let own = own
                    .iter()
                    .cloned()
                    .map(|u| Write::new(node.name.clone(), u))
                    .collect();
                view.apply_writes(own)
                    .map_err(|source| RunError::InvalidUpdate {
                        step: Some(views.step),
                        source,
                    })?;
                Some(view)
            }
            _ => None,
        };
        next.from(|| format!("branch:{}", node.name));
        for b in &node.branches {
            let chosen =
                follow_route(g, b, view.as_ref().unwrap_or(views.state), &node.name, next)?;
            on_route(i, chosen);
        }
    }
    Ok(())
}

/// Fires every join whose sources have all arrived (its target is pulled) and
/// resets it.
#[inline]
pub(super) fn fire_joins<S: GraphState>(
    g: &Graph<S>,
    barriers: &mut [Vec<bool>],
    next: &mut Frontier,
) {
    for (j, seen) in barriers.iter_mut().enumerate() {
        if seen.iter().all(|&s| s) {
            next.from(|| {
                let names: Vec<&str> = g.joins[j]
                    .sources
                    .iter()
                    .map(|&s| &*g.nodes[s].name)
                    .collect();
                format!("join:{}", names.join("+"))
            });
            if let Some(t) = g.joins[j].target {
                next.pull(t);
            }
            seen.iter_mut().for_each(|s| *s = false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prelude::*;

    #[derive(GraphState, Clone, Debug, Default)]
    struct Doc {
        #[reducer(append)]
        log: Vec<String>,
        #[reducer(add)]
        count: u32,
    }

    #[node]
    fn a(_: &Doc) -> DocUpdate {
        Doc::update()
    }

    #[node]
    fn b(_: &Doc) -> DocUpdate {
        Doc::update()
    }

    #[node]
    fn c(_: &Doc) -> DocUpdate {
        Doc::update()
    }

    #[node]
    fn joined(_: &Doc) -> DocUpdate {
        Doc::update()
    }

    #[node]
    fn item(n: &u32) -> DocUpdate {
        Doc::update().count(*n)
    }

    fn route(d: &Doc) -> Route<Doc> {
        if d.count >= 10 { c.into() } else { END.into() }
    }

    /// a → b, a routes to c or END (by `count`), a + b join into `joined`.
    fn graph() -> CompiledGraph<Doc> {
        StateGraph::<Doc>::new()
            .add_node(a)
            .add_node(b)
            .add_node(c)
            .add_node(joined)
            .add_node(item)
            .add_edge(START, a)
            .add_edge(a, b)
            .add_conditional_edges(a, route, (c, END))
            .add_edge((a, b), joined)
            .compile()
            .expect("the test graph compiles")
    }

    fn task(g: &Graph<Doc>, name: &str) -> Task {
        Task {
            node: g.index[name],
            payload: None,
            triggers: Vec::new(),
        }
    }

    fn planned(g: &Graph<Doc>, next: &Frontier) -> Vec<String> {
        next.planned()
            .map(|(n, p)| {
                format!(
                    "{}{}",
                    g.nodes[n].name,
                    if p.is_some() { "+send" } else { "" }
                )
            })
            .collect()
    }

    fn views(state: &Doc) -> RouterViews<'_, Doc> {
        RouterViews {
            state,
            pre_step: None,
            own: &[],
            step: 0,
        }
    }

    fn output(writes: Vec<DocUpdate>, goto: Vec<Goto<Doc>>) -> NodeOutput<Doc> {
        NodeOutput {
            writes,
            goto,
            parent: None,
        }
    }

    #[test]
    fn task_ids_number_sends_and_mark_reruns() {
        let ids = task_ids(3, 0, [("a", false), ("x", true), ("x", true)].into_iter());
        assert_eq!(ids, ["3:a", "3:x:send0", "3:x:send1"]);
        let ids = task_ids(3, 2, [("a", false)].into_iter());
        assert_eq!(ids, ["3:a:rerun2"]);
    }

    #[test]
    fn take_writes_keeps_task_order_and_leaves_gotos() {
        let compiled = graph();
        let g = &*compiled.graph;
        let tasks = [task(g, "a"), task(g, "b")];
        let mut outputs = vec![
            output(vec![Doc::update().count(1)], vec![Goto::End]),
            output(
                vec![Doc::update().count(2), Doc::update().count(3)],
                Vec::new(),
            ),
        ];
        let (writes, own) = take_writes(g, &tasks, &mut outputs, true);
        let writers: Vec<&str> = writes.iter().map(|w| &*w.writer).collect();
        assert_eq!(writers, ["a", "b", "b"]);
        assert_eq!(own.iter().map(Vec::len).collect::<Vec<_>>(), [1, 2]);
        assert!(outputs.iter().all(|o| o.writes.is_empty()));
        assert_eq!(outputs[0].goto.len(), 1);
        let (_, own) = take_writes(g, &tasks, &mut outputs, false);
        assert!(own.is_empty(), "own writes are kept only when asked for");
    }

    #[test]
    fn finished_writes_skip_waiting_tasks() {
        let compiled = graph();
        let g = &*compiled.graph;
        let tasks = [task(g, "a"), task(g, "b")];
        let outputs = vec![None, Some(output(vec![Doc::update().count(5)], Vec::new()))];
        let writes = finished_writes(g, &tasks, &outputs);
        assert_eq!(writes.len(), 1);
        assert_eq!(&*writes[0].writer, "b");
    }

    #[test]
    fn plan_next_follows_edges_routes_and_gotos_in_order() {
        let compiled = graph();
        let g = &*compiled.graph;
        let tasks = [task(g, "a")];
        let state = Doc {
            count: 10,
            ..Doc::default()
        };
        let send = Goto::Send(crate::node::Send::new(item, 7u32));
        let outputs = vec![output(Vec::new(), vec![send])];
        let mut next = Frontier::new(g.nodes.len());
        let mut barriers = vec![vec![false; 2]];
        let mut routed = Vec::new();
        plan_next(
            g,
            &tasks,
            outputs,
            &views(&state),
            &mut next,
            &mut barriers,
            |i, chosen| {
                routed.push((i, chosen));
            },
        )
        .expect("plans");
        // Pulls (edge `b`, route `c`) by name, then the Send.
        assert_eq!(planned(g, &next), ["b", "c", "item+send"]);
        assert_eq!(routed, [(0, vec!["c".to_string()])]);
        assert_eq!(barriers, [vec![true, false]], "a arrived at the join");
    }

    #[test]
    fn a_router_with_its_own_view_sees_only_its_task_writes() {
        let compiled = graph();
        let g = &*compiled.graph;
        let tasks = [task(g, "a"), task(g, "b")];
        assert!(routers_need_own_views(g, &tasks));
        assert!(!routers_need_own_views(g, &tasks[..1]));
        // After the step the state has count 10 (b wrote 9), but a wrote only 1.
        let pre = Doc::default();
        let after = Doc {
            count: 10,
            ..Doc::default()
        };
        let own = vec![vec![Doc::update().count(1)], vec![Doc::update().count(9)]];
        let views = RouterViews {
            state: &after,
            pre_step: Some(&pre),
            own: &own,
            step: 0,
        };
        let outputs = vec![
            output(Vec::new(), Vec::new()),
            output(Vec::new(), Vec::new()),
        ];
        let mut next = Frontier::new(g.nodes.len());
        let mut barriers = vec![vec![false; 2]];
        let mut routed = Vec::new();
        plan_next(
            g,
            &tasks,
            outputs,
            &views,
            &mut next,
            &mut barriers,
            |i, chosen| {
                routed.push((i, chosen));
            },
        )
        .expect("plans");
        assert_eq!(routed, [(0, vec!["END".to_string()])]);
        assert_eq!(planned(g, &next), ["b"]);
    }

    #[test]
    fn an_undeclared_route_is_an_error() {
        let compiled = StateGraph::<Doc>::new()
            .add_node(a)
            .add_node(b)
            .add_node(c)
            .add_edge(START, a)
            .add_conditional_edges(a, route, (b, END))
            .compile()
            .expect("compiles");
        let g = &*compiled.graph;
        let state = Doc {
            count: 10,
            ..Doc::default()
        };
        let mut next = Frontier::new(g.nodes.len());
        let err = plan_next(
            g,
            &[task(g, "a")],
            vec![output(Vec::new(), Vec::new())],
            &views(&state),
            &mut next,
            &mut [],
            |_, _| {},
        )
        .expect_err("c is not declared");
        assert!(matches!(err, RunError::UndeclaredRoute { ref target, .. } if target == "c"));
    }

    #[test]
    fn a_join_fires_once_all_sources_arrived_and_resets() {
        let compiled = graph();
        let g = &*compiled.graph;
        let mut next = Frontier::new(g.nodes.len());
        let mut barriers = vec![vec![true, false]];
        fire_joins(g, &mut barriers, &mut next);
        assert!(next.is_empty());
        assert_eq!(
            barriers,
            [vec![true, false]],
            "a waiting join keeps its arrivals"
        );
        barriers[0][1] = true;
        fire_joins(g, &mut barriers, &mut next);
        assert_eq!(planned(g, &next), ["joined"]);
        assert_eq!(barriers, [vec![false, false]]);
    }
}
