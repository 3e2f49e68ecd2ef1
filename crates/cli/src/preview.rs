//! `sqs-waiter preview`: a schedule's next occurrences computed here, with the function's own
//! schedule code (`sqs-waiter-schedule`), so no AWS call is made; or a stored series', asked of
//! the function.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use comfy_table::{presets, Table};
use sqs_waiter_client::{PreviewOccurrence, PreviewReply, MAX_EVERY_S, MIN_EVERY_S};
use sqs_waiter_schedule::{preview, CatchUp, Cron, Every, Series};

/// The occurrences of `--cron` or `--every`, or why there are none (one line, naming the flag).
pub fn local(
    cron: Option<&str>,
    every: Option<u64>,
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
    let every = match (cron, every) {
        (Some(expr), None) => Every::Cron(Cron::parse(expr).map_err(|e| format!("--cron: {e}"))?, zone),
        (None, Some(s)) if (MIN_EVERY_S..=MAX_EVERY_S).contains(&s) => {
            Every::Seconds(u32::try_from(s).unwrap_or(u32::MAX))
        }
        (None, Some(s)) => {
            return Err(format!(
                "--every: must be {MIN_EVERY_S} to {MAX_EVERY_S} seconds, got {s}"
            ))
        }
        _ => return Err("give --cron or --every, or the QUEUE and ID of a stored series".into()),
    };
    let series = Series {
        every,
        until: None,
        count: None,
        catch_up: CatchUp::default(),
        occurrences: 0,
        held: None,
    };
    let start = from.unwrap_or_else(Utc::now);
    let first = series
        .first(start)
        .ok_or_else(|| "--cron: has no occurrence after the start".to_owned())?;
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

    #[test]
    fn a_cron_in_a_zone_is_previewed_here_and_a_clock_change_is_marked() {
        let from = DateTime::parse_from_rfc3339("2027-03-27T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let r = local(Some("30 2 * * *"), None, Some("Europe/Berlin"), Some(from), 3).unwrap();
        let shown = render(&r);
        assert!(
            shown.contains("2027-03-28T03:00:00+02:00  moved by a clock change"),
            "{shown}"
        );
        assert_eq!(r.occurrences.iter().filter(|o| o.shifted).count(), 1);
        assert_eq!(
            local(None, Some(59), None, None, 3).unwrap_err(),
            "--every: must be 60 to 31536000 seconds, got 59"
        );
        assert!(local(Some("61 * * * *"), None, None, None, 3)
            .unwrap_err()
            .starts_with("--cron: "));
        assert!(local(Some("* * * * *"), None, Some("Mars/Base"), None, 3)
            .unwrap_err()
            .starts_with("--tz: "));
    }
}
