//! The allocator wasq's binary runs on — mimalloc, re-exported — and when it gives freed
//! memory back to the operating system.
//!
//! mimalloc returns ("purges") memory that has stayed free for a while — a second, by default
//! — to the kernel, which zeroes it again when it is touched again. A long-running process
//! (`wasq controller`) wants that. A batch run (`wasq simulate`, `wasq bench`) does not: it
//! frees and reuses the same memory all through its run, and a run longer than the delay paid
//! the kernel to zero its memory again and again where a shorter one never did — at ten times
//! Kueue's large-scale shape, 0.4–0.6 s of a 6 s run, and none at 1× (BENCHMARKS.md). These
//! commands call [`keep_freed_memory`] first.
//!
//! And [`prefetch`]: a loop that reads one record by id per element of a list it holds (a
//! cycle's heads, its decisions) asks for the record a few elements ahead, so that the
//! CPU fetches several from memory at once instead of waiting for each in turn. At 1× Kueue's
//! large-scale shape those records are mostly in the cache anyway; at 10× their tables are
//! ten times larger and each read was a wait on memory (BENCHMARKS.md, stop 53).
//!
//! The only `unsafe` of wasq's host: three calls into mimalloc's C API that take and return
//! plain integers, and the prefetch instruction, which reads nothing.

#![deny(unsafe_op_in_unsafe_fn)]

use std::time::Duration;

pub use mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc v3's `mimalloc.h` (the `libmimalloc-sys` crate names
/// only the options older mimallocs had). A test in wasq checks it against the option's
/// documented default (1,000 ms) before anything sets it.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long a batch command keeps freed memory before it may go back: a day, which no run
/// lasts. Not "never" (-1): mimalloc then schedules no purge at all, and [`release_freed`]
/// could not give anything back.
pub const BATCH_PURGE_DELAY: Duration = Duration::from_secs(24 * 60 * 60);

/// How long mimalloc keeps memory that became free before it returns it to the kernel;
/// `None` when it never does (a negative delay, e.g. `MIMALLOC_PURGE_DELAY=-1`).
pub fn purge_delay() -> Option<Duration> {
    // SAFETY: reads one entry of mimalloc's option table (initialising it from the
    // environment the first time); no pointers cross.
    let ms = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
    u64::try_from(ms).ok().map(Duration::from_millis)
}

/// Keeps freed memory for reuse for [`BATCH_PURGE_DELAY`] before mimalloc may return it to
/// the kernel (whatever `MIMALLOC_PURGE_DELAY` says). For a batch command's `main`, before it
/// starts threads: mimalloc's option table is not synchronised.
pub fn keep_freed_memory() {
    let ms = i64::try_from(BATCH_PURGE_DELAY.as_millis()).expect("a day in milliseconds");
    // SAFETY: writes one integer entry of mimalloc's option table; the caller runs before
    // any other thread exists (see above).
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, ms as _) };
}

/// Returns the memory mimalloc keeps free to the kernel now, whatever the delay (between two
/// measured runs, so that the second's peak is its own).
pub fn release_freed() {
    // SAFETY: mimalloc's collection of the calling thread's heap and its arenas; no
    // arguments but a flag.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// Asks the CPU to bring the cache line holding `value`'s first byte, and the `lines - 1`
/// after it, into its caches, without waiting for them: a hint, which never faults and
/// changes nothing the program computes (a no-op off x86-64).
#[inline(always)]
pub fn prefetch<T>(value: &T, lines: usize) {
    prefetch_lines((value as *const T).cast::<i8>(), lines);
}

/// Asks for every cache line holding one of the first `bytes` bytes of `value` (a record
/// whose hot fields lead it, in a table that does not start on a line; the elements of a
/// short slice): two lines for 128 bytes that start on one, three when they do not.
#[inline(always)]
pub fn prefetch_bytes<T: ?Sized>(value: &T, bytes: usize) {
    let p = (value as *const T).cast::<i8>();
    prefetch_lines(p, (p as usize % 64 + bytes).div_ceil(64));
}

#[inline(always)]
fn prefetch_lines(p: *const i8, lines: usize) {
    #[cfg(target_arch = "x86_64")]
    for l in 0..lines {
        // SAFETY: a prefetch is a hint that never faults; the address is within or just past
        // a live reference's object (it is not dereferenced).
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                p.wrapping_add(l * 64),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, lines);
}
