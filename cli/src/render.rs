//! Human-readable output: aligned tables, values as compact JSON.

use std::fmt::Write as _;

use serde_json::Value;

use crate::inspect::{DeleteReport, DiffReport, HistoryReport, ShowReport, ThreadsReport};

/// Lays `rows` out under `headers`, each column as wide as its widest cell, two
/// spaces apart; the last column is not padded.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::new();
        for (i, (cell, width)) in cells.zip(&widths).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            text.push_str(cell);
            if i + 1 < widths.len() {
                let pad = width.saturating_sub(cell.chars().count());
                text.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&mut headers.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

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

/// The `threads` table.
pub fn threads(report: &ThreadsReport) -> String {
    if report.threads.is_empty() {
        return "no threads\n".to_string();
    }
    let rows: Vec<Vec<String>> = report
        .threads
        .iter()
        .map(|t| {
            vec![
                t.thread_id.clone(),
                t.checkpoint_count.to_string(),
                t.latest_step.to_string(),
                t.latest_ts.clone(),
                t.latest_checkpoint_id.clone(),
            ]
        })
        .collect();
    table(
        &[
            "THREAD",
            "CHECKPOINTS",
            "STEP",
            "UPDATED",
            "LATEST CHECKPOINT",
        ],
        &rows,
    )
}

/// The `history` table, newest first.
pub fn history(report: &HistoryReport) -> String {
    let rows: Vec<Vec<String>> = report
        .checkpoints
        .iter()
        .map(|c| {
            vec![
                c.checkpoint_id.clone(),
                c.step.to_string(),
                c.source.clone(),
                c.ts.clone(),
                or_dash(&c.next.join(",")),
                c.pending_writes.to_string(),
                or_dash(&c.updated_channels.join(",")),
            ]
        })
        .collect();
    format!(
        "thread {}: {} checkpoints, newest first\n{}",
        report.thread_id,
        report.checkpoints.len(),
        table(
            &[
                "CHECKPOINT",
                "STEP",
                "SOURCE",
                "TIME",
                "NEXT",
                "WRITES",
                "UPDATED"
            ],
            &rows
        )
    )
}

/// The `show` listing: a header, then the values, next tasks, pending writes and
/// interrupts.
pub fn show(report: &ShowReport) -> String {
    let mut out = String::new();
    let next: Vec<&str> = report.next.iter().map(|t| t.node.as_str()).collect();
    let header = vec![
        vec!["thread".to_string(), report.thread_id.clone()],
        vec!["checkpoint".to_string(), report.checkpoint_id.clone()],
        vec![
            "parent".to_string(),
            or_dash(report.parent_id.as_deref().unwrap_or_default()),
        ],
        vec!["time".to_string(), report.ts.clone()],
        vec![
            "source".to_string(),
            format!("{} (step {})", report.source, report.step),
        ],
        vec!["schema".to_string(), or_dash(&report.schema_version)],
        vec!["next".to_string(), or_dash(&next.join(", "))],
    ];
    for row in &header {
        let _ = writeln!(out, "{:<11}{}", row[0], row[1]);
    }

    let _ = writeln!(out, "\nvalues ({})", report.values.len());
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
    out.push_str(&indent(&table(&["CHANNEL", "VERSION", "VALUE"], &rows)));

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
        let _ = writeln!(out, "\nsend payloads ({})", sends.len());
        out.push_str(&indent(&table(&["NODE", "PAYLOAD"], &sends)));
    }

    let _ = writeln!(out, "\npending writes ({})", report.pending_writes.len());
    if !report.pending_writes.is_empty() {
        let rows: Vec<Vec<String>> = report
            .pending_writes
            .iter()
            .map(|w| {
                vec![
                    w.task_id.clone(),
                    w.idx.to_string(),
                    w.channel.clone(),
                    json_line(&w.value),
                ]
            })
            .collect();
        out.push_str(&indent(&table(&["TASK", "IDX", "CHANNEL", "VALUE"], &rows)));
    }

    let _ = writeln!(out, "\ninterrupts ({})", report.interrupts.len());
    if !report.interrupts.is_empty() {
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
        out.push_str(&indent(&table(&["NODE", "ID", "STATUS", "VALUE"], &rows)));
    }
    out
}

/// The `diff` table: one row per channel that differs.
pub fn diff(report: &DiffReport) -> String {
    let head = format!(
        "thread {}: a = {}, b = {}\n",
        report.thread_id, report.a, report.b
    );
    if report.changed.is_empty() {
        return format!("{head}no channel differs\n");
    }
    let absent = "(absent)".to_string();
    let rows: Vec<Vec<String>> = report
        .changed
        .iter()
        .map(|c| {
            vec![
                c.channel.clone(),
                c.a.as_ref().map_or_else(|| absent.clone(), json_line),
                c.b.as_ref().map_or_else(|| absent.clone(), json_line),
            ]
        })
        .collect();
    format!("{head}{}", table(&["CHANNEL", "A", "B"], &rows))
}

/// The `delete` confirmation line.
pub fn delete(report: &DeleteReport) -> String {
    format!(
        "deleted thread {} ({} checkpoints)\n",
        report.thread_id, report.checkpoints
    )
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell() {
        let out = table(
            &["A", "LONG HEADER", "LAST"],
            &[
                vec!["wide cell".into(), "x".into(), "end".into()],
                vec!["y".into(), "z".into(), "".into()],
            ],
        );
        assert_eq!(
            out,
            "A          LONG HEADER  LAST\nwide cell  x            end\ny          z\n"
        );
    }
}
