//! Integration tests: one binary sharing helpers.

mod admission_checks;
mod budgets;
mod cli;
mod compat;
mod examples;
mod fair_swap;
mod fairness;
mod html_report;
mod invariants;
mod job_kinds;
mod k8s;
mod manifests;
mod plugin_scenarios;
mod plugins;
mod pods_ready;
mod reload;
mod rng;
mod scenarios;
mod sim_inputs;
mod topology;
mod topology_groups;
mod wasm_containment;
mod wasm_parity;
mod wasm_placement;
mod wasm_sandbox;
mod webhooks;
