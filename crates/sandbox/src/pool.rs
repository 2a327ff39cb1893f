//! The instance pool: wasmtime's pooling allocator, sized from the limits so that every call
//! has a whole slot of its own, and a semaphore so that no more calls run at once than there
//! are slots.
//!
//! Without a pool, every call maps a fresh linear memory (and its copy-on-write image) and
//! unmaps it afterwards; with two threads, each unmap makes the kernel flush the other core's
//! TLB. The pool maps its slots once, keeps each memory's image mapped between calls, and resets
//! only the pages a call dirtied, found with the kernel's `PAGEMAP_SCAN` where it has one
//! (benches/RESULTS.md has the figures).
//!
//! A slot is everything one call may take at its limits: one component instance, up to
//! `limits.instances` core instances, [`MEMORIES_PER_CALL`] memories of up to `limits.memory`
//! bytes each (the limiter holds their total to `limits.memory`), and [`TABLES_PER_CALL`] tables
//! of up to `limits.table_elements` elements each. A component that needs more than a slot holds
//! is refused when it is compiled, naming what it needs. The pool holds at least
//! [`SHARDED_FROM`] memories, so that each thread's calls reuse memories of their own.

use std::sync::{Condvar, Mutex, PoisonError};

use wasmtime::{Enabled, InstanceAllocationStrategy, PoolingAllocationConfig};

use opm_core::calls::limits::{Limits, MIB};

/// Memories one call's instances may define, all together.
pub(super) const MEMORIES_PER_CALL: u32 = 16;

/// Tables one call's instances may define, all together.
pub(super) const TABLES_PER_CALL: u32 = 64;

/// The largest memory of a call: wasmtime reserves 4 GiB of address space per memory, which
/// also bounds every 32-bit memory.
const LARGEST_MEMORY: u64 = 4 << 30;

/// The fewest memories from which wasmtime's pool splits its memory slots into shards, one per
/// core, and gives each thread a shard of its own. With fewer, every thread takes slots from one
/// list, and a call often gets a memory last used (and reset) on the other core, its pages cold
/// in this core's cache: two threads sharing a sandbox took 14 % longer over their calls than
/// two with a sandbox each, most of it in the guests' own code (`opm-scaling`,
/// benches/RESULTS.md). Only address space is reserved for a slot until a call uses it.
const SHARDED_FROM: u32 = 128;

/// What each memory keeps mapped after a call and resets by writing rather than by asking the
/// kernel: a Rust guest's 1 MiB stack and its heap fit, so most calls make no system call to
/// reset their memory.
const KEEP_RESIDENT: usize = 4 * MIB as usize;

/// The most memory any call of a sandbox made with `limits` may have.
pub(super) fn memory_ceiling(limits: &Limits) -> u64 {
    limits.memory.min(LARGEST_MEMORY)
}

/// The pooling allocator for `slots` calls at once under `limits`.
pub(super) fn config(limits: &Limits, slots: usize) -> InstanceAllocationStrategy {
    let slots = u32::try_from(slots).unwrap_or(u32::MAX);
    let instances = u32::try_from(limits.instances).unwrap_or(u32::MAX);
    let table_elements = usize::try_from(limits.table_elements).unwrap_or(usize::MAX);
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(slots)
        .max_core_instances_per_component(instances)
        .total_core_instances(slots.saturating_mul(instances))
        .max_memories_per_component(MEMORIES_PER_CALL)
        .max_memories_per_module(MEMORIES_PER_CALL)
        .total_memories(slots.saturating_mul(MEMORIES_PER_CALL).max(SHARDED_FROM))
        .max_memory_size(usize::try_from(memory_ceiling(limits)).unwrap_or(usize::MAX))
        .max_tables_per_component(TABLES_PER_CALL)
        .max_tables_per_module(TABLES_PER_CALL)
        .total_tables(slots.saturating_mul(TABLES_PER_CALL))
        .table_elements(table_elements)
        .linear_memory_keep_resident(KEEP_RESIDENT)
        .table_keep_resident(KEEP_RESIDENT)
        .pagemap_scan(Enabled::Auto)
        .total_stacks(0);
    InstanceAllocationStrategy::Pooling(pool)
}

/// A counting semaphore over the pool's slots.
#[derive(Debug)]
pub(super) struct Slots {
    /// The free slots, and how many calls wait for one.
    free: Mutex<(usize, usize)>,
    freed: Condvar,
}

/// A slot taken by one call, given back when dropped.
pub(super) struct Slot<'a>(&'a Slots);

impl Slots {
    pub(super) fn new(count: usize) -> Self {
        Self {
            free: Mutex::new((count, 0)),
            freed: Condvar::new(),
        }
    }

    /// Waits for a free slot and takes it.
    pub(super) fn acquire(&self) -> Slot<'_> {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        while free.0 == 0 {
            free.1 += 1;
            free = self
                .freed
                .wait(free)
                .unwrap_or_else(PoisonError::into_inner);
            free.1 -= 1;
        }
        free.0 -= 1;
        Slot(self)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut free = self.0.free.lock().unwrap_or_else(PoisonError::into_inner);
        free.0 += 1;
        // Waking is a system call even when no one waits; a render's calls seldom do (there
        // are as many slots as render threads), so only a waiter is woken.
        if free.1 > 0 {
            self.0.freed.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_given_back() {
        let slots = Slots::new(2);
        let a = slots.acquire();
        let b = slots.acquire();
        drop(a);
        let _c = slots.acquire();
        drop(b);
        let _d = slots.acquire();
        assert_eq!(*slots.free.lock().unwrap(), (0, 0));
    }

    #[test]
    fn a_call_waiting_for_a_slot_gets_the_one_given_back() {
        let slots = Slots::new(1);
        let held = slots.acquire();
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| drop(slots.acquire()));
            while slots.free.lock().unwrap().1 == 0 {
                std::thread::yield_now();
            }
            drop(held);
            waiter.join().unwrap();
        });
        assert_eq!(*slots.free.lock().unwrap(), (1, 0));
    }
}
