//! The next superstep's tasks: pull tasks (edges, routers, `goto`) deduplicated and
//! ordered by node name, then `Send` tasks in emission order.
//!
//! Tasks of deferred nodes ([`StateGraph::defer`](crate::StateGraph::defer)) stay
//! planned while a task of another node is due: [`Frontier::take`] leaves them, so a
//! trigger arriving meanwhile finds the pull already planned (one run), and a
//! checkpoint's `next` keeps them.

use std::any::Any;
use std::sync::Arc;

pub(crate) type Payload = Arc<dyn Any + Send + Sync>;

pub(crate) struct Task {
    pub(crate) node: usize,
    pub(crate) payload: Option<Payload>,
    /// What scheduled it (recorded only for streams that report task starts).
    pub(crate) triggers: Vec<Arc<str>>,
}

pub(crate) struct Frontier {
    scheduled: Vec<bool>,
    pulls: Vec<usize>,
    pushes: Vec<(usize, Payload, Vec<Arc<str>>)>,
    /// Whether triggers are recorded, and what is scheduling right now.
    tracking: bool,
    source: Option<Arc<str>>,
    triggers: Vec<Vec<Arc<str>>>,
    /// Per node, whether it is deferred; `None` when no node is.
    deferred: Option<Arc<[bool]>>,
}

/// Whether the tasks of deferred nodes among the planned ones (by node) wait: some
/// are of a deferred node and some are not. Returns the deferred flags then.
pub(crate) fn holding(
    deferred: Option<&[bool]>,
    planned: impl IntoIterator<Item = usize>,
) -> Option<&[bool]> {
    let flags = deferred?;
    let (mut waiting, mut due) = (false, false);
    for node in planned {
        if flags.get(node).copied().unwrap_or(false) {
            waiting = true;
        } else {
            due = true;
        }
        if waiting && due {
            return Some(flags);
        }
    }
    None
}

impl Frontier {
    pub(crate) fn new(nodes: usize) -> Self {
        Self {
            scheduled: vec![false; nodes],
            pulls: Vec::new(),
            pushes: Vec::new(),
            tracking: false,
            source: None,
            triggers: Vec::new(),
            deferred: None,
        }
    }

    /// Marks the deferred nodes (per node; `None` when no node is).
    pub(crate) fn defer(&mut self, deferred: Option<Arc<[bool]>>) {
        self.deferred = deferred;
    }

    /// The deferred flags, when planned tasks of deferred nodes wait this step.
    fn held(&self) -> Option<&[bool]> {
        let pushes = self.pushes.iter().map(|(n, _, _)| *n);
        holding(
            self.deferred.as_deref(),
            self.pulls.iter().copied().chain(pushes),
        )
    }

    /// The tasks the next step runs, in apply order, without taking them: the
    /// planned ones but for those of deferred nodes that wait.
    pub(crate) fn due(&self) -> impl Iterator<Item = (usize, Option<Payload>)> + '_ {
        let held = self.held();
        self.planned()
            .filter(move |(n, _)| held.is_none_or(|flags| !flags[*n]))
    }

    /// The deferred nodes with planned tasks that wait this step, in apply order
    /// (one entry per task).
    pub(crate) fn waiting(&self) -> impl Iterator<Item = usize> + '_ {
        let held = self.held();
        self.planned()
            .map(|(n, _)| n)
            .filter(move |n| held.is_some_and(|flags| flags[*n]))
    }

    /// Starts recording what schedules each task.
    pub(crate) fn track(&mut self) {
        self.tracking = true;
        self.triggers = vec![Vec::new(); self.scheduled.len()];
    }

    /// Names what the following `pull`/`push` calls come from.
    pub(crate) fn from(&mut self, source: impl FnOnce() -> String) {
        if self.tracking {
            self.source = Some(Arc::from(source()));
        }
    }

    fn trigger(&self) -> Option<Arc<str>> {
        self.source.clone().filter(|_| self.tracking)
    }

    pub(crate) fn pull(&mut self, node: usize) {
        if let Some(t) = self.trigger()
            && let Some(list) = self.triggers.get_mut(node)
            && !list.contains(&t)
        {
            list.push(t);
        }
        if !self.scheduled[node] {
            self.scheduled[node] = true;
            self.pulls.push(node);
        }
    }

    pub(crate) fn push(&mut self, node: usize, payload: Payload) {
        let triggers = self.trigger().into_iter().collect();
        self.pushes.push((node, payload, triggers));
    }

    /// The planned tasks in apply order, without taking them.
    pub(crate) fn planned(&self) -> impl Iterator<Item = (usize, Option<Payload>)> + '_ {
        // Pulls are usually scheduled in order already; only then is no copy needed.
        let pulls: std::borrow::Cow<'_, [usize]> = if self.pulls.is_sorted() {
            std::borrow::Cow::Borrowed(&self.pulls)
        } else {
            let mut pulls = self.pulls.clone();
            pulls.sort_unstable();
            std::borrow::Cow::Owned(pulls)
        };
        (0..pulls.len())
            .map(move |i| (pulls[i], None))
            .chain(self.pushes.iter().map(|(n, p, _)| (*n, Some(p.clone()))))
    }

    /// Puts taken tasks back (a run stopping before it ran them).
    pub(crate) fn put_back(&mut self, tasks: Vec<Task>) {
        for task in tasks {
            match task.payload {
                Some(p) => self.pushes.push((task.node, p, task.triggers)),
                None => {
                    if let Some(list) = self.triggers.get_mut(task.node) {
                        *list = task.triggers;
                    }
                    if !self.scheduled[task.node] {
                        self.scheduled[task.node] = true;
                        self.pulls.push(task.node);
                    }
                }
            }
        }
    }

    /// How many tasks are planned.
    pub(crate) fn len(&self) -> usize {
        self.pulls.len() + self.pushes.len()
    }

    /// Whether no task is planned.
    pub(crate) fn is_empty(&self) -> bool {
        self.pulls.is_empty() && self.pushes.is_empty()
    }

    /// Drops every planned task.
    pub(crate) fn clear(&mut self) {
        for node in self.pulls.drain(..) {
            self.scheduled[node] = false;
            if let Some(list) = self.triggers.get_mut(node) {
                list.clear();
            }
        }
        self.pushes.clear();
    }

    /// The tasks the next step runs, in apply order; leaves the frontier empty but
    /// for the tasks of deferred nodes that wait (see [`Frontier::due`]).
    pub(crate) fn take(&mut self) -> Vec<Task> {
        if self.held().is_some()
            && let Some(flags) = self.deferred.clone()
        {
            return self.take_due(&flags);
        }
        // Node indices follow node names, so sorting them is the name order.
        self.pulls.sort_unstable();
        let mut tasks = Vec::with_capacity(self.pulls.len() + self.pushes.len());
        for node in self.pulls.drain(..) {
            self.scheduled[node] = false;
            let triggers = self
                .triggers
                .get_mut(node)
                .map(std::mem::take)
                .unwrap_or_default();
            tasks.push(Task {
                node,
                payload: None,
                triggers,
            });
        }
        tasks.extend(self.pushes.drain(..).map(|(node, payload, triggers)| Task {
            node,
            payload: Some(payload),
            triggers,
        }));
        tasks
    }

    /// [`Frontier::take`] when tasks of deferred nodes wait: they stay planned (with
    /// their triggers), in their order.
    fn take_due(&mut self, deferred: &[bool]) -> Vec<Task> {
        self.pulls.sort_unstable();
        let mut tasks = Vec::with_capacity(self.len());
        let mut kept = Vec::new();
        for node in std::mem::take(&mut self.pulls) {
            if deferred[node] {
                kept.push(node);
                continue;
            }
            self.scheduled[node] = false;
            let triggers = self
                .triggers
                .get_mut(node)
                .map(std::mem::take)
                .unwrap_or_default();
            tasks.push(Task {
                node,
                payload: None,
                triggers,
            });
        }
        self.pulls = kept;
        let mut kept = Vec::new();
        for (node, payload, triggers) in std::mem::take(&mut self.pushes) {
            if deferred[node] {
                kept.push((node, payload, triggers));
            } else {
                tasks.push(Task {
                    node,
                    payload: Some(payload),
                    triggers,
                });
            }
        }
        self.pushes = kept;
        tasks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(n: u32) -> Payload {
        Arc::new(n)
    }

    fn nodes(tasks: &[Task]) -> Vec<(usize, bool)> {
        tasks
            .iter()
            .map(|t| (t.node, t.payload.is_some()))
            .collect()
    }

    /// Nodes 0..4; node 2 is deferred.
    fn frontier() -> Frontier {
        let mut f = Frontier::new(4);
        f.defer(Some(Arc::from([false, false, true, false])));
        f
    }

    #[test]
    fn holding_needs_both_a_deferred_and_another_task() {
        let flags = [false, true];
        assert!(holding(None, [0, 1]).is_none());
        assert!(holding(Some(&flags), [1, 1]).is_none());
        assert!(holding(Some(&flags), [0]).is_none());
        assert!(holding(Some(&flags), [1, 0]).is_some());
    }

    #[test]
    fn a_deferred_pull_waits_and_later_triggers_join_it() {
        let mut f = frontier();
        f.pull(2);
        f.pull(3);
        f.push(2, payload(7));
        assert_eq!(f.due().map(|(n, _)| n).collect::<Vec<_>>(), [3]);
        assert_eq!(f.waiting().collect::<Vec<_>>(), [2, 2]);
        assert_eq!(nodes(&f.take()), [(3, false)]);
        // Still planned (a checkpoint keeps them); a new trigger adds no second pull.
        assert_eq!(f.len(), 2);
        f.pull(2);
        f.pull(1);
        f.push(2, payload(8));
        assert_eq!(nodes(&f.take()), [(1, false)]);
        assert_eq!(nodes(&f.take()), [(2, false), (2, true), (2, true)]);
        assert!(f.is_empty());
        assert!(f.take().is_empty());
    }

    #[test]
    fn tasks_put_back_keep_the_waiting_ones() {
        let mut f = frontier();
        f.pull(2);
        f.pull(0);
        let tasks = f.take();
        f.put_back(tasks);
        assert_eq!(
            f.planned().map(|(n, _)| n).collect::<Vec<_>>(),
            [0, 2],
            "in apply order, the waiting task once"
        );
        assert_eq!(nodes(&f.take()), [(0, false)]);
    }

    #[test]
    fn without_deferred_nodes_everything_is_due() {
        let mut f = Frontier::new(3);
        f.pull(2);
        f.pull(0);
        f.push(1, payload(1));
        assert_eq!(f.waiting().count(), 0);
        assert_eq!(nodes(&f.take()), [(0, false), (2, false), (1, true)]);
        assert!(f.is_empty());
    }
}
