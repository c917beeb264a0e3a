//! Processes opening the same new SQLite file at the same moment all succeed: creating
//! the file, switching it to write-ahead logging and creating the tables wait for each
//! other (up to the busy timeout) instead of failing with "database is locked".

use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use stategraph_tests::workloads::Store;

/// Processes per round: two is the case; more make the race likelier.
const PROCESSES: usize = 4;

#[test]
fn thirty_rounds_of_processes_open_a_new_file_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let worker = env!("CARGO_BIN_EXE_saver_worker");
    let mut failures = Vec::new();
    for round in 0..30 {
        let store = Store::Sqlite(dir.path().join(format!("new-{round}.db")));
        // Both wait for the same moment, after both have started.
        let start = SystemTime::now() + Duration::from_millis(150);
        let start = start
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis()
            .to_string();
        let children: Vec<_> = (0..PROCESSES)
            .map(|_| {
                Command::new(worker)
                    .args(["open", &store.arg(), &start])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            if !out.status.success() || !String::from_utf8_lossy(&out.stdout).contains("opened") {
                failures.push(format!(
                    "round {round}: {} {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failed opens: {failures:#?}",
        failures.len()
    );
}
