//! The next superstep's tasks: pull tasks (edges, routers, `goto`) deduplicated and
//! ordered by node name, then `Send` tasks in emission order.

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
        }
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

    /// The planned tasks in apply order; leaves the frontier empty.
    pub(crate) fn take(&mut self) -> Vec<Task> {
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
}
