//! A retry policy on a flaky node: transient failures are retried with exponential
//! backoff until an attempt succeeds; a permanent failure is not retried and fails the
//! run with the node's own error.
//!
//! Run it with `cargo run -p stategraph-examples --example retry`.

use std::time::{Duration, Instant};

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Quote {
    /// How many attempts the rate service fails before it answers (the scenario).
    outages: u32,
    /// Whether it refuses the credentials instead (the scenario).
    revoked_key: bool,
    rate: f64,
    succeeded_on: u32,
    total: String,
}

/// What the rate service can fail with.
#[derive(Debug)]
enum RateError {
    /// Worth retrying: the service is overloaded.
    Unavailable,
    /// Not worth retrying: the same request fails the same way.
    Unauthorized,
}

impl std::fmt::Display for RateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RateError::Unavailable => f.write_str("rate service unavailable (HTTP 503)"),
            RateError::Unauthorized => f.write_str("rate service refused the API key (HTTP 401)"),
        }
    }
}

impl std::error::Error for RateError {}

/// Fails its first `outages` attempts with a transient error, or every attempt with a
/// permanent one when the key is revoked.
#[node]
async fn fetch_rate(quote: &Quote, ctx: &NodeContext) -> Result<QuoteUpdate, RateError> {
    tokio::time::sleep(Duration::from_millis(5)).await;
    let outcome = if quote.revoked_key {
        Err(RateError::Unauthorized)
    } else if ctx.attempt() <= quote.outages {
        Err(RateError::Unavailable)
    } else {
        Ok(Quote::update().rate(11.7).succeeded_on(ctx.attempt()))
    };
    match &outcome {
        Ok(_) => println!("  {} attempt {}: ok", ctx.node(), ctx.attempt()),
        Err(e) => println!("  {} attempt {}: {e}", ctx.node(), ctx.attempt()),
    }
    outcome
}

#[node]
fn price(quote: &Quote) -> QuoteUpdate {
    Quote::update().total(format!("120 EUR = {:.0} NOK", 120.0 * quote.rate))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let policy = RetryPolicy::new()
        .max_attempts(4)
        .initial_interval(Duration::from_millis(50))
        .backoff_factor(2.0)
        .retry_on(|error| {
            matches!(
                error.downcast_ref::<RateError>(),
                Some(RateError::Unavailable)
            )
        });
    let waits: Vec<String> = (1..4)
        .map(|n| format!("{} ms", policy.delay_after(n).as_millis()))
        .collect();
    println!(
        "policy: 4 attempts, waits {} (each plus up to half again of jitter), only for HTTP 503",
        waits.join(", ")
    );
    let graph = StateGraph::<Quote>::new()
        .add_node(fetch_rate)
        .add_node(price)
        .add_edge(START, fetch_rate)
        .add_edge(fetch_rate, price)
        .retry(fetch_rate, policy)
        .compile()?;

    println!("\na service that is down for two attempts:");
    let started = Instant::now();
    let out = graph
        .invoke(Quote::update().outages(2u32), &RunConfig::new())
        .await?;
    println!(
        "fetch_rate succeeded on attempt {} after {} ms: {}",
        out.values.succeeded_on,
        started.elapsed().as_millis(),
        out.values.total
    );

    println!("\na revoked API key (not retried):");
    let err = graph
        .invoke(Quote::update().revoked_key(true), &RunConfig::new())
        .await
        .err()
        .ok_or("a revoked key fails the run")?;
    let cause = err
        .node_error()
        .and_then(|e| e.downcast_ref::<RateError>())
        .ok_or("the run fails with the node's error")?;
    println!("run failed: {err}");
    println!("cause: {cause:?}");
    Ok(())
}
