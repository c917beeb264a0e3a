//! Crash safety of subgraphs: a worker running a parent chain of subgraph steps, each
//! child fanning out over `Send` tasks, is killed with SIGKILL at 12 random moments —
//! inside running children — and each time a new worker continues the thread. The
//! children continue from their checkpoints: a child task whose writes were saved in
//! its namespace never runs again, only unfinished ones do, and the run ends in the
//! uninterrupted run's state (see `stategraph_tests::crash_nested`). On SQLite, and on
//! PostgreSQL when `STATEGRAPH_POSTGRES_URL` is set.

use stategraph_tests::crash_nested::{self, NestedDrill};
use stategraph_tests::servers;
use stategraph_tests::workloads::Store;

const KILLS: usize = 12;

fn check(drill: &NestedDrill) {
    eprintln!("{drill:?}");
    assert_eq!(drill.kills, KILLS);
    assert!(
        drill.kills_inside_children > 0,
        "no kill landed inside a running child: {drill:?}"
    );
    assert!(
        drill.kills_with_saved_child_writes > 0,
        "no kill landed after some tasks of a child step had saved their writes: {drill:?}"
    );
    assert!(
        drill.child_tasks_rerun > 0,
        "no kill cut a running child task, so no unfinished task was run again: {drill:?}"
    );
}

#[test]
fn kills_inside_children_rerun_only_unfinished_child_tasks_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::Sqlite(dir.path().join("crash.db"));
    let drill = crash_nested::run(
        env!("CARGO_BIN_EXE_saver_worker").as_ref(),
        &store,
        dir.path(),
        10,
        8,
        KILLS,
        0x5eed_0101,
    );
    check(&drill);
}

#[test]
fn kills_inside_children_rerun_only_unfinished_child_tasks_on_postgres() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let schema = servers::fresh_schema("crash_subgraph");
    let store = Store::Postgres {
        url: url.clone(),
        schema: schema.clone(),
    };
    let drill = crash_nested::run(
        env!("CARGO_BIN_EXE_saver_worker").as_ref(),
        &store,
        dir.path(),
        10,
        8,
        KILLS,
        0x5eed_0102,
    );
    check(&drill);
    servers::drop_schema(&url, &schema);
}
