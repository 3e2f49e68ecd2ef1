//! Opens the console in the operator's browser, as bull-board's CLI does; the address is
//! printed too, so a machine without one loses nothing.

use std::process::{Command, Stdio};

/// Best effort: the platform's opener, detached, its output dropped.
pub fn open(url: &str) {
    let mut command = if cfg!(target_os = "macos") {
        Command::new("open")
    } else if cfg!(windows) {
        let mut c = Command::new("cmd");
        c.args(["/C", "start", ""]);
        c
    } else {
        Command::new("xdg-open")
    };
    let _ = command
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}
