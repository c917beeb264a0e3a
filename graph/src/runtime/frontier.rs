//! The next superstep's tasks: pull tasks (edges, routers, `goto`) deduplicated and
//! ordered by node name, then `Send` tasks in emission order.

use std::any::Any;
use std::sync::Arc;

pub(crate) type Payload = Arc<dyn Any + Send + Sync>;

pub(crate) struct Task {
    pub(crate) node: usize,
    pub(crate) payload: Option<Payload>,
}

pub(crate) struct Frontier {
    scheduled: Vec<bool>,
    pulls: Vec<usize>,
    pushes: Vec<(usize, Payload)>,
}

impl Frontier {
    pub(crate) fn new(nodes: usize) -> Self {
        Self {
            scheduled: vec![false; nodes],
            pulls: Vec::new(),
            pushes: Vec::new(),
        }
    }

    pub(crate) fn pull(&mut self, node: usize) {
        if !self.scheduled[node] {
            self.scheduled[node] = true;
            self.pulls.push(node);
        }
    }

    pub(crate) fn push(&mut self, node: usize, payload: Payload) {
        self.pushes.push((node, payload));
    }

    /// The planned tasks in apply order, without taking them.
    pub(crate) fn planned(&self) -> Vec<(usize, Option<Payload>)> {
        let mut pulls = self.pulls.clone();
        pulls.sort_unstable();
        pulls
            .into_iter()
            .map(|n| (n, None))
            .chain(self.pushes.iter().map(|(n, p)| (*n, Some(p.clone()))))
            .collect()
    }

    /// Puts taken tasks back (a run stopping before it ran them).
    pub(crate) fn put_back(&mut self, tasks: Vec<Task>) {
        for task in tasks {
            match task.payload {
                Some(p) => self.push(task.node, p),
                None => self.pull(task.node),
            }
        }
    }

    /// Whether no task is planned.
    pub(crate) fn is_empty(&self) -> bool {
        self.pulls.is_empty() && self.pushes.is_empty()
    }

    /// Drops every planned task.
    pub(crate) fn clear(&mut self) {
        for node in self.pulls.drain(..) {
            self.scheduled[node] = false;
        }
        self.pushes.clear();
    }

    /// The planned tasks in apply order; leaves the frontier empty.
    pub(crate) fn take(&mut self) -> Vec<Task> {
        // Node indices follow node names, so sorting them is the name order.
        self.pulls.sort_unstable();
        let mut tasks = Vec::with_capacity(self.pulls.len() + self.pushes.len());
        for node in self.pulls.drain(..) {
            self.scheduled[node] = false;
            tasks.push(Task {
                node,
                payload: None,
            });
        }
        tasks.extend(self.pushes.drain(..).map(|(node, payload)| Task {
            node,
            payload: Some(payload),
        }));
        tasks
    }
}
