//! # Buckets and runs: what the table holds
//!
//! A bucket (seed 000, Section 4) holds what the (cell, slice) pairs hashed to it hold: the
//! entries of bodies whose boxes cover those cells at those ticks, and the **contact records**
//! owned by those cells (see "Exactly once" in the module documentation of `tvht`). In the
//! table's second half, the *record half*, a bucket holds the records of the cells hashed to
//! it: sleep records and their contacts with awake entries (`sleep.rs`), span records and the
//! contacts of spans its cells own (`span.rs`).
//!
//! An entry is stored in the bucket of every cell its box covers (3.4 cells on average with
//! the default cell size), and a bucket holds a whole time slice of every body in its cells,
//! so copying each entry into each of its buckets, tick after tick, would copy the same
//! 128-byte entry several times per tick (and the STM copies every bucket a section changes).
//! So a write request's entries are made once, before its section: each body's entries at
//! consecutive ticks (up to [`RUN_TICKS`]) go into one shared, immutable allocation, a
//! **run**; a bucket holds a run as its start tick and a 64-bit mask of the ticks whose
//! entries it holds (those whose cells hash to it), not as copies. A write looks at a bucket's
//! runs, about as many as the bodies in its cells rather than a slice's ticks times that; a
//! delete clears a tick's bit; a sweep clears the bits behind the floor and drops the runs left
//! empty. Logically a bucket holds the same entries as if it held copies, and `validate` checks
//! it. A run also names its writer and keeps a box around its entries' boxes, so that a write
//! can pass over, at once, the runs it cannot meet (`write.rs`). When its allocation is freed
//! is `runs.rs`'s subject.
//!
//! Invariants of a bucket: each run of it is there once, holds at least one entry
//! (`present != 0`), and at most [`RUN_TICKS`]; entry `i` of a run is at tick `first + i`, of
//! the run's body and writer, inside its `bounds`; a run's entries never change after it is
//! made. A body has at most one entry per tick in a bucket.

use super::runs::{HeldRef, Look, NewRun, RunRef};
use super::sleep::{SleepContact, SleepRec};
use super::span::SpanRec;
use super::{BodyId, Contact, EntityId, Tick, TvhtEntry};
use crate::geometry::Aabb;

/// A contact record, kept in the owner cell's bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct ContactRec {
    pub(super) tick: Tick,
    pub(super) a: BodyId,
    pub(super) b: BodyId,
}

/// A run: entries of one body written by one section at consecutive ticks, as one bucket
/// holds them (see the module documentation). The entries themselves live in
/// `entries`, shared by the run's copies in every bucket its ticks' cells hash to: entry `i`
/// is at tick `first + i`, and this bucket holds it iff bit `i` of `present` is set.
#[derive(Clone, Debug)]
pub(super) struct Run {
    /// The writer of every entry of the run (so a write skips its own runs without reading
    /// an entry).
    pub(super) entity: EntityId,
    /// A box around every entry's box (so a write whose boxes are all clear of it skips the
    /// run, see `write.rs`).
    pub(super) bounds: Aabb,
    pub(super) body: BodyId,
    pub(super) first: Tick,
    pub(super) present: u64,
    pub(super) entries: RunRef,
}

impl Run {
    /// Whether this bucket holds the run's entry at `tick`.
    #[inline]
    pub(super) fn has(&self, tick: Tick) -> bool {
        let i = tick.wrapping_sub(self.first);
        i < RUN_TICKS && self.present >> i & 1 == 1
    }

    /// The entry at `tick`, if this bucket holds it.
    #[inline]
    pub(super) fn at<'g>(&self, tick: Tick, look: &'g Look) -> Option<&'g TvhtEntry> {
        self.has(tick)
            .then(|| &self.entries.entries(look)[tick.wrapping_sub(self.first) as usize])
    }

    /// The entries this bucket holds, in tick order.
    pub(super) fn iter<'g>(&self, look: &'g Look) -> impl Iterator<Item = &'g TvhtEntry> + use<'g> {
        let entries = self.entries.entries(look);
        bits(self.present).map(move |i| &entries[i])
    }

    /// The bits of `present` at ticks `from ..= to`.
    #[inline]
    pub(super) fn present_within(&self, from: Tick, to: Tick) -> u64 {
        let Some(hi) = to.checked_sub(self.first) else {
            return 0;
        };
        let lo = from.saturating_sub(self.first);
        if lo >= RUN_TICKS || lo > hi {
            return 0;
        }
        let upto = if hi >= RUN_TICKS - 1 {
            !0
        } else {
            (2u64 << hi) - 1
        };
        self.present & upto & (!0u64 << lo)
    }

    /// The indices of the entries held at ticks `from ..= to`, in tick order.
    fn held_within(&self, from: Tick, to: Tick) -> impl Iterator<Item = usize> + use<> {
        bits(self.present_within(from, to))
    }
}

/// The indices of the set bits of `mask`, lowest first.
pub(super) fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let i = mask.trailing_zeros();
            mask &= mask - 1;
            i as usize
        })
    })
}

/// Ticks per run at most: one bit each in [`Run::present`].
pub(super) const RUN_TICKS: u64 = 64;

/// One bucket: entries (in runs) and contact records of the (cell, tick)s hashed to it; or,
/// in the sleep half of the table, the sleep records of the cells hashed to it and their
/// contacts.
#[derive(Debug, Default)]
pub(super) struct Bucket {
    pub(super) runs: Vec<Run>,
    pub(super) contacts: Vec<ContactRec>,
    pub(super) records: Vec<SleepRec>,
    pub(super) woken: Vec<SleepContact>,
    /// In the record half: the span records of the cells hashed to it (`span.rs`), and the
    /// contacts of spans it owns.
    pub(super) spans: Vec<SpanRec>,
    pub(super) met: Vec<Contact>,
    /// In the record half: one more than the latest time slice at which an entry was
    /// written in a cell hashed here (0: none yet). Raised by the entry writes, in their
    /// section (which names this bucket anyway, to meet the records); never lowered. A span
    /// looks at the buckets of entries of these cells only at slices below it (see "Marks"
    /// in `span.rs`).
    pub(super) marks: Tick,
}

/// A copy of `v` with room for a few more: a section copies a bucket to change it (under the
/// STM, `View::get_mut`), and the change almost always pushes; a copy of exactly its length
/// would grow (allocate again and move everything) at the first push. An empty list stays
/// unallocated (most lists of most buckets are empty).
fn roomy<T: Clone>(v: &[T]) -> Vec<T> {
    if v.is_empty() {
        return Vec::new();
    }
    let mut c = Vec::with_capacity(v.len() + 2);
    c.extend_from_slice(v);
    c
}

impl Clone for Bucket {
    fn clone(&self) -> Bucket {
        Bucket {
            runs: roomy(&self.runs),
            contacts: roomy(&self.contacts),
            records: roomy(&self.records),
            woken: roomy(&self.woken),
            spans: roomy(&self.spans),
            met: roomy(&self.met),
            marks: self.marks,
        }
    }
}

impl Bucket {
    /// The record of `body` covering `tick`, if any.
    pub(super) fn record(&self, body: BodyId, tick: Tick) -> Option<&SleepRec> {
        self.records
            .iter()
            .find(|r| r.body == body && r.covers(tick))
    }

    /// The first tick of `from..=to` that a sleep record of `body` covers (the first such
    /// record's), or else a span of it, if any: a request for those ticks duplicates it.
    pub(super) fn recorded(&self, body: BodyId, from: Tick, to: Tick) -> Option<Tick> {
        let dup = |b: BodyId, f: Tick, u: Tick| duplicated(body, (from, to), b, (f, u));
        self.records
            .iter()
            .find_map(|r| dup(r.body, r.from, r.until))
            .or_else(|| self.spans.iter().find_map(|s| dup(s.body, s.from, s.until)))
    }

    /// The entry of `body` at `tick`, if any.
    pub(super) fn find<'g>(
        &self,
        body: BodyId,
        tick: Tick,
        look: &'g Look,
    ) -> Option<&'g TvhtEntry> {
        self.runs
            .iter()
            .filter(|r| r.body == body)
            .find_map(|r| r.at(tick, look))
    }

    /// The entries at ticks `from ..= to`.
    pub(super) fn within<'g>(
        &self,
        from: Tick,
        to: Tick,
        look: &'g Look,
    ) -> impl Iterator<Item = &'g TvhtEntry> {
        self.runs.iter().flat_map(move |r| {
            let entries = r.entries.entries(look);
            r.held_within(from, to).map(move |i| &entries[i])
        })
    }

    /// The entries [`Bucket::within`] ticks `from ..= to` of the runs of other entities than
    /// `entity` whose bounds overlap `b` (the others cannot meet a box inside `b`).
    pub(super) fn near<'g>(
        &self,
        (from, to): (Tick, Tick),
        entity: EntityId,
        b: &'g Aabb,
        look: &'g Look,
    ) -> impl Iterator<Item = &'g TvhtEntry> {
        self.runs
            .iter()
            .filter(move |r| r.entity != entity && r.bounds.overlaps(b))
            .flat_map(move |r| {
                let entries = r.entries.entries(look);
                r.held_within(from, to).map(move |i| &entries[i])
            })
    }

    /// The (tick, body) of every entry held of the bodies `bodies.0 ..= bodies.1` at ticks
    /// `from ..= to`, from the runs alone (without reading the entries: a cheap check for
    /// entries already there).
    pub(super) fn held(
        &self,
        (from, to): (Tick, Tick),
        bodies: (BodyId, BodyId),
    ) -> impl Iterator<Item = (Tick, BodyId)> + '_ {
        self.runs
            .iter()
            .filter(move |r| bodies.0 <= r.body && r.body <= bodies.1)
            .flat_map(move |r| {
                r.held_within(from, to)
                    .map(|i| (r.first + i as Tick, r.body))
            })
    }

    /// Every entry held.
    pub(super) fn entries<'g>(&self, look: &'g Look) -> impl Iterator<Item = &'g TvhtEntry> {
        self.runs.iter().flat_map(move |r| r.iter(look))
    }

    /// How many entries are held.
    pub(super) fn len(&self) -> usize {
        self.runs
            .iter()
            .map(|r| r.present.count_ones() as usize)
            .sum()
    }

    /// Holds the entries of `run` (a run of the request, whose [`Run::bounds`] are `bounds`)
    /// whose bits are set in `mask`: sets them in the bucket's copy of the run, adding the run
    /// if this bucket has none yet (then returns true: a new hold, one of those the request
    /// reserved). The section adds its runs last, so they are looked for from the end.
    pub(super) fn hold(&mut self, run: &NewRun, bounds: Aabb, mask: u64) -> bool {
        if let Some(r) = self.runs.iter_mut().rev().find(|r| run.is(&r.entries)) {
            r.present |= mask;
            false
        } else {
            let first = &run.entries()[0];
            self.runs.push(Run {
                entity: first.entity,
                bounds,
                body: first.body,
                first: first.tick,
                present: mask,
                entries: run.share(),
            });
            true
        }
    }

    /// Lets go of the entry of `body` at `tick` (which it holds); a run left empty goes to
    /// `dropped`.
    pub(super) fn release(&mut self, body: BodyId, tick: Tick, dropped: &mut Vec<RunRef>) {
        if let Some(j) = self.runs.iter().position(|r| r.body == body && r.has(tick)) {
            let r = &mut self.runs[j];
            r.present &= !(1 << (tick - r.first));
            if r.present == 0 {
                dropped.push(self.runs.swap_remove(j).entries);
            }
        }
    }
}

/// How many times each of the pointers `held` (a run's or an anchor's, one per bucket that holds
/// it) comes: the holds each should count (the keys are clones of the buckets' pointers: no
/// holds).
pub(super) fn holders<'a, T: 'a>(
    held: impl Iterator<Item = &'a HeldRef<T>>,
) -> std::collections::HashMap<HeldRef<T>, usize> {
    let mut n = std::collections::HashMap::new();
    for r in held {
        *n.entry(r.clone()).or_default() += 1;
    }
    n
}

/// Whether a record held over ticks `f..u` lives at some tick of a request's `from..=to`.
#[inline]
pub(super) fn lives_at((f, u): (Tick, Tick), (from, to): (Tick, Tick)) -> bool {
    f <= to && u > from
}

/// The rule of duplicates in the record half: a record of body `b` held over ticks `f..u`
/// duplicates a request of `body` for ticks `from..=to` if it is the same body's and lives at
/// one of those ticks; the first such tick, if so ([`Bucket::recorded`], and a span's write,
/// which asks it of each record it passes).
#[inline]
pub(super) fn duplicated(
    body: BodyId,
    req: (Tick, Tick),
    b: BodyId,
    held: (Tick, Tick),
) -> Option<Tick> {
    (b == body && lives_at(held, req)).then(|| held.0.max(req.0))
}
