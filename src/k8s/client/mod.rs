//! Talking to the API server: the client configuration and connection ([`connect`]), every
//! write and its field manager ([`writer`]), Events ([`events`]) and the leader Lease
//! ([`lease`]).

pub mod connect;
pub mod events;
pub mod lease;
pub mod writer;

/// Requests in flight at most when a batch of writes goes out at once.
pub const MAX_IN_FLIGHT: usize = 32;
