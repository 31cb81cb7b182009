//! SVG charts drawn with plotters' SVG backend: a step line chart (every series a step
//! function, its value held until its next point; solid, or solid and dashed in pairs) with
//! horizontal reference lines (a nominal quota, a borrowing limit), and a stacked area chart.
//! Each series is drawn in its own [`Colour`] (one per queue across the page), the x axis is
//! time in round lengths of time, both ranges are padded so that nothing is drawn on the frame,
//! and the legend sits to the right of the plot, never over the data. The title is not drawn:
//! the page prints it once as the figure's caption, and it labels the `<svg>` for screen
//! readers.

use plotters::prelude::*;

use super::axis::{self, Ticked};
use super::downsample::steps;
use super::model::Series;
use super::stack::Layer;

/// How a reference line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    Solid,
    Dashed,
    Dotted,
}

/// A horizontal reference line, in black.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub name: String,
    pub value: f64,
    pub line: Line,
}

impl Reference {
    pub fn new(name: impl Into<String>, value: f64, line: Line) -> Reference {
        Reference {
            name: name.into(),
            value,
            line,
        }
    }
}

/// One line chart.
pub struct LineChart<'a> {
    /// What the chart shows: its label for screen readers.
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: &'a [Series],
    pub references: &'a [Reference],
    /// The series come in pairs, the first of each solid and the second dashed (run A and run
    /// B; a share and its entitlement; a usage and its nominal quota).
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
    pub references: &'a [Reference],
}

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("drawing the chart {title:?}: {message}")]
pub struct ChartError {
    pub title: String,
    pub message: String,
}

/// The whole chart, and the width of the plot (the legend is drawn to its right).
const SIZE: (u32, u32) = (960, 320);
const PLOT_WIDTH: u32 = 730;

/// Legend entries longer than this are cut (the table beneath has the whole name).
const LEGEND_CHARS: usize = 32;

/// Padding of the ranges, as a fraction of the span: left and right, below and above.
const X_PAD: (f64, f64) = (0.01, 0.02);
const Y_PAD: (f64, f64) = (0.04, 0.08);

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
    Line { style: ShapeStyle, line: Line },
    Fill(ShapeStyle),
}

type Chart<'b, 'a> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Ticked, Ticked>>;

/// The chart's `<svg>` labelled for screen readers with its title.
fn labelled(svg: String, title: &str) -> String {
    let label = format!(
        "role=\"img\" aria-label=\"{}\" ",
        super::markup::escape(title)
    );
    svg.replacen("<svg ", &format!("<svg {label}"), 1)
}

/// The extent of what a chart draws: the largest x and y, and whether every y is whole.
struct Extent {
    x: f64,
    y: f64,
    whole: bool,
}

impl Extent {
    fn of(xs: impl Iterator<Item = f64>, ys: impl Iterator<Item = f64>) -> Extent {
        let x = xs.fold(0.0f64, f64::max);
        let (mut y, mut whole) = (0.0f64, true);
        for v in ys {
            y = y.max(v);
            whole &= v.fract() == 0.0;
        }
        Extent { x, y, whole }
    }
}

/// Draws `points` in `style`, solid or in dashes of `dash` (length, gap).
fn draw_line(
    chart: &mut Chart<'_, '_>,
    points: Vec<(f64, f64)>,
    style: ShapeStyle,
    dash: Option<(u32, u32)>,
) -> Result<(), String> {
    match dash {
        Some((size, gap)) => chart.draw_series(DashedLineSeries::new(points, size, gap, style)),
        None => chart.draw_series(LineSeries::new(points, style)),
    }
    .map(|_| ())
    .map_err(|e| e.to_string())
}

fn dash_of(line: Line) -> Option<(u32, u32)> {
    match line {
        Line::Solid => None,
        Line::Dashed => Some((8, 5)),
        Line::Dotted => Some((2, 4)),
    }
}

/// Whether what a chart plots is drawn over its reference lines or under them.
#[derive(Clone, Copy)]
enum Layering {
    OverReferences,
    UnderReferences,
}

/// A chart's frame: axes with their labels, ticks and a light grid, `plot` drawn in it, the
/// reference lines and the legend of what `plot` drew and of the references beside it.
fn frame(
    title: &str,
    labels: (&str, &str),
    extent: Extent,
    references: &[Reference],
    layering: Layering,
    plot: impl FnOnce(&mut Chart<'_, '_>) -> Result<Vec<(String, Sample)>, String>,
) -> Result<String, ChartError> {
    let fail = |e: &dyn std::fmt::Display| ChartError {
        title: title.to_string(),
        message: e.to_string(),
    };
    let x_range = axis::padded(extent.x, X_PAD.0, X_PAD.1);
    let y_range = axis::padded(extent.y, Y_PAD.0, Y_PAD.1);
    let x_ticks = axis::time_ticks(extent.x);
    let y_ticks = axis::value_ticks(extent.y, extent.whole);
    let x_right = x_range.end;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let (left, right) = root.split_horizontally(PLOT_WIDTH);
        let mut chart = ChartBuilder::on(&left)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(Ticked::new(x_range, x_ticks), Ticked::new(y_range, y_ticks))
            .map_err(|e| fail(&e))?;
        let time = |x: &f64| axis::duration(*x);
        let value = |y: &f64| axis::value(*y);
        chart
            .configure_mesh()
            .x_desc(labels.0)
            .y_desc(labels.1)
            .x_label_formatter(&time)
            .y_label_formatter(&value)
            .bold_line_style(RGBColor(225, 225, 225))
            .label_style(("sans-serif", 14).into_font().color(&BLACK))
            .axis_desc_style(("sans-serif", 15).into_font().color(&BLACK))
            .draw()
            .map_err(|e| fail(&e))?;
        let draw_references = |chart: &mut Chart<'_, '_>| {
            let mut entries = Vec::with_capacity(references.len());
            for r in references {
                let style = BLACK.stroke_width(2);
                let line = vec![(0.0, r.value), (x_right, r.value)];
                draw_line(chart, line, style, dash_of(r.line)).map_err(|e| fail(&e))?;
                entries.push((
                    r.name.clone(),
                    Sample::Line {
                        style,
                        line: r.line,
                    },
                ));
            }
            Ok::<_, ChartError>(entries)
        };
        // Lines go over the references (a queue using exactly its quota stays visible), areas
        // under them (a stack reaching its quota does not hide it); the references' legend
        // entries come last either way.
        let entries = match layering {
            Layering::OverReferences => {
                let references = draw_references(&mut chart)?;
                let mut entries = plot(&mut chart).map_err(|e| fail(&e))?;
                entries.extend(references);
                entries
            }
            Layering::UnderReferences => {
                let mut entries = plot(&mut chart).map_err(|e| fail(&e))?;
                entries.extend(draw_references(&mut chart)?);
                entries
            }
        };
        for (k, (name, sample)) in entries.iter().enumerate() {
            let y = 20 + 20 * k as i32;
            match *sample {
                Sample::Line { style, line } => {
                    let path =
                        |from: i32, to: i32| PathElement::new(vec![(from, y), (to, y)], style);
                    match line {
                        Line::Solid => right.draw(&path(8, 26)),
                        Line::Dashed => right
                            .draw(&path(8, 14))
                            .and_then(|_| right.draw(&path(19, 26))),
                        Line::Dotted => right
                            .draw(&path(8, 10))
                            .and_then(|_| right.draw(&path(15, 17)))
                            .and_then(|_| right.draw(&path(22, 24))),
                    }
                }
                Sample::Fill(style) => {
                    right.draw(&Rectangle::new([(8, y - 6), (26, y + 6)], style))
                }
            }
            .map_err(|e| fail(&e))?;
            right
                .draw(&Text::new(
                    shorten(name),
                    (32, y - 6),
                    ("sans-serif", 14).into_font().color(&BLACK),
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
    let extent = Extent::of(
        points.clone().map(|p| p.0),
        points
            .map(|p| p.1)
            .chain(c.references.iter().map(|r| r.value)),
    );
    frame(
        c.title,
        (c.x_label, c.y_label),
        extent,
        c.references,
        Layering::OverReferences,
        |chart| {
            let mut entries = Vec::with_capacity(c.series.len());
            for (i, s) in c.series.iter().enumerate() {
                let dashed = c.paired && i % 2 == 1;
                let style = s
                    .colour
                    .rgb()
                    .stroke_width(s.colour.width() + u32::from(dashed));
                let line = if dashed { Line::Dashed } else { Line::Solid };
                let dash = dashed.then_some((6, 4));
                draw_line(chart, steps(&s.points), style, dash)?;
                entries.push((s.name.clone(), Sample::Line { style, line }));
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
    let extent = Extent::of(
        c.times.iter().copied(),
        tops.iter()
            .copied()
            .chain(c.references.iter().map(|r| r.value)),
    );
    frame(
        c.title,
        (c.x_label, c.y_label),
        extent,
        c.references,
        Layering::UnderReferences,
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
                steps(&points)
            };
            for layer in c.layers {
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
                let colour = layer.colour.rgb();
                let fill = colour.mix(0.8).filled();
                chart
                    .draw_series(std::iter::once(Polygon::new(outline, fill)))
                    .map_err(|e| e.to_string())?;
                draw_line(chart, upper, colour.stroke_width(1), None)?;
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
    use crate::sim::html::palette::Colour;

    /// The polylines of `svg` drawn in `stroke` (a colour and width attribute).
    fn lines<'a>(svg: &'a str, stroke: &str) -> Vec<&'a str> {
        svg.lines()
            .filter(|l| l.starts_with("<polyline") && l.contains(stroke))
            .collect()
    }

    /// The points of a polyline.
    fn points(polyline: &str) -> Vec<(i32, i32)> {
        let start = polyline.find("points=\"").expect("points") + 8;
        let end = start + polyline[start..].find('"').expect("ends");
        polyline[start..end]
            .split_whitespace()
            .map(|p| {
                let (x, y) = p.split_once(',').expect("x,y");
                (x.parse().expect("x"), y.parse().expect("y"))
            })
            .collect()
    }

    fn series(name: &str, points: &[(f64, f64)], colour: Colour) -> Series {
        Series {
            name: name.into(),
            points: points.to_vec(),
            colour,
        }
    }

    #[test]
    fn a_chart_is_one_labelled_svg_with_a_line_per_series_and_the_references() {
        let series = [
            series("cq-a", &[(0.0, 1.0), (5.0, 3.0)], Colour::Nth(0)),
            series("cq-b", &[(0.0, 0.0), (5.0, 2.0)], Colour::Nth(1)),
        ];
        let svg = line_chart(&LineChart {
            title: "cpu <usage>",
            x_label: "virtual time",
            y_label: "cpu (cores)",
            series: &series,
            references: &[
                Reference::new("nominal quota", 4.0, Line::Solid),
                Reference::new("borrowing limit", 6.0, Line::Dashed),
            ],
            paired: false,
        })
        .unwrap();
        assert!(svg.starts_with("<svg role=\"img\" aria-label=\"cpu &lt;usage&gt;\" "));
        assert_eq!(svg.matches("<svg").count(), 1);
        // The title only labels the chart: the page prints it once, as the caption.
        assert_eq!(svg.matches("usage&gt;").count(), 1, "{svg}");
        // Each series drawn once and sampled once in the legend, in its colour.
        assert_eq!(lines(&svg, "stroke=\"#0072B2\"").len(), 2, "{svg}");
        assert_eq!(lines(&svg, "stroke=\"#E69F00\"").len(), 2);
        // The references in black: the first one line, the second dashed (many short lines).
        let black = lines(&svg, "stroke=\"#000000\" stroke-width=\"2\"").len();
        assert!(black > 2 + 2, "{black}");
        for text in [
            "virtual time",
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
    fn series_are_drawn_as_steps() {
        let svg = line_chart(&LineChart {
            title: "admissions",
            x_label: "virtual time",
            y_label: "admissions",
            series: &[series(
                "admissions",
                &[(0.0, 0.0), (10.0, 1.0), (30.0, 2.0), (60.0, 2.0)],
                Colour::Nth(0),
            )],
            references: &[],
            paired: false,
        })
        .unwrap();
        let drawn = lines(&svg, "stroke=\"#0072B2\"")
            .into_iter()
            .map(points)
            .max_by_key(Vec::len)
            .expect("the series");
        // Every segment horizontal or vertical: a count holds until it changes.
        assert_eq!(drawn.len(), 7, "{drawn:?}");
        assert!(
            drawn
                .windows(2)
                .all(|w| w[0].0 == w[1].0 || w[0].1 == w[1].1),
            "{drawn:?}"
        );
    }

    #[test]
    fn lines_along_zero_and_the_maximum_stay_inside_the_frame() {
        // Everything admitted at once: a count that jumps at 0 and stays at its maximum.
        let svg = line_chart(&LineChart {
            title: "at once",
            x_label: "virtual time",
            y_label: "admissions",
            series: &[series(
                "admissions",
                &[(0.0, 0.0), (0.0, 5.0), (60.0, 5.0)],
                Colour::Nth(0),
            )],
            references: &[],
            paired: false,
        })
        .unwrap();
        // The axes: the long black lines, one vertical and one horizontal.
        let axes: Vec<Vec<(i32, i32)>> = lines(&svg, "stroke=\"#000000\" stroke-width=\"1\"")
            .into_iter()
            .map(points)
            .filter(|p| p.len() == 2 && (p[0].0 - p[1].0).abs() + (p[0].1 - p[1].1).abs() > 100)
            .collect();
        let y_axis = axes.iter().find(|p| p[0].0 == p[1].0).expect("a y axis");
        let x_axis = axes.iter().find(|p| p[0].1 == p[1].1).expect("an x axis");
        let (left, top, bottom) = (y_axis[0].0, y_axis[0].1.min(y_axis[1].1), x_axis[0].1);
        let drawn = lines(&svg, "stroke=\"#0072B2\"")
            .into_iter()
            .map(points)
            .max_by_key(Vec::len)
            .unwrap();
        for (x, y) in drawn {
            assert!(
                x > left + 3 && y < bottom - 3 && y > top + 3,
                "({x}, {y}) on the frame: {left} {top} {bottom}"
            );
        }
    }

    #[test]
    fn the_time_axis_reads_in_round_lengths_of_time() {
        let svg = line_chart(&LineChart {
            title: "time",
            x_label: "virtual time",
            y_label: "y",
            series: &[series("s", &[(0.0, 0.0), (5400.0, 1.0)], Colour::Nth(0))],
            references: &[],
            paired: false,
        })
        .unwrap();
        for label in ["0", "15m", "30m", "1h", "1h30m"] {
            assert!(
                svg.contains(&format!(">\n{label}\n</text>")),
                "{label}: {svg}"
            );
        }
        assert!(!svg.contains("1800"), "no raw seconds");
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
    fn paired_series_keep_their_colours_the_second_dashed() {
        let series: Vec<Series> = ["a (A)", "a (B)"]
            .iter()
            .map(|name| series(name, &[(0.0, 0.0), (100.0, 1.0)], Colour::Nth(3)))
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
        let solid = lines(&svg, "stroke=\"#CC79A7\" stroke-width=\"1\"").len();
        let dashed = lines(&svg, "stroke=\"#CC79A7\" stroke-width=\"2\"").len();
        assert_eq!(solid, 2, "{svg}");
        assert!(dashed > 3, "a dashed line is many strokes: {dashed}");
        assert!(!svg.contains("#0072B2"), "one colour for the pair");
    }

    #[test]
    fn a_stacked_chart_fills_one_band_per_layer_in_its_colour() {
        let layers = [
            Layer {
                name: "cq-a".into(),
                values: vec![1.0, 2.0, 0.0],
                colour: Colour::Nth(0),
            },
            Layer {
                name: "the other 2 ClusterQueues".into(),
                values: vec![3.0, 1.0, 1.0],
                colour: Colour::Others,
            },
        ];
        let svg = stacked_chart(&StackedChart {
            title: "stacked",
            x_label: "virtual time",
            y_label: "cpu (cores)",
            times: &[0.0, 10.0, 20.0],
            layers: &layers,
            references: &[Reference::new(
                "nominal quota of the tree",
                5.0,
                Line::Solid,
            )],
        })
        .unwrap();
        assert!(svg.starts_with("<svg role=\"img\" aria-label=\"stacked\" "));
        let bands = |colour: &str| {
            svg.lines()
                .filter(|l| l.starts_with("<polygon") && l.contains(colour))
                .count()
        };
        assert_eq!(bands("fill=\"#0072B2\""), 1, "{svg}");
        assert_eq!(bands("fill=\"#767676\""), 1, "the others in grey");
        // Legend swatches are rectangles in the layers' colours.
        assert_eq!(
            svg.lines()
                .filter(|l| l.starts_with("<rect") && l.contains("#0072B2"))
                .count(),
            1
        );
        for text in [
            "cq-a",
            "the other 2 ClusterQueues",
            "nominal quota of the tree",
            "cpu (cores)",
        ] {
            assert!(svg.contains(text), "{text}");
        }
    }
}
