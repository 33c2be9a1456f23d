//! The allocator of the `timewarp` binary, and its one setting.
//!
//! The binary allocates with mimalloc (`src/main.rs` says why: the warp engine allocates on one
//! thread and frees on another all the time, and glibc's arenas serialise that). mimalloc gives
//! freed pages back to the operating system ("purges" them) a second after they fall empty, and
//! takes fresh ones when it needs room again; each fresh page is zeroed by the kernel on first
//! touch. The warp engine's working set is steady (states, TVHT runs and GVT records from the
//! GVT to the lead, reclaimed as the GVT moves on) but it churns: what one tick frees, the next
//! allocates. With the default delay, that churn went through the kernel: some runs spent a
//! third of their time zeroing pages (`clear_page_erms`; `parallel` 2000 over 1 s on one worker:
//! 0.3-0.6 s of system time in 1.2-1.7 s, on other runs 0.05 s), and the peak resident set
//! ratcheted up over a long run as purged pages were taken back while others waited out their
//! delay (`tests/warp_memory.rs`, bouncing 500: peak RSS +12.6% from 20 s to 120 s while the
//! heap the program held stayed at 26-27 MiB).
//!
//! So [`configure`] tells mimalloc never to purge during the run: the resident set is then the
//! allocator's high-water mark, reached early and held (bouncing 500 over 60 s: +2.6% from 20 s
//! to the end, against +11.6% with the default delay and +4.9% with immediate purges, which cost
//! 5-10% of the time in system calls and faults). `MIMALLOC_PURGE_DELAY` in the environment
//! still wins (mimalloc's own option), for comparisons.
//!
//! Transparent huge pages are left as mimalloc has them (asked for, where the kernel's
//! `transparent_hugepage` is `madvise` or `always`). `MIMALLOC_ALLOW_THP=0` turns them off for
//! the process; it must be in the environment, since mimalloc reads it when it starts, before
//! `main`. Measured on the 2-core VM (2026-11-27, 2 workers, medians of 5): a third less peak
//! RSS (`bouncing` 500 over 120 s: 49-52 MiB against 72-80), 1-5% more wall time, and no run
//! that spends 0.15-0.35 s more in the kernel's huge-page faults.
//!
//! [`Allocator`] is the global allocator itself: mimalloc, asked the way the standard library
//! asks the system's `malloc`. The `mimalloc` crate's own wrapper passes every request to
//! `mi_malloc_aligned`, which in mimalloc v3 takes its fast path only for blocks of at most
//! 1 KiB whose page has a free block at hand; any other request goes the generic way, and a size
//! that is not a power of two is over-allocated by the alignment and aligned by hand, even at an
//! alignment of 8, which every block has anyway. The STM copies a bucket (and its lists, often
//! over a kilobyte) for every bucket a section changes, so the warp engine met that path tens of
//! thousands of times a simulated second (`docs/results.md`, "2026-11-30"). [`Allocator`] asks
//! plain `mi_malloc` for every layout whose alignment mimalloc gives every block of its size
//! (as `std`'s `System` does with `malloc`), and the aligned calls for the rest.

// The symbols below are mimalloc's, linked through the `mimalloc` crate.
extern crate mimalloc as _;

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::{c_int, c_long, c_void};

/// The alignment of every block `mi_malloc` returns of at least this many bytes
/// (`MI_MAX_ALIGN_SIZE`, 16 on 64-bit targets: mimalloc asserts it of every block it hands
/// out, `_mi_page_malloc_zero`); a smaller block is a word or two, aligned to 8 at least, so
/// an alignment of at most the size (which [`plain`] asks too) is met.
const MALLOC_ALIGN: usize = 16;

/// mimalloc as the global allocator (see the module documentation): the `timewarp` binary's
/// and `peer/`'s.
pub struct Allocator;

/// Whether plain `mi_malloc` of `size` bytes is aligned enough for `align`.
#[inline]
fn plain(align: usize, size: usize) -> bool {
    align <= MALLOC_ALIGN && align <= size
}

// SAFETY: each call returns what mimalloc returns for it: `mi_malloc`, `mi_zalloc` and
// `mi_realloc` where `plain` says their blocks have the layout's alignment (see
// `MALLOC_ALIGN`), the `mimalloc` crate's aligned calls otherwise; every block is freed by
// `mi_free`, which takes any block mimalloc made, however it was asked for. A null return is
// passed on as the allocation failure it is.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain(layout.align(), layout.size()) {
            // SAFETY: `mi_malloc` takes any size.
            unsafe { mi_malloc(layout.size()).cast() }
        } else {
            // SAFETY: the caller's layout, as `GlobalAlloc::alloc` has it.
            unsafe { mimalloc::MiMalloc.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain(layout.align(), layout.size()) {
            // SAFETY: `mi_zalloc` takes any size.
            unsafe { mi_zalloc(layout.size()).cast() }
        } else {
            // SAFETY: as in `alloc`.
            unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _: Layout) {
        // SAFETY: `ptr` is a live block of this allocator, so of mimalloc.
        unsafe { mi_free(ptr.cast()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if plain(layout.align(), new_size) {
            // SAFETY: `ptr` is a live block of mimalloc; the new block keeps its first
            // `min(size, new_size)` bytes, as `GlobalAlloc::realloc` asks.
            unsafe { mi_realloc(ptr.cast(), new_size).cast() }
        } else {
            // SAFETY: the caller's arguments, as `GlobalAlloc::realloc` has them.
            unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
        }
    }
}

/// `mi_option_purge_delay` in the `mi_option_e` enumeration of the mimalloc sources that
/// `libmimalloc-sys` 0.1.49 builds (v3, `include/mimalloc.h`); the crate's bindings stop short
/// of it. Its default is 1000 (ms; the header's comment says 10, its `options.c` sets 1000); -1
/// never purges. `Cargo.lock` pins the version, and a test
/// checks the default.
const PURGE_DELAY: c_int = 15;

unsafe extern "C" {
    fn mi_option_get(option: c_int) -> c_long;
    fn mi_option_set(option: c_int, value: c_long);
    fn mi_malloc(size: usize) -> *mut c_void;
    fn mi_zalloc(size: usize) -> *mut c_void;
    fn mi_realloc(p: *mut c_void, size: usize) -> *mut c_void;
    fn mi_free(p: *mut c_void);
}

/// Applies the binary's allocator settings (see the module documentation): call it first
/// thing, before the engine allocates. Does nothing if `MIMALLOC_PURGE_DELAY` is set.
pub fn configure() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: `mi_option_set` only stores an integer in mimalloc's option table (any
        // thread, any time); `PURGE_DELAY` is a valid option index of the linked mimalloc,
        // and -1 a documented value of it.
        unsafe { mi_option_set(PURGE_DELAY, -1) };
    }
}

/// mimalloc's purge delay now, in ms (-1: never).
pub fn purge_delay() -> i64 {
    // SAFETY: `mi_option_get` only reads mimalloc's option table; the index is valid.
    unsafe { mi_option_get(PURGE_DELAY) as i64 }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The option index is the purge delay's: before `configure` it holds mimalloc's
    /// default, 1000 ms (or what the environment sets), and after it -1 (or still
    /// what the environment sets).
    #[test]
    fn configure_turns_purging_off() {
        let env: Option<i64> = std::env::var("MIMALLOC_PURGE_DELAY")
            .ok()
            .map(|v| v.trim().parse().expect("a number of ms"));
        assert_eq!(purge_delay(), env.unwrap_or(1000), "option {PURGE_DELAY}");
        configure();
        assert_eq!(purge_delay(), env.unwrap_or(-1));
    }
}
