//! One cron field's grammar, shared by the five-field cron and EventBridge's six: `*`, lists,
//! ranges (running round the end where the dialect allows), steps and names.

/// One field's allowed values, as bits (bit `v` set: `v` matches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bits(pub(crate) u64);

impl Bits {
    pub(crate) fn has(self, v: u32) -> bool {
        v < 64 && self.0 & (1 << v) != 0
    }

    pub(crate) fn of(values: &[u32]) -> Self {
        Self(values.iter().fold(0, |b, v| b | 1 << v))
    }
}

pub(crate) struct Field {
    pub(crate) name: &'static str,
    pub(crate) min: u32,
    pub(crate) max: u32,
    pub(crate) names: &'static [&'static str],
}

impl Field {
    pub(crate) const fn new(name: &'static str, min: u32, max: u32, names: &'static [&'static str]) -> Self {
        Self { name, min, max, names }
    }
}

pub(crate) const MONTH_NAMES: &[&str] = &[
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
pub(crate) const WEEKDAY_NAMES: &[&str] = &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

pub(crate) fn field_bits(field: &Field, part: &str, wrap: bool) -> Result<Bits, String> {
    field_values(field, part, wrap).map(|v| Bits::of(&v))
}

/// The values a field's text names: a list of `*`, values and ranges, each with an optional
/// step. `wrap`: a range may run past the end and around (EventBridge's `22-2` hours).
pub(crate) fn field_values(field: &Field, part: &str, wrap: bool) -> Result<Vec<u32>, String> {
    let mut values = Vec::new();
    for item in part.split(',') {
        if item.is_empty() {
            return Err("an empty list item".into());
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step.parse().map_err(|_| format!("step {step:?} is not a number"))?;
                if step == 0 {
                    return Err("a step must be at least 1".into());
                }
                (range, step)
            }
            None => (item, 1),
        };
        let (lo, hi) = match range {
            "*" => (field.min, field.max),
            _ => match range.split_once('-') {
                Some((a, b)) => (value(field, a)?, value(field, b)?),
                // `5/20`: from 5 to the end, as `5-max/20`.
                None if step > 1 || item.contains('/') => (value(field, range)?, field.max),
                None => {
                    let v = value(field, range)?;
                    (v, v)
                }
            },
        };
        if lo > hi && !wrap {
            return Err(format!("range {range:?} runs backwards"));
        }
        // Past the end a range goes round to the field's first value (EventBridge's `FRI-MON`).
        let span = field.max - field.min + 1;
        let len = (hi + span - lo) % span + 1;
        values.extend(
            (0..len)
                .step_by(step as usize)
                .map(|i| field.min + (lo - field.min + i) % span),
        );
    }
    values.sort_unstable();
    values.dedup();
    Ok(values)
}

/// A number or (for months and weekdays) a name, within the field's range.
pub(crate) fn value(field: &Field, s: &str) -> Result<u32, String> {
    let upper = s.to_ascii_uppercase();
    if let Some(i) = field.names.iter().position(|n| *n == upper) {
        return Ok(i as u32 + field.min);
    }
    let v: u32 = s.parse().map_err(|_| match field.names {
        [] => format!("{s:?} is not a number"),
        names => format!("{s:?} is not a number or one of {}", names.join(", ")),
    })?;
    if v < field.min || v > field.max {
        return Err(format!("{v} is out of range {}-{}", field.min, field.max));
    }
    Ok(v)
}
