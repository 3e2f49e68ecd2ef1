//! The `sqs-waiter` command line, built on `sqs-waiter-client`.

pub mod args;
mod browser;
pub mod parse;
pub mod preview;
pub mod render;
pub mod run;

use std::process::ExitCode;

/// Exit status of a usage error (clap's).
pub const USAGE: u8 = 2;

/// A usage error as one line naming the flag or argument, exit 2; `--help` and `--version` print
/// as clap prints them.
pub fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    // clap's message, up to the usage and tips it adds after a blank line.
    let text = e.render().to_string();
    let head = text.split("\n\n").next().unwrap_or(&text);
    let line = head.split_whitespace().collect::<Vec<_>>().join(" ");
    eprintln!("sqs-waiter: {}", line.trim_start_matches("error: "));
    ExitCode::from(USAGE)
}
