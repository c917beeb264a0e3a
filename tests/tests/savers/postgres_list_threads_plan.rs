//! Listing threads must stay one pass over the table however the table has grown
//! since the database planned the query. PostgreSQL keeps the plan of a prepared
//! statement until the table is analyzed again; the listing used to pick each
//! thread's latest checkpoint with a correlated `MAX(seq)` subquery, and a plan made
//! while the table was small ran that subquery as a scan of the whole table per
//! thread: listing the 10,000 threads of a benchmark took minutes.
//!
//! Needs a server: set `STATEGRAPH_POSTGRES_URL` (see `stategraph_tests::servers`).

use stategraph::checkpoint::record::THREADS_SQL;
use stategraph::checkpoint::{
    CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointSource,
};
use stategraph_postgres::{PostgresOptions, PostgresSaver};
use stategraph_tests::{conformance, servers};

/// Simple-protocol query: the rows' first column, as text.
async fn first_column(client: &tokio_postgres::Client, sql: &str) -> Vec<String> {
    client
        .simple_query(sql)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_plan_made_on_a_small_table_stays_linear_after_it_grows() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = servers::fresh_schema("listplan");
    let saver = PostgresSaver::connect_with(&url, PostgresOptions::new().schema(&schema))
        .await
        .unwrap();
    saver
        .put(
            &CheckpointConfig::thread("seed"),
            conformance::checkpoint(1),
            CheckpointMetadata::new(CheckpointSource::Input, -1),
        )
        .await
        .unwrap();

    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "SET search_path TO {schema}; ANALYZE stategraph_checkpoints;
             PREPARE listing AS {THREADS_SQL}; EXECUTE listing;"
        ))
        .await
        .unwrap();
    // 3,000 more threads of 3 checkpoints each, the seed's rows copied.
    client
        .batch_execute(
            "INSERT INTO stategraph_checkpoints
                 (thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint,
                  value_channels, metadata, seq)
             SELECT 't' || t, '', 'c' || s, NULL, c.checkpoint, c.value_channels,
                    c.metadata, s
             FROM generate_series(1, 3000) AS t, generate_series(1, 3) AS s,
                  (SELECT * FROM stategraph_checkpoints LIMIT 1) AS c",
        )
        .await
        .unwrap();

    // The plan cached on the small table: no step of it runs once per thread.
    let plan = first_column(&client, "EXPLAIN EXECUTE listing").await;
    assert!(
        plan.iter()
            .any(|line| line.contains("stategraph_checkpoints")),
        "the plan reads the table: {plan:#?}"
    );
    assert!(
        !plan.iter().any(|line| line.contains("SubPlan")),
        "a subquery runs per thread in the cached plan: {plan:#?}"
    );

    // And the listing itself: one row per thread, its latest checkpoint.
    let threads = saver.list_threads().await.unwrap();
    assert_eq!(threads.len(), 3001);
    let t7 = threads.iter().find(|t| t.thread_id == "t7").unwrap();
    assert_eq!(
        (t7.checkpoint_count, t7.latest_checkpoint_id.as_str()),
        (3, "c3")
    );
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
