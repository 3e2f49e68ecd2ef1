//! The command line (clap), as DESIGN.md's "Client and CLI" lists it.

use chrono::{DateTime, Utc};
use clap::{Args, Parser, Subcommand, ValueEnum};
use sqs_waiter_client::{ListStatus, MessageAttribute};

use crate::parse::{parse_attribute, parse_delay, parse_tag, parse_time};

const EXAMPLES: &str = "\
Examples:
  sqs-waiter enqueue orders '{\"order\":42}' --delay 3h --id invoice-42
  sqs-waiter stats orders
  sqs-waiter list orders --from 2026-12-01T00:00:00Z --to 2026-12-02T00:00:00Z
  sqs-waiter --json get orders invoice-42 | jq .perform_at

Exit status: 0 done, 1 refused or not done (the reason on stderr), 2 usage error.";

/// Schedule SQS messages beyond the 15-minute delay limit, and see and manage what is scheduled.
///
/// Talks to a deployment's `enqueue` Lambda function through Lambda Invoke.
#[derive(Debug, Parser)]
#[command(name = "sqs-waiter", version, after_help = EXAMPLES, propagate_version = true)]
pub struct Cli {
    /// The `enqueue` function: a name, ARN or partial ARN.
    #[arg(
        long,
        global = true,
        env = "SQS_WAITER_FUNCTION",
        default_value = "sqs-waiter-enqueue"
    )]
    pub function: String,
    /// The Lambda endpoint (for cargo lambda watch or an emulator).
    #[arg(long, global = true, env = "AWS_ENDPOINT_URL", value_name = "URL")]
    pub endpoint_url: Option<String>,
    /// The AWS region (else from the environment and profile).
    #[arg(long, global = true, value_name = "REGION")]
    pub region: Option<String>,
    /// Print the function's reply as one JSON document instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Schedule a message.
    #[command(after_help = "Examples:
  sqs-waiter enqueue orders '{\"order\":42}' --delay 3h --id invoice-42
  sqs-waiter enqueue orders hello --at 2026-12-01T09:00:00Z --attr kind=String:invoice
  sqs-waiter enqueue billing.fifo hello --delay 1d --group customer-7
  sqs-waiter enqueue reports '{}' --cron '0 9 * * MON-FRI' --tz Europe/Berlin --catch-up skip
  sqs-waiter enqueue pings ping --every 15m --count 96
  sqs-waiter enqueue reports '{}' --schedule 'cron(0 9 ? * MON-FRI *)' --tz Europe/Berlin
  sqs-waiter enqueue orders hello --schedule 'at(2027-01-01T09:00:00)' --tz Asia/Tokyo",
        group(clap::ArgGroup::new("due").required(true).multiple(true).args(["delay", "at", "cron", "every", "schedule"])))]
    Enqueue {
        queue: String,
        /// The message body, sent unaltered.
        body: String,
        #[command(flatten)]
        when: Start,
        /// The job id (idempotency key); generated when absent.
        #[arg(long)]
        id: Option<String>,
        /// A message attribute, NAME=TYPE:VALUE (TYPE String, Number or Binary, with an optional
        /// custom suffix; Binary VALUE in base64). Repeatable.
        #[arg(long = "attr", value_name = "NAME=TYPE:VALUE", value_parser = parse_attribute)]
        attributes: Vec<(String, MessageAttribute)>,
        /// The FIFO message group (required on .fifo queues).
        #[arg(long)]
        group: Option<String>,
        /// Drop the job, unsent, if it is found after this time.
        #[arg(long, value_name = "TIME", value_parser = parse_time)]
        expires_at: Option<DateTime<Utc>>,
        #[command(flatten)]
        rank: Rank,
        /// An X-Ray trace header the job's message carries as AWSTraceHeader
        /// (Root=1-…;Parent=…;Sampled=1).
        #[arg(long, value_name = "HEADER")]
        trace_header: Option<String>,
        #[command(flatten)]
        repetition: Box<Repetition>,
        /// With --id of a stored job: replace its message and time, or extend its time
        /// (debounce). Such a job is always stored.
        #[arg(long, value_enum, value_name = "WHAT", requires = "id")]
        on_duplicate: Option<OnDuplicateArg>,
        /// A tag, KEY=VALUE, that list and cancel-many find the job by (up to 10). Repeatable.
        #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
        tags: Vec<(String, String)>,
    },
    /// Show a job: as stored, or what history knows of it.
    #[command(after_help = "Example:\n  sqs-waiter get orders invoice-42")]
    Get { queue: String, id: String },
    /// Cancel a job.
    #[command(after_help = "Example:\n  sqs-waiter cancel orders invoice-42")]
    Cancel { queue: String, id: String },
    /// Move a job to another time, or change what it sends.
    ///
    /// A series keeps its schedule when no time is given (--body or --attr alone).
    #[command(
        after_help = "Examples:\n  sqs-waiter reschedule orders invoice-42 --at 2026-12-02T09:00:00Z\n  \
                            sqs-waiter reschedule orders invoice-42 --delay 2h --if-version 1\n  \
                            sqs-waiter reschedule orders invoice-42 --schedule 'at(2027-01-01T09:00:00)' --tz Asia/Tokyo\n  \
                            sqs-waiter reschedule reports daily --body '{\"v\":2}'",
        group(clap::ArgGroup::new("change").required(true).multiple(true)
            .args(["delay", "at", "schedule", "body", "attributes", "priority", "weight"]))
    )]
    Reschedule {
        queue: String,
        id: String,
        #[command(flatten)]
        change: Change,
        /// Only if the job's version is this one.
        #[arg(long, value_name = "N")]
        if_version: Option<u64>,
        #[command(flatten)]
        rank: Rank,
    },
    /// Send again a job that left the table (dispatched, cancelled or expired), as a new job.
    ///
    /// Needs the deployment's WAITER_HISTORY_BODY=true when the job left; due now unless a time
    /// is given; the copy's id is ID:rVERSION unless --new-id names it.
    #[command(after_help = "Examples:\n  sqs-waiter replay orders invoice-42\n  \
                            sqs-waiter replay orders invoice-42 --at 2026-12-02T09:00:00Z --new-id invoice-42-again")]
    Replay {
        queue: String,
        id: String,
        /// When the copy is due (RFC 3339 or epoch seconds); now when absent.
        #[arg(long, value_name = "TIME", value_parser = parse_time, conflicts_with = "delay")]
        at: Option<DateTime<Utc>>,
        /// Seconds from now (or a duration: 90s, 15m, 3h, 2d).
        #[arg(long, value_name = "S", value_parser = parse_delay)]
        delay: Option<u64>,
        /// The copy's job id.
        #[arg(long, value_name = "ID")]
        new_id: Option<String>,
    },
    /// List jobs in due order.
    #[command(after_help = "Examples:\n  sqs-waiter list orders --limit 20\n  \
                            sqs-waiter list orders --from 2026-12-01T18:00:00Z --to 2026-12-02T06:00:00Z --prefix invoice-")]
    List {
        queue: String,
        #[command(flatten)]
        selection: Selection,
        /// At most this many jobs (paged 1000 at a time).
        #[arg(long, default_value_t = 100, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        limit: u64,
    },
    /// Counts and a due-time histogram.
    #[command(
        after_help = "Examples:\n  sqs-waiter stats orders\n  sqs-waiter stats orders --buckets 7 --bucket-s 86400\n  sqs-waiter stats orders --formats"
    )]
    Stats {
        queue: String,
        /// Number of histogram buckets (1-100).
        #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(1..=100))]
        buckets: u32,
        /// Width of a bucket in seconds.
        #[arg(long, default_value_t = 3600, value_name = "S", value_parser = clap::value_parser!(u64).range(1..=2_592_000))]
        bucket_s: u64,
        /// Also count every item of the queue by item format, before a rollback
        /// (docs/upgrades.md). Reads the whole table once: 0.5 read units per 4 KB of items.
        #[arg(long)]
        formats: bool,
    },
    /// Pause a queue, or one job or series of it: nothing of it is sent until resume.
    #[command(after_help = "Examples:\n  sqs-waiter pause orders\n  sqs-waiter pause orders invoice-42")]
    Pause {
        queue: String,
        /// One job or series; the whole queue when absent.
        id: Option<String>,
    },
    /// End a pause: what fell due meanwhile is sent as overdue jobs are.
    #[command(after_help = "Examples:\n  sqs-waiter resume orders\n  sqs-waiter resume orders invoice-42")]
    Resume {
        queue: String,
        /// One job or series; the whole queue when absent.
        id: Option<String>,
    },
    /// The next occurrences of a schedule, computed here without AWS (--cron or --every), or of
    /// a stored series (QUEUE ID, asked of the function); a clock change's moves are marked.
    #[command(after_help = "Examples:
  sqs-waiter preview --cron '30 2 * * *' --tz Europe/Berlin --from 2027-03-27T00:00:00Z -n 3
  sqs-waiter preview --every 15m -n 4
  sqs-waiter preview reports daily")]
    Preview {
        /// With ID: the queue of a stored series.
        #[arg(requires = "id", conflicts_with_all = ["cron", "every", "schedule"])]
        queue: Option<String>,
        id: Option<String>,
        /// A five-field cron expression, read in --tz.
        #[arg(long, conflicts_with_all = ["every", "schedule"])]
        cron: Option<String>,
        /// EventBridge Scheduler's cron(...) (six fields) or rate(...), read in --tz.
        #[arg(long, value_name = "EXPR", conflicts_with = "every")]
        schedule: Option<String>,
        /// Every so long: seconds, or 90s, 15m, 3h, 2d (at least 60 s).
        #[arg(long, value_parser = parse_delay)]
        every: Option<u64>,
        /// The IANA zone of --cron (and of the local times shown); UTC when absent.
        #[arg(long, value_name = "ZONE")]
        tz: Option<String>,
        /// Occurrences at or after this time; now when absent.
        #[arg(long, value_name = "TIME", value_parser = parse_time)]
        from: Option<DateTime<Utc>>,
        /// How many, 1 to 100.
        #[arg(short = 'n', default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=100))]
        n: u64,
    },
    /// Run a stored job now, or send one extra occurrence of a series now.
    #[command(after_help = "Example:\n  sqs-waiter trigger orders invoice-42")]
    Trigger { queue: String, id: String },
    /// The queues the function serves, and which are paused.
    #[command(after_help = "Example:\n  sqs-waiter queues")]
    Queues,
    /// Serve the web console on 127.0.0.1 and open it in the browser.
    ///
    /// It uses these credentials, function, endpoint and region, creates no AWS resource and
    /// answers only on this machine. It prints `console: URL` once ready; the URL carries the
    /// session's token.
    #[command(after_help = "Examples:\n  sqs-waiter console\n  sqs-waiter console --port 8400 --read-only --no-open")]
    Console {
        /// The port on 127.0.0.1; any free one when absent.
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Offer no change: every POST is refused.
        #[arg(long)]
        read_only: bool,
        /// Print the address without opening a browser.
        #[arg(long)]
        no_open: bool,
    },
    /// Jobs SQS rejected permanently, with the reason.
    #[command(after_help = "Example:\n  sqs-waiter parked orders")]
    Parked {
        queue: String,
        #[arg(long, default_value_t = 100, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        limit: u64,
    },
    /// Move parked jobs back, due now (after fixing the cause).
    #[command(
        after_help = "Examples:\n  sqs-waiter redrive orders invoice-42 invoice-43\n  sqs-waiter redrive orders --all"
    )]
    Redrive {
        queue: String,
        /// The parked jobs to move back.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        ids: Vec<String>,
        /// Every parked job of the queue.
        #[arg(long)]
        all: bool,
    },
    /// Cancel many jobs: those named, or every job a selection matches.
    #[command(after_help = "Examples:\n  sqs-waiter cancel-many orders promo-1 promo-2\n  \
                            sqs-waiter cancel-many orders --prefix promo- --from 2026-12-24T00:00:00Z\n  \
                            sqs-waiter cancel-many orders --tag customer=42")]
    CancelMany {
        queue: String,
        /// The jobs to cancel.
        #[arg(conflicts_with_all = ["prefix", "from", "to", "tags"])]
        ids: Vec<String>,
        #[command(flatten)]
        selection: Selection,
    },
    /// Print a shell completion script.
    #[command(after_help = "Example:\n  sqs-waiter completions bash > /etc/bash_completion.d/sqs-waiter")]
    Completions { shell: clap_complete::Shell },
}

/// When a job is due, or a series starts (now when neither is given with `--cron` / `--every`).
#[derive(Debug, Args)]
#[group(required = false, multiple = false)]
pub struct Start {
    /// Seconds from now (or a duration: 90s, 15m, 3h, 2d).
    #[arg(long, value_name = "S", value_parser = parse_delay)]
    pub delay: Option<u64>,
    /// RFC 3339 (2026-12-01T09:00:00Z) or epoch seconds.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub at: Option<DateTime<Utc>>,
}

/// What `reschedule` changes: its time (one of --delay, --at and --schedule), its message, or
/// both.
#[derive(Debug, Args)]
pub struct Change {
    /// Seconds from now (or a duration: 90s, 15m, 3h, 2d).
    #[arg(long, value_name = "S", value_parser = parse_delay, group = "time")]
    pub delay: Option<u64>,
    /// RFC 3339 (2026-12-01T09:00:00Z) or epoch seconds.
    #[arg(long, value_name = "TIME", value_parser = parse_time, group = "time")]
    pub at: Option<DateTime<Utc>>,
    /// EventBridge Scheduler's at(yyyy-mm-ddThh:mm:ss), read in --tz.
    #[arg(long, value_name = "EXPR", group = "time")]
    pub schedule: Option<String>,
    /// The IANA zone --schedule is read in (default UTC); given, it is also the zone of the
    /// job's windows and cron from now on (default: the job's own).
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
    /// The new message body, sent unaltered.
    #[arg(long)]
    pub body: Option<String>,
    /// A message attribute, NAME=TYPE:VALUE, as on enqueue. Repeatable; the given ones replace
    /// all of the job's.
    #[arg(long = "attr", value_name = "NAME=TYPE:VALUE", value_parser = parse_attribute)]
    pub attributes: Vec<(String, MessageAttribute)>,
}

/// A series: `--cron` or `--every`, and where it ends (DESIGN "Recurring jobs"). The job's
/// `--delay` / `--at` is its start.
#[derive(Debug, Args)]
pub struct Repetition {
    /// Repeat on a five-field cron (minute hour day-of-month month day-of-week), read in --tz.
    #[arg(long, value_name = "EXPR", group = "series")]
    pub cron: Option<String>,
    /// Repeat every so long from the start (60s to 365d: 90s, 15m, 3h, 2d).
    #[arg(long, value_name = "DURATION", value_parser = parse_delay, group = "series")]
    pub every: Option<u64>,
    /// EventBridge Scheduler's expression, read in --tz: cron(...) (six fields) or rate(...)
    /// repeat; at(yyyy-mm-ddThh:mm:ss) is a one-off job's local time.
    #[arg(long, value_name = "EXPR", group = "series")]
    pub schedule: Option<String>,
    /// The IANA zone the cron or --schedule is read in (default UTC).
    #[arg(long, value_name = "ZONE", requires = "series")]
    pub tz: Option<String>,
    /// No occurrence after this time.
    #[arg(long, value_name = "TIME", value_parser = parse_time, requires = "series")]
    pub until: Option<DateTime<Utc>>,
    /// Occurrences in all.
    #[arg(long, value_name = "N", requires = "series")]
    pub count: Option<u64>,
    /// Occurrences found more than 60 s late: skip, one (default) or all.
    #[arg(long, value_name = "POLICY", value_parser = ["skip", "one", "all"], requires = "series")]
    pub catch_up: Option<String>,
}

/// Which jobs `list` and `cancel-many` take.
#[derive(Debug, Args)]
pub struct Selection {
    /// Due at or after this time (RFC 3339 or epoch seconds).
    #[arg(long, value_name = "T", value_parser = parse_time)]
    pub from: Option<DateTime<Utc>>,
    /// Due at or before this time.
    #[arg(long, value_name = "T", value_parser = parse_time)]
    pub to: Option<DateTime<Utc>>,
    /// Job ids starting with this.
    #[arg(long, value_name = "P")]
    pub prefix: Option<String>,
    /// Jobs carrying this tag, KEY=VALUE; repeated, jobs carrying every one.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<(String, String)>,
    #[arg(long, value_name = "S", value_enum, default_value_t = Status::Scheduled)]
    pub status: Status,
}

impl Selection {
    /// The `tags` of a request: `None` when no `--tag` was given.
    pub fn tag_filter(&self) -> Option<sqs_waiter_client::Tags> {
        (!self.tags.is_empty()).then(|| self.tags.iter().cloned().collect())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Status {
    Scheduled,
    Parked,
}

impl From<Status> for ListStatus {
    fn from(s: Status) -> Self {
        match s {
            Status::Scheduled => ListStatus::Scheduled,
            Status::Parked => ListStatus::Parked,
        }
    }
}

/// Which due jobs take the queue's rate budget first, and how much of it a job uses.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct Rank {
    /// 0 to 1000, lower first under WAITER_MAX_RATE; 0 is critical (never held back).
    /// Default 100 (on reschedule: kept).
    #[arg(long, value_name = "N")]
    pub priority: Option<u64>,
    /// 1 to 100: the messages the job counts as against WAITER_MAX_RATE. Default 1 (on
    /// reschedule: kept).
    #[arg(long, value_name = "N")]
    pub weight: Option<u64>,
}

/// `--on-duplicate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnDuplicateArg {
    Replace,
    Extend,
}

impl OnDuplicateArg {
    pub fn into_contract(self) -> sqs_waiter_client::OnDuplicate {
        match self {
            Self::Replace => sqs_waiter_client::OnDuplicate::Replace,
            Self::Extend => sqs_waiter_client::OnDuplicate::Extend,
        }
    }
}
