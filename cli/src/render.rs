//! Human-readable output: tables that fit the output width (see [`layout`]), values
//! as compact JSON, checkpoints by short id (see [`ids`]).

use std::fmt::Write as _;

use serde_json::Value;

use crate::ids;
use crate::inspect::{
    DeleteReport, DiffReport, HistoryReport, NamespacesReport, PruneReport, ShowReport,
    ThreadsReport,
};
use crate::layout::{self, Columns, Overflow};

/// Indentation of the tables under `show`'s section titles.
const INDENT: usize = 2;

/// A value as one line of JSON.
pub fn json_line(value: &Value) -> String {
    value.to_string()
}

fn or_dash(s: &str) -> String {
    if s.is_empty() {
        "-".to_string()
    } else {
        s.to_string()
    }
}

/// Node names, a run of one name written once with a count: `research×4,write`.
fn nodes(names: &[String]) -> String {
    let mut runs: Vec<(&str, usize)> = Vec::new();
    for name in names {
        match runs.last_mut() {
            Some((last, count)) if *last == name.as_str() => *count += 1,
            _ => runs.push((name, 1)),
        }
    }
    let shown: Vec<String> = runs
        .into_iter()
        .map(|(name, count)| {
            if count == 1 {
                name.to_string()
            } else {
                format!("{name}×{count}")
            }
        })
        .collect();
    or_dash(&shown.join(","))
}

/// The `threads` table.
pub fn threads(report: &ThreadsReport, width: usize) -> String {
    if report.threads.is_empty() {
        return "no threads\n".to_string();
    }
    let rows: Vec<Vec<String>> = report
        .threads
        .iter()
        .map(|t| {
            vec![
                t.info.thread_id.clone(),
                t.status.name().to_string(),
                t.info.latest_step.to_string(),
                t.info.checkpoint_count.to_string(),
                t.info.latest_ts.clone(),
                ids::tail(&t.info.latest_checkpoint_id).to_string(),
            ]
        })
        .collect();
    Columns::new(
        &[
            "THREAD",
            "STATUS",
            "STEP",
            "CHECKPOINTS",
            "UPDATED",
            "LATEST",
        ],
        &[0],
    )
    .render(&rows, width)
}

/// The `history` table, newest first.
pub fn history(report: &HistoryReport, width: usize) -> String {
    let all: Vec<&str> = report
        .checkpoints
        .iter()
        .map(|c| c.checkpoint_id.as_str())
        .collect();
    let rows: Vec<Vec<String>> = report
        .checkpoints
        .iter()
        .map(|c| {
            vec![
                ids::short_id(&c.checkpoint_id, &all).to_string(),
                c.step.to_string(),
                c.source.clone(),
                c.ts.clone(),
                nodes(&c.next),
                c.pending_writes.to_string(),
                or_dash(&c.updated_channels.join(",")),
            ]
        })
        .collect();
    let shown = report.checkpoints.len();
    let title = if u64::try_from(shown).is_ok_and(|n| n >= report.total) {
        format!(
            "thread {}: {shown} checkpoints, newest first",
            report.thread_id
        )
    } else {
        format!(
            "thread {}: newest {shown} of {} checkpoints",
            report.thread_id, report.total
        )
    };
    let table = Columns::new(
        &[
            "CHECKPOINT",
            "STEP",
            "SOURCE",
            "TIME",
            "NEXT",
            "WRITES",
            "UPDATED",
        ],
        &[4, 6],
    )
    .render(&rows, width);
    format!("{}{table}", layout::fit(&title, width))
}

/// `namespaces`: one row per namespace of the thread.
pub fn namespaces(report: &NamespacesReport, width: usize) -> String {
    let rows: Vec<Vec<String>> = report
        .namespaces
        .iter()
        .map(|n| {
            vec![
                if n.ns.is_empty() {
                    "(root)".to_string()
                } else {
                    n.ns.clone()
                },
                n.checkpoints.to_string(),
                n.latest_step
                    .map_or_else(|| "-".to_string(), |s| s.to_string()),
                n.status.map_or("-", |s| s.name()).to_string(),
            ]
        })
        .collect();
    let title = format!(
        "thread {}: {} namespaces",
        report.thread_id,
        report.namespaces.len()
    );
    let table = Columns::new(&["NAMESPACE", "CHECKPOINTS", "LATEST STEP", "STATUS"], &[0])
        .render(&rows, width);
    format!("{}{table}", layout::fit(&title, width))
}

/// A titled section of `show`: the title, then the table indented.
fn section(out: &mut String, title: &str, table: Option<String>, width: usize) {
    out.push('\n');
    out.push_str(&layout::fit(title, width));
    if let Some(table) = table {
        for line in table.lines() {
            let _ = writeln!(out, "{:INDENT$}{line}", "");
        }
    }
}

/// The `show` listing: a header, then the values, next tasks, pending writes and
/// interrupts; values that do not fit are cut or wrapped as `overflow` says.
pub fn show(report: &ShowReport, width: usize, overflow: Overflow) -> String {
    let next: Vec<String> = report.next.iter().map(|t| t.node.clone()).collect();
    let parent = report
        .parent_id
        .as_deref()
        .map_or_else(|| "-".to_string(), |p| format!("{} ({p})", ids::tail(p)));
    let header = [
        ("thread", report.thread_id.clone()),
        (
            "checkpoint",
            format!(
                "{} ({})",
                ids::tail(&report.checkpoint_id),
                report.checkpoint_id
            ),
        ),
        ("parent", parent),
        ("time", report.ts.clone()),
        (
            "source",
            format!("{} (step {})", report.source, report.step),
        ),
        ("schema", or_dash(&report.schema_version)),
        ("next", nodes(&next)),
    ];
    let mut out = String::new();
    for (key, value) in &header {
        out.push_str(&layout::fit(&format!("{key:<11}{value}"), width));
    }
    let inner = width.saturating_sub(INDENT);

    let rows: Vec<Vec<String>> = report
        .values
        .iter()
        .map(|(channel, value)| {
            let version = report
                .channel_versions
                .get(channel)
                .map_or_else(|| "-".to_string(), u64::to_string);
            vec![channel.clone(), version, json_line(value)]
        })
        .collect();
    let values = Columns::new(&["CHANNEL", "VERSION", "VALUE"], &[2])
        .overflow(overflow)
        .render(&rows, inner);
    section(
        &mut out,
        &format!("values ({})", report.values.len()),
        Some(values),
        width,
    );

    let sends: Vec<Vec<String>> = report
        .next
        .iter()
        .filter_map(|t| {
            t.payload
                .as_ref()
                .map(|p| vec![t.node.clone(), json_line(p)])
        })
        .collect();
    if !sends.is_empty() {
        let table = Columns::new(&["NODE", "PAYLOAD"], &[1])
            .overflow(overflow)
            .render(&sends, inner);
        section(
            &mut out,
            &format!("send payloads ({})", sends.len()),
            Some(table),
            width,
        );
    }

    let writes = (!report.pending_writes.is_empty()).then(|| {
        let rows: Vec<Vec<String>> = report
            .pending_writes
            .iter()
            .map(|w| {
                vec![
                    w.task_id.clone(),
                    w.idx_name.clone().unwrap_or_else(|| w.idx.to_string()),
                    w.channel.clone(),
                    json_line(&w.value),
                ]
            })
            .collect();
        Columns::new(&["TASK", "IDX", "CHANNEL", "VALUE"], &[0, 3])
            .overflow(overflow)
            .render(&rows, inner)
    });
    section(
        &mut out,
        &format!("pending writes ({})", report.pending_writes.len()),
        writes,
        width,
    );

    let interrupts = (!report.interrupts.is_empty()).then(|| {
        let rows: Vec<Vec<String>> = report
            .interrupts
            .iter()
            .map(|i| {
                vec![
                    or_dash(i.node.as_deref().unwrap_or_default()),
                    or_dash(i.id.as_deref().unwrap_or_default()),
                    if i.answered { "answered" } else { "waiting" }.to_string(),
                    json_line(&i.value),
                ]
            })
            .collect();
        Columns::new(&["NODE", "ID", "STATUS", "VALUE"], &[3])
            .overflow(overflow)
            .render(&rows, inner)
    });
    section(
        &mut out,
        &format!("interrupts ({})", report.interrupts.len()),
        interrupts,
        width,
    );
    out
}

/// The `diff` table: one row per JSON path that differs, values cut to fit.
pub fn diff(report: &DiffReport, width: usize) -> String {
    let (a, b) = (ids::tail(&report.a), ids::tail(&report.b));
    let head = layout::fit(
        &format!(
            "thread {}: a = {a} (step {}), b = {b} (step {})",
            report.thread_id, report.a_step, report.b_step
        ),
        width,
    );
    if report.paths.is_empty() {
        return format!("{head}no channel differs\n");
    }
    let value = |v: &Option<Value>| v.as_ref().map(json_line).unwrap_or_default();
    let rows: Vec<Vec<String>> = report
        .paths
        .iter()
        .map(|c| {
            let (a, b) = from_first_difference(value(&c.a), value(&c.b));
            vec![c.path.clone(), c.kind.name().to_string(), a, b]
        })
        .collect();
    // Paths keep their width unless they would take more than 2/5 of the line.
    let longest = rows
        .iter()
        .map(|r| layout::display_width(&r[0]))
        .max()
        .unwrap_or(0);
    let flexible: &[usize] = if longest * 5 <= width * 2 {
        &[2, 3]
    } else {
        &[0, 2, 3]
    };
    let table = Columns::new(&["PATH", "CHANGE", "A", "B"], flexible).render(&rows, width);
    let channels = report.changed.len();
    let summary = format!(
        "{} {} in {channels} {}\n",
        report.paths.len(),
        if report.paths.len() == 1 {
            "path differs"
        } else {
            "paths differ"
        },
        if channels == 1 { "channel" } else { "channels" }
    );
    format!("{head}{}{table}", layout::fit(&summary, width))
}

/// Characters of a long common start kept before the first difference.
const CONTEXT: usize = 12;

/// Two values that share a long start (a long string changed near its end) shown
/// from a little before their first difference, with `…` for what was left out; a
/// cut at the column's width would otherwise hide the change.
fn from_first_difference(a: String, b: String) -> (String, String) {
    let same = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    if same <= 2 * CONTEXT {
        return (a, b);
    }
    let skip = same - CONTEXT;
    let cut = |s: &str| format!("…{}", s.chars().skip(skip).collect::<String>());
    (cut(&a), cut(&b))
}

/// `stategraph prune`'s lines: each thread's checkpoints before and after.
pub fn prune(report: &PruneReport, width: usize) -> String {
    if report.threads.is_empty() {
        return "no threads\n".to_string();
    }
    report
        .threads
        .iter()
        .map(|t| {
            layout::fit(
                &format!(
                    "pruned thread {}: {} → {} checkpoints",
                    t.thread_id, t.before, t.after
                ),
                width,
            )
        })
        .collect()
}

/// The `delete` confirmation line.
pub fn delete(report: &DeleteReport, width: usize) -> String {
    layout::fit(
        &format!(
            "deleted thread {} ({} checkpoints)",
            report.thread_id, report.checkpoints
        ),
        width,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_one_node_are_counted() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            nodes(&names(&["research", "research", "write"])),
            "research×2,write"
        );
        assert_eq!(nodes(&names(&["a", "b", "a"])), "a,b,a");
        assert_eq!(nodes(&[]), "-");
    }

    #[test]
    fn values_sharing_a_long_start_are_shown_from_their_difference() {
        let a = format!("\"{}old\"", "x".repeat(40));
        let b = format!("\"{}new\"", "x".repeat(40));
        let (sa, sb) = from_first_difference(a, b);
        assert_eq!(sa, format!("…{}old\"", "x".repeat(CONTEXT)));
        assert_eq!(sb, format!("…{}new\"", "x".repeat(CONTEXT)));
        let short = from_first_difference("\"ab\"".into(), "\"ac\"".into());
        assert_eq!(short, ("\"ab\"".to_string(), "\"ac\"".to_string()));
    }
}
