//! Storage growth on the SQLite saver (the `state_big` benchmark shape): 1 000
//! supersteps that each append 1 KiB to a thread's state take a few times the data,
//! not the quadratic growth of storing the whole list at every step, and every
//! checkpoint still restores.

use std::path::Path;

use stategraph::checkpoint::ListOptions;
use stategraph::prelude::*;
use stategraph_sqlite::{SqliteOptions, SqliteSaver, Synchronous};

const STEPS: u32 = 1000;
const KIB: usize = 1024;

#[derive(GraphState, Clone, Debug, Default)]
struct Big {
    counter: u32,
    #[reducer(append)]
    items: Vec<String>,
}

#[node]
fn append(s: &Big, _ctx: &NodeContext) -> BigUpdate {
    Big::update()
        .counter(s.counter + 1)
        .items(["x".repeat(KIB)])
}

fn big_graph(path: &Path) -> CompiledGraph<Big> {
    // Flushing less often changes no byte of the file, only how long the run takes.
    let options = SqliteOptions::new().synchronous(Synchronous::Normal);
    StateGraph::<Big>::new()
        .add_node(append)
        .add_edge(START, append)
        .add_conditional_edges(
            append,
            |s: &Big| {
                if s.counter >= STEPS {
                    Route::end()
                } else {
                    Route::to(append)
                }
            },
            (append, END),
        )
        .compile_with(
            CompileOptions::new().checkpointer(SqliteSaver::open_with(path, options).unwrap()),
        )
        .unwrap()
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Bytes of stored JSON: channel values, pending writes, checkpoint rows.
fn record_bytes(path: &Path) -> [u64; 3] {
    let conn = rusqlite::Connection::open(path).unwrap();
    let sum = |sql: &str| -> u64 {
        let n: i64 = conn.query_row(sql, [], |row| row.get(0)).unwrap();
        n as u64
    };
    [
        sum("SELECT sum(length(CAST(value AS BLOB))) FROM stategraph_values"),
        sum("SELECT sum(length(CAST(value AS BLOB))) FROM stategraph_writes"),
        sum(
            "SELECT sum(length(CAST(checkpoint AS BLOB)) + length(CAST(metadata AS BLOB)) \
             + length(CAST(value_channels AS BLOB))) FROM stategraph_checkpoints",
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_appended_kibibytes_take_a_few_mebibytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.db");
    let graph = big_graph(&path);
    let config = RunConfig::new().thread("big").recursion_limit(1010);

    let started = std::time::Instant::now();
    let out = graph.invoke(Big::update(), &config).await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(out.values.counter, STEPS);
    assert_eq!(out.values.items.len(), STEPS as usize);
    drop(graph);

    // The last connection closed folds the log into the file, unless another
    // process or a busy machine got in its way: fold it here, then count both.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
    }
    let wal = path.with_file_name("big.db-wal");
    let (db_bytes, wal_bytes) = (file_len(&path), file_len(&wal));
    let total = db_bytes + wal_bytes;
    let data = u64::from(STEPS) * KIB as u64;
    let [values, writes, checkpoints] = record_bytes(&path);
    println!(
        "state_big on sqlite: {STEPS} steps in {elapsed:.2?}; file {db_bytes} + wal {wal_bytes} \
         = {total} bytes ({:.2} x the {data} bytes appended): channel values {values}, \
         pending writes {writes}, checkpoints and metadata {checkpoints}",
        total as f64 / data as f64,
    );
    // A delta channel stores a whole value again each time its length doubles, so its
    // values take about twice the data.
    assert!(values <= data * 9 / 4, "channel values: {values} bytes");
    // Each step's task writes (its 1 KiB again) are kept with the checkpoint before it.
    assert!(writes <= data * 5 / 4, "pending writes: {writes} bytes");
    // Values and writes: 3 x the data; then per checkpoint about 0.7 KiB of checkpoint
    // and metadata JSON, and keys, indexes and page slack.
    assert!(
        total <= 3 * data + u64::from(STEPS) * 1536,
        "{total} bytes on disk"
    );

    // Checkpoints still restore, from a new saver: the last, and one in the middle
    // (deltas on an earlier whole value).
    let graph = big_graph(&path);
    let thread = RunConfig::new().thread("big");
    let last = graph.get_state(&thread).await.unwrap().unwrap();
    assert_eq!(last.values.items.len(), STEPS as usize);
    let middle = graph
        .get_state_history(&thread, &ListOptions::new().filter("step", 400))
        .await
        .unwrap();
    assert_eq!(middle.len(), 1);
    assert_eq!(middle[0].values.counter, 401);
    assert_eq!(middle[0].values.items.len(), 401);
}
