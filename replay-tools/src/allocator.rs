//! The bulk tools' allocator: mimalloc, keeping the memory it frees.
//!
//! The bulk tools allocate and free millions of small objects across threads (a simulated
//! event is built on the simulation's thread and freed on the writer's once committed; a batch
//! of decoded events on the reader's and freed on the applier's): mimalloc's per-thread free
//! lists take that without the system allocator's arena locking, consolidation and heap trimming
//! (a fifth of `generate`'s CPU time with it).
//!
//! By default mimalloc gives freed pages back to the system a second after they are freed, and the
//! next batch's allocations fault them in again, each page zeroed by the kernel: a sixth of a
//! rebuild's CPU time (BENCHMARKS.md). `rebuild` and `generate` keep what they freed instead
//! (their resident memory stays at its peak until they exit); `verify`, whose memory is
//! bounded, gives it back as usual.

use std::ffi::c_long;

use libmimalloc_sys::{mi_option_get, mi_option_set, mi_option_t};

/// The allocator of `agentlog-replay`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_e` of the bundled mimalloc 3;
/// libmimalloc-sys names only the older options). Milliseconds; -1: never purge.
const PURGE_DELAY: mi_option_t = 15;

/// mimalloc's default purge delay, milliseconds (`MIMALLOC_PURGE_DELAY`; 1,000 in mimalloc 3).
const DEFAULT_PURGE_DELAY: c_long = 1_000;

/// Keep freed memory for reuse rather than returning it to the system, unless the user set
/// `MIMALLOC_PURGE_DELAY` (mimalloc reads it itself). For the bulk loads.
pub fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: setting an option is thread-safe in mimalloc; only the purge delay changes.
    unsafe {
        // Another value there is another option (a mimalloc that moved it): left alone.
        if mi_option_get(PURGE_DELAY) == DEFAULT_PURGE_DELAY {
            mi_option_set(PURGE_DELAY, -1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_set_is_the_purge_delay() {
        // The default purge delay is where the constant points: another option there would
        // have another default (libmimalloc-sys upgraded to a mimalloc that moved it).
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(unsafe { mi_option_get(PURGE_DELAY) }, DEFAULT_PURGE_DELAY);
        }
        keep_freed_memory();
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(unsafe { mi_option_get(PURGE_DELAY) }, -1);
        }
    }
}
