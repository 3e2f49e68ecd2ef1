//! `enqueue`'s repetition flags as the contract's `repeat`.

use sqs_waiter_client::{CatchUp, Repeat};

/// The `repeat` of `--cron` / `--every` / `--schedule` and their options, with the zone (clap
/// refuses the options without one of them), or a one-off job's `schedule` (`at(...)`): the
/// function tells which `--schedule` is and refuses a one-off job's `--until` or `--count`.
pub(super) fn repeat_of(r: &crate::args::Repetition) -> (Option<Repeat>, Option<String>, Option<String>) {
    // clap took only skip, one or all.
    let policy = r.catch_up.as_deref().and_then(CatchUp::parse);
    let (mut repeat, at) = match (&r.cron, r.every, &r.schedule) {
        (Some(expr), _, _) => (Repeat::cron(expr.clone()), None),
        (None, Some(s), _) => (
            Repeat {
                every_s: Some(s),
                ..Repeat::default()
            },
            None,
        ),
        (None, None, Some(at)) if at.starts_with("at(") => (Repeat::default(), Some(at.clone())),
        (None, None, Some(expr)) => (Repeat::expression(expr.clone()), None),
        (None, None, None) => return (None, None, None),
    };
    (repeat.until, repeat.count, repeat.catch_up) = (r.until, r.count, policy);
    let series = repeat != Repeat::default();
    (series.then_some(repeat), r.tz.clone(), at)
}
