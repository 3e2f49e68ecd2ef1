use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The attribute an occurrence of a series carries: its instant, RFC 3339 in UTC. Its
/// `waiter.job_id` is `{job_id}@{epoch seconds}`, the id its retries go under.
pub const OCCURRENCE_ATTRIBUTE: &str = "waiter.occurrence";
/// What joins a series' id and an occurrence's instant in `waiter.job_id`; refused in the ids
/// callers choose, so that no job can take an occurrence's id.
pub const OCCURRENCE_SEPARATOR: char = '@';
/// `every_s` bounds.
pub const MIN_EVERY_S: u64 = 60;
/// `every_s` bounds: a year.
pub const MAX_EVERY_S: u64 = 31_536_000;
/// The most occurrences a series may have (`count`).
pub const MAX_COUNT: u64 = 1_000_000;

/// How a job repeats (the `repeat` of `enqueue` and `reschedule`, shown by `get` and `list`):
/// exactly one of `cron`, `every_s` and `expression`.
///
/// ```
/// use sqs_waiter_contract::{CatchUp, Job, Repeat};
///
/// let job = Job::new("reports", "{}").repeat(Repeat::cron("0 9 * * MON-FRI").catch_up(CatchUp::Skip), "Europe/Berlin");
/// assert_eq!(
///     serde_json::to_value(&job).unwrap(),
///     serde_json::json!({
///         "queue": "reports", "message_body": "{}", "time_zone": "Europe/Berlin",
///         "repeat": {"cron": "0 9 * * MON-FRI", "catch_up": "skip"}
///     })
/// );
/// ```
// Not `deny_unknown_fields`: a reply carries it (`JobReply.repeat`), and a client built against
// this contract reads a newer function's replies. The function refuses a request's unknown
// fields itself (crates/waiter wire::decode).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
// The schema is the request's rule: no field it does not name.
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct Repeat {
    /// Five fields (minute, hour, day of month, month, day of week) read in the job's
    /// `time_zone`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// Every so many seconds from the series' start (60 to 31536000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_s: Option<u64>,
    /// EventBridge Scheduler's `cron(...)` (six fields, as AWS reads them) or `rate(...)`,
    /// read in the job's `time_zone`; shown as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    /// No occurrence after this instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
    /// Occurrences in all (1 to 1000000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// What to do with occurrences found more than 60 s late; `one` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<CatchUp>,
}

/// What a series does with occurrences found more than 60 s after their instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// Sends none of them.
    Skip,
    /// Sends only the latest of them.
    #[default]
    One,
    /// Sends each (at most 1000 per series per run).
    All,
    /// A policy this contract does not know, in a newer function's reply. Never on the wire
    /// (the function refuses it in a request), so not in the schema.
    #[serde(other)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    Unknown,
}

impl CatchUp {
    /// The policy its wire name names.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Skip, Self::One, Self::All]
            .into_iter()
            .find(|p| p.as_str() == name)
    }

    /// The name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Skip => "skip",
            Self::One => "one",
            Self::All => "all",
            Self::Unknown => "unknown",
        }
    }
}

impl Repeat {
    /// A cron series (five fields, read in the job's `time_zone`).
    pub fn cron(expression: impl Into<String>) -> Self {
        Self {
            cron: Some(expression.into()),
            ..Self::default()
        }
    }

    /// An EventBridge Scheduler series: `cron(0 9 ? * MON-FRI *)` or `rate(5 minutes)`.
    pub fn expression(expression: impl Into<String>) -> Self {
        Self {
            expression: Some(expression.into()),
            ..Self::default()
        }
    }

    /// A series every `d` from its start, rounded up to whole seconds.
    pub fn every(d: Duration) -> Self {
        Self {
            every_s: Some(crate::job::whole_seconds_up(d)),
            ..Self::default()
        }
    }

    /// No occurrence after `t`.
    pub fn until(mut self, t: DateTime<Utc>) -> Self {
        self.until = Some(t);
        self
    }

    /// At most `n` occurrences in all.
    pub fn count(mut self, n: u64) -> Self {
        self.count = Some(n);
        self
    }

    /// What to do with missed occurrences.
    pub fn catch_up(mut self, policy: CatchUp) -> Self {
        self.catch_up = Some(policy);
        self
    }
}

impl Repeat {
    /// The repetition in one line: `cron 0 9 * * MON-FRI Europe/Berlin`, `every 900s`,
    /// `cron(0 9 ? * MON-FRI *) Europe/Berlin`, `rate(5 minutes)`, then its end and catch-up
    /// policy when they are not the defaults. `zone` is the job's `time_zone`.
    pub fn describe(&self, zone: Option<&str>) -> String {
        let mut parts = match (&self.cron, self.every_s, &self.expression) {
            (Some(c), _, _) => vec![format!("cron {c} {}", zone.unwrap_or("UTC"))],
            (None, Some(s), _) => vec![format!("every {s}s")],
            (None, None, Some(e)) if e.starts_with("cron(") => vec![format!("{e} {}", zone.unwrap_or("UTC"))],
            (None, None, Some(e)) => vec![e.clone()],
            (None, None, None) => vec![],
        };
        if let Some(u) = self.until {
            parts.push(format!(
                "until {}",
                u.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ));
        }
        if let Some(c) = self.count {
            parts.push(format!("count {c}"));
        }
        if let Some(p) = self.catch_up.filter(|p| *p != CatchUp::One) {
            parts.push(format!("catch-up {}", p.as_str()));
        }
        parts.join(", ")
    }
}

/// The series and instant an occurrence's `waiter.job_id` names (`{job_id}@{epoch}`), if it
/// names one.
pub fn occurrence_of(job_id: &str) -> Option<(&str, i64)> {
    let (series, epoch) = job_id.rsplit_once(OCCURRENCE_SEPARATOR)?;
    Some((series, epoch.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_and_occurrence_ids_read_as_written() {
        for p in [CatchUp::Skip, CatchUp::One, CatchUp::All] {
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
            assert_eq!(CatchUp::parse(p.as_str()), Some(p));
        }
        assert_eq!(CatchUp::parse("sometimes"), None);
        assert_eq!(occurrence_of("daily@1800000000"), Some(("daily", 1_800_000_000)));
        assert_eq!(occurrence_of("daily"), None);
        assert_eq!(occurrence_of("daily@soon"), None);
        assert_eq!(Repeat::every(Duration::from_millis(60_001)).every_s, Some(61));
    }
}
