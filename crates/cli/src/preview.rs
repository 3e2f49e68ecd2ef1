//! `sqs-waiter preview`: a schedule's next occurrences computed here, with the function's own
//! schedule code (`sqs-waiter-schedule`), so no AWS call is made; or a stored series', asked of
//! the function.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use comfy_table::{presets, Table};
use sqs_waiter_client::{PreviewOccurrence, PreviewReply, MAX_EVERY_S, MIN_EVERY_S};
use sqs_waiter_schedule::{preview, CatchUp, Cron, Every, Expression, Series};

/// The schedule flags given (clap lets one through).
#[derive(Debug, Clone, Copy, Default)]
pub struct Given<'a> {
    pub cron: Option<&'a str>,
    pub every: Option<u64>,
    pub schedule: Option<&'a str>,
}

/// The occurrences of `--cron`, `--every` or `--schedule`, or why there are none (one line,
/// naming the flag).
pub fn local(
    given: Given<'_>,
    tz: Option<&str>,
    from: Option<DateTime<Utc>>,
    n: usize,
) -> Result<PreviewReply, String> {
    let zone: Tz = match tz {
        None => Tz::UTC,
        Some(name) => name
            .parse()
            .map_err(|_| format!("--tz: must be an IANA time zone name such as Europe/Berlin, got {name:?}"))?,
    };
    let (every, flag) = match (given.cron, given.every, given.schedule) {
        (Some(expr), None, None) => (
            Every::Cron(Cron::parse(expr).map_err(|e| format!("--cron: {e}"))?, zone),
            "--cron",
        ),
        (None, None, Some(expr)) => (
            Every::expression(Expression::parse(expr).map_err(|e| format!("--schedule: {e}"))?, zone),
            "--schedule",
        ),
        (None, Some(s), None) if (MIN_EVERY_S..=MAX_EVERY_S).contains(&s) => {
            (Every::Seconds(u32::try_from(s).unwrap_or(u32::MAX)), "--every")
        }
        (None, Some(s), None) => {
            return Err(format!(
                "--every: must be {MIN_EVERY_S} to {MAX_EVERY_S} seconds, got {s}"
            ))
        }
        _ => return Err("give --cron, --every or --schedule, or the QUEUE and ID of a stored series".into()),
    };
    let series = Series {
        every,
        until: None,
        count: None,
        catch_up: CatchUp::default(),
        occurrences: 0,
        held: None,
        extra: Default::default(),
    };
    let start = from.unwrap_or_else(Utc::now);
    let first = series
        .first(start)
        .ok_or_else(|| format!("{flag}: has no occurrence after the start"))?;
    Ok(PreviewReply {
        occurrences: preview(&series, first, zone, n)
            .into_iter()
            .map(|p| PreviewOccurrence {
                at: p.at,
                local: p.local,
                shifted: p.shifted,
            })
            .collect(),
        status: None,
    })
}

/// The occurrences as a table: UTC, local, and a mark where a clock change moved one.
pub fn render(reply: &PreviewReply) -> String {
    if reply.occurrences.is_empty() {
        return "no occurrences".to_owned();
    }
    let mut t = Table::new();
    t.load_preset(presets::NOTHING);
    t.set_header(vec!["at (UTC)", "local", ""]);
    for o in &reply.occurrences {
        t.add_row(vec![
            o.at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
            o.local.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false),
            if o.shifted { "moved by a clock change" } else { "" }.to_owned(),
        ]);
    }
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cron(expr: &str) -> Given<'_> {
        Given {
            cron: Some(expr),
            ..Given::default()
        }
    }

    fn schedule(expr: &str) -> Given<'_> {
        Given {
            schedule: Some(expr),
            ..Given::default()
        }
    }

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn a_cron_in_a_zone_is_previewed_here_and_a_clock_change_is_marked() {
        let from = utc("2027-03-27T00:00:00Z");
        let r = local(cron("30 2 * * *"), Some("Europe/Berlin"), Some(from), 3).unwrap();
        let shown = render(&r);
        assert!(
            shown.contains("2027-03-28T03:00:00+02:00  moved by a clock change"),
            "{shown}"
        );
        assert_eq!(r.occurrences.iter().filter(|o| o.shifted).count(), 1);
        let every = Given {
            every: Some(59),
            ..Given::default()
        };
        assert_eq!(
            local(every, None, None, 3).unwrap_err(),
            "--every: must be 60 to 31536000 seconds, got 59"
        );
        assert!(local(cron("61 * * * *"), None, None, 3)
            .unwrap_err()
            .starts_with("--cron: "));
        assert!(local(cron("* * * * *"), Some("Mars/Base"), None, 3)
            .unwrap_err()
            .starts_with("--tz: "));
    }

    #[test]
    fn eventbridge_expressions_are_previewed_as_aws_reads_them() {
        // Friday 1 January 2027: 2-6 is Monday to Friday in AWS's day-of-week.
        let from = utc("2027-01-01T00:00:00Z");
        let r = local(schedule("cron(0 9 ? * 2-6 *)"), Some("Europe/Berlin"), Some(from), 3).unwrap();
        let at: Vec<String> = r.occurrences.iter().map(|o| o.local.to_rfc3339()).collect();
        assert_eq!(
            at,
            [
                "2027-01-01T09:00:00+01:00",
                "2027-01-04T09:00:00+01:00",
                "2027-01-05T09:00:00+01:00"
            ]
        );
        let r = local(schedule("rate(2 hours)"), None, Some(from), 2).unwrap();
        assert_eq!(r.occurrences[1].at, utc("2027-01-01T02:00:00Z"));
        assert!(local(schedule("cron(0 9 * * * *)"), None, None, 3)
            .unwrap_err()
            .starts_with("--schedule: one of day-of-month and day-of-week must be ?"));
        assert!(local(schedule("cron(0 9 * * ? 2020)"), None, None, 3)
            .unwrap_err()
            .starts_with("--schedule: has no occurrence"));
    }
}
