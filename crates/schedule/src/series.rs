//! A series as the job model holds it (how it repeats, where it ends, what it does with missed
//! occurrences, how many it has sent), and `step`: what one poller pass does with a due series,
//! the one occurrence it sends, if any, and where the series moves.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::{due, CatchUp, Cron, Pass, Rate, Rule};

/// How often a series fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Every {
    /// A cron expression read in a time zone.
    Cron(Cron, Tz),
    /// Every so many seconds from the series' start.
    Seconds(u32),
    /// EventBridge Scheduler's `rate(...)`: as `Seconds`, shown as given.
    Rate(Rate),
}

impl Every {
    /// From EventBridge Scheduler's expression, read in `zone`.
    pub fn expression(expression: crate::Expression, zone: Tz) -> Self {
        match expression {
            crate::Expression::Cron(cron) => Every::Cron(cron, zone),
            crate::Expression::Rate(rate) => Every::Rate(rate),
        }
    }
}

/// A stored series: the job's `perform_at` is its next occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    pub every: Every,
    /// No occurrence after this.
    pub until: Option<DateTime<Utc>>,
    /// Occurrences in all.
    pub count: Option<u64>,
    pub catch_up: CatchUp,
    /// Occurrences sent so far.
    pub occurrences: u64,
    /// The series' next occurrence while it waits for a window: `perform_at` is then the
    /// opening it is looked at again (DESIGN "Recurring jobs" with windows).
    pub held: Option<DateTime<Utc>>,
    /// `trigger`'s extra occurrences (DESIGN "Run now").
    pub extra: Extra,
}

/// A `trigger`'s extra occurrence lives in its series' item, so that whatever the series is
/// told next (`cancel`, `pause`, `reschedule`) it is told too, under the same conditional write
/// and the same lease check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Extra {
    /// An extra occurrence waits to be sent, stored at the item's `perform_at`; once SQS has it
    /// the item returns to this `perform_at` (the series' next occurrence, or the opening a
    /// window holds it for).
    pub returns_to: Option<DateTime<Utc>>,
    /// The instant of the last extra occurrence sent: the next one takes a later second, so that
    /// no two extra occurrences share an id.
    pub last: Option<DateTime<Utc>>,
}

/// What one pass does with a due series whose next occurrence is `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// The occurrence to send now.
    pub send: Option<DateTime<Utc>>,
    /// Missed occurrences `catch_up` leaves unsent.
    pub skipped: u64,
    /// The series' next occurrence after this pass; `None`: it has finished.
    pub next: Option<DateTime<Utc>>,
}

/// The occurrence a planned copy of a series sends, and where the series moves once SQS has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occurrence {
    pub at: DateTime<Utc>,
    pub next: Option<DateTime<Utc>>,
    /// Where the pass started: the series' next occurrence before this one was chosen.
    pub from: DateTime<Utc>,
    /// Missed occurrences this pass leaves unsent to reach `at`. Counted when the series moves
    /// past them: a pass that holds the series for its windows moves it nowhere, and the pass at
    /// the opening counts them (with any missed since).
    pub skipped: u64,
    /// A `trigger`'s extra occurrence: it counts toward no `count`, and `next` is where the
    /// item returns (`Extra::returns_to`).
    pub extra: bool,
}

impl Series {
    /// The rule from `anchor`: a stored `perform_at` is always an occurrence, so an `every_s`
    /// series keeps its grid from any of them.
    pub fn rule(&self, anchor: DateTime<Utc>) -> Rule {
        match &self.every {
            Every::Cron(cron, zone) => Rule::Cron(cron.clone(), *zone),
            Every::Seconds(seconds) => Rule::Every {
                seconds: *seconds,
                start: anchor,
            },
            Every::Rate(rate) => Rule::Every {
                seconds: rate.seconds(),
                start: anchor,
            },
        }
    }

    /// The first occurrence of a series starting at `start`; `None` when `until` comes first.
    pub fn first(&self, start: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.within(self.rule(start).at_or_after(start))
    }

    fn within(&self, t: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
        t.filter(|t| self.until.is_none_or(|u| *t <= u))
    }

    /// Occurrences it may still send (`count`), if limited.
    fn left(&self) -> Option<u64> {
        self.count.map(|c| c.saturating_sub(self.occurrences))
    }

    /// What a pass does with the series due at `from`: an occurrence on time (at or after
    /// `pass.on_time_from`, or still ahead within the run's horizon) is sent; a missed one as
    /// `catch_up` says, one per pass (`all` walks the missed ones in order). `opening`: the
    /// series is held for its windows until then; the occurrences before it are held, not
    /// missed, and `skip` and `one` send the latest of them.
    pub fn step(&self, from: DateTime<Utc>, opening: Option<DateTime<Utc>>, pass: Pass) -> Step {
        let rule = self.rule(from);
        let sending = |at: DateTime<Utc>, skipped: u64| Step {
            send: Some(at),
            skipped,
            next: if self.left().is_some_and(|l| l <= 1) {
                None
            } else {
                self.within(rule.after(at))
            },
        };
        if self.left() == Some(0) {
            return Step {
                send: None,
                skipped: 0,
                next: None,
            };
        }
        let (pass, catch_up) = match opening {
            Some(o) => (
                Pass {
                    on_time_from: pass.on_time_from.max(o),
                    ..pass
                },
                match self.catch_up {
                    CatchUp::Skip => CatchUp::One,
                    other => other,
                },
            ),
            None => (pass, self.catch_up),
        };
        // `all` sends every missed occurrence in order, so this pass sends `from`: no walk over
        // the missed ones (`due` walks up to `MAX_CATCH_UP_PER_RUN` of them, and a run makes one
        // pass per occurrence it sends).
        if from >= pass.on_time_from || catch_up == CatchUp::All {
            return sending(from, 0);
        }
        let d = due(&rule, from, pass, catch_up, self.until, self.left());
        match d.send.first() {
            Some(&at) => sending(at, d.skipped),
            None => Step {
                send: None,
                skipped: d.skipped,
                next: d.next,
            },
        }
    }

    /// The series after a pass sent `sent` occurrences and moved it on.
    pub fn advanced(&self, sent: u64) -> Self {
        Self {
            occurrences: self.occurrences + sent,
            held: None,
            ..self.clone()
        }
    }

    /// Where a pass over the series stored at `perform_at` starts: its held occurrence, if a
    /// window holds one, else where an extra occurrence returns it to, else `perform_at`.
    pub fn from(&self, perform_at: DateTime<Utc>) -> DateTime<Utc> {
        self.held.or(self.extra.returns_to).unwrap_or(perform_at)
    }

    /// Whether one of the series' occurrences (past or to come) falls within the second
    /// starting at epoch `second`, for the series stored at `perform_at`: its id would be that
    /// second's (`{job_id}@{epoch}`).
    pub fn occurs_in_second(&self, perform_at: DateTime<Utc>, second: i64) -> bool {
        let anchor = self.from(perform_at);
        match &self.every {
            // An `every_s` series' occurrences are its anchor plus whole steps, back and forth.
            Every::Seconds(s) => (second - anchor.timestamp()).rem_euclid(i64::from(*s).max(1)) == 0,
            Every::Rate(r) => (second - anchor.timestamp()).rem_euclid(i64::from(r.seconds()).max(1)) == 0,
            Every::Cron(..) => DateTime::from_timestamp(second, 0).is_some_and(|start| {
                self.rule(anchor)
                    .at_or_after(start)
                    .is_some_and(|at| at.timestamp() == second)
            }),
        }
    }

    /// The instant of an extra occurrence asked for at `now`: `now`, or the start of the first
    /// later second that no occurrence of the series and no earlier extra one has, so that its
    /// id names it alone. Never before `now`.
    pub fn extra_at(&self, perform_at: DateTime<Utc>, now: DateTime<Utc>) -> DateTime<Utc> {
        let after_last = self.extra.last.map_or(i64::MIN, |l| l.timestamp() + 1);
        let mut second = now.timestamp().max(after_last);
        // Occurrences are a minute apart at least (`MIN_EVERY_S`, cron's minutes): one step
        // clears them; the bound only guards an item stored otherwise.
        for _ in 0..120 {
            if !self.occurs_in_second(perform_at, second) {
                break;
            }
            second += 1;
        }
        match DateTime::from_timestamp(second, 0) {
            Some(start) if start > now => start,
            _ => now,
        }
    }

    /// As the contract shows it (the zone goes in the job's `time_zone`).
    pub fn to_contract(&self) -> sqs_waiter_contract::Repeat {
        let (cron, every_s, expression) = match &self.every {
            Every::Cron(c, _) if c.is_aws() => (None, None, Some(c.as_str().to_owned())),
            Every::Cron(c, _) => (Some(c.as_str().to_owned()), None, None),
            Every::Seconds(s) => (None, Some(u64::from(*s)), None),
            Every::Rate(r) => (None, None, Some(r.as_str().to_owned())),
        };
        sqs_waiter_contract::Repeat {
            cron,
            every_s,
            expression,
            until: self.until,
            count: self.count,
            catch_up: Some(self.catch_up),
        }
    }

    /// The cron read in `zone` from now on (an `every_s` series has none to change).
    pub fn set_zone(&mut self, zone: Tz) {
        if let Every::Cron(_, z) = &mut self.every {
            *z = zone;
        }
    }

    /// The zone a cron is read in.
    pub fn zone(&self) -> Option<Tz> {
        match &self.every {
            Every::Cron(_, z) => Some(*z),
            Every::Seconds(_) | Every::Rate(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;
    use proptest::prelude::*;

    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").to_utc()
    }

    fn every(seconds: u32, catch_up: CatchUp) -> Series {
        Series {
            every: Every::Seconds(seconds),
            until: None,
            count: None,
            catch_up,
            occurrences: 0,
            held: None,
            extra: Extra::default(),
        }
    }

    #[test]
    fn a_pass_sends_one_occurrence_and_moves_on_as_catch_up_says() {
        let now = utc("2026-03-01T10:00:30Z");
        let start = utc("2026-03-01T09:55:00Z");
        // On time: sent, next one step on.
        let on_time = every(60, CatchUp::One).step(utc("2026-03-01T10:00:00Z"), None, Pass::new(now, None));
        assert_eq!(on_time.send, Some(utc("2026-03-01T10:00:00Z")));
        assert_eq!(on_time.next, Some(utc("2026-03-01T10:01:00Z")));
        // Ahead within the horizon: sent too (with its delay).
        let ahead = every(60, CatchUp::Skip).step(utc("2026-03-01T10:05:00Z"), None, Pass::new(now, None));
        assert_eq!(ahead.send, Some(utc("2026-03-01T10:05:00Z")));
        // Five missed (09:55..09:59), 10:00 on time: sent in the same pass.
        let skip = every(60, CatchUp::Skip).step(start, None, Pass::new(now, None));
        assert_eq!((skip.send, skip.skipped), (Some(utc("2026-03-01T10:00:00Z")), 5));
        assert_eq!(skip.next, Some(utc("2026-03-01T10:01:00Z")));
        // Nothing on time yet: moved on, nothing sent.
        let later = utc("2026-03-01T10:00:15Z");
        let none = every(120, CatchUp::Skip).step(start, None, Pass::new(later, None));
        assert_eq!(
            none,
            Step {
                send: None,
                skipped: 3,
                next: Some(utc("2026-03-01T10:01:00Z"))
            }
        );
        let one = every(60, CatchUp::One).step(start, None, Pass::new(now, None));
        assert_eq!((one.send, one.skipped), (Some(utc("2026-03-01T09:59:00Z")), 4));
        assert_eq!(one.next, Some(utc("2026-03-01T10:00:00Z")));
        let all = every(60, CatchUp::All).step(start, None, Pass::new(now, None));
        assert_eq!((all.send, all.skipped), (Some(start), 0));
        assert_eq!(all.next, Some(utc("2026-03-01T09:56:00Z")));
    }

    #[test]
    fn an_extra_occurrence_takes_a_second_no_occurrence_and_no_earlier_extra_has() {
        let s = every(60, CatchUp::One);
        let next = utc("2026-03-01T10:01:00.25Z");
        // In the second of an occurrence (10:00:00.25, a step back on the grid): the next one.
        assert_eq!(
            s.extra_at(next, utc("2026-03-01T10:00:00.5Z")),
            utc("2026-03-01T10:00:01Z")
        );
        // Elsewhere: now.
        let now = utc("2026-03-01T10:00:30.5Z");
        assert_eq!(s.extra_at(next, now), now);
        // After an extra one in this second: the next second.
        let after = Series {
            extra: Extra {
                returns_to: None,
                last: Some(now),
            },
            ..s.clone()
        };
        assert_eq!(
            after.extra_at(next, utc("2026-03-01T10:00:30.9Z")),
            utc("2026-03-01T10:00:31Z")
        );
        // A cron's occurrences are whole minutes.
        let cron = Series {
            every: Every::Cron(Cron::parse("* * * * *").expect("cron"), chrono_tz::UTC),
            ..s
        };
        assert_eq!(
            cron.extra_at(next, utc("2026-03-01T10:02:00.4Z")),
            utc("2026-03-01T10:02:01Z")
        );
        assert!(!cron.occurs_in_second(next, utc("2026-03-01T10:02:01Z").timestamp()));
    }

    #[test]
    fn count_and_until_end_the_series() {
        let now = utc("2026-03-01T10:00:00Z");
        let last = Series {
            count: Some(3),
            occurrences: 2,
            held: None,
            ..every(60, CatchUp::One)
        };
        assert_eq!(
            last.step(now, None, Pass::new(now, None)).next,
            None,
            "the third of three"
        );
        assert_eq!(
            last.advanced(1).step(now, None, Pass::new(now, None)).send,
            None,
            "none after count"
        );
        let until = Series {
            until: Some(now + TimeDelta::seconds(59)),
            ..every(60, CatchUp::One)
        };
        assert_eq!(
            until.step(now, None, Pass::new(now, None)),
            Step {
                send: Some(now),
                skipped: 0,
                next: None
            }
        );
        assert_eq!(until.first(now + TimeDelta::seconds(60)), None);
    }

    proptest! {
        /// Passes one after another at the same `now` send what `due` says in one go: every
        /// occurrence it sends, in order, and no other; and the series ends where `due` ends it.
        #[test]
        fn passes_send_what_due_sends(
            missed_min in 0i64..300, every_min in 1u32..30, policy in 0u8..3, count in proptest::option::of(1u64..20),
        ) {
            let catch_up = [CatchUp::Skip, CatchUp::One, CatchUp::All][usize::from(policy)];
            let now = utc("2026-10-25T01:30:00Z");
            let series = Series { count, ..every(every_min * 60, catch_up) };
            let from = now - TimeDelta::minutes(missed_min);
            let d = due(&series.rule(from), from, Pass::new(now, None), catch_up, None, count);
            let (mut sent, mut at, mut s) = (Vec::new(), Some(from), series.clone());
            while let Some(t) = at.filter(|t| *t <= now) {
                let step = s.step(t, None, Pass::new(now, None));
                sent.extend(step.send);
                s = s.advanced(u64::from(step.send.is_some()));
                at = step.next;
            }
            prop_assert_eq!(sent, d.send);
            prop_assert_eq!(at, d.next);
        }
    }
}
