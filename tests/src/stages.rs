//! Where a dispatch run's time goes (issue 63, item 1): its calls as the bench's endpoints saw
//! them (the table's, through the fault proxy or the in-memory table, and SQS's), grouped into
//! stages. For each stage, the time at least one of its calls was in flight and the calls'
//! summed time; and the run's time with no call in flight at all ("waiting on nothing": the
//! client's own work, and any wait that makes no call, such as the roll call).

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Serialize;

use crate::meter::{Call, CallMeter};

/// The stage an operation belongs to.
pub fn stage_of(operation: &str) -> &'static str {
    match operation {
        "Query" => "query",
        "BatchGetItem" => "re-read",
        "SendMessageBatch" | "SendMessage" => "send",
        "BatchExecuteStatement" | "DeleteItem" | "BatchWriteItem" | "TransactWriteItems" | "ExecuteStatement" => {
            "removal"
        }
        "UpdateItem" | "PutItem" => "lease and ledger",
        "GetItem" => "single reads",
        _ => "other",
    }
}

/// One stage of one run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stage {
    pub calls: usize,
    /// Wall time with at least one of the stage's calls in flight, seconds.
    pub busy_s: f64,
    /// The stage's calls' summed time, seconds (more than `busy_s` where they overlap).
    pub call_s: f64,
}

/// A run's time by stage.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stages {
    pub wall_s: f64,
    pub stages: BTreeMap<String, Stage>,
    /// Wall time with no call in flight, seconds.
    pub idle_s: f64,
    /// From the run's start to its first `Query`: what comes before any job is read (the
    /// poller's pause and shard reads and its leases), seconds.
    pub head_s: f64,
    /// From the answer of its last removal to the run's end (the poller's lease releases),
    /// seconds.
    pub tail_s: f64,
}

/// The union of `[arrived, answered]` intervals, in seconds, clipped to `[from, to]`.
fn covered(calls: &[&Call], from: Instant, to: Instant) -> f64 {
    let mut spans: Vec<(Instant, Instant)> = calls
        .iter()
        .map(|c| (c.arrived.max(from), c.answered.min(to)))
        .filter(|(a, b)| a < b)
        .collect();
    spans.sort_by_key(|s| s.0);
    let mut total = 0.0;
    let mut current: Option<(Instant, Instant)> = None;
    for (a, b) in spans {
        current = match current {
            Some((ca, cb)) if a <= cb => Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                total += (cb - ca).as_secs_f64();
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    if let Some((a, b)) = current {
        total += (b - a).as_secs_f64();
    }
    total
}

/// The stages of the run between `from` and `to`, from every meter's calls.
pub fn measure(meters: &[&CallMeter], from: Instant, to: Instant) -> Stages {
    let calls: Vec<Call> = meters.iter().flat_map(|m| m.calls_between(from, to)).collect();
    let mut by_stage: BTreeMap<&str, Vec<&Call>> = BTreeMap::new();
    for c in &calls {
        by_stage.entry(stage_of(&c.operation)).or_default().push(c);
    }
    let stages = by_stage
        .iter()
        .map(|(name, cs)| {
            let stage = Stage {
                calls: cs.len(),
                busy_s: covered(cs, from, to),
                call_s: cs.iter().map(|c| (c.answered - c.arrived).as_secs_f64()).sum(),
            };
            (name.to_string(), stage)
        })
        .collect();
    let all: Vec<&Call> = calls.iter().collect();
    let wall_s = (to - from).as_secs_f64();
    let first_query = all.iter().filter(|c| c.operation == "Query").map(|c| c.arrived).min();
    let last_removal = all
        .iter()
        .filter(|c| stage_of(&c.operation) == "removal")
        .map(|c| c.answered)
        .max();
    Stages {
        wall_s,
        stages,
        idle_s: (wall_s - covered(&all, from, to)).max(0.0),
        head_s: first_query.map_or(0.0, |q| q.saturating_duration_since(from).as_secs_f64()),
        tail_s: last_removal.map_or(0.0, |r| to.saturating_duration_since(r).as_secs_f64()),
    }
}

/// The stage table of one row: each stage's busy time (and calls) for the poller and the
/// baseline with the re-read, then the time with nothing in flight.
pub fn table(title: &str, poller: &Stages, baseline: &Stages) -> String {
    let mut names: Vec<&String> = poller.stages.keys().chain(baseline.stages.keys()).collect();
    names.sort();
    names.dedup();
    let cell = |s: &Stages, n: &str| {
        s.stages.get(n).map_or("—".to_owned(), |st| {
            format!("{:.2} s ({} calls, {:.2} s summed)", st.busy_s, st.calls, st.call_s)
        })
    };
    let mut out = format!("{title}\n| stage | poller: in flight | baseline with re-read: in flight |\n|---|---|---|\n");
    for n in names {
        out.push_str(&format!("| {n} | {} | {} |\n", cell(poller, n), cell(baseline, n)));
    }
    out.push_str(&format!(
        "| nothing in flight | {:.2} s | {:.2} s |\n| before the first query | {:.3} s | {:.3} s |\n\
         | after the last removal | {:.3} s | {:.3} s |\n| the run | {:.2} s | {:.2} s |\n",
        poller.idle_s,
        baseline.idle_s,
        poller.head_s,
        baseline.head_s,
        poller.tail_s,
        baseline.tail_s,
        poller.wall_s,
        baseline.wall_s
    ));
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn overlapping_calls_count_once_in_flight_and_gaps_are_idle() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let call = |op: &str, a: u64, b: u64| Call {
            operation: op.into(),
            arrived: at(a),
            answered: at(b),
        };
        let calls = [
            call("Query", 0, 10),
            call("Query", 5, 15),
            call("SendMessageBatch", 20, 30),
        ];
        let refs: Vec<&Call> = calls.iter().collect();
        assert!((covered(&refs[..2], t0, at(100)) - 0.015).abs() < 1e-9);
        assert!((covered(&refs, t0, at(100)) - 0.025).abs() < 1e-9);
        assert!((covered(&refs, at(8), at(25)) - 0.012).abs() < 1e-9, "clipped");
    }

    #[test]
    fn the_head_ends_at_the_first_query_and_the_tail_starts_at_the_last_removal() {
        let meter = CallMeter::default();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        meter.record("GetItem", t0);
        std::thread::sleep(Duration::from_millis(20));
        let query = Instant::now();
        meter.record("Query", query);
        let removing = Instant::now();
        meter.record("BatchExecuteStatement", query);
        let removed = Instant::now();
        std::thread::sleep(Duration::from_millis(20));
        meter.record("UpdateItem", removed);
        let end = Instant::now();
        let s = measure(&[&meter], t0, end);
        assert!((s.head_s - (query - t0).as_secs_f64()).abs() < 1e-9, "{s:?}");
        // The removal was answered between `removing` and `removed`.
        assert!(s.tail_s >= (end - removed).as_secs_f64(), "{s:?}");
        assert!(s.tail_s <= (end - removing).as_secs_f64(), "{s:?}");
    }
}
