//! The round-trip counting proxy as a program, for clients in other languages (the
//! LangGraph side of the PostgreSQL scenarios, `bench/langgraph/bench.py`).
//!
//! ```text
//! pg_roundtrip_proxy HOST:PORT
//! ```
//!
//! Prints `listening 127.0.0.1:PORT` once the proxy listens, then, for each line read
//! on its standard input, the client request flights counted so far (see
//! [`stategraph_bench::roundtrips`]). Stops at the end of its input.

use std::io::{BufRead, Write};

use stategraph_bench::roundtrips::RoundTripProxy;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(upstream), None) = (args.next(), args.next()) else {
        eprintln!("usage: pg_roundtrip_proxy HOST:PORT");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let proxy = runtime.block_on(RoundTripProxy::start(upstream))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening {}", proxy.addr())?;
    out.flush()?;
    for line in std::io::stdin().lock().lines() {
        line?;
        writeln!(out, "{}", proxy.round_trips())?;
        out.flush()?;
    }
    drop(proxy);
    Ok(())
}
