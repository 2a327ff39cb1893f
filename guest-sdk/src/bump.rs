//! The guest's allocator: a bump allocator that never gives memory back.
//!
//! The host runs every transform call in a fresh instance and throws it away afterwards, so
//! nothing a call frees would ever be reused by another call. Allocating is then a pointer
//! bump; freeing does nothing except give back the most recent allocation (so a `Vec` or
//! `String` that grows as it is built is usually extended in place). The heap grows linear
//! memory in chunks of [`CHUNK_PAGES`]; the memory limit of the call still applies, and an
//! allocation it refuses fails as any other would.
//!
//! A transformer whose crate defines its own `#[global_allocator]` turns this one off with
//! `default-features = false` on `opm-guest`.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

/// Bytes of a WebAssembly page.
const PAGE: usize = 64 * 1024;

/// Pages the heap grows by at least: 1 MiB, so a typical call grows memory once or twice.
const CHUNK_PAGES: usize = 16;

/// The heap: the next free address and the end of the memory the heap has grown into.
pub struct Bump {
    next: Cell<usize>,
    end: Cell<usize>,
}

// SAFETY: a transformer instance runs on one thread (wasm32 without the threads proposal, which
// the host refuses), so the cells are never accessed concurrently.
unsafe impl Sync for Bump {}

impl Bump {
    /// An empty heap; the first allocation grows memory.
    pub const fn new() -> Self {
        Self {
            next: Cell::new(0),
            end: Cell::new(0),
        }
    }

    /// Grows memory by enough pages for `size` bytes at `align` and makes that the heap.
    fn grow(&self, size: usize, align: usize) -> bool {
        let Some(needed) = size.checked_add(align) else {
            return false;
        };
        let pages = needed.div_ceil(PAGE).max(CHUNK_PAGES);
        let previous = core::arch::wasm32::memory_grow(0, pages);
        if previous == usize::MAX {
            return false;
        }
        let start = previous * PAGE;
        // Memory grown by someone else in between leaves a gap; the heap starts afresh.
        if start != self.end.get() {
            self.next.set(start);
        }
        self.end.set(start + pages * PAGE);
        true
    }
}

impl Default for Bump {
    fn default() -> Self {
        Self::new()
    }
}

unsafe impl GlobalAlloc for Bump {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let align = layout.align();
        let size = layout.size();
        let fits = |next: usize| {
            next.checked_next_multiple_of(align)
                .and_then(|start| Some((start, start.checked_add(size)?)))
                .filter(|(_, end)| *end <= self.end.get())
        };
        let found = fits(self.next.get()).or_else(|| {
            self.grow(size, align)
                .then(|| fits(self.next.get()))
                .flatten()
        });
        match found {
            Some((start, end)) => {
                self.next.set(end);
                start as *mut u8
            }
            None => core::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Only the latest allocation can be given back.
        if ptr as usize + layout.size() == self.next.get() {
            self.next.set(ptr as usize);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let start = ptr as usize;
        // The latest allocation grows or shrinks in place when the heap has room.
        if start + layout.size() == self.next.get()
            && start
                .checked_add(new_size)
                .is_some_and(|end| end <= self.end.get())
        {
            self.next.set(start + new_size);
            return ptr;
        }
        if new_size <= layout.size() {
            return ptr;
        }
        // SAFETY: the layout of the new block is valid: `layout`'s alignment, and a size the
        // caller guarantees does not overflow when rounded to it.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as for any allocation.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are valid for `layout.size()` bytes and do not overlap (the new
            // one lies past the end of every earlier allocation).
            unsafe { core::ptr::copy_nonoverlapping(ptr, new, layout.size()) };
        }
        new
    }
}
