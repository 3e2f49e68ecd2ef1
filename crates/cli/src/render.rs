//! Human output. Each function returns the text, so that it can be snapshot-tested on fixed data.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use comfy_table::{presets, CellAlignment, ColumnConstraint, ContentArrangement, Table, Width};
use console::style;
use sqs_waiter_client::{
    CancelManyReply, JobReply, JobStatus, PauseReply, QueuesReply, RedriveAllReply, StatsReply, DEFAULT_PRIORITY,
    DEFAULT_WEIGHT,
};

/// Widest and narrowest a histogram bar may be drawn.
const MIN_BAR: usize = 10;
const MAX_BAR: usize = 100;

pub fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

fn opt_time(t: Option<DateTime<Utc>>) -> String {
    t.map(time).unwrap_or_default()
}

/// A span in the largest units that matter: `41s`, `2h 5m`, `3days 4h`.
pub fn span(seconds: f64) -> String {
    let whole = seconds.max(0.0).round() as u64;
    // Keep the two largest units: an operator reads "3days 4h", not "3days 4h 12m 9s".
    let d = Duration::from_secs(whole);
    let text = humantime::format_duration(d).to_string();
    text.split(' ').take(2).collect::<Vec<_>>().join(" ")
}

/// One line about a job after enqueue, cancel, reschedule or redrive.
pub fn outcome(r: &JobReply) -> String {
    let at = opt_time(r.perform_at);
    let line = match r.status {
        JobStatus::Sent => format!(
            "sent {} to {} (message {}, DelaySeconds {})",
            r.job_id,
            r.queue,
            r.message_id.as_deref().unwrap_or("?"),
            r.delay_seconds.unwrap_or(0)
        ),
        JobStatus::Scheduled if r.replaced == Some(true) => format!(
            "replaced: {} on {} is now due {at} (version {})",
            r.job_id,
            r.queue,
            r.version.unwrap_or(0)
        ),
        JobStatus::Scheduled if r.replaced == Some(false) && r.duplicate == Some(true) => format!(
            "scheduled {} on {} for {at} (its earlier message had left for SQS)",
            r.job_id, r.queue
        ),
        JobStatus::Scheduled if r.duplicate == Some(true) => {
            format!(
                "duplicate: {} is already scheduled on {} for {at}; nothing changed",
                r.job_id, r.queue
            )
        }
        JobStatus::Scheduled => format!("scheduled {} on {} for {at}", r.job_id, r.queue),
        JobStatus::Rescheduled => format!(
            "rescheduled {} on {} for {at} (version {})",
            r.job_id,
            r.queue,
            r.version.unwrap_or(0)
        ),
        JobStatus::Cancelled => format!("cancelled {} on {}", r.job_id, r.queue),
        _ if r.replay_of.is_some() && r.duplicate != Some(true) => format!(
            "replayed {} as {} on {}: {} for {at}",
            r.replay_of.as_deref().unwrap_or("?"),
            r.job_id,
            r.queue,
            r.status
        ),
        _ if r.duplicate == Some(true) => format!(
            "duplicate: {} on {} is already {}; nothing changed",
            r.job_id, r.queue, r.status
        ),
        status => format!("{} {} on {}", status, r.job_id, r.queue),
    };
    match r.maybe_delivered_at {
        Some(t) => format!(
            "{line} (a poller run that crashed may have delivered it at {}; this acts on its later delivery)",
            time(t)
        ),
        None => line,
    }
}

/// Why a job reply means "not done", for stderr (exit 1); `None` when it was done.
pub fn not_done(r: &JobReply) -> Option<String> {
    match r.status {
        JobStatus::NotFound => Some(format!("job_id: no job {} on queue {}", r.job_id, r.queue)),
        JobStatus::Dispatching => Some(format!(
            "job_id: {} is being handed to SQS by a poller: not changed, it may be delivered; try again in a minute",
            r.job_id
        )),
        JobStatus::Conflict if r.version.is_none() => Some(format!(
            "job_id: {} is still stored on {}: nothing to replay until it leaves the table",
            r.job_id, r.queue
        )),
        JobStatus::Conflict => Some(format!(
            "if_version: {} is at version {}: not changed",
            r.job_id,
            r.version.unwrap_or(0)
        )),
        JobStatus::Paused => Some(format!(
            "job_id: {} on {} is paused (or its queue is): resume it first",
            r.job_id, r.queue
        )),
        JobStatus::NotReplayable => Some(format!(
            "job_id: history keeps no message of {} on {} (WAITER_HISTORY_BODY was off when it left the table, or history no longer knows it)",
            r.job_id, r.queue
        )),
        _ => None,
    }
}

/// Every field of one job, for `get`.
pub fn details(r: &JobReply) -> String {
    let mut t = Table::new();
    t.load_preset(presets::NOTHING);
    let mut row = |k: &str, v: String| {
        if !v.is_empty() {
            t.add_row(vec![k.to_owned(), v]);
        }
    };
    row("job_id", r.job_id.clone());
    row("queue", r.queue.clone());
    row("status", r.status.to_string());
    row("perform_at", opt_time(r.perform_at));
    row("version", r.version.map(|v| v.to_string()).unwrap_or_default());
    row("enqueued_at", opt_time(r.enqueued_at));
    row("expires_at", opt_time(r.expires_at));
    row("priority", r.priority.map(|p| p.to_string()).unwrap_or_default());
    row("weight", r.weight.map(|w| w.to_string()).unwrap_or_default());
    row(
        "repeat",
        r.repeat
            .as_ref()
            .map(|rep| repetition(rep, r.time_zone.as_deref()))
            .unwrap_or_default(),
    );
    row("occurrences", r.occurrences.map(|n| n.to_string()).unwrap_or_default());
    row("paused_at", opt_time(r.paused_at));
    row("group", r.message_group_id.clone().unwrap_or_default());
    row("trace_header", r.trace_header.clone().unwrap_or_default());
    row(
        "deduplication_id",
        r.message_deduplication_id.clone().unwrap_or_default(),
    );
    if let Some(w) = r.windows.as_ref().filter(|_| r.repeat.is_none()) {
        let spans: Vec<String> = w.iter().map(|w| format!("{}-{}", w.from, w.to)).collect();
        row(
            "windows",
            format!("{} {}", spans.join(", "), r.time_zone.as_deref().unwrap_or("UTC")),
        );
    }
    row("sent_at", opt_time(r.sent_at));
    row("message_id", r.message_id.clone().unwrap_or_default());
    row("cancelled_at", opt_time(r.cancelled_at));
    row("maybe_delivered_at", opt_time(r.maybe_delivered_at));
    row("expired_at", opt_time(r.expired_at));
    row("parked_at", opt_time(r.parked_at));
    let number = |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_default();
    row("attempt", number(r.attempt));
    row("attempts", number(r.attempts));
    row("reason", r.reason.clone().unwrap_or_default());
    if let Some(e) = &r.error {
        row("error", format!("{}: {}", e.code, e.message));
    }
    if let Some(attrs) = &r.message_attributes {
        for (name, a) in attrs {
            let value = a.string_value.as_deref().or(a.binary_value.as_deref()).unwrap_or("");
            row(&format!("attribute {name}"), format!("{} {value}", a.data_type));
        }
    }
    if let Some(body) = &r.message_body {
        row("message_body", format!("{} bytes (--json shows it)", body.len()));
    }
    t.to_string()
}

/// Jobs in due order, for `list` and `parked`.
pub fn jobs(jobs: &[JobReply], more: bool) -> String {
    if jobs.is_empty() {
        return "no jobs".into();
    }
    let parked = jobs.iter().any(|j| j.status == JobStatus::Parked);
    let mut t = Table::new();
    t.load_preset(presets::NOTHING);
    let mut header = vec!["JOB ID", "DUE (UTC)", "STATUS", "VERSION"];
    // Jobs parked because their attempts ran out (`retry`) show how many were made.
    let retried = jobs.iter().any(|j| j.attempts.is_some());
    if parked {
        header.extend(["PARKED AT", "ERROR"]);
    }
    if retried {
        header.push("ATTEMPTS");
    }
    // Shown once a job ranks or weighs otherwise than the default: `priority` or
    // `priority×weight`.
    let ranked = jobs
        .iter()
        .any(|j| j.priority.is_some_and(|p| p != DEFAULT_PRIORITY) || j.weight.is_some_and(|w| w != DEFAULT_WEIGHT));
    if ranked {
        header.push("PRIORITY");
    }
    let series = jobs.iter().any(|j| j.repeat.is_some());
    if series {
        header.push("REPEATS");
    }
    t.set_header(header);
    for j in jobs {
        let mut row = vec![
            j.job_id.clone(),
            opt_time(j.perform_at),
            j.status.to_string(),
            j.version.map(|v| v.to_string()).unwrap_or_default(),
        ];
        if parked {
            row.push(opt_time(j.parked_at));
            row.push(
                j.error
                    .as_ref()
                    .map(|e| format!("{}: {}", e.code, e.message))
                    .unwrap_or_default(),
            );
        }
        if retried {
            row.push(j.attempts.map(|n| n.to_string()).unwrap_or_default());
        }
        if ranked {
            row.push(match (j.priority, j.weight) {
                (Some(p), Some(w)) if w != DEFAULT_WEIGHT => format!("{p}×{w}"),
                (Some(p), _) => p.to_string(),
                _ => String::new(),
            });
        }
        if series {
            let zone = j.time_zone.as_deref();
            row.push(j.repeat.as_ref().map(|r| repetition(r, zone)).unwrap_or_default());
        }
        t.add_row(row);
    }
    if let Some(c) = t.column_mut(3) {
        c.set_cell_alignment(CellAlignment::Right);
    }
    let n = match jobs.len() {
        1 => "1 job".to_owned(),
        n => format!("{n} jobs"),
    };
    let tail = if more {
        format!("{n} shown; more match (raise --limit)")
    } else {
        n
    };
    format!("{t}\n{tail}")
}

/// The counts and a due-time histogram drawn to fit `width` columns.
pub fn stats(s: &StatsReply, width: usize) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{}  {} scheduled, {} parked   (at {})\n",
        style(&s.queue).bold(),
        s.scheduled,
        s.parked,
        time(s.now)
    ));
    if let Some(since) = s.paused_at {
        let line = format!(
            "PAUSED since {}: nothing is sent until `sqs-waiter resume {}`",
            time(since),
            s.queue
        );
        out.push_str(&format!("{}\n", style(line).yellow().bold()));
    }
    if s.paused_jobs > 0 {
        out.push_str(&format!("paused jobs {}\n", s.paused_jobs));
    }
    if let Some(formats) = &s.formats {
        let each: Vec<String> = formats.iter().map(|(f, n)| format!("{f}: {n}")).collect();
        out.push_str(&format!("item formats  {}\n", each.join(", ")));
    }
    if s.overdue > 0 {
        let line = format!("overdue    {}   oldest {} overdue", s.overdue, span(s.oldest_overdue_s));
        out.push_str(&format!("{}\n", style(line).red().bold()));
        // Shown once an overdue job ranks otherwise than the default.
        if s.overdue_by_priority.keys().any(|c| c != "100") {
            let classes: Vec<String> = s
                .overdue_by_priority
                .iter()
                .map(|(class, n)| format!("{class}: {n}"))
                .collect();
            out.push_str(&format!("  by priority  {}\n", classes.join(", ")));
        }
    } else {
        out.push_str("overdue    0\n");
    }
    match s.next_due {
        Some(t) => {
            let secs = (t - s.now).num_milliseconds() as f64 / 1e3;
            out.push_str(&format!("next due   {} (in {})\n", time(t), span(secs)));
        }
        None => out.push_str("next due   -\n"),
    }
    out.push('\n');

    let labels: Vec<String> = s
        .histogram
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let from = span((i as u64 * s.bucket_s) as f64);
            match b.to {
                Some(_) => format!("{from} – {}", span(((i as u64 + 1) * s.bucket_s) as f64)),
                None => format!("{from} –"),
            }
        })
        .collect();
    let label_w = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .max("DUE IN".len());
    let count_w = s
        .histogram
        .iter()
        .map(|b| b.count.to_string().len())
        .max()
        .unwrap_or(1)
        .max("JOBS".len());
    // Borders and padding of three columns take 6.
    let bar_w = width.saturating_sub(label_w + count_w + 6).clamp(MIN_BAR, MAX_BAR);
    let max = s.histogram.iter().map(|b| b.count).max().unwrap_or(0);

    let mut t = Table::new();
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec!["DUE IN", "JOBS", ""]);
    for (label, b) in labels.into_iter().zip(&s.histogram) {
        t.add_row(vec![label, b.count.to_string(), bar(b.count, max, bar_w)]);
    }
    if let Some(c) = t.column_mut(1) {
        c.set_cell_alignment(CellAlignment::Right);
    }
    if let Some(c) = t.column_mut(2) {
        c.set_constraint(ColumnConstraint::UpperBoundary(Width::Fixed(bar_w as u16)));
    }
    out.push_str(&t.to_string());
    out
}

/// A bar of `count` against `max` in `width` cells, in eighths of a cell; any non-zero count
/// shows at least a sliver.
fn bar(count: u64, max: u64, width: usize) -> String {
    const EIGHTHS: [char; 8] = ['▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'];
    if count == 0 || max == 0 {
        return String::new();
    }
    let eighths = ((count as u128 * width as u128 * 8) / max as u128).max(1) as usize;
    let mut s = "█".repeat(eighths / 8);
    if eighths % 8 > 0 {
        s.push(EIGHTHS[eighths % 8 - 1]);
    }
    s
}

pub fn cancel_many(r: &CancelManyReply) -> String {
    let mut line = format!("{}: cancelled {}, not found {}", r.queue, r.cancelled, r.not_found);
    if r.dispatching > 0 {
        line.push_str(&format!(
            ", dispatching {} (being handed to SQS: not cancelled, may be delivered)",
            r.dispatching
        ));
    }
    if r.maybe_delivered > 0 {
        line.push_str(&format!(
            " ({} of the cancelled may have been delivered once by a poller run that crashed)",
            r.maybe_delivered
        ));
    }
    line
}

pub fn redrive_all(r: &RedriveAllReply) -> String {
    let mut line = format!("{}: redriven {}", r.queue, r.redriven);
    if r.duplicates > 0 {
        line.push_str(&format!(
            ", {} left parked (their ids are scheduled again)",
            r.duplicates
        ));
    }
    line
}

/// A series' repetition in one cell (the contract's own wording, shared with the console).
pub fn repetition(r: &sqs_waiter_client::Repeat, zone: Option<&str>) -> String {
    r.describe(zone)
}

/// What a `pause` or `resume` did.
pub fn pause(r: &PauseReply) -> String {
    let what = match &r.job_id {
        Some(id) => format!("{}/{id}", r.queue),
        None => format!("queue {}", r.queue),
    };
    match r.paused_at {
        Some(since) => format!("{} {what} (since {})", r.status, time(since)),
        None => format!("{} {what}", r.status),
    }
}

/// Why a `pause` or `resume` did nothing, if it did not.
pub fn pause_not_done(r: &PauseReply) -> Option<String> {
    let id = r.job_id.as_deref().unwrap_or_default();
    match r.status {
        JobStatus::NotFound => Some(format!("job_id: no job {id} stored on queue {}", r.queue)),
        JobStatus::Dispatching => Some(format!(
            "job_id: {id} is being handed to SQS by a poller: not paused, it may be delivered"
        )),
        _ => None,
    }
}

/// The queues the function serves.
pub fn queues(r: &QueuesReply) -> String {
    let mut t = Table::new();
    t.load_preset(presets::NOTHING);
    t.set_header(vec!["queue", "fifo", "paused"]);
    for q in &r.queues {
        let paused = q
            .paused_at
            .map_or_else(|| "no".to_owned(), |since| format!("since {}", time(since)));
        t.add_row(vec![
            q.queue.clone(),
            if q.fifo { "yes" } else { "no" }.to_owned(),
            paused,
        ]);
    }
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_largest_and_never_vanish() {
        assert_eq!(bar(10, 10, 4), "████");
        assert_eq!(bar(5, 10, 4), "██");
        assert_eq!(bar(1, 1000, 4), "▏");
        assert_eq!(bar(0, 10, 4), "");
        assert_eq!(span(41.7), "42s");
        assert_eq!(span(3.0 * 86_400.0 + 4.0 * 3600.0 + 12.0 * 60.0), "3days 4h");
    }
}
