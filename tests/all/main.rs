//! Integration tests: one binary sharing helpers.

mod invariants;
mod manifests;
mod scenarios;
mod sim_inputs;
