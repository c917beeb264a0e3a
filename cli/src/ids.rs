//! Naming checkpoints on the command line.
//!
//! A checkpoint id is 16 hex digits of a microsecond timestamp and 8 random ones, so
//! a thread's ids share a long prefix (`0006610d0f6…`) and differ in their tail. Tables
//! show the *short id*: the last [`SHORT_LEN`] characters, or more when that is needed
//! to tell the thread's checkpoints apart. A checkpoint is named by its whole id, a
//! short id or any other unique suffix, a unique prefix, or `@STEP` (its superstep,
//! `@-1` for the input). A name that fits several checkpoints is an error listing
//! them.

use stategraph::checkpoint::CheckpointTuple;

use crate::error::CliError;

/// How many trailing characters of an id tables show.
pub const SHORT_LEN: usize = 8;

/// The shortest tail of `id`, at least [`SHORT_LEN`] characters, that no other of
/// `ids` ends with (the whole id when none is shorter).
pub fn short_id<'a>(id: &'a str, ids: &[&str]) -> &'a str {
    let chars: Vec<(usize, char)> = id.char_indices().collect();
    for len in SHORT_LEN..chars.len() {
        let start = chars[chars.len() - len].0;
        let tail = &id[start..];
        if !ids
            .iter()
            .any(|other| *other != id && other.ends_with(tail))
        {
            return tail;
        }
    }
    id
}

/// The short id of `id` without knowing the thread's other ids: its last
/// [`SHORT_LEN`] characters.
pub fn tail(id: &str) -> &str {
    let start = id
        .char_indices()
        .rev()
        .nth(SHORT_LEN - 1)
        .map_or(0, |(i, _)| i);
    &id[start..]
}

/// Picks the checkpoint `wanted` names among `all` (a thread's checkpoints).
///
/// # Errors
/// [`CliError::UnknownCheckpoint`] when none fits, [`CliError::AmbiguousCheckpoint`]
/// (listing the candidates by short id, step and time, in `all`'s order) when several
/// do.
pub fn resolve(
    thread_id: &str,
    wanted: &str,
    all: Vec<CheckpointTuple>,
) -> Result<CheckpointTuple, CliError> {
    let unknown = || CliError::UnknownCheckpoint {
        thread_id: thread_id.to_string(),
        checkpoint: wanted.to_string(),
    };
    if wanted.is_empty() {
        return Err(unknown());
    }
    if let Some(exact) = all.iter().position(|t| t.checkpoint.id == wanted) {
        return all.into_iter().nth(exact).ok_or_else(unknown);
    }
    let step = wanted
        .strip_prefix('@')
        .map(|s| s.parse::<i64>().map_err(|_| unknown()))
        .transpose()?;
    let ids: Vec<&str> = all.iter().map(|t| t.checkpoint.id.as_str()).collect();
    let fits = |t: &CheckpointTuple| match step {
        Some(step) => t.metadata.step == step,
        None => t.checkpoint.id.starts_with(wanted) || t.checkpoint.id.ends_with(wanted),
    };
    let matching: Vec<usize> = (0..all.len()).filter(|&i| fits(&all[i])).collect();
    match matching.as_slice() {
        [] => Err(unknown()),
        [one] => all.into_iter().nth(*one).ok_or_else(unknown),
        several => {
            let candidates: Vec<String> = several
                .iter()
                .map(|&i| {
                    let t = &all[i];
                    format!(
                        "{} (step {} at {})",
                        short_id(&t.checkpoint.id, &ids),
                        t.metadata.step,
                        t.checkpoint.ts
                    )
                })
                .collect();
            Err(CliError::AmbiguousCheckpoint {
                thread_id: thread_id.to_string(),
                name: wanted.to_string(),
                count: several.len(),
                candidates: candidates.join(", "),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_ids_are_the_tail_grown_until_unique() {
        let ids = [
            "0006610d0f6ca532e467d321",
            "0006610d0f6b14ba35fcae27",
            "0006610d0f6b04bc3bdc3e27",
        ];
        assert_eq!(short_id(ids[0], &ids), "e467d321");
        // Two ids share their last 8 characters: 9 tell them apart.
        let clash = ["00000000000000001234abcd", "00000000000000011234abcd"];
        assert_eq!(short_id(clash[0], &clash), "01234abcd");
        assert_eq!(short_id(clash[1], &clash), "11234abcd");
        assert_eq!(short_id("abc", &["abc"]), "abc");
        assert_eq!(tail(ids[1]), "35fcae27");
        assert_eq!(tail("abc"), "abc");
    }
}
