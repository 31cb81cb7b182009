//! Colours: one per queue across every chart of the page. A ClusterQueue's colour is its rank
//! among the cluster's ClusterQueue names, a LocalQueue's its rank among the LocalQueue names
//! (both runs of a `--compare` have the same queues, so the same colours); other series (a
//! reason, a flavor/resource, a workload class) take theirs by position in their chart, and
//! what pools the rest of a chart ("the other 3 ClusterQueues") is grey.
//!
//! The colours are mostly Okabe & Ito's (told apart with the common colour-vision deficiencies);
//! past the eighth, lines are drawn wider so that two queues of one colour still differ.

use std::collections::BTreeMap;

use plotters::style::RGBColor;

/// Okabe & Ito's palette, with Tol's olive for its yellow (too faint a line on white) and
/// Tol's wine for its black (black draws the reference lines).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(153, 153, 51),
    RGBColor(136, 34, 85),
];

/// What pools the rest: grey, 4.5:1 against white.
const GREY: RGBColor = RGBColor(118, 118, 118);

/// The colour a series is drawn in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    /// The n-th colour of the palette (wrapping, wider past the eighth).
    Nth(usize),
    /// The others, pooled.
    Others,
}

impl Colour {
    pub fn rgb(self) -> RGBColor {
        match self {
            Colour::Nth(n) => PALETTE[n % PALETTE.len()],
            Colour::Others => GREY,
        }
    }

    /// The stroke width of a line in this colour: 1, and one more for each time the palette
    /// has wrapped.
    pub fn width(self) -> u32 {
        match self {
            Colour::Nth(n) => 1 + (n / PALETTE.len() % 3) as u32,
            Colour::Others => 1,
        }
    }
}

/// The colours of a cluster's queues.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Palette {
    cluster_queues: BTreeMap<String, usize>,
    local_queues: BTreeMap<String, usize>,
}

/// Each name's rank among `names` (sorted, duplicates once).
fn ranks(names: impl IntoIterator<Item = String>) -> BTreeMap<String, usize> {
    let sorted: std::collections::BTreeSet<String> = names.into_iter().collect();
    sorted
        .into_iter()
        .enumerate()
        .map(|(k, n)| (n, k))
        .collect()
}

impl Palette {
    /// The palette of ClusterQueues named `cluster_queues` and LocalQueues named
    /// `local_queues` (`namespace/name`).
    pub fn new(
        cluster_queues: impl IntoIterator<Item = String>,
        local_queues: impl IntoIterator<Item = String>,
    ) -> Palette {
        Palette {
            cluster_queues: ranks(cluster_queues),
            local_queues: ranks(local_queues),
        }
    }

    /// The palette of `sim`'s cluster.
    pub fn of(sim: &crate::sim::Simulation) -> Palette {
        let cluster = sim.cluster();
        Palette::new(
            cluster.cluster_queues.iter().map(|cq| cq.name.clone()),
            cluster
                .local_queues
                .iter()
                .map(|lq| format!("{}/{}", lq.namespace, lq.name)),
        )
    }

    /// A ClusterQueue's colour (grey for a name that is not one).
    pub fn cluster_queue(&self, name: &str) -> Colour {
        self.cluster_queues
            .get(name)
            .map_or(Colour::Others, |&k| Colour::Nth(k))
    }

    /// A LocalQueue's colour (`namespace/name`; grey for a name that is not one).
    pub fn local_queue(&self, name: &str) -> Colour {
        self.local_queues
            .get(name)
            .map_or(Colour::Others, |&k| Colour::Nth(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_keeps_its_colour_whatever_else_the_chart_draws() {
        let p = Palette::new(
            ["b", "a", "c"].map(String::from),
            ["ns/x", "ns/a"].map(String::from),
        );
        assert_eq!(p.cluster_queue("a"), Colour::Nth(0));
        assert_eq!(p.cluster_queue("c"), Colour::Nth(2));
        assert_eq!(p.local_queue("ns/x"), Colour::Nth(1));
        assert_eq!(p.cluster_queue("the other 3 ClusterQueues"), Colour::Others);
        // Past the eighth colour, the same hue drawn wider.
        assert_eq!(Colour::Nth(9).rgb(), Colour::Nth(1).rgb());
        assert_eq!((Colour::Nth(1).width(), Colour::Nth(9).width()), (1, 2));
    }
}
