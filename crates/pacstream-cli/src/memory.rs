//! The process's page-size policy.
//!
//! The allocator (mimalloc, `src/main.rs`) asks Linux for transparent huge pages (2 MiB) on
//! the regions it maps. A huge page is zeroed whole the first time any byte of it is
//! touched, and with the kernel's `defrag = madvise` setting a fault on such a region may
//! first compact memory to find 2 MiB free. Long runs that stream through large buffers
//! gain from the fewer TLB misses; a batch fit in a fresh process mostly pays for them:
//! every buffer it allocates (the centred copy of the data, labels, bounds, each restart's
//! state) is new memory.

/// Asks the kernel for no transparent huge pages in this process from now on (its own
/// pages, the allocator's regions included; what is already mapped keeps its pages).
/// Best effort: where the kernel refuses, or off Linux, nothing changes.
///
/// Used by every batch k-means fit, where it was measured (docs/benchmarks.md, k-means,
/// "batch k-means on small pages"): fits alternated with huge-page builds in fresh
/// processes took 19 ms instead of 34 ms at the median on 100,000 × 10 points and 132 ms
/// instead of 200 ms on 1,000,000 × 2, with the same centres; on the 0.9 MiB digits set the
/// medians were even (20.2 / 21.0 ms against 20.6 / 22.4 in two rounds of fifteen) but the
/// slowest huge-page runs took 187–217 ms, up to 90 % of it in the kernel zeroing pages,
/// against at most 26 ms on small pages. The streaming and scale-out commands keep huge
/// pages.
pub fn prefer_small_pages() {
    #[cfg(target_os = "linux")]
    {
        // Refused only by kernels older than 3.15; the fit is the same either way.
        let _ = rustix::thread::disable_transparent_huge_pages(true);
    }
}
