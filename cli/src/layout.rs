//! Tables that fit the output width, laid out by `comfy-table`.
//!
//! Columns are as wide as their widest cell while everything fits. When it does not,
//! the *flexible* columns (values, lists) share what the others leave, and their cells
//! are either cut to one line ending in `…` or wrapped onto several lines. Every line
//! of output fits the width. Widths are display widths (a wide character takes two
//! columns), as the terminal shows them.

use comfy_table::{ColumnConstraint, ContentArrangement, Row, Table, Width, presets};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The width used when neither `--width`, `COLUMNS` nor a terminal gives one.
pub const DEFAULT_WIDTH: usize = 100;
/// The narrowest output laid out; a smaller width is taken as this.
pub const MIN_WIDTH: usize = 40;
/// The fewest characters a flexible column is squeezed to.
const MIN_FLEX: usize = 8;
/// Spaces between columns.
const GAP: usize = 2;

/// The output width: `flag` (`--width`), else the `COLUMNS` environment variable,
/// else the terminal's width when standard output is a terminal, else
/// [`DEFAULT_WIDTH`]; never below [`MIN_WIDTH`].
pub fn output_width(flag: Option<usize>) -> usize {
    let from_env = || {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|&c| c > 0)
    };
    let from_terminal = || terminal_size::terminal_size().map(|(w, _)| usize::from(w.0));
    flag.or_else(from_env)
        .or_else(from_terminal)
        .unwrap_or(DEFAULT_WIDTH)
        .max(MIN_WIDTH)
}

/// What happens to a flexible cell wider than its column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    /// Cut to one line ending in `…`.
    Truncate,
    /// Wrapped onto as many lines as it needs.
    Wrap,
}

/// A table's columns: headers, and which columns give way when space is short.
pub struct Columns<'a> {
    headers: &'a [&'a str],
    flexible: &'a [usize],
    overflow: Overflow,
}

impl<'a> Columns<'a> {
    /// Columns named `headers`, of which those at the indices `flexible` give way.
    pub fn new(headers: &'a [&'a str], flexible: &'a [usize]) -> Self {
        Self {
            headers,
            flexible,
            overflow: Overflow::Truncate,
        }
    }

    /// How flexible cells that do not fit are shown (default: truncated).
    #[must_use]
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.overflow = overflow;
        self
    }

    /// The table of `rows` in `width` terminal columns, each line ending in `\n`.
    pub fn render(&self, rows: &[Vec<String>], width: usize) -> String {
        let n = self.headers.len();
        let mut natural: Vec<usize> = self.headers.iter().map(|h| display_width(h)).collect();
        for row in rows {
            for (w, cell) in natural.iter_mut().zip(row) {
                *w = (*w).max(display_width(cell));
            }
        }
        let gaps = GAP * n.saturating_sub(1);
        let widths = share(&natural, self.flexible, width.saturating_sub(gaps));
        let mut table = Table::new();
        table
            .load_style(presets::NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_truncation_indicator("…")
            .set_header(self.headers.to_vec());
        for row in rows {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, &w)| match self.overflow {
                    Overflow::Truncate => truncate(cell, w),
                    Overflow::Wrap => cell.clone(),
                })
                .collect();
            table.add_row(Row::from(cells));
        }
        for (i, column) in table.column_iter_mut().enumerate() {
            let gap = if i + 1 < n { GAP } else { 0 };
            column.set_padding((0, u16::try_from(gap).unwrap_or(0)));
            // A row with more cells than headers adds columns: those get one column.
            let w = widths.get(i).copied().unwrap_or(1).max(1) + gap;
            let w = u16::try_from(w).unwrap_or(u16::MAX);
            column.set_constraint(ColumnConstraint::Absolute(Width::Fixed(w)));
        }
        table.lines().map(|line| fit_line(&line, width)).collect()
    }
}

/// Column widths: the natural ones when they fit in `room`; else the fixed columns
/// keep theirs and the flexible ones share the rest, a narrow one keeping its natural
/// width and the others an equal share (never below [`MIN_FLEX`]).
fn share(natural: &[usize], flexible: &[usize], room: usize) -> Vec<usize> {
    let mut widths = natural.to_vec();
    if natural.iter().sum::<usize>() <= room {
        return widths;
    }
    let fixed: usize = (0..natural.len())
        .filter(|i| !flexible.contains(i))
        .map(|i| natural[i])
        .sum();
    let mut left = room.saturating_sub(fixed);
    let mut open: Vec<usize> = flexible.to_vec();
    // Water-filling: columns narrower than an equal share keep their width.
    while let Some(count) = std::num::NonZeroUsize::new(open.len()) {
        let fair = left / count;
        let (narrow, wide): (Vec<usize>, Vec<usize>) =
            open.iter().partition(|&&i| natural[i] <= fair);
        if narrow.is_empty() {
            for (k, &i) in wide.iter().enumerate() {
                // The first columns take the remainder of the division.
                let extra = usize::from(k < left % count);
                widths[i] = (fair + extra).max(MIN_FLEX);
            }
            break;
        }
        for &i in &narrow {
            left -= natural[i];
        }
        open = wide;
    }
    widths
}

/// The display width of `s`: how many terminal columns it takes.
pub fn display_width(s: &str) -> usize {
    s.width()
}

/// `s` cut to `width` columns, the last of them `…` when anything was cut.
pub fn truncate(s: &str, width: usize) -> String {
    if display_width(s) <= width {
        return s.to_string();
    }
    let room = width.saturating_sub(1);
    let (mut out, mut used) = (String::new(), 0);
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// `line` without trailing spaces, cut to `width` (a safety net: cells are laid out
/// to fit already), with a newline.
fn fit_line(line: &str, width: usize) -> String {
    let mut out = truncate(line.trim_end(), width);
    out.push('\n');
    out
}

/// Lines of `text`, each cut to `width` characters with `…`.
pub fn fit(text: &str, width: usize) -> String {
    text.lines().map(|l| fit_line(l, width)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell_when_everything_fits() {
        let out = Columns::new(&["A", "LONG HEADER", "LAST"], &[2]).render(
            &[
                vec!["wide cell".into(), "x".into(), "end".into()],
                vec!["y".into(), "z".into(), "".into()],
            ],
            100,
        );
        assert_eq!(
            out,
            "A          LONG HEADER  LAST\nwide cell  x            end\ny          z\n"
        );
    }

    #[test]
    fn flexible_columns_share_the_width_and_are_cut_or_wrapped() {
        let long = "x".repeat(100);
        let rows = vec![vec!["key".to_string(), long.clone(), "short".to_string()]];
        let out = Columns::new(&["K", "VALUE", "OTHER"], &[1, 2]).render(&rows, 40);
        let line = out.lines().nth(1).unwrap();
        // 3 + 2 + value + 2 + 5 = 40: the narrow flexible column keeps its width.
        assert_eq!(line, format!("key  {}…  short", "x".repeat(27)));
        // More cells than headers: still laid out, still within the width.
        let extra = Columns::new(&["K"], &[]).render(&[vec!["a".into(), "b".repeat(80)]], 40);
        assert!(extra.lines().all(|l| display_width(l) <= 40), "{extra}");
        let wrapped = Columns::new(&["K", "VALUE", "OTHER"], &[1, 2])
            .overflow(Overflow::Wrap)
            .render(&rows, 40);
        assert_eq!(wrapped.lines().count(), 1 + 100usize.div_ceil(28));
        assert!(wrapped.lines().all(|l| display_width(l) <= 40), "{wrapped}");
        assert_eq!(wrapped.matches('x').count(), 100);
    }

    #[test]
    fn wide_characters_count_as_two_columns() {
        assert_eq!(display_width("日本"), 4);
        assert_eq!(truncate("日本語のテキスト", 7), "日本語…");
        let rows = vec![vec!["k".to_string(), "語".repeat(50)]];
        let out = Columns::new(&["K", "VALUE"], &[1]).render(&rows, 40);
        assert!(out.lines().all(|l| display_width(l) <= 40), "{out}");
        assert!(out.lines().nth(1).unwrap().ends_with('…'), "{out}");
    }

    #[test]
    fn the_width_comes_from_the_flag_then_the_environment() {
        assert_eq!(output_width(Some(120)), 120);
        assert_eq!(output_width(Some(3)), MIN_WIDTH);
    }
}
