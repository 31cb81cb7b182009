//! Durations as users write them in annotations and flags: `90s`, `1m30s`, `200ms`, `2h`, or a
//! plain number of seconds.

/// Parses a duration into milliseconds.
pub fn parse_millis(input: &str) -> Result<i64, String> {
    let s = input.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    if let Ok(secs) = s.parse::<f64>() {
        if secs < 0.0 || !secs.is_finite() {
            return Err(format!(
                "invalid duration {input:?}: must be a non-negative number"
            ));
        }
        return Ok((secs * 1000.0).round() as i64);
    }
    let mut total: f64 = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("invalid duration {input:?}: missing unit (ms, s, m, h)"))?;
        let (num, tail) = rest.split_at(num_end);
        let value: f64 = num.parse().map_err(|_| {
            format!("invalid duration {input:?}: expected a number before the unit")
        })?;
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_end);
        let scale = match unit {
            "ms" => 1.0,
            "s" => 1000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            _ => {
                return Err(format!(
                    "invalid duration {input:?}: unknown unit {unit:?} (use ms, s, m or h)"
                ));
            }
        };
        total += value * scale;
        rest = next;
    }
    Ok(total.round() as i64)
}

#[cfg(test)]
mod tests {
    use super::parse_millis;

    #[test]
    fn parses_units_and_compounds() {
        assert_eq!(parse_millis("90s"), Ok(90_000));
        assert_eq!(parse_millis("1m30s"), Ok(90_000));
        assert_eq!(parse_millis("200ms"), Ok(200));
        assert_eq!(parse_millis("2h"), Ok(7_200_000));
        assert_eq!(parse_millis("1.5"), Ok(1_500));
        assert!(parse_millis("5 parsecs").is_err());
        assert!(parse_millis("").is_err());
    }
}
