//! Timestamps: parsing caller input and the epoch-seconds codec used for `perform_at`.
//!
//! Internally a time is a `DateTime<Utc>` with microsecond resolution. Anything finer is rounded
//! *up*, so that rounding can never make a job early.
//!
//! Leap seconds: RFC 3339 allows second `60`. chrono accepts it at any minute and represents it as
//! second 59 with more than 10⁹ ns, which epoch arithmetic would turn into an instant about a
//! second *before* the one named. We normalise `hh:mm:60.f` to `hh:(mm+1):00.f`, the same POSIX
//! instant (POSIX time repeats a second rather than count the leap), so a job is never early.

use chrono::{DateTime, TimeDelta, Utc};

/// Latest accepted time: the end of year 9999, the RFC 3339 range.
pub fn max_time() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("9999-12-31T23:59:59.999999Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// Parses RFC 3339 (`2026-12-01T09:00:00Z`) or epoch seconds given as a string (`"1764579600.5"`).
pub fn parse_time_str(s: &str) -> Result<DateTime<Utc>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("must be an RFC 3339 time or epoch seconds, got an empty string".into());
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        let mut t = normalise_leap_second(t.with_timezone(&Utc)).ok_or_else(|| "is out of range".to_string())?;
        // chrono keeps 9 fractional digits and drops the rest: a dropped non-zero digit means
        // the instant named is later than the one parsed.
        if sub_nanosecond_digits(s).is_some_and(|rest| rest.bytes().any(|b| b != b'0')) {
            t = t
                .checked_add_signed(TimeDelta::nanoseconds(1))
                .ok_or_else(|| "is out of range".to_string())?;
        }
        return ceil_to_micros(t)
            .filter(|t| *t <= max_time())
            .ok_or_else(|| "is out of range (after year 9999)".to_string());
    }
    if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') && s.bytes().filter(|b| *b == b'.').count() <= 1 {
        return parse_epoch_decimal(s).ok_or_else(|| "is out of range (after year 9999)".to_string());
    }
    Err("must be an RFC 3339 time (e.g. 2026-12-01T09:00:00Z) or epoch seconds".into())
}

/// Converts epoch seconds from a JSON number, given as the literal text the caller wrote
/// (serde_json's `arbitrary_precision` keeps it), so that no float rounding can move the time
/// earlier: `1796000000.1234567`, `1.7961e9` and `17961E+5` are all exact.
pub fn parse_json_epoch(literal: &str) -> Result<DateTime<Utc>, String> {
    let (negative, digits) = match literal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, literal),
    };
    let (mantissa, exponent) = match digits.split_once(['e', 'E']) {
        Some((m, e)) => {
            let e: i64 = e
                .strip_prefix('+')
                .unwrap_or(e)
                .parse()
                .map_err(|_| "must be a number".to_string())?;
            (m, e)
        }
        None => (digits, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err("must be a number".into());
    }
    let all: String = format!("{int}{frac}");
    let significant = all.trim_start_matches('0');
    if negative && !significant.is_empty() {
        return Err("must not be before 1970-01-01".into());
    }
    if significant.is_empty() {
        return parse_epoch_decimal("0").ok_or_else(|| "is out of range".into());
    }
    // Position of the decimal point in `all` after applying the exponent.
    let point = int.len() as i64 + exponent;
    if point > 20 {
        return Err("is out of range (after year 9999)".into());
    }
    let decimal = if point <= 0 {
        // 0.000ddd: far below a microsecond unless the point is close.
        let zeros = usize::try_from(-point).unwrap_or(usize::MAX).min(64);
        format!("0.{}{}", "0".repeat(zeros), all)
    } else {
        let point = point as usize;
        if point >= all.len() {
            format!("{all}{}", "0".repeat(point - all.len()))
        } else {
            format!("{}.{}", &all[..point], &all[point..])
        }
    };
    parse_epoch_decimal(&decimal).ok_or_else(|| "is out of range (after year 9999)".into())
}

/// Parses a non-negative decimal number of epoch seconds exactly (DynamoDB `N` values too).
pub fn parse_epoch_decimal(s: &str) -> Option<DateTime<Utc>> {
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s, ""),
    };
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: i64 = int.parse().ok()?;
    let mut micros: i64 = 0;
    for (i, b) in frac.bytes().enumerate() {
        let d = i64::from(b - b'0');
        if i < 6 {
            micros = micros * 10 + d;
        } else if d > 0 {
            // A sub-microsecond remainder rounds up: never early.
            micros += 1;
            break;
        }
    }
    for _ in frac.len()..6 {
        micros *= 10;
    }
    let t = DateTime::from_timestamp(secs, 0)?.checked_add_signed(TimeDelta::microseconds(micros))?;
    (t <= max_time()).then_some(t)
}

/// Formats a time as epoch seconds with up to six decimals and no trailing zeros.
pub fn format_epoch(t: DateTime<Utc>) -> String {
    let secs = t.timestamp();
    let micros = t.timestamp_subsec_micros();
    if micros == 0 {
        secs.to_string()
    } else {
        let frac = format!("{micros:06}");
        format!("{secs}.{}", frac.trim_end_matches('0'))
    }
}

/// RFC 3339 in UTC with a `Z` and only the fractional digits needed (0, 3 or 6), as replies show it.
pub fn format_rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// The fractional-second digits past the ninth in an RFC 3339 text, if any.
fn sub_nanosecond_digits(s: &str) -> Option<&str> {
    let time = &s[s.find(['T', 't', ' '])?..];
    let frac = &time[time.find('.')? + 1..];
    let digits = &frac[..frac.bytes().take_while(u8::is_ascii_digit).count()];
    digits.get(9..)
}

/// `hh:mm:60.f` (chrono: second 59 plus ≥ 10⁹ ns) becomes `hh:(mm+1):00.f`.
pub fn normalise_leap_second(t: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let nanos = t.timestamp_subsec_nanos();
    if nanos < 1_000_000_000 {
        return Some(t);
    }
    DateTime::from_timestamp(t.timestamp().checked_add(1)?, nanos - 1_000_000_000)
}

/// Rounds up to whole microseconds, the resolution of stored times.
pub fn ceil_to_micros(t: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let nanos = t.timestamp_subsec_nanos() % 1000;
    if nanos == 0 {
        Some(t)
    } else {
        t.checked_add_signed(TimeDelta::nanoseconds(i64::from(1000 - nanos)))
    }
}

/// Seconds from `from` to `to` as a float (negative when `to` is earlier).
pub fn seconds_between(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    (to - from)
        .num_microseconds()
        .map_or_else(|| (to - from).num_milliseconds() as f64 / 1e3, |us| us as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_round_trips_exactly() {
        for s in [
            "0",
            "1764579600",
            "1764579600.5",
            "1764579600.123456",
            "1764579600.000001",
        ] {
            let t = parse_epoch_decimal(s).unwrap();
            assert_eq!(format_epoch(t), s);
        }
    }

    #[test]
    fn sub_microsecond_rounds_up() {
        let t = parse_epoch_decimal("10.0000001").unwrap();
        assert_eq!(format_epoch(t), "10.000001");
        let t = parse_time_str("2026-01-01T00:00:00.0000001Z").unwrap();
        assert_eq!(t.timestamp_subsec_micros(), 1);
    }

    #[test]
    fn parses_both_forms() {
        let a = parse_time_str("2026-12-01T09:00:00Z").unwrap();
        let b = parse_time_str("1796115600").unwrap();
        assert_eq!(a, b);
        assert_eq!(parse_json_epoch("1796115600.0").unwrap(), a);
        assert_eq!(parse_json_epoch("1.7961156e9").unwrap(), a);
        assert_eq!(parse_json_epoch("17961156E+2").unwrap(), a);
        let c = parse_time_str("2026-12-01T10:00:00+01:00").unwrap();
        assert_eq!(a, c);
    }

    #[test]
    fn json_numbers_are_exact_and_round_up() {
        let t = parse_json_epoch("1796000000.1234567").unwrap();
        assert_eq!(format_epoch(t), "1796000000.123457");
        let t = parse_json_epoch("1796000000.25000000001").unwrap();
        assert_eq!(format_epoch(t), "1796000000.250001", "never below what was written");
        assert_eq!(format_epoch(parse_json_epoch("0.5e-3").unwrap()), "0.0005");
        assert_eq!(format_epoch(parse_json_epoch("-0").unwrap()), "0");
    }

    #[test]
    fn leap_seconds_become_the_next_minute() {
        let t = parse_time_str("2027-01-01T00:00:60Z").unwrap();
        assert_eq!(t, parse_time_str("2027-01-01T00:01:00Z").unwrap());
        let t = parse_time_str("2026-12-31T23:59:60.999999Z").unwrap();
        assert_eq!(format_rfc3339(t), "2027-01-01T00:00:00.999999Z");
        let t = parse_time_str("2026-12-31T23:59:60.9999991Z").unwrap();
        assert_eq!(format_rfc3339(t), "2027-01-01T00:00:01Z");
    }

    #[test]
    fn refuses_garbage_and_out_of_range() {
        assert!(parse_time_str("tomorrow").is_err());
        assert!(parse_time_str("").is_err());
        assert!(parse_time_str("10000-01-01T00:00:00Z").is_err());
        assert!(parse_time_str("9999-12-31T23:59:60Z").is_err());
        assert!(parse_time_str("253402300800").is_err()); // year 10000
        assert!(parse_json_epoch("-1").is_err());
        assert!(parse_json_epoch("-0.5").is_err());
        assert!(parse_json_epoch("1e300").is_err());
        assert!(parse_json_epoch("1e-99999999999999999999").is_err());
        assert!(parse_json_epoch("1.x").is_err());
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// The instant an RFC 3339 text names, in picoseconds since the epoch, computed without
        /// chrono's parser (a leap second counts as the next second, as in POSIX time).
        fn named_ps(date: (i32, u32, u32), h: i64, m: i64, s: i64, frac: &str, offset_min: i64) -> i128 {
            let days = chrono::NaiveDate::from_ymd_opt(date.0, date.1, date.2)
                .unwrap()
                .signed_duration_since(chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap())
                .num_days();
            let secs = i128::from(days * 86_400 + h * 3600 + m * 60 + s - offset_min * 60);
            let frac_ps: i128 = format!("{frac:0<12}")[..12].parse().unwrap();
            secs * 1_000_000_000_000 + frac_ps
        }

        fn ps(t: DateTime<Utc>) -> i128 {
            i128::from(t.timestamp()) * 1_000_000_000_000 + i128::from(t.timestamp_subsec_nanos()) * 1000
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(
                std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(4096)
            ))]

            /// Stored ≥ named, by less than a microsecond; round trips through both codecs exact.
            #[test]
            fn rfc3339_is_never_early_and_round_trips(
                y in 1970i32..9999, mo in 1u32..=12, d in 1u32..=28,
                h in 0i64..24, mi in 0i64..60, s in 0i64..=60,
                frac in "[0-9]{0,12}", off in -(14*60i64)..=(14*60),
            ) {
                let sign = if off < 0 { '-' } else { '+' };
                let dot = if frac.is_empty() { String::new() } else { format!(".{frac}") };
                let text = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{dot}{sign}{:02}:{:02}", off.abs() / 60, off.abs() % 60);
                let named = named_ps((y, mo, d), h, mi, s, &frac, off);
                match parse_time_str(&text) {
                    Ok(t) => {
                        let stored = ps(t);
                        prop_assert!(stored >= named, "{text}: stored {stored} < named {named}");
                        prop_assert!(stored - named < 1_000_000, "{text}: {} ps late", stored - named);
                        // Stored times are never before now, so the epoch codec covers t ≥ 0.
                        if t.timestamp() >= 0 {
                            prop_assert_eq!(parse_epoch_decimal(&format_epoch(t)), Some(t));
                        }
                        prop_assert_eq!(parse_time_str(&format_rfc3339(t)).ok(), Some(t));
                    }
                    // Only the far edge of the range may be refused.
                    Err(_) => prop_assert!(named > ps(max_time()) - 86_400 * 1_000_000_000_000, "{text} refused"),
                }
            }

            #[test]
            fn json_epochs_are_never_early(
                int in 0u64..253_402_300_000, frac in "[0-9]{0,12}",
            ) {
                let dot = if frac.is_empty() { String::new() } else { format!(".{frac}") };
                let mantissa = format!("{int}{dot}");
                // The same value in exponent form: all digits after the point, scaled back.
                let digits = format!("{int}{frac}");
                let moved = format!("0.{digits}e{}", int.to_string().len());
                let named: i128 = {
                    let f: i128 = format!("{frac:0<12}")[..12].parse().unwrap();
                    i128::from(int) * 1_000_000_000_000 + f
                };
                for literal in [mantissa.clone(), moved] {
                    let t = parse_json_epoch(&literal).unwrap();
                    prop_assert!(ps(t) >= named && ps(t) - named < 1_000_000, "{literal}");
                }
            }
        }
    }
}
