//! [`Recycling`]: a global allocator for plugins that keeps freed small blocks for reuse.
//!
//! A plugin instance answers the same kind of call thousands of times, and each call allocates
//! and frees the same few sizes: a preemption request lowers several lists into the
//! instance (`cabi_realloc`), and the bindings and the search add about as many vectors of
//! their own. A general allocator pays for that on every call (talc ≈ 150 instructions an
//! allocation and ≈ 85 a free, about fifteen of each a request: BENCHMARKS.md, stop 40).
//!
//! `Recycling` rounds a small block (at most 32 KiB, alignment at most 16) up to a power of
//! two and, when it is freed, keeps it on a list of free blocks of that size instead of giving
//! it back: the next allocation of that size takes it back in a few instructions. Only a size
//! with no kept block, a larger block or a stricter alignment reaches the allocator beneath.
//! Kept blocks are never given back nor used for another size, so an instance holds at most the
//! sum of each size's peak, every small block at least 16 bytes and under twice what it asks
//! for past that.
//!
//! A plugin's single thread is the only one: with the `atomics` target feature (threads in
//! WebAssembly) the type is not `Sync` and cannot be a `#[global_allocator]`.
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: wasq_policy_sdk::alloc::Recycling<talc::wasm::WasmDynamicTalc> =
//!     wasq_policy_sdk::alloc::Recycling::new(talc::wasm::new_wasm_dynamic_allocator());
//! ```

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr;

/// The smallest block, 16 bytes: room for the link of the free list, and the alignment every
/// small block gets.
const MIN_SHIFT: u32 = 4;
/// The largest small block, 32 KiB.
const MAX_SHIFT: u32 = 15;
/// One free list per power of two from 16 bytes to 32 KiB.
const CLASSES: usize = (MAX_SHIFT - MIN_SHIFT + 1) as usize;
/// The alignment of every small block.
const ALIGN: usize = 1 << MIN_SHIFT;

/// An allocator that keeps freed small blocks of `A` for reuse (see the module docs).
pub struct Recycling<A> {
    inner: A,
    /// Per size class, the first free block; each free block holds the next one's address
    /// (null ends the list).
    free: UnsafeCell<[*mut u8; CLASSES]>,
}

impl<A> Recycling<A> {
    /// Wraps `inner`, with no free block kept yet.
    pub const fn new(inner: A) -> Recycling<A> {
        Recycling {
            inner,
            free: UnsafeCell::new([ptr::null_mut(); CLASSES]),
        }
    }
}

// SAFETY: without the `atomics` target feature a WebAssembly instance runs one thread, so the
// free lists are never touched by two threads.
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
unsafe impl<A: Sync> Sync for Recycling<A> {}

/// The size class of a layout: `None` for a block larger than 32 KiB or aligned to more than
/// 16 bytes, which go to the allocator beneath as they are.
#[inline(always)]
fn class(layout: Layout) -> Option<usize> {
    if layout.align() > ALIGN || layout.size() > 1 << MAX_SHIFT {
        return None;
    }
    let size = layout.size().max(1 << MIN_SHIFT);
    // ⌈log₂ size⌉, from 4 to 15.
    let shift = usize::BITS - (size - 1).leading_zeros();
    Some((shift - MIN_SHIFT) as usize)
}

/// The layout of every block of a size class.
#[inline(always)]
fn class_layout(class: usize) -> Layout {
    // SAFETY: a power of two from 16 to 32 KiB, aligned to 16: a valid layout.
    unsafe { Layout::from_size_align_unchecked(1 << (class as u32 + MIN_SHIFT), ALIGN) }
}

unsafe impl<A: GlobalAlloc> GlobalAlloc for Recycling<A> {
    // Out of line, as the two others: inlined into its callers, it made the preemption
    // search's loop 75 M instructions slower at Kueue's large scale (BENCHMARKS.md, stop 40).
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(c) = class(layout) else {
            // SAFETY: the caller's layout, passed on.
            return unsafe { self.inner.alloc(layout) };
        };
        // SAFETY: one thread (see `Sync`), and no reference to the lists outlives a call.
        let free = unsafe { &mut *self.free.get() };
        let head = free[c];
        if head.is_null() {
            // SAFETY: a valid, non-zero-sized layout.
            return unsafe { self.inner.alloc(class_layout(c)) };
        }
        // SAFETY: a kept block is at least 16 bytes, aligned to 16, and holds the next one.
        free[c] = unsafe { head.cast::<*mut u8>().read() };
        head
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some(c) = class(layout) else {
            // SAFETY: a large block came from the allocator beneath with this layout.
            return unsafe { self.inner.dealloc(ptr, layout) };
        };
        // SAFETY: as in `alloc`; the block is the caller's no more, and at least 16 bytes
        // aligned to 16 (it came from this class), room for the link.
        let free = unsafe { &mut *self.free.get() };
        unsafe { ptr.cast::<*mut u8>().write(free[c]) };
        free[c] = ptr;
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller promises `new_size`, rounded up to `layout.align()`, fits `isize`.
        let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (class(layout), class(new)) {
            // The block already has room for the new size.
            (Some(a), Some(b)) if a == b => ptr,
            // SAFETY: a large block of the allocator beneath, resized by it.
            (None, None) => unsafe { self.inner.realloc(ptr, layout, new_size) },
            _ => {
                // SAFETY: a valid layout; the old block holds `layout.size()` bytes and the
                // new one `new_size`, and they are distinct blocks.
                let to = unsafe { self.alloc(new) };
                if !to.is_null() {
                    unsafe {
                        ptr::copy_nonoverlapping(ptr, to, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                to
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::System;
    use std::cell::Cell;

    /// System, counting what reaches it.
    #[derive(Default)]
    struct Counting {
        allocs: Cell<usize>,
        frees: Cell<usize>,
    }

    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            self.allocs.set(self.allocs.get() + 1);
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            self.frees.set(self.frees.get() + 1);
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[test]
    fn size_classes_are_powers_of_two_from_16_bytes_to_32_kib() {
        let l = |size, align| Layout::from_size_align(size, align).unwrap();
        assert_eq!(class(l(1, 1)), Some(0));
        assert_eq!(class(l(16, 8)), Some(0));
        assert_eq!(class(l(17, 4)), Some(1));
        assert_eq!(class(l(32, 16)), Some(1));
        assert_eq!(class(l(33, 1)), Some(2));
        assert_eq!(class(l(1 << 15, 8)), Some(CLASSES - 1));
        assert_eq!(class(l((1 << 15) + 1, 8)), None);
        assert_eq!(class(l(8, 32)), None);
        for c in 0..CLASSES {
            let layout = class_layout(c);
            assert_eq!(class(layout), Some(c), "a class's own blocks stay in it");
            assert_eq!(class(l(layout.size() / 2 + 1, 1)), Some(c));
        }
    }

    #[test]
    fn a_freed_block_is_taken_again_by_the_next_allocation_of_its_size() {
        let a = Recycling::new(Counting::default());
        let small = Layout::from_size_align(100, 8).unwrap();
        let same_class = Layout::from_size_align(120, 4).unwrap();
        unsafe {
            let p = a.alloc(small);
            a.dealloc(p, small);
            let q = a.alloc(same_class);
            assert_eq!(p, q, "the kept block comes back");
            a.dealloc(q, same_class);
            // The lists are last in, first out.
            let (x, y) = (a.alloc(small), a.alloc(small));
            assert_eq!(x, p);
            assert_ne!(y, p);
            a.dealloc(x, small);
            a.dealloc(y, small);
            assert_eq!(a.alloc(small), y);
        }
        assert_eq!(
            a.inner.allocs.get(),
            2,
            "only two blocks of that size ever live"
        );
        assert_eq!(
            a.inner.frees.get(),
            0,
            "small blocks are kept, not given back"
        );
        // Large blocks pass through.
        let large = Layout::from_size_align(1 << 16, 8).unwrap();
        unsafe {
            let p = a.alloc(large);
            a.dealloc(p, large);
        }
        assert_eq!((a.inner.allocs.get(), a.inner.frees.get()), (3, 1));
    }

    /// A block handed out, and the byte it was filled with.
    struct Live {
        ptr: *mut u8,
        layout: Layout,
        fill: u8,
    }

    fn check(b: &Live) {
        let bytes = unsafe { std::slice::from_raw_parts(b.ptr, b.layout.size()) };
        assert!(
            bytes.iter().all(|&x| x == b.fill),
            "a live block was overwritten"
        );
        assert_eq!(b.ptr as usize % b.layout.align(), 0, "misaligned");
    }

    #[test]
    fn random_allocations_frees_and_resizes_keep_every_live_block_intact() {
        let a = Recycling::new(System);
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut live: Vec<Live> = Vec::new();
        for step in 0..20_000u32 {
            let fill = step as u8;
            match next(4) {
                0 | 1 => {
                    // Mostly small sizes, some past the largest class.
                    let size = match next(10) {
                        0 => 40_000 + next(30_000) as usize,
                        _ => 1 + next(2_000) as usize,
                    };
                    let align = 1 << next(7);
                    let layout = Layout::from_size_align(size, align).unwrap();
                    let ptr = unsafe { a.alloc(layout) };
                    assert!(!ptr.is_null());
                    unsafe { ptr::write_bytes(ptr, fill, size) };
                    live.push(Live { ptr, layout, fill });
                }
                2 if !live.is_empty() => {
                    let b = live.swap_remove(next(live.len() as u64) as usize);
                    check(&b);
                    unsafe { a.dealloc(b.ptr, b.layout) };
                }
                3 if !live.is_empty() => {
                    let k = next(live.len() as u64) as usize;
                    let b = &mut live[k];
                    check(b);
                    let new_size = match next(3) {
                        0 => 1 + next(b.layout.size() as u64) as usize,
                        1 => b.layout.size() + next(500) as usize,
                        _ => 1 + next(50_000) as usize,
                    };
                    let ptr = unsafe { a.realloc(b.ptr, b.layout, new_size) };
                    assert!(!ptr.is_null());
                    let kept = b.layout.size().min(new_size);
                    let bytes = unsafe { std::slice::from_raw_parts(ptr, kept) };
                    assert!(
                        bytes.iter().all(|&x| x == b.fill),
                        "realloc lost the contents"
                    );
                    b.layout = Layout::from_size_align(new_size, b.layout.align()).unwrap();
                    b.ptr = ptr;
                    b.fill = fill;
                    unsafe { ptr::write_bytes(ptr, fill, new_size) };
                }
                _ => {}
            }
        }
        // No two live blocks overlap, and each still holds what was written last.
        let mut spans: Vec<(usize, usize)> = live
            .iter()
            .map(|b| (b.ptr as usize, b.ptr as usize + b.layout.size()))
            .collect();
        spans.sort();
        for w in spans.windows(2) {
            assert!(w[0].1 <= w[1].0, "two live blocks overlap");
        }
        for b in live.drain(..) {
            check(&b);
            unsafe { a.dealloc(b.ptr, b.layout) };
        }
    }
}
