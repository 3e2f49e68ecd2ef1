//! The functions' log subscriber: what `lambda_runtime::tracing::init_default_subscriber` sets
//! up, filtered by `Targets` instead of `EnvFilter`, which links a regex engine into each binary
//! (docs/performance.md, "Cold start and size").
//!
//! `RUST_LOG` keeps its per-target form (`info,waiter=debug`); span and field directives, which
//! only `EnvFilter` understands, are skipped. `AWS_LAMBDA_LOG_FORMAT=JSON` writes one JSON object
//! per line.

use std::str::FromStr;

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Installs the global subscriber, writing to stdout, from the process environment.
pub fn init() {
    let lambda_level = std::env::var("AWS_LAMBDA_LOG_LEVEL").ok();
    let rust_log = std::env::var("RUST_LOG").ok();
    let filter = filter(lambda_level.as_deref(), rust_log.as_deref());
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_target(false)
        .without_time()
        .with_writer(std::io::stdout);
    let registry = tracing_subscriber::registry().with(filter);
    // A second init (a test that already installed one) keeps the first.
    let _ = if json {
        registry.with(fmt.json()).try_init()
    } else {
        registry.with(fmt).try_init()
    };
}

/// The filter for Lambda's log level and `RUST_LOG`, as `EnvFilter` read them: `RUST_LOG`'s
/// directives if any parses, else `AWS_LAMBDA_LOG_LEVEL`, else INFO. The deployments rely on
/// that order: they set Lambda's level to TRACE (so Lambda drops nothing, the metrics line
/// included) and pass the user's `LogLevel` as `RUST_LOG`. Directives that do not parse are
/// skipped one by one, so one typo does not silence the function.
pub fn filter(lambda_level: Option<&str>, rust_log: Option<&str>) -> Targets {
    let mut targets = Targets::new();
    let mut parsed_any = false;
    for directive in rust_log
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        if directive.contains('=') {
            if let Ok(one) = Targets::from_str(directive) {
                targets.extend(one);
                parsed_any = true;
            }
        } else if let Some(default) = level(directive) {
            targets = targets.with_default(default);
            parsed_any = true;
        }
    }
    if parsed_any {
        return targets;
    }
    targets.with_default(lambda_level.and_then(level).unwrap_or(LevelFilter::INFO))
}

/// A level name in any case; Lambda's FATAL is ERROR here.
fn level(name: &str) -> Option<LevelFilter> {
    if name.eq_ignore_ascii_case("fatal") {
        return Some(LevelFilter::ERROR);
    }
    LevelFilter::from_str(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    fn enabled(f: &Targets, target: &str, level: Level) -> bool {
        f.would_enable(target, &level)
    }

    #[test]
    fn info_when_nothing_is_set() {
        let f = filter(None, None);
        assert!(enabled(&f, "waiter::poller", Level::INFO));
        assert!(!enabled(&f, "waiter::poller", Level::DEBUG));
    }

    #[test]
    fn rust_log_sets_the_default_and_per_target_levels() {
        let f = filter(None, Some("warn,waiter=debug"));
        assert!(!enabled(&f, "aws_smithy_runtime", Level::INFO));
        assert!(enabled(&f, "aws_smithy_runtime", Level::WARN));
        assert!(enabled(&f, "waiter::poller::drain", Level::DEBUG));
        assert!(!enabled(&f, "waiter::poller::drain", Level::TRACE));
    }

    #[test]
    fn rust_log_wins_over_lambda_level_as_deployed_with_trace() {
        let f = filter(Some("TRACE"), Some("info,waiter=debug"));
        assert!(!enabled(&f, "aws_smithy_runtime", Level::DEBUG));
        assert!(enabled(&f, "waiter::app", Level::DEBUG));
        assert!(!enabled(&f, "waiter::app", Level::TRACE));
        // Only target directives: everything else is off, as with EnvFilter.
        let f = filter(Some("TRACE"), Some("waiter=warn"));
        assert!(!enabled(&f, "enqueue", Level::ERROR));
        assert!(enabled(&f, "waiter", Level::WARN));
    }

    #[test]
    fn lambda_level_applies_when_rust_log_says_nothing() {
        let f = filter(Some("ERROR"), None);
        assert!(!enabled(&f, "enqueue", Level::WARN));
        assert!(enabled(&f, "enqueue", Level::ERROR));
        assert!(enabled(&filter(Some("debug"), Some("")), "x", Level::DEBUG));
        assert!(enabled(&filter(Some("FATAL"), None), "x", Level::ERROR));
        assert!(!enabled(&filter(Some("FATAL"), None), "x", Level::WARN));
    }

    #[test]
    fn a_bad_directive_is_skipped_not_fatal() {
        let f = filter(None, Some("debug,waiter=loud"));
        assert!(enabled(&f, "waiter", Level::DEBUG));
        assert!(!enabled(&f, "waiter", Level::TRACE));
        let f = filter(Some("WARN"), Some("nonsense,waiter=loud"));
        assert!(enabled(&f, "waiter", Level::WARN), "all invalid: Lambda's level");
        assert!(!enabled(&f, "waiter", Level::INFO));
        let f = filter(Some("nonsense"), Some("nonsense"));
        assert!(enabled(&f, "waiter", Level::INFO));
        assert!(!enabled(&f, "waiter", Level::DEBUG));
    }
}
