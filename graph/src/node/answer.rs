//! What an interrupt expects as its answer, and the pause a node reports.
//!
//! `NodeContext::interrupt::<_, R>` records the Rust type it decodes its answer into
//! (`type_name::<R>()`) with the saved interrupt, and registers a checker for that
//! type in this process. A resume whose interrupt names a type checked here is
//! validated before anything is saved; otherwise (a process that never asked for
//! that type) the node itself finds the bad answer, and the interrupt is raised
//! again so that the next resume replaces the answer instead of adding to it.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

use super::interrupt::Interrupt;

type Checker = fn(&Value) -> Result<(), String>;

/// Checkers by type name: one entry per answer type a node of this process asked for.
fn checkers() -> &'static Mutex<HashMap<&'static str, Checker>> {
    static CHECKERS: OnceLock<Mutex<HashMap<&'static str, Checker>>> = OnceLock::new();
    CHECKERS.get_or_init(|| Mutex::new(HashMap::new()))
}

fn check_as<R: serde::de::DeserializeOwned>(value: &Value) -> Result<(), String> {
    <R as serde::Deserialize>::deserialize(value)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Registers the checker of answers of type `R`; returns the name it is known by.
pub(crate) fn expect<R: serde::de::DeserializeOwned>() -> &'static str {
    let name = std::any::type_name::<R>();
    let mut map = checkers().lock().unwrap_or_else(|e| e.into_inner());
    map.entry(name).or_insert(check_as::<R> as Checker);
    name
}

/// Checks `value` as an answer of the type named `expects`: `None` when this process
/// has no checker for it (the node will check it when it runs).
pub(crate) fn check(expects: &str, value: &Value) -> Option<Result<(), String>> {
    let checker = *checkers()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(expects)?;
    Some(checker(value))
}

/// A node paused at its `index`-th `interrupt` call (the error `interrupt` returns;
/// its source is the [`Interrupt`]).
#[derive(Debug)]
pub(crate) struct Pause {
    pub(crate) interrupt: Interrupt,
    /// Which of the task's `interrupt` calls (0-based): answers from this one on are
    /// not kept.
    pub(crate) index: usize,
    /// The type the answer decodes into.
    pub(crate) expects: &'static str,
    /// Why the answer given to this call was refused, when it was.
    pub(crate) refused: Option<String>,
}

impl std::fmt::Display for Pause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.refused {
            None => self.interrupt.fmt(f),
            Some(reason) => write!(
                f,
                "resume value {} for node `{}` does not decode as `{}`: {reason}",
                self.index, self.interrupt.node, self.expects
            ),
        }
    }
}

impl std::error::Error for Pause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.interrupt)
    }
}

/// The pause `error` carries (looked for through its sources, as
/// [`NodeError::as_interrupt`](crate::NodeError::as_interrupt) does).
pub(crate) fn pause_of(error: &crate::NodeError) -> Option<&Pause> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error.inner());
    while let Some(e) = current {
        if let Some(p) = e.downcast_ref::<Pause>() {
            return Some(p);
        }
        current = e.source();
    }
    None
}

/// The fields a saved interrupt record adds to the [`Interrupt`] itself.
pub(crate) const RECORD_EXPECTS: &str = "expects";
/// See [`RECORD_EXPECTS`].
pub(crate) const RECORD_INDEX: &str = "index";
