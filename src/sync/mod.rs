//! # sync: the seam between the engine and its guard
//!
//! The engine's shared structures — the TVHT and the GVT buffer of seed 000 (Koenig,
//! Karamouzas and Guy, Sections 3 and 4) and the island graph of contact groups — are arrays of slots changed
//! only inside **critical sections**. A section names, up front, the keys (slot indices, e.g.
//! TVHT bucket ids) it will touch and then reads and writes just those slots. What makes the
//! section atomic is chosen by Cargo features (`DESIGN.md`, "The guard"):
//!
//! * `locks`: Koenig's Algorithm 1 — sort the keys, lock them all in ascending order for the
//!   whole section. Deadlock-free by ordering (Lemma 1, argued in [`table`]).
//! * `stm` (default): the section is one transaction of our TL2 STM (`timewarp-stm`, the design
//!   seed 004 also uses), retried on conflict.
//!
//! A build with one feature carries only that backend (`timewarp-stm` is an optional dependency
//! enabled by `stm`); a build with both picks one at run time per table with [`Backend`]
//! (`"stm".parse()`, `"locks".parse()`; naming a backend that is not compiled in is a
//! [`BackendError`]). Nothing else differs between the builds: the TVHT and GVT code above the
//! seam is the same, and so are its results, because a section behaves as if run alone.
//!
//! Because the STM may run a section several times, **a section closure must be safe to
//! re-run**: no effect outside its view; results are returned and acted on after the section
//! ends (see [`table`]). [`stats()`] counts sections, attempts and lock acquisitions for the run
//! summary, with the STM's commits and aborts alongside, in total and per [`Class`] of table
//! (TVHT, GVT buffer, contact groups), so that an abort ratio can be traced to its structure.

mod backend;
pub mod stats;
pub mod table;

pub use backend::{Backend, BackendError};
pub use stats::{ByClass, Class, ClassStats, SyncStats, stats};
pub use table::{Table, View};

/// **Test-only negative controls.** In a build with `RUSTFLAGS="--cfg loom --cfg
/// timewarp_broken"` (never a normal build), the environment variable `TIMEWARP_BROKEN` names
/// one deliberately broken guard, so that the loom models in `loom-tests/` can show they catch
/// it (`loom-tests/run-models.sh`): `unsorted_locks` (the lock backend locks keys in the given
/// order, not ascending: Lemma 1 no longer holds), `unguarded_tvht` (a TVHT write or delete
/// runs on copies read in one section and written back in another, outside any guard),
/// `gvt_commit_min_outside` (a GVT commit reads the least front in a section of its own, then
/// moves the clock to it in another without reading the fronts again),
/// `gvt_unrecord_trusts_word` (a GVT rollback checks the GVT word read before its section
/// instead of the clock in it), `gvt_commit_no_retry` (a GVT committer does not commit again
/// after raising the GVT word, the committer's half of the liveness handshake),
/// `record_before_ack` (a warp entity records ticks in the GVT buffer without waiting for the
/// acks of the events and antievents it sent at them: the resolve phase is skipped),
/// `unguarded_groups` (every operation on the warp engine's island graph runs on copies read in
/// one section and written back in another), `no_announcement_recheck` (the maker of announced
/// group changes does not look at the queue again after storing its next tick),
/// `unguarded_sections` (every section of every table, under either backend, runs on copies
/// read in one section and written back in another: the seam guards nothing as a whole),
/// `span_last_tick_unmet` (a TVHT span record meets nothing at its last tick, as if its swept
/// box left that tick out), `span_cut_spares_its_tick` (a cut of a span gives back its
/// contacts after the cut tick only, and keeps those at the tick), `span_ignores_marks` (a TVHT
/// span trusts the marks of entries it planned with, and does not look at them again in its
/// section), `sleep_ignores_marks` (the same for a nap's sleep records), `span_anchor_unheld`
/// (a TVHT span's write settles its anchor's holds as if no bucket took it),
/// `gvt_pop_keeps_key` (a GVT rollback pops a body's pieces without voiding their keys),
/// `gvt_ring_unchecked` (a GVT record reuses a body's anchor cell without asking whether the
/// commit still needs the position it held).
/// One build serves every control; each run breaks exactly one thing.
#[cfg(timewarp_broken)]
pub(crate) fn broken(name: &str) -> bool {
    const KNOWN: [&str; 16] = [
        "unsorted_locks",
        "unguarded_tvht",
        "gvt_commit_min_outside",
        "gvt_unrecord_trusts_word",
        "gvt_commit_no_retry",
        "record_before_ack",
        "unguarded_groups",
        "no_announcement_recheck",
        "unguarded_sections",
        "span_last_tick_unmet",
        "span_cut_spares_its_tick",
        "span_ignores_marks",
        "sleep_ignores_marks",
        "span_anchor_unheld",
        "gvt_pop_keeps_key",
        "gvt_ring_unchecked",
    ];
    assert!(KNOWN.contains(&name), "unknown broken variant {name}");
    match std::env::var("TIMEWARP_BROKEN") {
        Ok(v) if KNOWN.contains(&v.as_str()) => v == name,
        Ok(v) => panic!("TIMEWARP_BROKEN={v}: expected one of {KNOWN:?}"),
        Err(_) => false,
    }
}
