//! SQS message attributes and the characters and numbers SQS accepts.

use std::collections::BTreeMap;

use base64::Engine as _;

use super::decode::truncate;
use super::normalise::{Given, Segment};
use crate::error::InvalidRequest;
use crate::job::{AttributeData, Attributes, MessageAttribute};
use crate::limits::{
    SQS_MAX_ATTRIBUTE_NAME_CHARS, SQS_MAX_MESSAGE_ATTRIBUTES, SQS_NUMBER_MAX_DIGITS, SQS_NUMBER_MAX_EXPONENT,
    SQS_NUMBER_MIN_EXPONENT,
};

const ATTRIBUTES: &str = "message_attributes";

/// `message_attributes` as SQS takes them: at most 10, named and typed by SQS's rules, values
/// kept exactly as given (binary decoded from base64).
pub(crate) fn check_attributes(
    given: &Given,
    attributes: BTreeMap<String, sqs_waiter_contract::MessageAttribute>,
) -> Result<Attributes, InvalidRequest> {
    let field = given.name(ATTRIBUTES);
    if attributes.len() > SQS_MAX_MESSAGE_ATTRIBUTES {
        return Err(InvalidRequest::new(
            field,
            format!(
                "at most {SQS_MAX_MESSAGE_ATTRIBUTES} attributes, got {}",
                attributes.len()
            ),
        ));
    }
    let mut out = Attributes::new();
    for (name, attribute) in attributes {
        let path = format!("{field}.{}", truncate(&name, 64));
        let value_path =
            |value: &str| given.path(&[Segment::Key(ATTRIBUTES), Segment::Key(&name), Segment::Key(value)]);
        check_attribute_name(&path, &name)?;
        let base = check_data_type(&format!("{path}.data_type"), &attribute.data_type)?;
        let data = match (base, attribute.string_value, attribute.binary_value) {
            (_, Some(_), Some(_)) => {
                return Err(InvalidRequest::new(path, "give string_value or binary_value, not both"));
            }
            ("Binary", Some(_), None) => {
                return Err(InvalidRequest::new(
                    format!("{path}.binary_value"),
                    "is required for a Binary attribute (base64)",
                ));
            }
            ("Binary", None, Some(s)) => {
                let p = value_path("binary_value");
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(&s)
                    .map_err(|_| InvalidRequest::new(p.clone(), "must be standard base64"))?;
                if bytes.is_empty() {
                    return Err(InvalidRequest::new(p, "must not be empty"));
                }
                AttributeData::Binary(bytes)
            }
            (_, None, _) => {
                return Err(InvalidRequest::new(
                    format!("{path}.string_value"),
                    format!("is required for a {base} attribute"),
                ));
            }
            (_, Some(s), None) => {
                let p = value_path("string_value");
                if s.is_empty() {
                    return Err(InvalidRequest::new(p, "must not be empty"));
                }
                check_sqs_chars(&p, &s)?;
                if base == "Number" && !is_sqs_number(&s) {
                    return Err(InvalidRequest::new(
                        p,
                        "must be a number with up to 38 significant digits, zero or between 1e-128 and 1e126 in magnitude (e.g. -12.5 or 1e10)",
                    ));
                }
                AttributeData::String(s)
            }
        };
        out.insert(
            name,
            MessageAttribute {
                data_type: attribute.data_type,
                data,
            },
        );
    }
    Ok(out)
}

/// SQS attribute names: up to 256 of `[A-Za-z0-9_.-]`, no leading, trailing or doubled `.`, and
/// not starting with the reserved `AWS.` or `Amazon.`.
pub(crate) fn check_attribute_name(path: &str, name: &str) -> Result<(), InvalidRequest> {
    if name.is_empty() || name.chars().count() > SQS_MAX_ATTRIBUTE_NAME_CHARS {
        return Err(InvalidRequest::new(
            path,
            format!("attribute name must be 1 to {SQS_MAX_ATTRIBUTE_NAME_CHARS} characters"),
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        return Err(InvalidRequest::new(
            path,
            "attribute name must contain only A-Z, a-z, 0-9, _, - and .",
        ));
    }
    if name.starts_with('.') || name.ends_with('.') || name.contains("..") {
        return Err(InvalidRequest::new(
            path,
            "attribute name must not start or end with '.' or hold '..'",
        ));
    }
    let lower = name.to_ascii_lowercase();
    if lower.starts_with("aws.") || lower.starts_with("amazon.") {
        return Err(InvalidRequest::new(
            path,
            "attribute names starting with AWS. or Amazon. are reserved",
        ));
    }
    Ok(())
}

/// Returns the base type of `String`, `Number`, `Binary`, optionally with a `.custom` suffix.
pub(crate) fn check_data_type<'a>(path: &str, data_type: &'a str) -> Result<&'a str, InvalidRequest> {
    if data_type.chars().count() > SQS_MAX_ATTRIBUTE_NAME_CHARS {
        return Err(InvalidRequest::new(
            path,
            format!("must be at most {SQS_MAX_ATTRIBUTE_NAME_CHARS} characters"),
        ));
    }
    let (base, custom) = match data_type.split_once('.') {
        Some((b, c)) => (b, Some(c)),
        None => (data_type, None),
    };
    if !matches!(base, "String" | "Number" | "Binary") {
        return Err(InvalidRequest::new(
            path,
            format!(
                "must be String, Number or Binary, optionally with a .suffix; got {:?}",
                truncate(data_type, 64)
            ),
        ));
    }
    if let Some(c) = custom {
        if c.is_empty()
            || !c
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        {
            return Err(InvalidRequest::new(
                path,
                "custom type suffix must be A-Z, a-z, 0-9, _, - or .",
            ));
        }
    }
    Ok(base)
}

/// SQS `Number`: up to 38 significant digits (leading and trailing zeros do not count), and zero
/// or a magnitude from 10⁻¹²⁸ up to (not including) 10¹²⁶.
/// <https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-metadata.html>
pub fn is_sqs_number(s: &str) -> bool {
    let t = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exp) = match t.split_once(['e', 'E']) {
        Some((m, e)) => {
            let digits = e.strip_prefix(['-', '+']).unwrap_or(e);
            if digits.is_empty() || digits.len() > 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return false;
            }
            match e.parse::<i64>() {
                Ok(v) => (m, v),
                Err(_) => return false,
            }
        }
        None => (t, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.len() + frac.len() == 0
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return false;
    }
    let all = format!("{int}{frac}");
    let leading = all.len() - all.trim_start_matches('0').len();
    let significant = all.trim_start_matches('0').trim_end_matches('0');
    if significant.is_empty() {
        return true; // zero
    }
    // The value is d.ddd × 10^magnitude.
    let magnitude = int.len() as i64 - 1 - leading as i64 + exp;
    significant.len() <= SQS_NUMBER_MAX_DIGITS
        && (SQS_NUMBER_MIN_EXPONENT..SQS_NUMBER_MAX_EXPONENT).contains(&magnitude)
}

/// SQS allows #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.
/// <https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html>
pub fn check_sqs_chars(field: &str, s: &str) -> Result<(), InvalidRequest> {
    match s.char_indices().find(|(_, c)| !is_sqs_char(*c)) {
        None => Ok(()),
        Some((i, c)) => Err(InvalidRequest::new(
            field,
            format!(
                "holds character U+{:04X} at byte {i}, which SQS does not allow",
                u32::from(c)
            ),
        )),
    }
}

pub(crate) fn is_sqs_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqs_numbers_follow_the_38_digit_and_range_rules() {
        for ok in [
            "0",
            "-0.000",
            "12",
            "-12.5",
            "+1e10",
            ".5",
            "5.",
            "1e-128",
            "9.9999e125",
            "12345678901234567890123456789012345678",
            "0.00012345678901234567890123456789012345678",
            "123456789012345678901234567890123456780000",
            "1000000000000000000000000000000000000000000000000",
        ] {
            assert!(is_sqs_number(ok), "{ok} refused");
        }
        for bad in [
            "",
            "-",
            "1e200",
            "1e126",
            "10e125",
            "1e-129",
            "0.1e-128",
            "123456789012345678901234567890123456789",
            "1.2.3",
            "12abc",
            "1e",
            "1e9999999",
            "NaN",
            "Infinity",
        ] {
            assert!(!is_sqs_number(bad), "{bad} accepted");
        }
    }
}
