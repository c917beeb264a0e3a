//! Crash safety on SQLite: a worker running a 600-superstep graph with `Send` fan-out
//! is killed with SIGKILL at 20 random moments; each time a new worker continues the
//! thread. The final state equals an uninterrupted run's, no committed superstep is
//! lost, and no task whose writes were saved runs again (see `stategraph_tests::crash`).

use stategraph_tests::crash;
use stategraph_tests::workloads::Store;

#[test]
fn twenty_kills_lose_nothing_and_rerun_no_saved_task() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::Sqlite(dir.path().join("crash.db"));
    let drill = crash::run(
        env!("CARGO_BIN_EXE_saver_worker").as_ref(),
        &store,
        dir.path(),
        300,
        20,
        0x5eed_0001,
    );
    eprintln!("{drill:?}");
    assert_eq!(drill.kills, 20);
    assert_eq!(drill.steps, 600);
    assert!(
        drill.kills_with_saved_writes > 0,
        "no kill landed after some tasks of a step had saved their writes: {drill:?}"
    );
}
