//! Crash safety on PostgreSQL: a worker running a 600-superstep graph with `Send`
//! fan-out is killed with SIGKILL at 20 random moments; each time a new worker
//! continues the thread (waiting, if needed, for the server to end the killed
//! worker's session and so release its thread lock). The final state equals an
//! uninterrupted run's, no committed superstep is lost, and no task whose writes were
//! saved runs again (see `stategraph_tests::crash`).
//!
//! Needs a server: set `STATEGRAPH_POSTGRES_URL` (see `stategraph_tests::servers`).

use stategraph_tests::workloads::Store;
use stategraph_tests::{crash, servers};

#[test]
fn twenty_kills_lose_nothing_and_rerun_no_saved_task() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let schema = servers::fresh_schema("crash");
    let store = Store::Postgres {
        url: url.clone(),
        schema: schema.clone(),
    };
    let drill = crash::run(
        env!("CARGO_BIN_EXE_saver_worker").as_ref(),
        &store,
        dir.path(),
        300,
        20,
        0x5eed_0002,
    );
    eprintln!("{drill:?}");
    assert_eq!(drill.kills, 20);
    assert_eq!(drill.steps, 600);
    assert!(
        drill.kills_with_saved_writes > 0,
        "no kill landed after some tasks of a step had saved their writes: {drill:?}"
    );
    servers::drop_schema(&url, &schema);
}
