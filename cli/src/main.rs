//! The `stategraph` binary; see the `stategraph_cli` crate docs for its commands,
//! output and exit codes.

use std::process::ExitCode;

use clap::Parser;
use stategraph_cli::{Cli, TerminalConfirm, exit, run};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let target = match cli.target() {
        Ok(target) => target,
        Err(e) => e.exit(),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::FAILURE);
        }
    };
    let mut stdout = std::io::stdout().lock();
    match runtime.block_on(run(&cli, &target, &mut stdout, &mut TerminalConfirm)) {
        Ok(()) => ExitCode::from(exit::OK),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
