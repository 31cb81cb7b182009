//! Kueue's API as the cluster serves it: the resources wasq reads and writes ([`kinds`]), the
//! CustomResourceDefinitions `wasq crds` prints ([`crds`]), and objects from the API server
//! decoded through those schemas (`prune`). Below every other group but [`super::status`]
//! (whose queue status types the CRDs describe).

pub mod crds;
pub mod kinds;
pub(crate) mod prune;
