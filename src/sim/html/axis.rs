//! What an axis shows: its range, padded so that a line along zero or along the largest value
//! stays clear of the frame, and its ticks — on a time axis at round lengths of time labelled
//! as such (`0`, `30m`, `1h`, `1h30m`), on a value axis at round numbers (whole ones when
//! every value is whole: counts).

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

/// An axis for plotters: a range of values, ticked at the given values only.
pub struct Ticked {
    range: Range<f64>,
    ticks: Vec<f64>,
}

impl Ticked {
    pub fn new(range: Range<f64>, ticks: Vec<f64>) -> Ticked {
        Ticked { range, ticks }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let along = (v - self.range.start) / (self.range.end - self.range.start);
        limit.0 + (f64::from(limit.1 - limit.0) * along + 1e-3).floor() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // The bold lines only: a tick per round value, no finer grid.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// The range drawn for values in `[0, max]`: `below` and `above` of the span added either side
/// (an empty span drawn as `[0, 1]`).
pub fn padded(max: f64, below: f64, above: f64) -> Range<f64> {
    let span = if max > 0.0 { max } else { 1.0 };
    -span * below..span * (1.0 + above)
}

/// Round lengths of time, in seconds, a time axis ticks at.
const TIME_STEPS: [f64; 22] = [
    0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0,
    3600.0, 7200.0, 10800.0, 21600.0, 43200.0, 86400.0, 604800.0,
];

/// Ticks at most (and at least half as many).
const TICKS: f64 = 8.0;

/// `0, step, 2·step, …` up to `max`.
fn multiples(step: f64, max: f64) -> Vec<f64> {
    let n = (max / step + 1e-9).floor() as usize;
    (0..=n).map(|k| k as f64 * step).collect()
}

/// The ticks of a time axis from 0 to `max` seconds.
pub fn time_ticks(max: f64) -> Vec<f64> {
    let max = if max > 0.0 { max } else { 1.0 };
    let step = TIME_STEPS
        .iter()
        .copied()
        .find(|s| max / s <= TICKS)
        .unwrap_or_else(|| (max / TICKS / 604800.0).ceil() * 604800.0);
    multiples(step, max)
}

/// The ticks of a value axis from 0 to `max`: at 1, 2, 2.5 or 5 times a power of ten, and never
/// between two whole numbers when the values are `whole`.
pub fn value_ticks(max: f64, whole: bool) -> Vec<f64> {
    let max = if max > 0.0 { max } else { 1.0 };
    let raw = max / (TICKS - 2.0);
    let magnitude = 10f64.powf(raw.log10().floor());
    let mut step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * magnitude);
    if whole {
        step = step.max(1.0).round();
    }
    multiples(step, max)
}

/// A length of time for a person: `0`, `0.25s`, `45s`, `2m30s`, `1h`, `1h30m`, `2d3h`;
/// `none` for NaN.
pub fn duration(seconds: f64) -> String {
    if seconds.is_nan() {
        return "none".to_string();
    }
    let sign = if seconds < 0.0 { "−" } else { "" };
    let s = seconds.abs();
    if s == 0.0 {
        return "0".to_string();
    }
    if s < 60.0 {
        let shown = if s < 10.0 && s.fract() != 0.0 {
            trimmed(s, 2)
        } else if s.fract() != 0.0 {
            trimmed(s, 1)
        } else {
            format!("{s:.0}")
        };
        return format!("{sign}{shown}s");
    }
    let total = s.round() as u64;
    let parts = [
        (total / 86400, "d"),
        (total / 3600 % 24, "h"),
        (total / 60 % 60, "m"),
        (total % 60, "s"),
    ];
    let first = parts.iter().position(|p| p.0 > 0).unwrap_or(3);
    let last = parts.iter().rposition(|p| p.0 > 0).unwrap_or(3);
    let text: String = parts[first..=last]
        .iter()
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect();
    format!("{sign}{text}")
}

/// `x` with at most `decimals` decimals, trailing zeros dropped.
fn trimmed(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A value axis' label: a round number as short as it reads (`0`, `2.5`, `20000`).
pub fn value(v: f64) -> String {
    trimmed(v, 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_reads_in_units_a_person_uses() {
        let cases = [
            (0.0, "0"),
            (0.25, "0.25s"),
            (45.0, "45s"),
            (76.8, "1m17s"),
            (150.0, "2m30s"),
            (1800.0, "30m"),
            (3600.0, "1h"),
            (5400.0, "1h30m"),
            (3605.0, "1h0m5s"),
            (93600.0, "1d2h"),
            (-90.0, "−1m30s"),
        ];
        for (s, text) in cases {
            assert_eq!(duration(s), text, "{s}");
        }
    }

    #[test]
    fn time_ticks_fall_on_round_lengths_of_time() {
        assert_eq!(
            time_ticks(76.8),
            [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]
        );
        let hours = time_ticks(4.0 * 3600.0);
        assert_eq!(hours[1], 1800.0);
        assert_eq!(hours.last(), Some(&14400.0));
        assert!(time_ticks(0.0).len() >= 2, "an empty run still has an axis");
    }

    #[test]
    fn counts_tick_at_whole_numbers_and_fractions_at_round_ones() {
        assert_eq!(value_ticks(3.0, true), [0.0, 1.0, 2.0, 3.0]);
        assert_eq!(
            value_ticks(1.0, false),
            [0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
        assert_eq!(value_ticks(20910.0, true)[1], 5000.0);
        assert_eq!(value(0.6000000000000001), "0.6");
        assert_eq!(value(20000.0), "20000");
    }

    #[test]
    fn the_range_leaves_room_beyond_zero_and_the_largest_value() {
        let r = padded(10.0, 0.03, 0.06);
        assert!(r.start < 0.0 && r.end > 10.0);
        assert_eq!(padded(0.0, 0.0, 0.5), 0.0..1.5);
    }
}
