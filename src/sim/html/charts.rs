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

const SIZE: (u32, u32) = (760, 340);

/// A legend sample: a line of 16 pixels, solid or in two dashes.
fn legend_line<'a, DB: DrawingBackend + 'a>(
    (x, y): (i32, i32),
    style: ShapeStyle,
    dashed: bool,
) -> impl IntoDynElement<'a, DB, (i32, i32)> {
    let gap = if dashed { 4 } else { 0 };
    EmptyElement::at((x, y))
        + PathElement::new(vec![(0, 0), (6, 0)], style)
        + PathElement::new(vec![(6 + gap, 0), (16, 0)], style)
}

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

type Chart<'b, 'a> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Draws the reference lines and the legend, then the chart.
fn finish<'b: 'a, 'a>(
    mut chart: Chart<'b, 'a>,
    references: &[(String, f64)],
    x_max: f64,
    drew_something: bool,
    fail: &dyn Fn(&dyn std::fmt::Display) -> ChartError,
) -> Result<(), ChartError> {
    for (k, (label, y)) in references.iter().enumerate() {
        let style = BLACK.stroke_width(2);
        let dashed = k > 0;
        let line = [(0.0, *y), (x_max, *y)];
        let anno = if dashed {
            chart
                .draw_series(DashedLineSeries::new(line, 8, 5, style))
                .map_err(|e| fail(&e))?
        } else {
            chart
                .draw_series(LineSeries::new(line, style))
                .map_err(|e| fail(&e))?
        };
        anno.label(label.as_str())
            .legend(move |at| legend_line(at, style, dashed));
    }
    if drew_something || !references.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| fail(&e))?;
    }
    Ok(())
}

/// The chart as one `<svg>` element, labelled for screen readers with its title.
pub fn line_chart(c: &LineChart<'_>) -> Result<String, ChartError> {
    let fail = |e: &dyn std::fmt::Display| ChartError {
        title: c.title.to_string(),
        message: e.to_string(),
    };
    let points = c.series.iter().flat_map(|s| &s.points);
    let (x_max, y_max) = extent(
        points.clone().map(|p| p.0),
        points.map(|p| p.1).chain(c.references.iter().map(|r| r.1)),
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(c.title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .x_desc(c.x_label)
            .y_desc(c.y_label)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| fail(&e))?;
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
            let anno = if dashed {
                chart
                    .draw_series(DashedLineSeries::new(points, 6, 4, style))
                    .map_err(|e| fail(&e))?
            } else {
                chart
                    .draw_series(LineSeries::new(points, style))
                    .map_err(|e| fail(&e))?
            };
            anno.label(s.name.as_str())
                .legend(move |at| legend_line(at, style, dashed));
        }
        finish(chart, c.references, x_max, !c.series.is_empty(), &fail)?;
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(labelled(svg, c.title))
}

/// The stacked chart as one `<svg>` element, labelled for screen readers with its title.
pub fn stacked_chart(c: &StackedChart<'_>) -> Result<String, ChartError> {
    let fail = |e: &dyn std::fmt::Display| ChartError {
        title: c.title.to_string(),
        message: e.to_string(),
    };
    let tops: Vec<f64> = (0..c.times.len())
        .map(|k| c.layers.iter().map(|l| l.values[k]).sum())
        .collect();
    let (x_max, y_max) = extent(
        c.times.iter().copied(),
        tops.iter().copied().chain(c.references.iter().map(|r| r.1)),
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(c.title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .x_desc(c.x_label)
            .y_desc(c.y_label)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| fail(&e))?;
        let mut below = vec![0.0; c.times.len()];
        for (i, layer) in c.layers.iter().enumerate() {
            let above: Vec<f64> = below
                .iter()
                .zip(&layer.values)
                .map(|(b, v)| b + v)
                .collect();
            let upper = super::downsample::steps(
                &c.times
                    .iter()
                    .copied()
                    .zip(above.iter().copied())
                    .collect::<Vec<_>>(),
            );
            let lower = super::downsample::steps(
                &c.times
                    .iter()
                    .copied()
                    .zip(below.iter().copied())
                    .collect::<Vec<_>>(),
            );
            let outline: Vec<(f64, f64)> = upper
                .iter()
                .copied()
                .chain(lower.into_iter().rev())
                .collect();
            let colour = PALETTE[i % PALETTE.len()];
            let fill = colour.mix(0.8).filled();
            chart
                .draw_series(std::iter::once(Polygon::new(outline, fill)))
                .map_err(|e| fail(&e))?
                .label(layer.name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], fill));
            chart
                .draw_series(LineSeries::new(upper, colour.stroke_width(1)))
                .map_err(|e| fail(&e))?;
            below = above;
        }
        finish(chart, c.references, x_max, !c.layers.is_empty(), &fail)?;
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(labelled(svg, c.title))
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
