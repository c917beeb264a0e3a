//! The PostgreSQL scenarios: `chain100_ckpt_postgres` (`Durability::Async`, as
//! LangGraph's default) and `chain100_ckpt_postgres_sync` (`Durability::Sync`), the
//! shape of `chain100_ckpt_sqlite` on the server `STATEGRAPH_POSTGRES_URL` names
//! (with `STATEGRAPH_POSTGRES_TLS_CA`, the CA its certificate is checked against).
//!
//! The tables live in the schema `stategraph_bench`, emptied before each run so runs
//! do not grow the database. The timed invokes talk to the server directly; then a
//! few more invokes, on a saver of their own, go through a
//! [`RoundTripProxy`](stategraph_bench::roundtrips::RoundTripProxy) that counts the
//! round trips (`round_trips_per_superstep`). Not in `all`: they need a server.

use serde_json::json;
use stategraph::prelude::*;
use stategraph_bench::roundtrips::{RoundTripProxy, upstream, via};
use stategraph_bench::{CounterState, chain};
use stategraph_postgres::{PostgresOptions, PostgresSaver, connect_pool};

use super::{Error, Fields, check, durability_name, timed_invokes};

/// The scenarios of this module.
pub(crate) const SCENARIOS: &[&str] = &["chain100_ckpt_postgres", "chain100_ckpt_postgres_sync"];

const URL_VAR: &str = "STATEGRAPH_POSTGRES_URL";
const CA_VAR: &str = "STATEGRAPH_POSTGRES_TLS_CA";
const SCHEMA: &str = "stategraph_bench";
/// Timed invokes (after 2 warm-ups), each on a thread of its own.
const TIMED: usize = 20;
/// Invokes whose round trips are counted (after 1 warm-up through the proxy).
const COUNTED: usize = 5;

fn settings() -> Result<(String, PostgresOptions), Error> {
    let url = std::env::var(URL_VAR)
        .ok()
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| {
            format!(
                "the PostgreSQL scenarios need a server: set {URL_VAR}=postgres://user:password@host:5432/database (and {CA_VAR}=/path/to/ca.pem to check its TLS certificate)"
            )
        })?;
    let mut options = PostgresOptions::new().schema(SCHEMA);
    if let Some(ca) = std::env::var_os(CA_VAR).filter(|v| !v.is_empty()) {
        options = options.ca_file(ca);
    }
    Ok((url, options))
}

pub(crate) async fn chain100_ckpt_postgres(durability: Durability) -> Result<Fields, Error> {
    let (url, options) = settings()?;
    let saver = PostgresSaver::connect_with(&url, options.clone()).await?;
    let pool = connect_pool(&url, &options).await?;
    let db = pool.get().await?;
    db.batch_execute(
        "TRUNCATE stategraph_checkpoints, stategraph_writes, stategraph_values, stategraph_cache",
    )
    .await?;

    let graph = chain(100, CompileOptions::new().checkpointer(saver))?;
    let mut r = timed_invokes(&graph, TIMED, 100, Some(("pg", durability))).await?;
    let last_thread = format!("pg-{}", TIMED - 1);
    let last = graph
        .get_state(&RunConfig::new().thread(last_thread.as_str()))
        .await?
        .ok_or_else(|| format!("thread {last_thread} was not saved"))?;
    check(last.values.counter == 100, "saved counter")?;
    drop(graph);

    // The same work through the counting proxy, on a saver of its own: one invoke
    // first connects it, prepares its statements and opens its lock session.
    let to = upstream(&url).ok_or("STATEGRAPH_POSTGRES_URL is not a postgres:// URL")?;
    let proxy = RoundTripProxy::start(to).await?;
    let counted_url =
        via(&url, proxy.addr()).ok_or("STATEGRAPH_POSTGRES_URL is not a postgres:// URL")?;
    let counted = PostgresSaver::connect_with(&counted_url, options).await?;
    let counted_graph = chain(100, CompileOptions::new().checkpointer(counted))?;
    let config = |k: &str| {
        RunConfig::new()
            .thread(format!("rt-{k}"))
            .durability(durability)
    };
    let start = CounterState::update;
    counted_graph
        .invoke(start().counter(0u64), &config("warm"))
        .await?;
    let before = proxy.round_trips();
    for k in 0..COUNTED {
        let out = counted_graph
            .invoke(start().counter(0u64), &config(&k.to_string()))
            .await?;
        check(out.values.counter == 100, "counter of a counted invoke")?;
    }
    let round_trips = proxy.round_trips() - before;
    drop(counted_graph);

    // Every thread (2 warm-ups, the timed ones, the counted ones and their warm-up)
    // holds its input checkpoint and one per superstep.
    let rows = db
        .query(
            "SELECT thread_id, count(*) FROM stategraph_checkpoints GROUP BY thread_id",
            &[],
        )
        .await?;
    check(rows.len() == 2 + TIMED + 1 + COUNTED, "threads stored")?;
    for row in &rows {
        let stored: i64 = row.try_get(1)?;
        check(stored == 101, "checkpoints stored per thread")?;
    }
    let tls = db
        .query_one(
            "SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await?;
    let transport = match tls.try_get::<_, bool>(0)? {
        true => tls
            .try_get::<_, Option<String>>(1)?
            .unwrap_or_else(|| "TLS".into()),
        false => "plain".into(),
    };

    let supersteps = (COUNTED * 100) as f64;
    r.insert("checkpoints_per_thread".into(), json!(101));
    r.insert("threads_stored".into(), json!(rows.len()));
    r.insert("round_trips_counted_invokes".into(), json!(COUNTED));
    r.insert(
        "round_trips_per_superstep".into(),
        json!(round_trips as f64 / supersteps),
    );
    r.insert("transport".into(), json!(transport));
    r.insert(
        "checkpointer".into(),
        json!(format!("PostgresSaver::connect_with(schema {SCHEMA})")),
    );
    r.insert("durability".into(), json!(durability_name(durability)));
    Ok(r)
}
