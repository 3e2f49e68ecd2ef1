use std::process::ExitCode;

use clap::Parser;
use sqs_waiter::args::Cli;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match Cli::try_parse() {
        Ok(cli) => sqs_waiter::run::run(cli).await,
        Err(e) => sqs_waiter::usage_error(&e),
    }
}
