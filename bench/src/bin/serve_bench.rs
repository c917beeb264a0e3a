//! Serves the benchmark graph `chain3` (see [`stategraph_bench::chain3`]) with
//! `stategraph-server`, for `serve_load` to drive:
//!
//! ```text
//! serve_bench [--port 2024] [--db PATH] [--jobs N]
//! ```
//!
//! Prints `listening on http://ADDR` once bound and serves until Ctrl-C or SIGTERM.
//! Without `--db` the SQLite file lives in a temporary directory removed at exit.

use clap::Parser;
use stategraph_server::Server;

/// Command line of `serve_bench`.
#[derive(Parser, Debug)]
#[command(about = "Serve the `chain3` benchmark graph with stategraph-server")]
struct Args {
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 2024)]
    port: u16,
    /// The SQLite file for threads, runs and checkpoints (default: a temporary file).
    #[arg(long)]
    db: Option<std::path::PathBuf>,
    /// Runs executed at once (see docs/PERFORMANCE.md for how the default was picked).
    #[arg(long, default_value_t = 64)]
    jobs: usize,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let tmp = tempfile::tempdir()?;
    let db = args
        .db
        .clone()
        .unwrap_or_else(|| tmp.path().join("serve-bench.sqlite"));
    let running = Server::new()
        .graph("chain3", stategraph_bench::chain3())
        .sqlite(&db)
        .workers(args.jobs)
        .bind(&format!("127.0.0.1:{}", args.port))
        .await?;
    println!("listening on http://{}", running.local_addr());
    eprintln!(
        "graph `chain3`, {} jobs, database {}",
        args.jobs,
        db.display()
    );
    stop_signal().await;
    running.shutdown().await?;
    drop(tmp);
    Ok(())
}

/// Ctrl-C or SIGTERM.
async fn stop_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
