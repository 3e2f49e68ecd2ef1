//! Configuration from `WAITER_*` environment variables, validated once at start.

use std::collections::BTreeSet;
use std::fmt;

use crate::limits::{
    DDB_MAX_TABLE_NAME_CHARS, LAMBDA_MAX_TIMEOUT_SECONDS, SQS_MAX_DELAY_SECONDS, SQS_MAX_QUEUE_NAME_CHARS,
};

/// How long the record of a retried job's attempt is kept with history off: a consumer's
/// repeated `retry` of one attempt comes within seconds or minutes, and a day also covers SQS
/// redelivering the failed message after its visibility timeout (at most 12 hours).
/// How long at least the record of an attempt after the first is kept: SQS's longest message
/// retention (<https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html>,
/// `MessageRetentionPeriod` up to 1,209,600 s), so that a `retry` of an earlier attempt, from a
/// message SQS still holds, is always known to be stale.
pub const RETRY_RECORD_KEEP: chrono::TimeDelta = chrono::TimeDelta::days(14);

pub const ENV_QUEUES: &str = "WAITER_QUEUES";
/// A file holding the allow-list instead, read once at start: for lists past what Lambda's 4 KB
/// of environment holds (the CDK construct ships it in a layer, docs/deploy.md).
pub const ENV_QUEUES_FILE: &str = "WAITER_QUEUES_FILE";
pub const ENV_TABLE_PREFIX: &str = "WAITER_TABLE_PREFIX";
pub const ENV_DIRECT_MAX_DELAY: &str = "WAITER_DIRECT_MAX_DELAY";
pub const ENV_LOOKAHEAD: &str = "WAITER_LOOKAHEAD";
pub const ENV_SHARDS: &str = "WAITER_SHARDS";
pub const ENV_CONCURRENCY: &str = "WAITER_CONCURRENCY";
pub const ENV_FIFO_HOLD: &str = "WAITER_FIFO_HOLD";
pub const ENV_DIRECT_PRECISE: &str = "WAITER_DIRECT_PRECISE";
pub const ENV_HISTORY_DAYS: &str = "WAITER_HISTORY_DAYS";
pub const ENV_DIRECT_HISTORY: &str = "WAITER_DIRECT_HISTORY";
pub const ENV_MAX_RATE: &str = "WAITER_MAX_RATE";
pub const ENV_HISTORY_BODY: &str = "WAITER_HISTORY_BODY";
pub const ENV_JOB_ID_ATTRIBUTE: &str = "WAITER_JOB_ID_ATTRIBUTE";
pub const ENV_POLLER_GROUPS: &str = "WAITER_POLLER_GROUPS";
pub const ENV_PRIORITY_ORDER: &str = "WAITER_PRIORITY_ORDER";
/// Whether the functions print metrics per queue (dimension `Queue`); off, only per function.
pub const ENV_QUEUE_METRICS: &str = "WAITER_QUEUE_METRICS";

pub const DEFAULT_LOOKAHEAD: u32 = 120;
pub const DEFAULT_SHARDS: u32 = 4;
pub const MAX_SHARDS: u32 = 256;
pub const DEFAULT_CONCURRENCY: u32 = 8;
pub const DEFAULT_FIFO_HOLD: u32 = 0;
/// A poller run that holds FIFO jobs needs this much of its timeout beyond the hold (the
/// stacks refuse a `PollerTimeout` below `FifoHold` + this).
pub const FIFO_HOLD_MARGIN: u32 = 5;
/// The longest hold a run can have: within Lambda's longest timeout, with the margin.
pub const MAX_FIFO_HOLD: u32 = LAMBDA_MAX_TIMEOUT_SECONDS - FIFO_HOLD_MARGIN;
pub const DEFAULT_HISTORY_DAYS: u32 = 7;
pub const MAX_HISTORY_DAYS: u32 = 365;
/// The highest `WAITER_MAX_RATE` accepted: far above what one queue's partitions can send.
pub const MAX_RATE: u32 = 1_000_000;
/// The most poller groups: one schedule each (docs/performance.md "Herds" sizes them).
pub const MAX_POLLER_GROUPS: u32 = 16;

/// A configuration variable that is missing or invalid. Names the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {problem}")]
pub struct ConfigError {
    pub variable: &'static str,
    pub problem: String,
}

/// A queue this deployment manages: a valid SQS queue name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueName(String);

impl QueueName {
    /// SQS's rule: 1 to 80 characters from `[A-Za-z0-9_-]`, with an optional `.fifo` suffix
    /// counted in the 80.
    pub fn parse(s: &str) -> Result<Self, String> {
        let stem = s.strip_suffix(".fifo").unwrap_or(s);
        if stem.is_empty() {
            return Err("must not be empty".into());
        }
        if s.chars().count() > SQS_MAX_QUEUE_NAME_CHARS {
            return Err(format!("must be at most {SQS_MAX_QUEUE_NAME_CHARS} characters"));
        }
        if !stem
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err("must contain only A-Z, a-z, 0-9, '-' and '_' (and an optional .fifo suffix)".into());
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_fifo(&self) -> bool {
        self.0.ends_with(".fifo")
    }
}

impl fmt::Display for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The allow-list, in the order given.
    pub queues: Vec<QueueName>,
    pub table_prefix: String,
    /// Delays up to this many seconds go straight to SQS (standard queues).
    pub direct_max_delay: u32,
    /// The poller hands over items due within this window.
    pub lookahead: u32,
    /// Number of `scheduler` partition-key values per queue table.
    pub shards: u32,
    /// How many (queue, shard) partitions the poller works at once.
    pub concurrency: u32,
    /// How long a poller run may hold FIFO items that fall due during it, to send each on time.
    pub fifo_hold: u32,
    /// Direct path: hold the send for the fractional second so the delay is exact.
    pub direct_precise: bool,
    /// Days a job that left the table stays known to `get` and to idempotency; 0: none.
    pub history_days: u32,
    /// Direct path: record a history entry for a job sent with a caller-chosen id (one PutItem),
    /// so that a retry after the send is a duplicate. Only with `history_days > 0`.
    pub direct_history: bool,
    /// The most messages per second per queue the poller lets arrive (`None`: unlimited).
    pub max_rate: Option<u32>,
    /// History records keep the job's message (body, attributes, group), so that `replay` can
    /// send a copy. Off by default: it stores every message a second time for `history_days`.
    pub history_body: bool,
    /// Every message carries its job's id as `waiter.job_id` where it leaves room (on by
    /// default; a copy's and an occurrence's carry theirs whatever this says).
    pub job_id_attribute: bool,
    /// How many poller groups the deployment's schedules invoke (`{"group": i, "groups": n}`).
    pub poller_groups: u32,
    /// Which due jobs take `max_rate`'s earliest arrival seconds first.
    pub priority_order: crate::rate::PriorityOrder,
    /// Metrics per queue as well as per function: each queue's are custom metrics CloudWatch
    /// bills by the month (docs/operations.md "Metrics").
    pub queue_metrics: bool,
}

impl Config {
    /// How many shards new jobs of this queue are written to. A FIFO queue has one: jobs are
    /// sharded by id, which would split a message group over runs working in parallel, and
    /// then a group's later message could be sent while an earlier one waits in another shard.
    pub fn shards_for(&self, queue: &QueueName) -> u32 {
        if queue.is_fifo() {
            1
        } else {
            self.shards
        }
    }

    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Builds the config from any lookup, so tests need not touch the process environment.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Self::from_lookup_reading(get, |path| std::fs::read_to_string(path))
    }

    /// `from_lookup` with the reader of `WAITER_QUEUES_FILE`.
    pub fn from_lookup_reading(
        get: impl Fn(&str) -> Option<String>,
        read: impl Fn(&str) -> std::io::Result<String>,
    ) -> Result<Self, ConfigError> {
        let (list_var, raw_queues) = match (get(ENV_QUEUES), get(ENV_QUEUES_FILE)) {
            (Some(_), Some(_)) => {
                return Err(ConfigError {
                    variable: ENV_QUEUES,
                    problem: format!("give it or {ENV_QUEUES_FILE}, not both"),
                })
            }
            (Some(list), None) => (ENV_QUEUES, list),
            (None, Some(path)) => (
                ENV_QUEUES_FILE,
                read(&path).map_err(|e| ConfigError {
                    variable: ENV_QUEUES_FILE,
                    problem: format!("cannot read {path:?}: {e}"),
                })?,
            ),
            (None, None) => {
                return Err(ConfigError {
                    variable: ENV_QUEUES,
                    problem: format!(
                        "is required: a comma-separated list of queue names (or {ENV_QUEUES_FILE}, a file holding one)"
                    ),
                })
            }
        };
        let table_prefix = get(ENV_TABLE_PREFIX).unwrap_or_default();
        if !table_prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            return Err(ConfigError {
                variable: ENV_TABLE_PREFIX,
                problem: "must contain only A-Z, a-z, 0-9, '-', '_' and '.' (DynamoDB table-name characters)".into(),
            });
        }
        let mut queues = Vec::new();
        let mut seen = BTreeSet::new();
        for part in raw_queues.split([',', '\n']).map(str::trim).filter(|p| !p.is_empty()) {
            let q = QueueName::parse(part).map_err(|e| ConfigError {
                variable: list_var,
                problem: format!("queue name {part:?} {e}"),
            })?;
            if table_prefix.len() + q.as_str().len() > DDB_MAX_TABLE_NAME_CHARS {
                return Err(ConfigError {
                    variable: ENV_TABLE_PREFIX,
                    problem: format!("table name for queue {q} would exceed {DDB_MAX_TABLE_NAME_CHARS} characters"),
                });
            }
            if !seen.insert(q.clone()) {
                return Err(ConfigError {
                    variable: list_var,
                    problem: format!("queue {q} is listed twice"),
                });
            }
            queues.push(q);
        }
        if queues.is_empty() {
            return Err(ConfigError {
                variable: list_var,
                problem: "must name at least one queue".into(),
            });
        }
        Ok(Self {
            queues,
            table_prefix,
            direct_max_delay: int_var(
                &get,
                ENV_DIRECT_MAX_DELAY,
                SQS_MAX_DELAY_SECONDS,
                0,
                SQS_MAX_DELAY_SECONDS,
            )?,
            lookahead: int_var(&get, ENV_LOOKAHEAD, DEFAULT_LOOKAHEAD, 0, SQS_MAX_DELAY_SECONDS)?,
            shards: int_var(&get, ENV_SHARDS, DEFAULT_SHARDS, 1, MAX_SHARDS)?,
            concurrency: int_var(&get, ENV_CONCURRENCY, DEFAULT_CONCURRENCY, 1, 256)?,
            fifo_hold: int_var(&get, ENV_FIFO_HOLD, DEFAULT_FIFO_HOLD, 0, MAX_FIFO_HOLD)?,
            direct_precise: bool_var(&get, ENV_DIRECT_PRECISE, false)?,
            history_days: int_var(&get, ENV_HISTORY_DAYS, DEFAULT_HISTORY_DAYS, 0, MAX_HISTORY_DAYS)?,
            direct_history: bool_var(&get, ENV_DIRECT_HISTORY, true)?,
            // 0 (the templates' default) or unset: unlimited.
            max_rate: Some(int_var(&get, ENV_MAX_RATE, 0, 0, MAX_RATE)?).filter(|r| *r > 0),
            history_body: bool_var(&get, ENV_HISTORY_BODY, false)?,
            job_id_attribute: bool_var(&get, ENV_JOB_ID_ATTRIBUTE, true)?,
            poller_groups: int_var(&get, ENV_POLLER_GROUPS, 1, 1, MAX_POLLER_GROUPS)?,
            priority_order: match get(ENV_PRIORITY_ORDER).as_deref().map(str::trim) {
                None | Some("") => crate::rate::PriorityOrder::default(),
                Some(v) => crate::rate::PriorityOrder::parse(v).ok_or_else(|| ConfigError {
                    variable: ENV_PRIORITY_ORDER,
                    problem: format!("must be time or priority, got {v:?}"),
                })?,
            },
            queue_metrics: bool_var(&get, ENV_QUEUE_METRICS, true)?,
        })
    }

    pub fn queue(&self, name: &str) -> Option<&QueueName> {
        self.queues.iter().find(|q| q.as_str() == name)
    }

    pub fn table_name(&self, queue: &QueueName) -> String {
        format!("{}{}", self.table_prefix, queue)
    }

    /// How long history records are kept; `None` when history is off.
    pub fn history_keep(&self) -> Option<chrono::TimeDelta> {
        (self.history_days > 0).then(|| chrono::TimeDelta::days(i64::from(self.history_days)))
    }

    /// How long the record of a job is kept when it leaves the table: `history_keep`, but an
    /// attempt after the first, or a replayed copy (`keeps_record`, `Job::keeps_record`), is
    /// always recorded, for at least `RETRY_RECORD_KEEP`, since its record tells a repeated
    /// `retry` (a duplicate) and a stale one (`conflict`) from a new one, and makes a repeated
    /// `replay` a duplicate.
    pub fn history_keep_for(&self, keeps_record: bool) -> Option<chrono::TimeDelta> {
        match (self.history_keep(), keeps_record) {
            (Some(keep), true) => Some(keep.max(RETRY_RECORD_KEEP)),
            (None, true) => Some(RETRY_RECORD_KEEP),
            (keep, false) => keep,
        }
    }
}

fn bool_var(get: &impl Fn(&str) -> Option<String>, variable: &'static str, default: bool) -> Result<bool, ConfigError> {
    match get(variable).as_deref().map(str::trim) {
        None | Some("") => Ok(default),
        Some(v) if v.eq_ignore_ascii_case("true") || v == "1" => Ok(true),
        Some(v) if v.eq_ignore_ascii_case("false") || v == "0" => Ok(false),
        Some(v) => Err(ConfigError {
            variable,
            problem: format!("must be true or false, got {v:?}"),
        }),
    }
}

fn int_var(
    get: &impl Fn(&str) -> Option<String>,
    variable: &'static str,
    default: u32,
    min: u32,
    max: u32,
) -> Result<u32, ConfigError> {
    let Some(raw) = get(variable) else {
        return Ok(default);
    };
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(default);
    }
    let v: u32 = raw.parse().map_err(|_| ConfigError {
        variable,
        problem: format!("must be a whole number from {min} to {max}, got {raw:?}"),
    })?;
    if !(min..=max).contains(&v) {
        return Err(ConfigError {
            variable,
            problem: format!("must be from {min} to {max}, got {v}"),
        });
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults() {
        let c = cfg(&[(ENV_QUEUES, "orders, billing.fifo")]).unwrap();
        assert_eq!(c.queues.len(), 2);
        assert!(c.queues[1].is_fifo());
        assert_eq!(c.direct_max_delay, 900);
        assert_eq!(c.lookahead, DEFAULT_LOOKAHEAD);
        assert_eq!(c.shards, DEFAULT_SHARDS);
        assert_eq!(c.table_name(&c.queues[0]), "orders");
    }

    fn from_file(contents: std::io::Result<&str>, extra: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let mut map: HashMap<String, String> = extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        map.insert(ENV_QUEUES_FILE.into(), "/opt/sqs-waiter/queues".into());
        let contents = contents.map(str::to_owned).map_err(|e| e.kind());
        Config::from_lookup_reading(
            |k| map.get(k).cloned(),
            |path| {
                assert_eq!(path, "/opt/sqs-waiter/queues");
                contents.clone().map_err(std::io::Error::from)
            },
        )
    }

    #[test]
    fn the_allow_list_may_come_from_a_file_and_its_errors_name_that_variable() {
        let c = from_file(Ok("orders,billing.fifo\nrefunds\n"), &[]).unwrap();
        let names: Vec<_> = c.queues.iter().map(QueueName::as_str).collect();
        assert_eq!(names, ["orders", "billing.fifo", "refunds"]);
        for (contents, says) in [
            (Ok("orders,orders"), "listed twice"),
            (Ok("a/b"), "queue name"),
            (Ok(" \n"), "at least one queue"),
            (
                Err(std::io::ErrorKind::NotFound.into()),
                "cannot read \"/opt/sqs-waiter/queues\"",
            ),
        ] {
            let e = from_file(contents, &[]).unwrap_err();
            assert_eq!(e.variable, ENV_QUEUES_FILE, "{e}");
            assert!(e.problem.contains(says), "{e}");
        }
        let both = from_file(Ok("orders"), &[(ENV_QUEUES, "orders")]).unwrap_err();
        assert_eq!(both.variable, ENV_QUEUES);
        assert!(both.problem.contains("not both"), "{both}");
    }

    #[test]
    fn each_bad_variable_is_named() {
        assert_eq!(cfg(&[]).unwrap_err().variable, ENV_QUEUES);
        assert_eq!(cfg(&[(ENV_QUEUES, " , ")]).unwrap_err().variable, ENV_QUEUES);
        assert_eq!(cfg(&[(ENV_QUEUES, "a/b")]).unwrap_err().variable, ENV_QUEUES);
        assert_eq!(cfg(&[(ENV_QUEUES, "a,a")]).unwrap_err().variable, ENV_QUEUES);
        let e = cfg(&[(ENV_QUEUES, "a"), (ENV_DIRECT_MAX_DELAY, "901")]).unwrap_err();
        assert_eq!(e.variable, ENV_DIRECT_MAX_DELAY);
        assert!(e.to_string().starts_with("WAITER_DIRECT_MAX_DELAY: "));
        assert_eq!(
            cfg(&[(ENV_QUEUES, "a"), (ENV_LOOKAHEAD, "-1")]).unwrap_err().variable,
            ENV_LOOKAHEAD
        );
        assert_eq!(
            cfg(&[(ENV_QUEUES, "a"), (ENV_SHARDS, "0")]).unwrap_err().variable,
            ENV_SHARDS
        );
        assert_eq!(
            cfg(&[(ENV_QUEUES, "a"), (ENV_SHARDS, "x")]).unwrap_err().variable,
            ENV_SHARDS
        );
        assert_eq!(
            cfg(&[(ENV_QUEUES, "a"), (ENV_TABLE_PREFIX, "a b")])
                .unwrap_err()
                .variable,
            ENV_TABLE_PREFIX
        );
    }

    #[test]
    fn queue_metrics_are_on_unless_turned_off_and_named_when_bad() {
        assert!(cfg(&[(ENV_QUEUES, "a")]).unwrap().queue_metrics);
        assert!(
            !cfg(&[(ENV_QUEUES, "a"), (ENV_QUEUE_METRICS, "false")])
                .unwrap()
                .queue_metrics
        );
        let e = cfg(&[(ENV_QUEUES, "a"), (ENV_QUEUE_METRICS, "maybe")]).unwrap_err();
        assert_eq!(e.variable, ENV_QUEUE_METRICS);
    }

    #[test]
    fn priority_order_is_time_unless_set_and_named_when_bad() {
        use crate::rate::PriorityOrder;
        assert_eq!(cfg(&[(ENV_QUEUES, "a")]).unwrap().priority_order, PriorityOrder::Time);
        assert_eq!(
            cfg(&[(ENV_QUEUES, "a"), (ENV_PRIORITY_ORDER, "priority")])
                .unwrap()
                .priority_order,
            PriorityOrder::Priority
        );
        assert_eq!(
            cfg(&[(ENV_QUEUES, "a"), (ENV_PRIORITY_ORDER, "time")])
                .unwrap()
                .priority_order,
            PriorityOrder::Time
        );
        let e = cfg(&[(ENV_QUEUES, "a"), (ENV_PRIORITY_ORDER, "fifo")]).unwrap_err();
        assert_eq!(e.variable, ENV_PRIORITY_ORDER);
        assert!(e.problem.contains("time or priority"), "{e}");
    }

    #[test]
    fn max_rate_is_unlimited_unless_set_and_named_when_bad() {
        assert_eq!(cfg(&[(ENV_QUEUES, "a")]).unwrap().max_rate, None);
        assert_eq!(cfg(&[(ENV_QUEUES, "a"), (ENV_MAX_RATE, " ")]).unwrap().max_rate, None);
        assert_eq!(cfg(&[(ENV_QUEUES, "a"), (ENV_MAX_RATE, "0")]).unwrap().max_rate, None);
        assert_eq!(
            cfg(&[(ENV_QUEUES, "a"), (ENV_MAX_RATE, "500")]).unwrap().max_rate,
            Some(500)
        );
        for bad in ["-5", "1.5", "fast", "1000001"] {
            let e = cfg(&[(ENV_QUEUES, "a"), (ENV_MAX_RATE, bad)]).unwrap_err();
            assert_eq!(e.variable, ENV_MAX_RATE, "{bad}");
        }
    }

    #[test]
    fn queue_names() {
        assert!(QueueName::parse("orders-1_x.fifo").is_ok());
        assert!(QueueName::parse(".fifo").is_err());
        assert!(QueueName::parse("../etc").is_err());
        assert!(QueueName::parse(&"a".repeat(81)).is_err());
        assert!(QueueName::parse(&"a".repeat(80)).is_ok());
    }

    #[test]
    fn the_variables_take_exactly_the_ranges_the_deployments_validate() {
        // infra/lib/ranges.json is the one table: the CDK construct checks its props by it and
        // template.yaml's parameters carry it (docs/deploy.md "Parameter ranges").
        let table: serde_json::Value =
            serde_json::from_str(include_str!("../../../infra/lib/ranges.json")).expect("ranges.json");
        let mut checked = Vec::new();
        for (prop, range) in table.as_object().expect("an object") {
            let Some(env) = range.get("env").and_then(|e| e.as_str()) else {
                continue;
            };
            let (min, max) = (range["min"].as_i64().expect("min"), range["max"].as_i64().expect("max"));
            for ok in [min, max] {
                assert!(
                    cfg(&[(ENV_QUEUES, "a"), (env, &ok.to_string())]).is_ok(),
                    "{prop}: {env}={ok}"
                );
            }
            for bad in [min - 1, max + 1] {
                let e = cfg(&[(ENV_QUEUES, "a"), (env, &bad.to_string())]).expect_err(env);
                assert_eq!(e.variable, env, "{prop}: {env}={bad}");
            }
            checked.push(env.to_string());
        }
        checked.sort();
        assert_eq!(
            checked,
            [
                ENV_DIRECT_MAX_DELAY,
                ENV_FIFO_HOLD,
                ENV_HISTORY_DAYS,
                ENV_LOOKAHEAD,
                ENV_MAX_RATE,
                ENV_POLLER_GROUPS,
                ENV_SHARDS
            ]
        );
    }
}
