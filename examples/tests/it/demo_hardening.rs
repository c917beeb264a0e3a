//! The demo against a racing second process and a damaged step counter.

use std::path::Path;
use std::process::{Command, Stdio};

use stategraph::checkpoint::CheckpointSaver;
use stategraph::prelude::*;
use stategraph_examples::research::{self, Research};
use stategraph_sqlite::SqliteSaver;

const DEMO: &str = env!("CARGO_BIN_EXE_stategraph-demo");

fn demo(db: &Path) -> Command {
    let mut cmd = Command::new(DEMO);
    cmd.arg("--db")
        .arg(db)
        .arg("--yes")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
}

/// How many times `node` ran on the thread, read from its checkpoints' run history.
fn runs_of(db: &Path, thread: &str, node: &str) -> usize {
    let saver = SqliteSaver::open(db).expect("the file opens");
    let config = stategraph::checkpoint::CheckpointConfig::thread(thread);
    let history = runtime()
        .block_on(saver.list(&config, &stategraph::checkpoint::ListOptions::new()))
        .expect("the history reads");
    history
        .iter()
        .flat_map(|t| &t.metadata.steps)
        .flat_map(|s| &s.tasks)
        .filter(|t| t.node == node)
        .count()
}

/// Two demos started at the same moment on a new file: the pipeline runs once. The
/// second either finds the thread started and follows it, or (when both tried to
/// start it) is refused with a clear message. Before, both ran it (`publish` twice in
/// 5 of 10 pairs).
#[test]
fn two_demos_racing_to_start_a_thread_publish_once() {
    let dir = tempfile::tempdir().expect("a temp dir");
    // The ten pairs race at once, each on a file of its own: the demo mostly waits
    // (its steps are paced for a reader), so ten rounds take the time of one.
    let rounds: Vec<_> = (0..10)
        .map(|round| {
            let db = dir.path().join(format!("race-{round}.sqlite"));
            // The file exists first: the race is for the thread, not the file.
            drop(SqliteSaver::open(&db).expect("the file opens"));
            let pair = [demo(&db).spawn().unwrap(), demo(&db).spawn().unwrap()];
            (round, db, pair)
        })
        .collect();
    for (round, db, pair) in rounds {
        let outputs: Vec<_> = pair
            .into_iter()
            .map(|c| c.wait_with_output().expect("the demo ends"))
            .collect();
        let show = || {
            outputs
                .iter()
                .map(|o| {
                    format!(
                        "{}\n{}",
                        String::from_utf8_lossy(&o.stdout),
                        String::from_utf8_lossy(&o.stderr)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n----\n")
        };
        // Each demo either finished the thread (the starter, or one that found it
        // started and followed it through the thread's lock) or was refused with a
        // clear message; never an error of another kind.
        let mut finished = 0;
        for o in &outputs {
            let stdout = String::from_utf8_lossy(&o.stdout);
            let stderr = String::from_utf8_lossy(&o.stderr);
            if o.status.success() {
                assert!(
                    stdout.contains("thread research-1 finished: published"),
                    "{}",
                    show()
                );
                finished += 1;
            } else {
                assert!(
                    stderr.contains(
                        "thread research-1 was started by another process at the same moment"
                    ),
                    "round {round}:\n{}",
                    show()
                );
            }
        }
        assert!(finished >= 1, "round {round}:\n{}", show());
        assert_eq!(runs_of(&db, "research-1", "publish"), 1, "round {round}");
        assert_eq!(runs_of(&db, "research-1", "plan"), 1, "round {round}");
    }
}

/// A stored step near `i64::MAX` (a damaged or hand-edited row) is continued
/// without arithmetic overflow. Before, the demo panicked with "attempt to add with
/// overflow".
#[test]
fn a_step_counter_near_the_limit_does_not_overflow() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let db = dir.path().join("steps.sqlite");
    let graph = research::build(SqliteSaver::open(&db).expect("opens")).expect("builds");
    let config = RunConfig::new()
        .thread("research-1")
        .interrupt_before([research::research]);
    let paused = runtime()
        .block_on(graph.invoke(Research::update().topic("edge cases"), &config))
        .expect("runs until the research step");
    assert!(!paused.interrupts.is_empty());

    let conn = rusqlite::Connection::open(&db).expect("opens");
    let edited = conn
        .execute(
            "UPDATE stategraph_checkpoints SET metadata = json_set(metadata, '$.step', 9223372036854775806)",
            [],
        )
        .expect("edits");
    assert!(edited > 0);
    drop(conn);

    let out = demo(&db).output().expect("the demo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.contains("overflow"), "{stderr}");
    assert!(
        stdout.contains("continuing thread research-1 from step 9223372036854775807"),
        "{stdout}"
    );
    assert!(stdout.contains("thread research-1 finished"), "{stdout}");
}
