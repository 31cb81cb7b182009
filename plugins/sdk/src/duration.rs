//! Durations written the way Kubernetes and Go write them: `"90s"`, `"10m"`, `"1h30m"`,
//! `"500ms"`, `"2d"`.

use std::fmt;

use crate::types::Millis;

/// Why a duration could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationError {
    /// The text is empty.
    Empty,
    /// A number is not followed by a unit (`"90"`); the text is the number.
    MissingUnit(String),
    /// A unit is not preceded by a number (`"m"`), or a character is neither digit nor unit.
    MissingNumber(String),
    /// The unit is not one of `ms`, `s`, `m`, `h`, `d`.
    UnknownUnit(String),
    /// The total does not fit in 64 bits of milliseconds.
    Overflow,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Empty => write!(f, "empty duration"),
            DurationError::MissingUnit(n) => {
                write!(f, "missing unit after {n:?} (use ms, s, m, h or d)")
            }
            DurationError::MissingNumber(s) => write!(f, "expected a number at {s:?}"),
            DurationError::UnknownUnit(u) => {
                write!(f, "unknown unit {u:?} (use ms, s, m, h or d)")
            }
            DurationError::Overflow => write!(f, "duration too large"),
        }
    }
}

impl std::error::Error for DurationError {}

/// Parses a duration into milliseconds: one or more `<integer><unit>` parts with units `ms`,
/// `s`, `m`, `h`, `d`, summed (`"1h30m"` = 5,400,000). `"0"` alone is accepted as zero.
/// Surrounding whitespace is ignored; signs and fractions are not accepted.
///
/// ```
/// use wasq_policy_sdk::parse_duration;
/// assert_eq!(parse_duration("90s"), Ok(90_000));
/// assert_eq!(parse_duration("1h30m"), Ok(5_400_000));
/// assert!(parse_duration("10").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Millis, DurationError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    if text == "0" {
        return Ok(0);
    }
    let mut total: i64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(DurationError::MissingNumber(rest.to_string()));
        }
        let (number, after) = rest.split_at(digits);
        let unit_len = after.bytes().take_while(u8::is_ascii_alphabetic).count();
        if unit_len == 0 {
            return Err(DurationError::MissingUnit(number.to_string()));
        }
        let (unit, after) = after.split_at(unit_len);
        let scale: i64 = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return Err(DurationError::UnknownUnit(unit.to_string())),
        };
        let n: i64 = number.parse().map_err(|_| DurationError::Overflow)?;
        let part = n.checked_mul(scale).ok_or(DurationError::Overflow)?;
        total = total.checked_add(part).ok_or(DurationError::Overflow)?;
        rest = after;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_single_and_compound_durations() {
        assert_eq!(parse_duration("90s"), Ok(90_000));
        assert_eq!(parse_duration("10m"), Ok(600_000));
        assert_eq!(parse_duration("1h30m"), Ok(5_400_000));
        assert_eq!(parse_duration("2d"), Ok(172_800_000));
        assert_eq!(parse_duration(" 1m30s250ms "), Ok(90_250));
        assert_eq!(parse_duration("0"), Ok(0));
        assert_eq!(parse_duration("0s"), Ok(0));
    }

    #[test]
    fn rejects_malformed_durations() {
        assert_eq!(parse_duration(""), Err(DurationError::Empty));
        assert_eq!(
            parse_duration("90"),
            Err(DurationError::MissingUnit("90".into()))
        );
        assert_eq!(
            parse_duration("5x"),
            Err(DurationError::UnknownUnit("x".into()))
        );
        assert_eq!(
            parse_duration("-5m"),
            Err(DurationError::MissingNumber("-5m".into()))
        );
        assert_eq!(
            parse_duration("1.5h"),
            Err(DurationError::MissingUnit("1".into()))
        );
        assert_eq!(
            parse_duration("99999999999999999999h"),
            Err(DurationError::Overflow)
        );
        assert_eq!(
            parse_duration("9999999999999d"),
            Err(DurationError::Overflow)
        );
    }
}
