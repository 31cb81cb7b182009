//! Downsampling a series for a chart: at most a few hundred points however long the run, the
//! highs and lows kept (a spike of one cycle still shows).

/// At most `max` points of `points` (sorted by x): the first and last, and per bucket of equal
/// x-width the lowest and the highest point, in x order. `max` below 4 is taken as 4.
pub fn min_max(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    min_max_indices(points, max)
        .into_iter()
        .map(|i| points[i])
        .collect()
}

/// The indices of the points [`min_max`] keeps, ascending: for series drawn together (the
/// layers of a stack), the instants chosen on their total.
pub fn min_max_indices(points: &[(f64, f64)], max: usize) -> Vec<usize> {
    let max = max.max(4);
    if points.len() <= max {
        return (0..points.len()).collect();
    }
    let (first, last) = (points[0], points[points.len() - 1]);
    let buckets = (max - 2) / 2;
    let span = (last.0 - first.0).max(f64::MIN_POSITIVE);
    let mut out = Vec::with_capacity(max);
    out.push(0);
    let inner = &points[1..points.len() - 1];
    let mut at = 0;
    for b in 0..buckets {
        let end_x = first.0 + span * (b + 1) as f64 / buckets as f64;
        let start = at;
        while at < inner.len() && (inner[at].0 < end_x || b + 1 == buckets) {
            at += 1;
        }
        let bucket = &inner[start..at];
        let (Some(lo), Some(hi)) = (
            bucket
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.1.total_cmp(&b.1.1)),
            bucket
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.1.total_cmp(&b.1.1)),
        ) else {
            continue;
        };
        // `inner` starts at index 1 of `points`.
        let (lo, hi) = (start + lo.0 + 1, start + hi.0 + 1);
        match lo.cmp(&hi) {
            std::cmp::Ordering::Equal => out.push(lo),
            std::cmp::Ordering::Less => out.extend([lo, hi]),
            std::cmp::Ordering::Greater => out.extend([hi, lo]),
        }
    }
    out.push(points.len() - 1);
    out
}

/// A step function (the value holds until the next point) as the points a line chart draws:
/// each change drawn as a vertical step.
pub fn steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &(x, y)) in points.iter().enumerate() {
        if i > 0 {
            out.push((x, points[i - 1].1));
        }
        out.push((x, y));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_series_are_kept_whole() {
        let p = vec![(0.0, 1.0), (1.0, 5.0), (2.0, 2.0)];
        assert_eq!(min_max(&p, 300), p);
    }

    #[test]
    fn long_series_keep_their_extremes_and_ends_within_the_budget() {
        // 100,000 points of a slow wave, one spike up and one spike down.
        let mut p: Vec<(f64, f64)> = (0..100_000)
            .map(|i| (i as f64, ((i as f64) / 5_000.0).sin()))
            .collect();
        p[31_337].1 = 50.0;
        p[77_777].1 = -40.0;
        let d = min_max(&p, 300);
        assert!(d.len() <= 300, "{}", d.len());
        assert_eq!(d.first(), p.first());
        assert_eq!(d.last(), p.last());
        assert!(d.contains(&(31_337.0, 50.0)) && d.contains(&(77_777.0, -40.0)));
        assert!(d.windows(2).all(|w| w[0].0 <= w[1].0), "x order kept");
        // Every kept point is one of the input's.
        assert!(d.iter().all(|q| p[q.0 as usize] == *q));
    }

    #[test]
    fn steps_hold_each_value_until_the_next_point() {
        assert_eq!(
            steps(&[(0.0, 1.0), (2.0, 3.0), (5.0, 0.0)]),
            [(0.0, 1.0), (2.0, 1.0), (2.0, 3.0), (5.0, 3.0), (5.0, 0.0)]
        );
    }
}
