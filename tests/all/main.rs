//! Integration tests: one binary sharing helpers.

mod manifests;
mod invariants;
mod scenarios;
