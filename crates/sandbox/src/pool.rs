//! The instance pool: wasmtime's pooling allocator, sized from the limits so that every call
//! has a whole slot of its own, and a semaphore so that no more calls run at once than there
//! are slots.
//!
//! Without a pool, every call maps a fresh linear memory (and its copy-on-write image) and
//! unmaps it afterwards; with two threads, each unmap makes the kernel flush the other core's
//! TLB. The pool maps its slots once, keeps each memory's image mapped between calls, and resets
//! only the pages a call dirtied, found with the kernel's `PAGEMAP_SCAN` where it has one
//! (benches/RESULTS.md has the figures) and the machine has no swap (see [`pagemap_scan`]).
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
        .pagemap_scan(pagemap_scan())
        .total_stacks(0);
    InstanceAllocationStrategy::Pooling(pool)
}

/// Whether the pool may find a call's dirty pages with `PAGEMAP_SCAN`: only where the kernel
/// cannot swap them out, that is where no swap area is in use (`/proc/swaps`).
///
/// wasmtime 48.0.8's scan asks for pages that are present, and a page the kernel has swapped
/// out is not: it is neither reset nor decommitted, and the next call given the slot reads
/// what the last one wrote there once the page is swapped back in — another transformer's
/// input, Secrets included (`a_call_never_reads_what_an_earlier_call_left_in_swap`).
/// wasmtime 48.0.11 scans for swapped pages too, but cannot be built (benches/RESULTS.md,
/// "Interpreted calls and wasmtime's reset"). Without the scan, the first
/// `KEEP_RESIDENT` bytes of a memory are written back whatever their state, which pages a
/// swapped page in, and the rest is decommitted, which drops it. A swap area turned on while
/// a sandbox lives is not seen; a machine that cannot say (no `/proc/swaps`) goes without.
fn pagemap_scan() -> Enabled {
    match std::fs::read_to_string("/proc/swaps") {
        Ok(swaps) if !swaps_in_use(&swaps) => Enabled::Auto,
        _ => Enabled::No,
    }
}

/// Whether `/proc/swaps` lists a swap area: it has a line of headings, then one per area.
fn swaps_in_use(swaps: &str) -> bool {
    swaps.lines().skip(1).any(|line| !line.trim().is_empty())
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
    fn the_scan_is_used_only_where_no_swap_area_is_listed() {
        let headings = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
        assert!(!swaps_in_use(headings));
        assert!(!swaps_in_use(""));
        assert!(swaps_in_use(&format!(
            "{headings}/var/tmp/swap                            file\t\t131068\t\t0\t\t-2\n"
        )));
        assert!(swaps_in_use(&format!(
            "{headings}/dev/zram0                              partition\t4194300\t\t0\t\t100\n"
        )));
    }

    /// A core module with a page of memory, `w(address, value)` and `r(address)`.
    const READ_WRITE: &[u8] = &[
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // header
        0x01, 0x0b, 0x02, 0x60, 0x02, 0x7f, 0x7f, 0x00, 0x60, 0x01, 0x7f, 0x01, 0x7f, // types
        0x03, 0x03, 0x02, 0x00, 0x01, // functions
        0x05, 0x03, 0x01, 0x00, 0x01, // one memory of one page
        0x07, 0x0d, 0x03, 0x01, 0x77, 0x00, 0x00, 0x01, 0x72, 0x00, 0x01, 0x01, 0x6d, 0x02,
        0x00, // exports w, r, m
        0x0a, 0x13, 0x02, 0x09, 0x00, 0x20, 0x00, 0x20, 0x01, 0x36, 0x02, 0x00, 0x0b, 0x07, 0x00,
        0x20, 0x00, 0x28, 0x02, 0x00, 0x0b, // i32.store, i32.load
    ];

    /// A swap area for the length of a test: the machine's own when it has one, else a file
    /// of 16 MiB turned on, and off again when dropped. `None` where neither can be had (not
    /// root, or a kernel that refuses).
    struct Swap(Option<(tempfile::TempDir, std::path::PathBuf)>);

    impl Swap {
        fn ensure() -> Option<Swap> {
            if swaps_in_use(&std::fs::read_to_string("/proc/swaps").ok()?) {
                return Some(Swap(None));
            }
            if !rustix::process::geteuid().is_root() {
                return None;
            }
            // Not on tmpfs, which cannot hold a swap file.
            let dir = tempfile::Builder::new()
                .prefix("opm-swap")
                .tempdir_in("/var/tmp")
                .ok()?;
            let file = dir.path().join("swap");
            {
                use std::io::Write as _;
                use std::os::unix::fs::OpenOptionsExt as _;
                let mut options = std::fs::OpenOptions::new();
                options.write(true).create_new(true).mode(0o600);
                options
                    .open(&file)
                    .and_then(|mut f| f.write_all(&vec![0; 16 << 20]))
                    .ok()?;
            }
            let run = |program: &str, file: &std::path::Path| {
                std::process::Command::new(program)
                    .arg(file)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|status| status.success())
            };
            let on = run("/usr/sbin/mkswap", &file) && run("/usr/sbin/swapon", &file);
            on.then(|| Swap(Some((dir, file))))
        }
    }

    impl Drop for Swap {
        fn drop(&mut self) {
            if let Some((_, file)) = &self.0 {
                let _ = std::process::Command::new("/usr/sbin/swapoff")
                    .arg(file)
                    .status();
            }
        }
    }

    /// Whether the page at `address` of this process is in swap (`/proc/self/pagemap`, bit 62).
    fn swapped(address: usize) -> bool {
        use std::os::unix::fs::FileExt as _;
        let page = rustix::param::page_size();
        let mut entry = [0; 8];
        std::fs::File::open("/proc/self/pagemap")
            .and_then(|pagemap| pagemap.read_exact_at(&mut entry, (address / page * 8) as u64))
            .unwrap();
        u64::from_le_bytes(entry) & (1 << 62) != 0
    }

    #[test]
    fn a_call_never_reads_what_an_earlier_call_left_in_swap() {
        let Some(_swap) = Swap::ensure() else {
            eprintln!("no swap area here, and none can be made (not root): nothing to check");
            return;
        };
        // On one CPU: a page just written waits in that CPU's batch of pages to be added to the
        // kernel's lists, and `MADV_PAGEOUT` drains only the batch of the CPU it runs on.
        let mut here = rustix::thread::CpuSet::new();
        here.set(rustix::thread::sched_getcpu());
        rustix::thread::sched_setaffinity(None, &here).expect("the test's thread on one CPU");
        // The pool a sandbox makes, with one slot: every call is given the same memory.
        let mut engine = crate::compiler::engine_config_for(crate::Compiler::Optimizing);
        engine.allocation_strategy(config(&Limits::default(), 1));
        let engine = wasmtime::Engine::new(&engine).unwrap();
        let module = wasmtime::Module::new(&engine, READ_WRITE).unwrap();
        const SECRET: i32 = 0x5ec7e7;
        for call in 0..3 {
            let mut store = wasmtime::Store::new(&engine, ());
            store.set_fuel(1_000_000).unwrap();
            store.set_epoch_deadline(1 << 40);
            let instance = wasmtime::Instance::new(&mut store, &module, &[]).unwrap();
            let read = instance
                .get_typed_func::<i32, i32>(&mut store, "r")
                .unwrap();
            let write = instance
                .get_typed_func::<(i32, i32), ()>(&mut store, "w")
                .unwrap();
            assert_eq!(
                read.call(&mut store, 8192).unwrap(),
                0,
                "call {call} read an earlier call's page"
            );
            write.call(&mut store, (8192, SECRET)).unwrap();
            // The kernel swaps the page out, as it may any page of a call under memory
            // pressure, before the call's instance is dropped and its slot reset.
            let memory = instance.get_memory(&mut store, "m").unwrap();
            let page = memory.data_ptr(&store).wrapping_add(8192);
            // Reclaim is best effort: asked again if the page was busy at the time.
            let out = (0..20).any(|_| {
                swap_out(page, rustix::param::page_size());
                swapped(page as usize) || {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    false
                }
            });
            assert!(out, "the page was not swapped out");
        }
    }

    fn swap_out(address: *mut u8, len: usize) {
        // SAFETY: `MADV_PAGEOUT` changes where the page's contents are kept, never what they
        // are, and the page is the live memory of the instance.
        unsafe { rustix::mm::madvise(address.cast(), len, rustix::mm::Advice::LinuxPageOut) }
            .expect("madvise(MADV_PAGEOUT)");
    }

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
