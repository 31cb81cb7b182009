//! kubectl's table layout and its ages.

use std::time::Duration;

/// Rows laid out as kubectl's tab writer lays them (`cli-runtime`'s `GetNewTabWriter`: cells
/// padded by 3 to the widest of their column, at least 6 wide; the last column unpadded), the
/// headers first.
pub fn layout(headers: &[&str], rows: &[Vec<String>]) -> String {
    let columns = headers.len();
    let mut widths = vec![0usize; columns];
    for (c, h) in headers.iter().enumerate() {
        widths[c] = h.chars().count();
    }
    for row in rows {
        for (c, cell) in row.iter().enumerate().take(columns) {
            widths[c] = widths[c].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate().take(columns) {
            line.push_str(cell);
            if c + 1 < columns {
                let width = (widths[c] + 3).max(6);
                line.extend(std::iter::repeat_n(' ', width - cell.chars().count()));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// An age as kubectl prints it (`apimachinery`'s `HumanDuration`): `45s`, `3m20s`, `60m`,
/// `5h30m`, `12h`, `3d4h`, `30d`, `2y40d`, `9y`; `<invalid>` for a negative one below a second.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    let (m, h, days) = (s / 60, s / 3600, s / 86_400);
    let years = days / 365;
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        if s.is_multiple_of(60) {
            format!("{m}m")
        } else {
            format!("{m}m{}s", s % 60)
        }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        if m.is_multiple_of(60) {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        if h.is_multiple_of(24) {
            format!("{days}d")
        } else {
            format!("{days}d{}h", h % 24)
        }
    } else if years < 2 {
        format!("{days}d")
    } else if years < 8 {
        if days.is_multiple_of(365) {
            format!("{years}y")
        } else {
            format!("{years}y{}d", days % 365)
        }
    } else {
        format!("{years}y")
    }
}

/// The age from `since` to `now` (`<invalid>` when `since` is more than a second ahead).
pub fn age(since: jiff::Timestamp, now: jiff::Timestamp) -> String {
    let millis = now.as_millisecond() - since.as_millisecond();
    if millis < -1000 {
        return "<invalid>".to_string();
    }
    human_duration(Duration::from_millis(millis.max(0) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_kubectls() {
        let cases = [
            (45, "45s"),
            (119, "119s"),
            (120, "2m"),
            (200, "3m20s"),
            (3600, "60m"),
            (4 * 3600, "4h"),
            (5 * 3600 + 1800, "5h30m"),
            (30 * 3600, "30h"),
            (3 * 86_400 + 4 * 3600, "3d4h"),
            (30 * 86_400, "30d"),
            (800 * 86_400, "2y70d"),
            (9 * 365 * 86_400, "9y"),
        ];
        for (secs, text) in cases {
            assert_eq!(human_duration(Duration::from_secs(secs)), text, "{secs}s");
        }
    }

    #[test]
    fn columns_pad_to_their_widest_cell_and_the_last_is_not_padded() {
        let table = layout(
            &["NAME", "JOB TYPE", "AGE"],
            &[vec!["wl1".into(), "".into(), "60m".into()]],
        );
        assert_eq!(table, "NAME   JOB TYPE   AGE\nwl1               60m\n");
    }
}
