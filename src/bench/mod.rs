//! `wasq bench`: Kueue's performance-test shapes through either driver — the simulator
//! ([`simulator`]: native against WASM policies on the virtual clock) and the controller
//! ([`controller`]: real time, against the in-process API server double). Above both drivers,
//! so that neither depends on the other.

pub mod controller;
pub mod simulator;
