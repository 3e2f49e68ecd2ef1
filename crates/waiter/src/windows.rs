//! Time windows: a job may be sent only inside daily windows of local time in an IANA time
//! zone (docs/contract.md "Time windows"). Daylight-saving changes follow the zone's rules (chrono-tz):
//! a window opening inside a spring-forward gap opens when the gap ends, and local times that
//! happen twice on a fall-back day are inside a window both times.

use crate::error::InvalidRequest;
use chrono::{DateTime, Days, LocalResult, NaiveDate, NaiveTime, Offset, TimeDelta, TimeZone, Timelike, Utc};
use chrono_tz::Tz;

/// Windows a job may carry, at most.
pub const MAX_WINDOWS: usize = 24;
/// Days searched for the next opening (every day has each window, bar DST gaps).
const SEARCH_DAYS: u64 = 8;

/// One daily window `[from, to)` of local time; `to` earlier than `from` wraps past midnight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub from: NaiveTime,
    pub to: NaiveTime,
}

impl Span {
    fn contains(&self, t: NaiveTime) -> bool {
        if self.from < self.to {
            self.from <= t && t < self.to
        } else {
            t >= self.from || t < self.to
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Windows {
    pub zone: Tz,
    pub spans: Vec<Span>,
}

fn parse_clock(field: &str, s: &str) -> Result<NaiveTime, InvalidRequest> {
    let bad = || {
        InvalidRequest::new(
            field,
            format!("must be a time of day HH:MM (00:00 to 23:59), got {s:?}"),
        )
    };
    let (h, m) = s.split_once(':').ok_or_else(bad)?;
    if h.len() != 2 || m.len() != 2 {
        return Err(bad());
    }
    let (h, m): (u32, u32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    NaiveTime::from_hms_opt(h, m, 0).ok_or_else(bad)
}

fn format_clock(t: NaiveTime) -> String {
    format!("{:02}:{:02}", t.hour(), t.minute())
}

/// The IANA zone `name` (`UTC` when absent), refused by `field` otherwise: windows' and a
/// series' cron's zone.
pub(crate) fn zone_named(field: impl Into<String>, name: Option<&str>) -> Result<Tz, InvalidRequest> {
    match name {
        None => Ok(Tz::UTC),
        Some(name) => name.parse::<Tz>().map_err(|_| {
            InvalidRequest::new(
                field,
                format!("must be an IANA time zone name such as Europe/Berlin, got {name:?}"),
            )
        }),
    }
}

impl Windows {
    /// `windows` (1 to `MAX_WINDOWS` of `{"from": "HH:MM", "to": "HH:MM"}`) and `time_zone` (an
    /// IANA name, default `UTC`).
    pub fn parse(windows: &[sqs_waiter_contract::Window], time_zone: Option<&str>) -> Result<Self, InvalidRequest> {
        if windows.is_empty() || windows.len() > MAX_WINDOWS {
            return Err(InvalidRequest::new(
                "windows",
                format!("must hold 1 to {MAX_WINDOWS} windows"),
            ));
        }
        let mut spans = Vec::with_capacity(windows.len());
        for (i, w) in windows.iter().enumerate() {
            let path = format!("windows[{i}]");
            let span = Span {
                from: parse_clock(&format!("{path}.from"), &w.from)?,
                to: parse_clock(&format!("{path}.to"), &w.to)?,
            };
            if span.from == span.to {
                return Err(InvalidRequest::new(
                    format!("{path}.to"),
                    "must differ from from (a window of no time)",
                ));
            }
            spans.push(span);
        }
        Ok(Self {
            zone: zone_named("time_zone", time_zone)?,
            spans,
        })
    }

    /// Whether the instant `t` is inside a window.
    pub fn contains(&self, t: DateTime<Utc>) -> bool {
        let local = t.with_timezone(&self.zone).time();
        self.spans.iter().any(|s| s.contains(local))
    }

    /// The first instant at or after `t` inside a window (`t` itself when it is inside).
    pub fn next_open(&self, t: DateTime<Utc>) -> DateTime<Utc> {
        if self.contains(t) {
            return t;
        }
        let today = t.with_timezone(&self.zone).date_naive();
        let mut best: Option<DateTime<Utc>> = None;
        for day in 0..=SEARCH_DAYS {
            let Some(date) = today
                .checked_sub_days(Days::new(1))
                .and_then(|d| d.checked_add_days(Days::new(day)))
            else {
                continue;
            };
            for span in &self.spans {
                for open in self.openings(date, span.from) {
                    // An opening inside a DST gap may land past its own window: then it is none.
                    if open >= t && self.contains(open) && best.is_none_or(|b| open < b) {
                        best = Some(open);
                    }
                }
            }
            if best.is_some() && day >= 2 {
                break;
            }
        }
        // A window is also entered where local time jumps into it: on a fall-back day the
        // repeated hour can start inside a window whose `from` does not happen then.
        let end = best.unwrap_or(t + TimeDelta::days(SEARCH_DAYS as i64 + 1));
        for jump in self.offset_changes(t, end) {
            if jump >= t && self.contains(jump) && best.is_none_or(|b| jump < b) {
                best = Some(jump);
            }
        }
        best.unwrap_or(t)
    }

    /// The instants in `(from, to]` at which the zone's UTC offset changes, to the second.
    /// Zones change offset at most a few times a year, never twice within an hour.
    fn offset_changes(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<DateTime<Utc>> {
        let offset = |s: i64| {
            DateTime::from_timestamp(s, 0).map(|t| t.with_timezone(&self.zone).offset().fix().local_minus_utc())
        };
        let (from, to) = (from.timestamp(), to.timestamp());
        let mut changes = Vec::new();
        let mut a = from;
        while a < to {
            let b = (a + 3600).min(to);
            if offset(a) != offset(b) {
                // The first second with `b`'s offset.
                let (mut lo, mut hi) = (a, b);
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    if offset(mid) == offset(lo) {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                changes.extend(DateTime::from_timestamp(hi, 0));
            }
            a = b;
        }
        changes
    }

    /// The instants local `time` happens on `date`: both when it happens twice (fall back),
    /// the end of the gap when it does not happen (spring forward).
    fn openings(&self, date: NaiveDate, time: NaiveTime) -> Vec<DateTime<Utc>> {
        let mut naive = date.and_time(time);
        // Gaps are at most a few hours; step a minute at a time to the first local time that exists.
        for _ in 0..(24 * 60) {
            match self.zone.from_local_datetime(&naive) {
                LocalResult::Single(t) => return vec![t.with_timezone(&Utc)],
                LocalResult::Ambiguous(a, b) => return vec![a.with_timezone(&Utc), b.with_timezone(&Utc)],
                LocalResult::None => naive += TimeDelta::minutes(1),
            }
        }
        Vec::new()
    }

    /// As stored: `"05:00-07:00,22:00-02:00"` and the zone's name.
    pub fn encode(&self) -> (String, String) {
        let spans = self
            .spans
            .iter()
            .map(|s| format!("{}-{}", format_clock(s.from), format_clock(s.to)))
            .collect::<Vec<_>>()
            .join(",");
        (spans, self.zone.name().to_owned())
    }

    pub fn decode(spans: &str, zone: &str) -> Result<Self, String> {
        let zone = zone
            .parse::<Tz>()
            .map_err(|_| format!("time_zone {zone:?} is not an IANA name"))?;
        let spans = spans
            .split(',')
            .map(|s| {
                let (from, to) = s
                    .split_once('-')
                    .ok_or_else(|| format!("window {s:?} is not HH:MM-HH:MM"))?;
                Ok(Span {
                    from: parse_clock("windows", from).map_err(|e| e.to_string())?,
                    to: parse_clock("windows", to).map_err(|e| e.to_string())?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Self { zone, spans })
    }

    /// As requests give them, for replies: each span's `from` and `to`, and the zone's name.
    pub fn spans_and_zone(&self) -> (Vec<(String, String)>, String) {
        let spans = self
            .spans
            .iter()
            .map(|s| (format_clock(s.from), format_clock(s.to)))
            .collect();
        (spans, self.zone.name().to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn windows(spans: &[(&str, &str)], zone: &str) -> Windows {
        let v: Vec<sqs_waiter_contract::Window> = spans
            .iter()
            .map(|(f, t)| sqs_waiter_contract::Window::new(*f, *t))
            .collect();
        Windows::parse(&v, Some(zone)).unwrap()
    }

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn inside_stays_and_outside_moves_to_the_next_opening() {
        let w = windows(&[("05:00", "07:00")], "UTC");
        assert_eq!(w.next_open(utc("2026-03-02T05:30:00Z")), utc("2026-03-02T05:30:00Z"));
        assert_eq!(w.next_open(utc("2026-03-02T04:59:59Z")), utc("2026-03-02T05:00:00Z"));
        // `to` is exclusive: 07:00 is the next day's 05:00.
        assert_eq!(w.next_open(utc("2026-03-02T07:00:00Z")), utc("2026-03-03T05:00:00Z"));
    }

    #[test]
    fn a_window_wrapping_midnight_and_the_earliest_of_several_win() {
        let w = windows(&[("22:00", "02:00"), ("12:00", "13:00")], "UTC");
        assert!(w.contains(utc("2026-03-02T23:59:00Z")));
        assert!(w.contains(utc("2026-03-03T01:59:00Z")));
        assert!(!w.contains(utc("2026-03-03T02:00:00Z")));
        assert_eq!(w.next_open(utc("2026-03-03T02:00:00Z")), utc("2026-03-03T12:00:00Z"));
        assert_eq!(w.next_open(utc("2026-03-03T13:00:00Z")), utc("2026-03-03T22:00:00Z"));
    }

    #[test]
    fn berlin_spring_forward_opens_when_the_gap_ends() {
        // 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00 UTC); local 02:30 never happens.
        let w = windows(&[("02:30", "04:00")], "Europe/Berlin");
        assert_eq!(
            w.next_open(utc("2026-03-28T23:00:00Z")),
            utc("2026-03-29T01:00:00Z"),
            "03:00 CEST"
        );
        // A window entirely inside the gap does not open that day: the next day's does.
        let gap = windows(&[("02:00", "02:59")], "Europe/Berlin");
        assert_eq!(
            gap.next_open(utc("2026-03-28T23:00:00Z")),
            utc("2026-03-30T00:00:00Z"),
            "02:00 CEST next day"
        );
        // The day before and after: CET (UTC+1), then CEST (UTC+2).
        let five = windows(&[("05:00", "07:00")], "Europe/Berlin");
        assert_eq!(five.next_open(utc("2026-03-28T00:00:00Z")), utc("2026-03-28T04:00:00Z"));
        assert_eq!(five.next_open(utc("2026-03-29T00:00:00Z")), utc("2026-03-29T03:00:00Z"));
    }

    #[test]
    fn berlin_fall_back_opens_at_the_first_occurrence_and_holds_through_the_second() {
        // 2026-10-25: 03:00 CEST falls back to 02:00 CET; local 02:30 happens at 00:30 and 01:30 UTC.
        let w = windows(&[("02:30", "02:45")], "Europe/Berlin");
        assert_eq!(w.next_open(utc("2026-10-24T22:00:00Z")), utc("2026-10-25T00:30:00Z"));
        assert!(w.contains(utc("2026-10-25T00:40:00Z")), "first 02:40");
        assert!(!w.contains(utc("2026-10-25T01:00:00Z")), "02:00 CET, between the two");
        assert!(w.contains(utc("2026-10-25T01:40:00Z")), "second 02:40");
        assert_eq!(
            w.next_open(utc("2026-10-25T00:50:00Z")),
            utc("2026-10-25T01:30:00Z"),
            "the second 02:30"
        );
    }

    #[test]
    fn berlin_fall_back_re_enters_a_window_when_the_clock_goes_back() {
        // 2026-10-25: at 01:00 UTC local time goes back from 03:00 CEST to 02:00 CET. Found at
        // 02:40 CEST (00:40 UTC), after the window, the job is inside it again at 02:00 CET, not
        // at the next day's 01:00.
        let w = windows(&[("01:00", "02:30")], "Europe/Berlin");
        assert!(!w.contains(utc("2026-10-25T00:40:00Z")), "02:40 CEST");
        assert!(w.contains(utc("2026-10-25T01:00:00Z")), "02:00 CET");
        assert_eq!(
            w.next_open(utc("2026-10-25T00:40:00Z")),
            utc("2026-10-25T01:00:00Z"),
            "02:00 CET, the repeated hour"
        );
        // Lord Howe goes back half an hour (02:00 +11 to 01:30 +10:30) on 2026-04-05.
        let howe = windows(&[("01:20", "01:50")], "Australia/Lord_Howe");
        assert_eq!(
            howe.next_open(utc("2026-04-04T14:55:00Z")),
            utc("2026-04-04T15:00:00Z"),
            "01:30 +10:30"
        );
    }

    #[test]
    fn new_york_and_a_zone_without_dst() {
        // 2026-03-08: 02:00 EST jumps to 03:00 EDT (07:00 UTC).
        let ny = windows(&[("09:00", "17:00")], "America/New_York");
        assert!(ny.contains(utc("2026-03-07T20:00:00Z")), "15:00 EST");
        assert_eq!(
            ny.next_open(utc("2026-03-07T23:00:00Z")),
            utc("2026-03-08T13:00:00Z"),
            "09:00 EDT"
        );
        let tokyo = windows(&[("09:00", "17:00")], "Asia/Tokyo");
        assert_eq!(
            tokyo.next_open(utc("2026-03-07T23:00:00Z")),
            utc("2026-03-08T00:00:00Z")
        );
    }

    #[test]
    fn bad_windows_name_the_field() {
        let cases = [
            (json!("05:00-07:00"), None, "windows"),
            (json!([]), None, "windows"),
            (json!([{"from": "5:00", "to": "07:00"}]), None, "windows[0].from"),
            (json!([{"from": "05:00", "to": "24:00"}]), None, "windows[0].to"),
            (json!([{"from": "05:00"}]), None, "windows[0].to"),
            (json!([{"from": "05:00", "to": "05:00"}]), None, "windows[0].to"),
            (
                json!([{"from": "05:00", "to": "06:00", "days": "mon"}]),
                None,
                "windows[0].days",
            ),
            (
                json!([{"from": "05:00", "to": "06:00"}]),
                Some(json!("Mars/Olympus")),
                "time_zone",
            ),
            (json!([{"from": "05:00", "to": "06:00"}]), Some(json!(1)), "time_zone"),
        ];
        // As a request carries them: decoded, then checked.
        let config = crate::testing::config("orders", &[]);
        for (v, tz, field) in cases {
            let mut job = json!({"queue": "orders", "message_body": "x", "windows": v});
            if let Some(tz) = &tz {
                job["time_zone"] = tz.clone();
            }
            let e = crate::wire::parse_job(&job, &config, Utc::now()).unwrap_err();
            assert_eq!(e.field, field, "{v} {tz:?}: {e}");
        }
    }

    #[test]
    fn stored_form_round_trips() {
        let w = windows(&[("05:00", "07:00"), ("22:30", "01:15")], "Europe/Berlin");
        let (spans, zone) = w.encode();
        assert_eq!(spans, "05:00-07:00,22:30-01:15");
        assert_eq!(Windows::decode(&spans, &zone).unwrap(), w);
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    const ZONES: &[&str] = &[
        "UTC",
        "Europe/Berlin",
        "America/New_York",
        "Australia/Lord_Howe",
        "Asia/Kolkata",
    ];

    fn spans_of(raw: &[(u32, u32)]) -> Vec<Span> {
        raw.iter()
            .map(|(from, len)| {
                let to = (from + len) % 1440;
                Span {
                    from: NaiveTime::from_hms_opt(from / 60, from % 60, 0).unwrap(),
                    to: NaiveTime::from_hms_opt(to / 60, to % 60, 0).unwrap(),
                }
            })
            .filter(|s| s.from != s.to)
            .collect()
    }

    /// The property: `next_open(t)` is inside a window, not before `t`, and no minute between
    /// `t` and it is inside one.
    fn first_inside(w: &Windows, t: DateTime<Utc>) -> Result<(), TestCaseError> {
        let open = w.next_open(t);
        prop_assert!(open >= t);
        prop_assert!(w.contains(open), "{open} not inside");
        let mut m = t;
        while m + TimeDelta::minutes(1) <= open {
            prop_assert!(!w.contains(m), "{m} is inside, before {open}");
            m += TimeDelta::minutes(1);
        }
        Ok(())
    }

    /// Fall-back changes (zone, UTC instant), where local time repeats: uniform start times
    /// rarely land near one.
    const FALL_BACKS: &[(&str, i64)] = &[
        ("Europe/Berlin", 1_792_890_000),       // 2026-10-25T01:00:00Z
        ("America/New_York", 1_793_512_800),    // 2026-11-01T06:00:00Z
        ("Australia/Lord_Howe", 1_775_314_800), // 2026-04-04T15:00:00Z
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]
        /// Spans in the small hours and starts shortly before the change, where a window can be
        /// re-entered when the clock goes back.
        #[test]
        fn next_open_is_the_first_instant_inside_around_a_fall_back(
            change in 0..FALL_BACKS.len(),
            before in -600i64..7_200,
            spans in proptest::collection::vec((0u32..300, 1u32..300), 1..3),
        ) {
            let spans = spans_of(&spans);
            prop_assume!(!spans.is_empty());
            let (zone, at) = FALL_BACKS[change];
            let w = Windows { zone: zone.parse().unwrap(), spans };
            first_inside(&w, DateTime::<Utc>::from_timestamp(at - before, 0).unwrap())?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn next_open_is_the_first_instant_inside(
            start in 1_767_225_600i64..1_830_297_600i64,
            zone in 0..ZONES.len(),
            spans in proptest::collection::vec((0u32..1440, 1u32..1440), 1..4),
        ) {
            let spans = spans_of(&spans);
            prop_assume!(!spans.is_empty());
            let w = Windows { zone: ZONES[zone].parse().unwrap(), spans };
            first_inside(&w, DateTime::<Utc>::from_timestamp(start, 0).unwrap())?;
        }
    }
}
