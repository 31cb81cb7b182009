//! Integration tests: one binary sharing helpers.

mod scenarios;
