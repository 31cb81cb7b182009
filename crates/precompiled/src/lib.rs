//! Loading a component that wasmtime compiled earlier in this process or another one
//! (`Engine::precompile_component`), kept on disk by wasq's compiled-module cache.
//!
//! wasmtime's `Component::deserialize` trusts its input — native code runs from it — so it is
//! `unsafe`, and this crate holds wasq's only call of it. What makes the call sound here: the
//! bytes are loaded only when their SHA-256 equals the digest recorded when they were written
//! by [`seal`], in a file of the user's own cache directory; a truncated, corrupted or
//! half-written entry fails that check and is compiled again, never run. wasmtime itself then
//! refuses bytes of another wasmtime version or engine configuration.

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The digest recorded beside compiled bytes: SHA-256, in hex.
pub fn seal(compiled: &[u8]) -> String {
    Sha256::digest(compiled)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Why compiled bytes were not loaded.
#[derive(Debug)]
pub enum Refused {
    /// The bytes are not the ones sealed (corrupted, truncated, replaced).
    Seal,
    /// wasmtime refused them (another wasmtime version or engine configuration).
    Wasmtime(wasmtime::Error),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Seal => f.write_str("the compiled bytes do not match their recorded digest"),
            Refused::Wasmtime(e) => write!(f, "wasmtime refused the compiled bytes: {e}"),
        }
    }
}

impl std::error::Error for Refused {}

/// The component `compiled` holds, when its digest is `sealed` (as [`seal`] wrote it).
///
/// # Errors
/// [`Refused::Seal`] when the bytes are not the ones sealed; [`Refused::Wasmtime`] when wasmtime
/// refuses them.
pub fn open(engine: &Engine, compiled: &[u8], sealed: &str) -> Result<Component, Refused> {
    if seal(compiled) != sealed.trim() {
        return Err(Refused::Seal);
    }
    // SAFETY: `compiled` is byte for byte what `Engine::precompile_component` produced and
    // `seal` digested when the entry was written (checked just above), so it is wasmtime's own
    // output, and wasmtime checks that it was made by this version and configuration.
    unsafe { Component::deserialize(engine, compiled) }.map_err(Refused::Wasmtime)
}

#[cfg(test)]
mod tests {
    use super::{Refused, open, seal};

    #[test]
    fn only_sealed_bytes_are_opened() {
        let engine = wasmtime::Engine::default();
        // The smallest component: the magic number, version 13, layer 1.
        let compiled = engine
            .precompile_component(&[0, 97, 115, 109, 13, 0, 1, 0])
            .expect("an empty component compiles");
        let digest = seal(&compiled);
        assert!(open(&engine, &compiled, &digest).is_ok());
        let mut corrupt = compiled.clone();
        let last = corrupt.len() - 1;
        corrupt[last] ^= 1;
        assert!(matches!(
            open(&engine, &corrupt, &digest),
            Err(Refused::Seal)
        ));
        assert!(matches!(
            open(&engine, &compiled[..compiled.len() / 2], &digest),
            Err(Refused::Seal)
        ));
    }
}
