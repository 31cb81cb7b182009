//! SVG charts drawn with plotters' SVG backend, with titled axes, a legend, the Okabe–Ito
//! colours (distinguishable with the common colour-vision deficiencies): line charts (solid, or
//! solid and dashed in pairs) with
//! horizontal reference lines (a nominal quota, a borrowing limit); and stacked area charts.

use plotters::prelude::*;

use super::model::Series;
use super::usage::Layer;

/// Okabe & Ito's palette: black first for references, then eight distinguishable colours.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

/// One line chart.
pub struct LineChart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: &'a [Series],
    /// Horizontal reference lines (legend label, value): black, the first solid, the others
    /// dashed.
    pub references: &'a [(String, f64)],
    /// The series come in pairs drawn in one colour, the first of each solid and the second
    /// dashed (run A and run B; a share and its entitlement).
    pub paired: bool,
}

/// A stacked area chart: each layer's values, held from each instant to the next, drawn on top
/// of the layers before it.
pub struct StackedChart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    /// Instants, ascending.
    pub times: &'a [f64],
    /// Bottom first; each with a value per instant.
    pub layers: &'a [Layer],
    /// As [`LineChart::references`].
    pub references: &'a [(String, f64)],
}

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("drawing the chart {title:?}: {message}")]
pub struct ChartError {
    pub title: String,
    pub message: String,
}

/// The whole chart, and the width of the plot (the legend is drawn to its right, never over
/// the data).
const SIZE: (u32, u32) = (960, 340);
const PLOT_WIDTH: u32 = 730;

/// Legend entries longer than this are cut (the table beneath has the whole name).
const LEGEND_CHARS: usize = 32;

/// `name` cut in the middle to [`LEGEND_CHARS`] (its end often tells series apart: a run's
/// label, `share` or `entitlement`).
fn shorten(name: &str) -> String {
    let n = name.chars().count();
    if n <= LEGEND_CHARS {
        return name.to_string();
    }
    let head = (LEGEND_CHARS - 1) / 2;
    let tail = LEGEND_CHARS - 1 - head;
    name.chars()
        .take(head)
        .chain(['…'])
        .chain(name.chars().skip(n - tail))
        .collect()
}

/// How a legend entry is sampled.
#[derive(Clone, Copy)]
enum Sample {
    Line { style: ShapeStyle, dashed: bool },
    Fill(ShapeStyle),
}

type Chart<'b, 'a> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The chart's `<svg>` labelled for screen readers with its title.
fn labelled(svg: String, title: &str) -> String {
    let label = format!(
        "role=\"img\" aria-label=\"{}\" ",
        super::page::escape(title)
    );
    svg.replacen("<svg ", &format!("<svg {label}"), 1)
}

/// The largest x and y to draw: every value and reference, y with a margin.
fn extent(xs: impl Iterator<Item = f64>, ys: impl Iterator<Item = f64>) -> (f64, f64) {
    let x = xs.fold(0.0f64, f64::max).max(1e-9);
    let y = ys.fold(0.0f64, f64::max).max(1e-9) * 1.05;
    (x, y)
}

/// A chart's frame: a title, axes with their labels and a light grid, `plot` drawn in it, the
/// reference lines over it and the legend of what `plot` drew and of the references beside it.
fn frame(
    title: &str,
    labels: (&str, &str),
    max: (f64, f64),
    references: &[(String, f64)],
    plot: impl FnOnce(&mut Chart<'_, '_>) -> Result<Vec<(String, Sample)>, String>,
) -> Result<String, ChartError> {
    let fail = |e: &dyn std::fmt::Display| ChartError {
        title: title.to_string(),
        message: e.to_string(),
    };
    let (x_max, y_max) = max;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let root = root
            .titled(title, ("sans-serif", 14))
            .map_err(|e| fail(&e))?;
        let (left, right) = root.split_horizontally(PLOT_WIDTH);
        let mut chart = ChartBuilder::on(&left)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .x_desc(labels.0)
            .y_desc(labels.1)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| fail(&e))?;
        let mut entries = plot(&mut chart).map_err(|e| fail(&e))?;
        for (k, (label, y)) in references.iter().enumerate() {
            let style = BLACK.stroke_width(2);
            let dashed = k > 0;
            let line = [(0.0, *y), (x_max, *y)];
            if dashed {
                chart.draw_series(DashedLineSeries::new(line, 8, 5, style))
            } else {
                chart.draw_series(LineSeries::new(line, style))
            }
            .map_err(|e| fail(&e))?;
            entries.push((label.clone(), Sample::Line { style, dashed }));
        }
        for (k, (name, sample)) in entries.iter().enumerate() {
            let y = 20 + 18 * k as i32;
            match *sample {
                Sample::Line { style, dashed } => {
                    let gap = if dashed { 4 } else { 0 };
                    right
                        .draw(&PathElement::new(vec![(8, y), (15, y)], style))
                        .and_then(|_| {
                            right.draw(&PathElement::new(vec![(15 + gap, y), (26, y)], style))
                        })
                }
                Sample::Fill(style) => {
                    right.draw(&Rectangle::new([(8, y - 6), (26, y + 6)], style))
                }
            }
            .map_err(|e| fail(&e))?;
            let shown = shorten(name);
            right
                .draw(&Text::new(
                    shown,
                    (32, y - 6),
                    ("sans-serif", 12).into_font().color(&BLACK),
                ))
                .map_err(|e| fail(&e))?;
        }
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(labelled(svg, title))
}

/// The chart as one `<svg>` element, labelled for screen readers with its title.
pub fn line_chart(c: &LineChart<'_>) -> Result<String, ChartError> {
    let points = c.series.iter().flat_map(|s| &s.points);
    let max = extent(
        points.clone().map(|p| p.0),
        points.map(|p| p.1).chain(c.references.iter().map(|r| r.1)),
    );
    frame(
        c.title,
        (c.x_label, c.y_label),
        max,
        c.references,
        |chart| {
            let mut entries = Vec::with_capacity(c.series.len());
            for (i, s) in c.series.iter().enumerate() {
                let (colour_index, dashed) = if c.paired {
                    (i / 2, i % 2 == 1)
                } else {
                    (i, false)
                };
                let colour = PALETTE[colour_index % PALETTE.len()];
                // Past the palette, wider strokes tell repeated colours apart.
                let width = 1 + (colour_index / PALETTE.len()) as u32 + u32::from(dashed);
                let style = colour.stroke_width(width);
                let points = s.points.iter().copied();
                if dashed {
                    chart.draw_series(DashedLineSeries::new(points, 6, 4, style))
                } else {
                    chart.draw_series(LineSeries::new(points, style))
                }
                .map_err(|e| e.to_string())?;
                entries.push((s.name.clone(), Sample::Line { style, dashed }));
            }
            Ok(entries)
        },
    )
}

/// The stacked chart as one `<svg>` element, labelled for screen readers with its title.
pub fn stacked_chart(c: &StackedChart<'_>) -> Result<String, ChartError> {
    let tops: Vec<f64> = (0..c.times.len())
        .map(|k| c.layers.iter().map(|l| l.values[k]).sum())
        .collect();
    let max = extent(
        c.times.iter().copied(),
        tops.iter().copied().chain(c.references.iter().map(|r| r.1)),
    );
    frame(
        c.title,
        (c.x_label, c.y_label),
        max,
        c.references,
        |chart| {
            let mut entries = Vec::with_capacity(c.layers.len());
            let mut below = vec![0.0; c.times.len()];
            let at = |values: &[f64]| -> Vec<(f64, f64)> {
                let points: Vec<(f64, f64)> = c
                    .times
                    .iter()
                    .copied()
                    .zip(values.iter().copied())
                    .collect();
                super::downsample::steps(&points)
            };
            for (i, layer) in c.layers.iter().enumerate() {
                let above: Vec<f64> = below
                    .iter()
                    .zip(&layer.values)
                    .map(|(b, v)| b + v)
                    .collect();
                let (upper, lower) = (at(&above), at(&below));
                let outline: Vec<(f64, f64)> = upper
                    .iter()
                    .copied()
                    .chain(lower.into_iter().rev())
                    .collect();
                let colour = PALETTE[i % PALETTE.len()];
                let fill = colour.mix(0.8).filled();
                chart
                    .draw_series(std::iter::once(Polygon::new(outline, fill)))
                    .map_err(|e| e.to_string())?;
                chart
                    .draw_series(LineSeries::new(upper, colour.stroke_width(1)))
                    .map_err(|e| e.to_string())?;
                entries.push((layer.name.clone(), Sample::Fill(fill)));
                below = above;
            }
            Ok(entries)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The polylines of `svg` drawn in `stroke` (a colour and width attribute).
    fn lines(svg: &str, stroke: &str) -> usize {
        svg.lines()
            .filter(|l| l.starts_with("<polyline") && l.contains(stroke))
            .count()
    }

    #[test]
    fn a_chart_is_one_labelled_svg_with_a_path_per_series_and_the_references() {
        let series = [
            Series {
                name: "cq-a".into(),
                points: vec![(0.0, 1.0), (5.0, 3.0)],
            },
            Series {
                name: "cq-b".into(),
                points: vec![(0.0, 0.0), (5.0, 2.0)],
            },
        ];
        let svg = line_chart(&LineChart {
            title: "cpu <usage>",
            x_label: "time (s)",
            y_label: "cpu (cores)",
            series: &series,
            references: &[
                ("nominal quota".into(), 4.0),
                ("borrowing limit".into(), 6.0),
            ],
            paired: false,
        })
        .unwrap();
        assert!(svg.starts_with("<svg role=\"img\" aria-label=\"cpu &lt;usage&gt;\" "));
        assert_eq!(svg.matches("<svg").count(), 1);
        // Each series drawn once and sampled in the legend (two strokes) in its colour.
        assert_eq!(lines(&svg, "stroke=\"#0072B2\""), 3, "{svg}");
        assert_eq!(lines(&svg, "stroke=\"#E69F00\""), 3);
        // The references in black: the first one line, the second dashed (many short lines).
        let black = lines(&svg, "stroke=\"#000000\" stroke-width=\"2\"");
        assert!(black > 3 + 3, "{black}");
        for text in [
            "time (s)",
            "cpu (cores)",
            "cq-a",
            "cq-b",
            "nominal quota",
            "borrowing limit",
        ] {
            assert!(svg.contains(text), "{text}");
        }
    }

    #[test]
    fn long_legend_entries_are_cut_in_the_middle() {
        assert_eq!(shorten("cq-a"), "cq-a");
        let long = "cq-0-1-cohort-1/cq-0-1-cohort-1 (A)";
        let short = shorten(long);
        assert_eq!(short.chars().count(), LEGEND_CHARS);
        assert!(short.starts_with("cq-0-1-cohort-1") && short.ends_with("cohort-1 (A)"));
        assert!(short.contains('…'));
    }

    #[test]
    fn paired_series_share_a_colour_the_second_dashed() {
        let series: Vec<Series> = ["a (A)", "a (B)"]
            .iter()
            .map(|name| Series {
                name: name.to_string(),
                points: vec![(0.0, 0.0), (100.0, 1.0)],
            })
            .collect();
        let svg = line_chart(&LineChart {
            title: "paired",
            x_label: "x",
            y_label: "y",
            series: &series,
            references: &[],
            paired: true,
        })
        .unwrap();
        let solid = lines(&svg, "stroke=\"#0072B2\" stroke-width=\"1\"");
        let dashed = lines(&svg, "stroke=\"#0072B2\" stroke-width=\"2\"");
        assert_eq!(solid, 3, "{svg}");
        assert!(dashed > 3, "a dashed line is many strokes: {dashed}");
        assert!(!svg.contains("#E69F00"), "one colour for the pair");
    }

    #[test]
    fn a_stacked_chart_fills_one_band_per_layer_in_its_colour() {
        let layers = [
            Layer {
                name: "cq-a".into(),
                values: vec![1.0, 2.0, 0.0],
            },
            Layer {
                name: "cq-b".into(),
                values: vec![3.0, 1.0, 1.0],
            },
        ];
        let svg = stacked_chart(&StackedChart {
            title: "stacked",
            x_label: "virtual time (s)",
            y_label: "cpu (cores)",
            times: &[0.0, 10.0, 20.0],
            layers: &layers,
            references: &[("nominal quota of the tree".into(), 5.0)],
        })
        .unwrap();
        assert!(svg.starts_with("<svg role=\"img\" aria-label=\"stacked\" "));
        let bands = |colour: &str| {
            svg.lines()
                .filter(|l| l.starts_with("<polygon") && l.contains(colour))
                .count()
        };
        assert_eq!(bands("fill=\"#0072B2\""), 1, "{svg}");
        assert_eq!(bands("fill=\"#E69F00\""), 1);
        // Legend swatches are rectangles in the layers' colours.
        assert_eq!(
            svg.lines()
                .filter(|l| l.starts_with("<rect") && l.contains("#0072B2"))
                .count(),
            1
        );
        for text in ["cq-a", "cq-b", "nominal quota of the tree", "cpu (cores)"] {
            assert!(svg.contains(text), "{text}");
        }
    }
}
