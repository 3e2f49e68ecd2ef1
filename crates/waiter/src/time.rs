//! Timestamps: parsing caller input and the epoch-seconds codec used for `perform_at`.
//!
//! Internally a time is a `DateTime<Utc>` with microsecond resolution. Anything finer is rounded
//! *up*, so that rounding can never make a job early.

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
        let t = t.with_timezone(&Utc);
        return ceil_to_micros(t).ok_or_else(|| "is out of range".to_string());
    }
    if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') && s.bytes().filter(|b| *b == b'.').count() <= 1 {
        return parse_epoch_decimal(s).ok_or_else(|| "is out of range (after year 9999)".to_string());
    }
    Err("must be an RFC 3339 time (e.g. 2026-12-01T09:00:00Z) or epoch seconds".into())
}

/// Converts epoch seconds from a JSON number.
pub fn from_epoch_f64(secs: f64) -> Result<DateTime<Utc>, String> {
    if !secs.is_finite() {
        return Err("must be a finite number".into());
    }
    if secs < 0.0 {
        return Err("must not be before 1970-01-01".into());
    }
    // Format with enough digits and reuse the exact decimal path so that 0.1-style float error
    // never moves a time earlier than the caller wrote.
    parse_epoch_decimal(&format!("{secs:.6}")).ok_or_else(|| "is out of range (after year 9999)".into())
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
        assert_eq!(from_epoch_f64(1796115600.0).unwrap(), a);
        let c = parse_time_str("2026-12-01T10:00:00+01:00").unwrap();
        assert_eq!(a, c);
    }

    #[test]
    fn refuses_garbage_and_out_of_range() {
        assert!(parse_time_str("tomorrow").is_err());
        assert!(parse_time_str("").is_err());
        assert!(parse_time_str("10000-01-01T00:00:00Z").is_err());
        assert!(parse_time_str("253402300800").is_err()); // year 10000
        assert!(from_epoch_f64(f64::NAN).is_err());
        assert!(from_epoch_f64(f64::INFINITY).is_err());
        assert!(from_epoch_f64(-1.0).is_err());
        assert!(from_epoch_f64(1e300).is_err());
    }
}
