//! `threads`, `history`, `show` and `diff` against a SQLite file written by the main
//! demo and by a graph with an approval interrupt: the tables, the JSON shapes, and
//! channel values rebuilt without the state type exactly as the runtime restores them.

use crate::common;

use common::{DEMO_THREAD, Fixture, WORK_STEPS, encoded};
use serde_json::{Value, json};
use stategraph::checkpoint::ListOptions;
use stategraph::prelude::*;
use stategraph_sqlite::SqliteSaver;

fn ids(history: &Value) -> Vec<String> {
    history["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["checkpoint_id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn threads_lists_every_thread_as_a_table_and_as_json() {
    let f = Fixture::with_demo().await;
    let demo = stategraph_examples::research::build(SqliteSaver::open(&f.db).unwrap()).unwrap();
    let demo_history = demo
        .get_state_history(&RunConfig::new().thread(DEMO_THREAD), &ListOptions::new())
        .await
        .unwrap();

    let json = f.run(&["threads", "--json"]).json();
    let threads = json["threads"].as_array().unwrap();
    let names: Vec<&str> = threads
        .iter()
        .map(|t| t["thread_id"].as_str().unwrap())
        .collect();
    assert_eq!(names, [DEMO_THREAD, "ticket-done", "ticket-open"]);
    let statuses: Vec<&str> = threads
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["finished", "finished", "interrupted"]);
    let research = &threads[0];
    assert_eq!(research["checkpoint_count"], json!(demo_history.len()));
    let newest = &demo_history[0];
    assert_eq!(
        research["latest_checkpoint_id"],
        json!(newest.config.checkpoint_id.clone().unwrap())
    );
    assert_eq!(research["latest_step"], json!(newest.metadata.step));
    assert_eq!(research["latest_ts"], json!(newest.created_at));
    // The open ticket: input, triage, 12 work steps; the approval has not finished.
    assert_eq!(threads[2]["checkpoint_count"], json!(2 + WORK_STEPS));
    assert_eq!(threads[1]["checkpoint_count"], json!(3 + WORK_STEPS));

    let table = f.run(&["threads"]).ok().to_string();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    assert!(lines[0].starts_with("THREAD"));
    for ((line, name), status) in lines[1..].iter().zip(&names).zip(&statuses) {
        assert!(line.starts_with(name), "{line}");
        assert!(line.contains(&format!("  {status}  ")), "{line}");
    }
    // Aligned: every row's checkpoint count starts under the header's column.
    let column = lines[0].find("CHECKPOINTS").unwrap();
    assert_eq!(
        &lines[1][column..column + demo_history.len().to_string().len()],
        demo_history.len().to_string()
    );
    assert_eq!(&lines[3][column..column + 2], (2 + WORK_STEPS).to_string());
}

#[tokio::test]
async fn history_lists_checkpoints_newest_first() {
    let f = Fixture::with_demo().await;
    let demo = stategraph_examples::research::build(SqliteSaver::open(&f.db).unwrap()).unwrap();
    let expected = demo
        .get_state_history(&RunConfig::new().thread(DEMO_THREAD), &ListOptions::new())
        .await
        .unwrap();

    let json = f.run(&["history", DEMO_THREAD, "--json"]).json();
    assert_eq!(json["thread_id"], DEMO_THREAD);
    let checkpoints = json["checkpoints"].as_array().unwrap();
    assert_eq!(checkpoints.len(), expected.len());
    for (got, want) in checkpoints.iter().zip(&expected) {
        assert_eq!(
            got["checkpoint_id"],
            json!(want.config.checkpoint_id.clone().unwrap())
        );
        assert_eq!(
            got["parent_id"],
            json!(
                want.parent_config
                    .as_ref()
                    .and_then(|p| p.checkpoint_id.clone())
            )
        );
        assert_eq!(got["step"], json!(want.metadata.step));
        assert_eq!(got["next"], json!(want.next));
        assert_eq!(got["ts"], json!(want.created_at));
    }
    let oldest = checkpoints.last().unwrap();
    assert_eq!(oldest["source"], "input");
    assert_eq!(oldest["step"], -1);
    assert_eq!(oldest["parent_id"], Value::Null);
    assert_eq!(checkpoints[0]["source"], "loop");
    // The demo fans out research tasks with `Send`: one planned task per question.
    assert!(checkpoints.iter().any(|c| {
        c["next"].as_array().unwrap().len() > 1
            && c["next"]
                .as_array()
                .unwrap()
                .iter()
                .all(|n| n == "research")
    }));

    let table = f.run(&["history", DEMO_THREAD]).ok().to_string();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "thread {DEMO_THREAD}: {} checkpoints, newest first",
            expected.len()
        )
    );
    assert!(lines[1].starts_with("CHECKPOINT  "));
    // Each checkpoint by the last 8 characters of its id, which name it.
    for (line, id) in lines[2..].iter().zip(ids(&json)) {
        let short = &id[id.len() - 8..];
        assert!(line.starts_with(&format!("{short}  ")), "{line}");
        let shown = f.run(&["show", DEMO_THREAD, short, "--json"]).json();
        assert_eq!(shown["checkpoint_id"], json!(id));
    }
    assert!(lines.last().unwrap().contains(" input "));
    // The fan-out's four `research` tasks in one cell.
    assert!(table.contains("  research×4  "), "{table}");

    // --limit: the newest N, out of how many.
    let newest = f
        .run(&["history", DEMO_THREAD, "--limit", "3", "--json"])
        .json();
    assert_eq!(ids(&newest), ids(&json)[..3]);
    assert_eq!(newest["total"], json!(expected.len()));
    let table = f.run(&["history", DEMO_THREAD, "-n", "3"]).ok().to_string();
    assert_eq!(
        table.lines().next().unwrap(),
        format!(
            "thread {DEMO_THREAD}: newest 3 of {} checkpoints",
            expected.len()
        )
    );
    assert_eq!(table.lines().count(), 2 + 3);
}

#[tokio::test]
async fn show_rebuilds_every_checkpoint_of_the_demo_as_the_runtime_restores_it() {
    let f = Fixture::with_demo().await;
    let demo = stategraph_examples::research::build(SqliteSaver::open(&f.db).unwrap()).unwrap();
    let history = demo
        .get_state_history(&RunConfig::new().thread(DEMO_THREAD), &ListOptions::new())
        .await
        .unwrap();
    assert!(history.len() > 5);
    for snapshot in &history {
        let id = snapshot.config.checkpoint_id.clone().unwrap();
        let shown = f.run(&["show", DEMO_THREAD, &id, "--json"]).json();
        assert_eq!(shown["checkpoint_id"], json!(id));
        let versions = shown["channel_versions"].as_object().unwrap();
        let values = shown["values"].as_object().unwrap();
        for (channel, runtime_value) in encoded(&snapshot.values) {
            match values.get(&channel) {
                Some(value) => assert_eq!(value, &runtime_value, "{channel} at {id}"),
                // Only a channel never written has no stored value.
                None => assert!(!versions.contains_key(&channel), "{channel} at {id}"),
            }
        }
        let next: Vec<&str> = shown["next"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["node"].as_str().unwrap())
            .collect();
        assert_eq!(next, snapshot.next);
        assert_eq!(shown["step"], json!(snapshot.metadata.step));
    }
    // The fan-out: one planned `research` task per question, each with its payload.
    let fan_out = history
        .iter()
        .find(|s| s.next.len() > 1 && s.next.iter().all(|n| n == "research"))
        .unwrap();
    let id = fan_out.config.checkpoint_id.clone().unwrap();
    let shown = f.run(&["show", DEMO_THREAD, &id, "--json"]).json();
    let next = shown["next"].as_array().unwrap();
    assert!(
        next.iter().all(|t| t["payload"]["text"].is_string()),
        "{shown}"
    );
    // Wide enough for whole values.
    let table = f
        .run(&["show", DEMO_THREAD, &id, "--width", "400"])
        .ok()
        .to_string();
    assert!(
        table.contains(&format!("\nsend payloads ({})\n", next.len())),
        "{table}"
    );
    for task in next {
        let payload = serde_json::to_string(&task["payload"]).unwrap();
        assert!(
            table
                .lines()
                .any(|l| l.trim_start().starts_with("research ") && l.ends_with(&payload)),
            "{payload} in {table}"
        );
    }

    // The latest by default.
    let latest = f.run(&["show", DEMO_THREAD, "--json"]).json();
    assert_eq!(
        latest["checkpoint_id"],
        json!(history[0].config.checkpoint_id.clone().unwrap())
    );
    assert!(latest["values"]["report"].is_string());
    assert_eq!(latest["next"], json!([]));
}

#[tokio::test]
async fn show_folds_appended_deltas_and_lists_a_waiting_interrupt() {
    let f = Fixture::tickets().await;
    let shown = f.run(&["show", "ticket-open", "--json"]).json();
    let mut log = vec![json!("triaged")];
    log.extend((1..=WORK_STEPS).map(|n| json!(format!("worked {n}"))));
    assert_eq!(shown["values"]["log"], json!(log));
    assert_eq!(shown["values"]["steps"], json!(WORK_STEPS));
    assert_eq!(shown["values"]["title"], "printer on fire");
    assert_eq!(shown["next"], json!([{ "node": "approve" }]));
    assert_eq!(shown["source"], "loop");
    assert_eq!(shown["step"], json!(WORK_STEPS));
    let interrupts = shown["interrupts"].as_array().unwrap();
    assert_eq!(interrupts.len(), 1);
    assert_eq!(interrupts[0]["node"], "approve");
    assert_eq!(interrupts[0]["answered"], false);
    assert_eq!(
        interrupts[0]["value"],
        json!({ "question": "close this ticket?", "title": "printer on fire" })
    );
    let id = interrupts[0]["id"].as_str().unwrap();
    assert!(!id.is_empty());
    let writes = shown["pending_writes"].as_array().unwrap();
    assert!(
        writes
            .iter()
            .any(|w| w["channel"] == "__interrupt__" && w["value"]["id"] == id)
    );
    assert_eq!(shown["metadata"]["step"], json!(WORK_STEPS));

    let table = f
        .run(&["show", "ticket-open", "--width", "400"])
        .ok()
        .to_string();
    assert!(
        table.starts_with("thread     ticket-open\ncheckpoint "),
        "{table}"
    );
    assert!(table.contains("\nnext       approve\n"), "{table}");
    let log_line = table
        .lines()
        .find(|l| l.trim_start().starts_with("log "))
        .unwrap();
    assert!(
        log_line.ends_with(&serde_json::to_string(&log).unwrap()),
        "{log_line}"
    );
    assert!(table.contains("\ninterrupts (1)\n"), "{table}");
    let interrupt_line = table
        .lines()
        .find(|l| l.trim_start().starts_with("approve "))
        .unwrap();
    assert!(interrupt_line.contains(id) && interrupt_line.contains(" waiting "));
    // The interrupt's write is at a reserved index, shown by name.
    let write = writes
        .iter()
        .find(|w| w["channel"] == "__interrupt__")
        .unwrap();
    assert_eq!(write["idx"], json!(u32::MAX - 1_000_000));
    assert_eq!(write["idx_name"], "interrupt");
    assert!(
        table.lines().any(|l| l
            .trim_start()
            .starts_with("13:approve  interrupt  __interrupt__  ")),
        "{table}"
    );

    // At the default width the log is cut to one line ending in `…`; with --wrap it
    // is shown whole, over several lines.
    let log_json = serde_json::to_string(&log).unwrap();
    let narrow = f.run(&["show", "ticket-open"]).ok().to_string();
    let cut = narrow
        .lines()
        .find(|l| l.trim_start().starts_with("log "))
        .unwrap();
    assert!(cut.ends_with('…') && cut.chars().count() == 100, "{cut}");
    let wrapped = f.run(&["show", "ticket-open", "--wrap"]).ok().to_string();
    assert!(
        wrapped.lines().all(|l| l.chars().count() <= 100),
        "{wrapped}"
    );
    let lines: Vec<&str> = wrapped.lines().collect();
    let header = lines.iter().position(|l| l.contains("CHANNEL")).unwrap();
    let column = lines[header].find("VALUE").unwrap();
    let first = lines
        .iter()
        .position(|l| l.trim_start().starts_with("log "))
        .unwrap();
    let rest: String = lines[first..]
        .iter()
        .take_while(|l| *l == &lines[first] || l[..column].trim().is_empty())
        .map(|l| &l[column..])
        .collect();
    assert_eq!(rest.replace(' ', ""), log_json.replace(' ', ""));

    // Answered and finished: nothing pending on the latest checkpoint, and the
    // checkpoint before it shows the answered interrupt.
    let done = f.run(&["show", "ticket-done", "--json"]).json();
    assert_eq!(done["next"], json!([]));
    assert_eq!(done["interrupts"], json!([]));
    assert_eq!(
        done["values"]["log"].as_array().unwrap().last(),
        Some(&json!("closed"))
    );
    let parent = done["parent_id"].as_str().unwrap();
    let before = f.run(&["show", "ticket-done", parent, "--json"]).json();
    assert_eq!(before["interrupts"][0]["answered"], true);
}

#[tokio::test]
async fn show_accepts_an_id_prefix_suffix_or_step() {
    let f = Fixture::tickets().await;
    let history = f.run(&["history", "ticket-open", "--json"]).json();
    let all = ids(&history);
    // A name fits an id it starts or ends: only a name that fits no other id picks
    // one checkpoint.
    let fits_one = |p: &str| {
        all.iter()
            .filter(|id| id.starts_with(p) || id.ends_with(p))
            .count()
            == 1
    };
    // The shortest prefix of the oldest id that no other id shares.
    let oldest = all.last().unwrap();
    let prefix = (1..=oldest.len())
        .map(|n| &oldest[..n])
        .find(|p| fits_one(p))
        .unwrap();
    let shown = f.run(&["show", "ticket-open", prefix, "--json"]).json();
    assert_eq!(shown["checkpoint_id"], json!(oldest));
    assert_eq!(shown["source"], "input");
    assert_eq!(shown["values"]["title"], "printer on fire");
    // The shortest suffix no other id shares, and the input's step.
    let suffix = (1..=oldest.len())
        .map(|n| &oldest[oldest.len() - n..])
        .find(|p| fits_one(p))
        .unwrap();
    for name in [suffix, "@-1"] {
        let shown = f.run(&["show", "ticket-open", name, "--json"]).json();
        assert_eq!(shown["checkpoint_id"], json!(oldest), "{name}");
    }
    // Each step of a thread without forks names one checkpoint.
    for (n, id) in all.iter().rev().enumerate() {
        let step = format!("@{}", i64::try_from(n).unwrap() - 1);
        let shown = f.run(&["show", "ticket-open", &step, "--json"]).json();
        assert_eq!(shown["checkpoint_id"], json!(id), "{step}");
    }
}

#[tokio::test]
async fn diff_lists_the_channels_that_differ_with_both_values() {
    let f = Fixture::tickets().await;
    let history = f.run(&["history", "ticket-done", "--json"]).json();
    let all = ids(&history);
    let (latest, before) = (&all[0], &all[1]);

    let diff = f
        .run(&["diff", "ticket-done", before, latest, "--json"])
        .json();
    assert_eq!(diff["thread_id"], "ticket-done");
    assert_eq!(diff["a"], json!(before));
    assert_eq!(diff["b"], json!(latest));
    let changed = diff["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 1, "{diff}");
    assert_eq!(changed[0]["channel"], "log");
    let a = changed[0]["a"].as_array().unwrap();
    let b = changed[0]["b"].as_array().unwrap();
    assert_eq!(b.len(), a.len() + 1);
    assert_eq!(b.last(), Some(&json!("closed")));
    assert_eq!(&b[..a.len()], &a[..]);

    // Against the input checkpoint, a channel absent there has no `a`.
    let input = all.last().unwrap();
    let from_input = f
        .run(&["diff", "ticket-done", input, latest, "--json"])
        .json();
    let steps = from_input["changed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["channel"] == "steps")
        .unwrap();
    assert!(steps.get("a").is_none(), "{steps}");
    assert_eq!(steps["b"], json!(WORK_STEPS));

    let same = f
        .run(&["diff", "ticket-done", latest, latest, "--json"])
        .json();
    assert_eq!(same["changed"], json!([]));
    assert!(
        f.run(&["diff", "ticket-done", latest, latest])
            .ok()
            .ends_with("no channel differs\n")
    );

    let table = f
        .run(&["diff", "ticket-done", input, latest])
        .ok()
        .to_string();
    let lines: Vec<&str> = table.lines().collect();
    let short = |id: &str| id[id.len() - 8..].to_string();
    assert_eq!(
        lines[0],
        format!(
            "thread ticket-done: a = {} (step -1), b = {} (step {})",
            short(input),
            short(latest),
            WORK_STEPS + 1
        )
    );
    assert!(lines[2].starts_with("PATH "), "{table}");
    let steps_line = lines.iter().find(|l| l.starts_with("$.steps ")).unwrap();
    assert!(steps_line.contains(" added "), "{steps_line}");
    assert!(
        steps_line.ends_with(&WORK_STEPS.to_string()),
        "{steps_line}"
    );

    // One row per appended log item, by its path in B.
    let appended = f
        .run(&["diff", "ticket-done", before, latest, "--json"])
        .json();
    assert_eq!(
        appended["paths"],
        json!([{ "path": format!("$.log[{}]", a.len()), "kind": "added", "b": "closed" }])
    );
    let table = f
        .run(&["diff", "ticket-done", before, latest])
        .ok()
        .to_string();
    let path = format!("$.log[{}]", a.len());
    assert!(
        table.ends_with(&format!(
            "1 path differs in 1 channel\n{:<w$}CHANGE  A  B\n{path}  added      \"closed\"\n",
            "PATH",
            w = path.len() + 2
        )),
        "{table}"
    );
}
