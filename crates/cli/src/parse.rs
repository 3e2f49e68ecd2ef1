//! Values of flags: times, delays and attributes. Each error states the rule; clap names the flag.

use chrono::{DateTime, Utc};
use sqs_waiter_client::MessageAttribute;

/// RFC 3339, or epoch seconds (fractional allowed).
pub fn parse_time(s: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    let epoch: f64 = s
        .parse()
        .map_err(|_| "must be RFC 3339 (2026-12-01T09:00:00Z) or epoch seconds".to_owned())?;
    if !epoch.is_finite() || epoch < 0.0 {
        return Err("epoch seconds must be a number ≥ 0".into());
    }
    let whole = epoch.trunc();
    let nanos = ((epoch - whole) * 1e9).round() as u32;
    DateTime::from_timestamp(whole as i64, nanos.min(999_999_999)).ok_or_else(|| "is out of range".to_owned())
}

/// Whole seconds, or a duration such as `90s`, `15m`, `3h`, `2d` (rounded up to whole seconds).
pub fn parse_delay(s: &str) -> Result<u64, String> {
    if let Ok(n) = s.parse::<u64>() {
        return Ok(n);
    }
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("must be whole seconds or a duration such as 90s, 15m, 3h, 2d ({e})"))?;
    Ok(d.as_secs() + u64::from(d.subsec_nanos() > 0))
}

/// `NAME=TYPE:VALUE`, e.g. `kind=String:invoice`, `n=Number:42`, `blob=Binary:AAH/`.
pub fn parse_attribute(s: &str) -> Result<(String, MessageAttribute), String> {
    let (name, typed) = s
        .split_once('=')
        .ok_or_else(|| "must be NAME=TYPE:VALUE, e.g. kind=String:invoice".to_owned())?;
    let (data_type, value) = typed
        .split_once(':')
        .ok_or_else(|| format!("{name}: must be TYPE:VALUE after '=', e.g. String:invoice"))?;
    if name.is_empty() {
        return Err("the attribute name must not be empty".into());
    }
    let attribute = if data_type == "Binary" || data_type.starts_with("Binary.") {
        MessageAttribute {
            data_type: data_type.into(),
            string_value: None,
            binary_value: Some(value.into()),
        }
    } else {
        MessageAttribute::typed(data_type, value)
    };
    Ok((name.to_owned(), attribute))
}

/// `KEY=VALUE`, e.g. `customer=42`: a tag (the function checks the lengths and the count).
pub fn parse_tag(s: &str) -> Result<(String, String), String> {
    let (key, value) = s
        .split_once('=')
        .ok_or_else(|| "must be KEY=VALUE, e.g. customer=42".to_owned())?;
    if key.is_empty() {
        return Err("the tag key must not be empty".into());
    }
    Ok((key.to_owned(), value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_is_key_equals_value_with_a_key() {
        assert_eq!(parse_tag("customer=42"), Ok(("customer".into(), "42".into())));
        assert_eq!(parse_tag("k=a=b"), Ok(("k".into(), "a=b".into())));
        assert_eq!(parse_tag("k="), Ok(("k".into(), String::new())));
        assert!(parse_tag("customer").unwrap_err().contains("KEY=VALUE"));
        assert!(parse_tag("=42").unwrap_err().contains("key"));
    }

    #[test]
    fn times_delays_and_attributes() {
        assert_eq!(
            parse_time("2026-12-01T10:00:00+01:00").unwrap(),
            parse_time("1796115600").unwrap()
        );
        assert_eq!(parse_time("1796115600.25").unwrap().timestamp_subsec_millis(), 250);
        for bad in ["tomorrow", "-5", "NaN", "1e300", ""] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_delay("90").unwrap(), 90);
        assert_eq!(parse_delay("3h").unwrap(), 10_800);
        assert_eq!(parse_delay("1d 2s").unwrap(), 86_402);
        assert_eq!(parse_delay("1500ms").unwrap(), 2, "rounded up, never early");
        assert!(parse_delay("-1").is_err());
        assert!(parse_delay("soon").is_err());

        let (name, a) = parse_attribute("kind=String:a:b=c").unwrap();
        assert_eq!((name.as_str(), a.string_value.as_deref()), ("kind", Some("a:b=c")));
        let (_, b) = parse_attribute("blob=Binary.gz:AAH/").unwrap();
        assert_eq!(b.binary_value.as_deref(), Some("AAH/"));
        for bad in ["kind", "kind=String", "=String:x"] {
            assert!(parse_attribute(bad).is_err(), "{bad}");
        }
    }
}
