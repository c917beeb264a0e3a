//! What the tables look like at 100 columns on the main demo's database (the research
//! pipeline run to the end, plus small threads in every status), compared with the
//! files in `tests/snapshots/` (`STATEGRAPH_BLESS=1` rewrites them). Checkpoint ids,
//! interrupt ids and times differ between runs and are masked, each by a text of its
//! own length so that the snapshots keep the real alignment: a checkpoint id by
//! `<cp@STEP>` padded with dots, an interrupt id by `<interrupt id>` padded with dots
//! (`#` for the part left of an id cut short by `…`), a time by
//! `YYYY-MM-DDThh:mm:ss.sssZ`. Everything else the demo writes is deterministic.
//! Every line of every output fits the width (in terminal columns).

use crate::common;

use std::path::PathBuf;

use common::{DEMO_THREAD, Fixture};
use serde_json::Value;
use stategraph_cli::layout::display_width;

const WIDTH: usize = 100;

/// `label` padded with dots to `len` characters.
fn padded(label: &str, len: usize) -> String {
    format!("{label:.<len$}")
}

/// The ids a run leaves in the output, each with its label.
struct Masks {
    ids: Vec<(String, String)>,
}

impl Masks {
    /// The checkpoint ids of every thread (labelled `<cp@STEP>`) and the interrupt
    /// ids of the demo's checkpoints (labelled `<interrupt id>`).
    fn of(f: &Fixture) -> Self {
        let mut ids = Vec::new();
        let threads = f.run(&["threads", "--json"]).json();
        for thread in threads["threads"].as_array().unwrap() {
            let thread = thread["thread_id"].as_str().unwrap();
            let history = f.run(&["history", thread, "--json"]).json();
            for c in history["checkpoints"].as_array().unwrap() {
                let id = c["checkpoint_id"].as_str().unwrap().to_string();
                if thread == DEMO_THREAD {
                    let shown = f.run(&["show", thread, &id, "--json"]).json();
                    for i in shown["interrupts"].as_array().unwrap() {
                        let interrupt = i["id"].as_str().unwrap().to_string();
                        ids.push((interrupt, "<interrupt id>".to_string()));
                    }
                }
                ids.push((id, format!("<cp@{}>", c["step"])));
            }
        }
        Self { ids }
    }

    /// `text` with every id, the short ids (last 8 characters) of checkpoint ids, the
    /// start of an id in a JSON string cut short by `…`, and RFC 3339 times masked.
    fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (id, label) in &self.ids {
            out = out.replace(id, &padded(label, id.len()));
        }
        for (id, label) in &self.ids {
            out = out.replace(&id[id.len() - 8..], &padded(label, 8));
            for len in (1..id.len()).rev() {
                let cut = format!("\"{}…", &id[..len]);
                out = out.replace(&cut, &format!("\"{}…", "#".repeat(len)));
            }
        }
        mask_times(&out)
    }
}

/// `text` with each time like `2026-11-24T22:16:21.511Z` replaced by
/// `YYYY-MM-DDThh:mm:ss.sssZ`.
fn mask_times(text: &str) -> String {
    const SHAPE: &str = "dddd-dd-ddTdd:dd:dd.dddZ";
    const MASK: &str = "YYYY-MM-DDThh:mm:ss.sssZ";
    let chars: Vec<char> = text.chars().collect();
    let fits = |at: usize| {
        chars.len() >= at + SHAPE.len()
            && SHAPE
                .chars()
                .zip(&chars[at..])
                .all(|(want, got)| match want {
                    'd' => got.is_ascii_digit(),
                    other => other == *got,
                })
    };
    let (mut out, mut i) = (String::new(), 0);
    while i < chars.len() {
        if fits(i) {
            out.push_str(MASK);
            i += SHAPE.len();
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

fn snapshot_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("snapshots")
        .join(format!("{name}.txt"))
}

/// Compares `actual` with the stored snapshot, or stores it when `STATEGRAPH_BLESS=1`.
fn check_snapshot(name: &str, actual: &str) {
    let what = format!("snapshot `{name}`");
    stategraph_tests::golden::compare_or_bless(&snapshot_path(name), &what, actual);
}

/// Runs `args` at [`WIDTH`] columns, asserts every line fits, and returns the output.
fn run_fitting(f: &Fixture, args: &[&str]) -> String {
    let width = WIDTH.to_string();
    let mut all = args.to_vec();
    all.extend(["--width", &width]);
    let out = f.run(&all).ok().to_string();
    for line in out.lines() {
        assert!(
            display_width(line) <= WIDTH,
            "`{}`: a line {} columns wide:\n{line}",
            args.join(" "),
            display_width(line)
        );
    }
    out
}

#[tokio::test]
async fn the_demo_database_at_100_columns() {
    let f = Fixture::with_every_status().await;
    let masks = Masks::of(&f);
    let threads = f.run(&["threads", "--json"]).json();
    let statuses: Vec<(&str, &str)> = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["thread_id"].as_str().unwrap(),
                t["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            (DEMO_THREAD, "finished"),
            ("ticket-done", "finished"),
            ("ticket-failed", "failed"),
            ("ticket-open", "interrupted"),
            ("ticket-paused", "running"),
        ]
    );
    let cases: &[(&str, &[&str])] = &[
        ("threads", &["threads"]),
        ("history", &["history", DEMO_THREAD]),
        ("history-limit", &["history", DEMO_THREAD, "--limit", "3"]),
        // The finished report.
        ("show-latest", &["show", DEMO_THREAD]),
        // The fan-out: one `research` task per question, with its payload.
        ("show-fan-out", &["show", DEMO_THREAD, "@0"]),
        // The approval: an answered interrupt, the answer and the node's update.
        ("show-approval", &["show", DEMO_THREAD, "@6"]),
        // Long values wrapped instead of cut (a checkpoint without random ids in its
        // values, which a wrap could split where no mask finds them).
        (
            "show-review-wrapped",
            &["show", DEMO_THREAD, "@5", "--wrap"],
        ),
        // A review sent weak findings back: new questions, a second draft.
        ("diff-review-round", &["diff", DEMO_THREAD, "@2", "@5"]),
        ("diff-input-to-end", &["diff", DEMO_THREAD, "@-1", "@8"]),
        ("show-failed", &["show", "ticket-failed"]),
    ];
    for (name, args) in cases {
        let out = run_fitting(&f, args);
        check_snapshot(name, &masks.apply(&out));
    }
}

#[tokio::test]
async fn every_line_fits_narrower_and_wider_widths_too() {
    let f = Fixture::with_demo().await;
    for width in [40, 60, 80, 160] {
        let w = width.to_string();
        for args in [
            &["threads"][..],
            &["history", DEMO_THREAD],
            &["show", DEMO_THREAD],
            &["show", DEMO_THREAD, "@6", "--wrap"],
            &["diff", DEMO_THREAD, "@2", "@5"],
        ] {
            let mut all = args.to_vec();
            all.extend(["--width", &w]);
            let out = f.run(&all).ok().to_string();
            let longest = out.lines().map(display_width).max().unwrap();
            assert!(longest <= width, "{args:?} at {width}: {longest}\n{out}");
        }
    }
    // COLUMNS gives the width when --width does not.
    let out = common::stategraph_with_env(
        &["--db", f.db.to_str().unwrap(), "show", DEMO_THREAD],
        &[("COLUMNS", "70")],
    );
    let longest = out.ok().lines().map(display_width).max().unwrap();
    assert_eq!(longest, 70, "{}", out.stdout);
    // The JSON output is not cut.
    let json: Value = f.run(&["show", DEMO_THREAD, "--json"]).json();
    assert!(json["values"]["report"].as_str().unwrap().len() > WIDTH);
}
