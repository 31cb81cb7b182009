//! SVG charts drawn with plotters' SVG backend: line charts with titled axes, a legend, the
//! Okabe–Ito colours (distinguishable with the common colour-vision deficiencies) and an
//! optional reference line (a nominal quota).

use plotters::prelude::*;

use super::model::Series;

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
    /// A horizontal reference line: its legend label and value.
    pub reference: Option<(&'a str, f64)>,
}

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("drawing the chart {title:?}: {message}")]
pub struct ChartError {
    pub title: String,
    pub message: String,
}

/// The chart as one `<svg>` element, labelled for screen readers with its title.
pub fn line_chart(c: &LineChart<'_>) -> Result<String, ChartError> {
    let fail = |e: &dyn std::fmt::Display| ChartError {
        title: c.title.to_string(),
        message: e.to_string(),
    };
    let points = c.series.iter().flat_map(|s| &s.points);
    let x_max = points.clone().map(|p| p.0).fold(0.0f64, f64::max).max(1e-9);
    let y_max = points
        .map(|p| p.1)
        .chain(c.reference.map(|r| r.1))
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.05;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 340)).into_drawing_area();
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
            let colour = PALETTE[i % PALETTE.len()];
            // Past the palette, wider strokes tell repeated colours apart.
            let width = 1 + (i / PALETTE.len()) as u32;
            let style = colour.stroke_width(width);
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), style))
                .map_err(|e| fail(&e))?
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], style));
        }
        if let Some((label, y)) = c.reference {
            let style = BLACK.stroke_width(2);
            chart
                .draw_series(LineSeries::new([(0.0, y), (x_max, y)], style))
                .map_err(|e| fail(&e))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], style));
        }
        if !c.series.is_empty() || c.reference.is_some() {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(|e| fail(&e))?;
        }
        root.present().map_err(|e| fail(&e))?;
    }
    let label = format!(
        "role=\"img\" aria-label=\"{}\" ",
        super::page::escape(c.title)
    );
    Ok(svg.replacen("<svg ", &format!("<svg {label}"), 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_is_one_labelled_svg_with_a_path_per_series_and_the_reference() {
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
            reference: Some(("nominal quota", 4.0)),
        })
        .unwrap();
        assert!(svg.starts_with("<svg role=\"img\" aria-label=\"cpu &lt;usage&gt;\" "));
        assert_eq!(svg.matches("<svg").count(), 1);
        // Two series and the reference, each drawn and sampled in the legend in its colour.
        let lines = |colour: &str| {
            svg.lines()
                .filter(|l| l.starts_with("<polyline") && l.contains(colour))
                .count()
        };
        assert_eq!(lines("stroke=\"#0072B2\""), 2, "{svg}");
        assert_eq!(lines("stroke=\"#E69F00\""), 2);
        assert_eq!(lines("stroke=\"#000000\" stroke-width=\"2\""), 2);
        for text in ["time (s)", "cpu (cores)", "cq-a", "cq-b", "nominal quota"] {
            assert!(svg.contains(text), "{text}");
        }
    }
}
