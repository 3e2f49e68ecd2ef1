//! `cargo run -p sqs-waiter-schema` writes schema/contract.schema.json; `-- --check` only
//! compares, and exits 1 when the committed file differs from the types.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join(sqs_waiter_schema::SCHEMA_PATH);
    let want = sqs_waiter_schema::rendered();
    let check = std::env::args().skip(1).any(|a| a == "--check");
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have == want {
        println!("{} is up to date", sqs_waiter_schema::SCHEMA_PATH);
        return ExitCode::SUCCESS;
    }
    if check {
        eprintln!(
            "{} differs from crates/contract's types: run `make schema`",
            sqs_waiter_schema::SCHEMA_PATH
        );
        return ExitCode::FAILURE;
    }
    if let Err(e) = std::fs::write(&path, want) {
        eprintln!("writing {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    println!("wrote {}", sqs_waiter_schema::SCHEMA_PATH);
    ExitCode::SUCCESS
}
