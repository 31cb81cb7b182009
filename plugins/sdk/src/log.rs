//! Logging through the host's `log` import, and the panic hook that reports a panic's message
//! before the guest traps.
//!
//! Lines go to the controller's log under the `tracing` target `wasq::plugin`, tagged with the
//! plugin's name. The host cuts lines at 4 KiB and keeps at most 1,000 lines per call. Off
//! WebAssembly (native unit tests) lines go to stderr instead, so tested code may log.

use crate::types::Level;

/// Writes one line to the host's log at `level`.
pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::bindings::common::wasq::policy::host::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("[{}] {message}", level_name(level));
}

/// The lower-case name of a level.
pub fn level_name(level: Level) -> &'static str {
    match level {
        Level::Trace => "trace",
        Level::Debug => "debug",
        Level::Info => "info",
        Level::Warn => "warn",
        Level::Error => "error",
    }
}

/// Logs at trace level.
pub fn trace(message: &str) {
    log(Level::Trace, message);
}

/// Logs at debug level.
pub fn debug(message: &str) {
    log(Level::Debug, message);
}

/// Logs at info level.
pub fn info(message: &str) {
    log(Level::Info, message);
}

/// Logs at warn level.
pub fn warn(message: &str) {
    log(Level::Warn, message);
}

/// Logs at error level.
pub fn error(message: &str) {
    log(Level::Error, message);
}

/// Installs (once) a panic hook that sends the panic message and location to the host's log at
/// error level. The guest traps right after, the host discards the instance and falls back to
/// its built-in policy; the log line says why. The `export_*!` macros install it on the first
/// call into the plugin.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let message = match info.payload().downcast_ref::<&str>() {
                Some(s) => (*s).to_string(),
                None => match info.payload().downcast_ref::<String>() {
                    Some(s) => s.clone(),
                    None => "Box<dyn Any>".to_string(),
                },
            };
            let line = match info.location() {
                Some(l) => format!("plugin panicked at {}:{}: {message}", l.file(), l.line()),
                None => format!("plugin panicked: {message}"),
            };
            log(Level::Error, &line);
        }));
    });
}

/// Logs a formatted line at trace level: `trace!("x = {x}")`.
#[macro_export]
macro_rules! trace {
    ($($arg:tt)*) => { $crate::log::trace(&::std::format!($($arg)*)) };
}

/// Logs a formatted line at debug level: `debug!("x = {x}")`.
#[macro_export]
macro_rules! debug {
    ($($arg:tt)*) => { $crate::log::debug(&::std::format!($($arg)*)) };
}

/// Logs a formatted line at info level: `info!("x = {x}")`.
#[macro_export]
macro_rules! info {
    ($($arg:tt)*) => { $crate::log::info(&::std::format!($($arg)*)) };
}

/// Logs a formatted line at warn level: `warn!("x = {x}")`.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)*) => { $crate::log::warn(&::std::format!($($arg)*)) };
}

/// Logs a formatted line at error level: `error!("x = {x}")`.
#[macro_export]
macro_rules! error {
    ($($arg:tt)*) => { $crate::log::error(&::std::format!($($arg)*)) };
}
