//! # Reclamation: the floor, the ledger and the sweeps
//!
//! Entries and contacts before GVT are final and never read again: "states prior to GVT can
//! be safely deleted" (seed 000, Koenig, Karamouzas and Guy, Section 3 and its Figure 2; GVT
//! is "the primary mechanism for garbage collection"). The table has a **floor**, raised by
//! the engine as GVT advances and never lowered; writes below it are refused, and everything
//! below it may be reclaimed.
//!
//! Every write and every nap notes the buckets it changed in a **ledger**, under the time
//! slice of the newest tick it put there; [`Tvht::prune_touched`] raises the floor and sweeps
//! the buckets noted under each slice that the floor has wholly passed, so everything old is
//! swept about one slice after it falls behind, and only buckets that hold something are
//! looked at. [`Tvht::prune_step`] instead sweeps the whole table round robin (a few buckets
//! per call, most of them empty), and [`Tvht::prune_before`] all of it at once (tests and the
//! end of a run). Writes also drop what is below the floor from the buckets they change. So
//! the table holds about as many ticks of entries as entities run ahead, and its memory stays
//! flat over a long run: a swept bucket also gives back the room its vectors no longer need
//! ([`shrink`]), or every bucket would in time keep the room of the most crowded cell ever
//! hashed to it.
//!
//! Invariants: a sweep removes only what is below the floor (so nothing at or after GVT);
//! each bucket is swept in a section of its own, and the runs it drops are let go of after
//! that section commits; no entry is older than the floor of the last full sweep.

use super::bucket::Bucket;
use super::runs::{Dropped, HeldRef};
use super::{EntityId, Tick, Tvht};
use crate::primitive::Ordering;

/// The ledger (see the module documentation): a ring of this many slices, each in this many shards
/// (a writer notes in the shard of its entity, so writers rarely share a lock).
pub(super) const LEDGER_RING: usize = 32;
pub(super) const LEDGER_SHARDS: usize = 8;

/// One list of the ledger: (slice, bucket) notes.
pub(super) type Notes = Vec<(Tick, usize)>;

/// Gives back a vector's room beyond half again its length (and a little), and all of it when it
/// is empty: amortised, since it runs only when old entries are swept out. (An emptied bucket
/// that kept a little room would keep it until its cell is visited again; over a run that
/// crosses many cells, every bucket would.)
fn shrink<T>(v: &mut Vec<T>) {
    if v.is_empty() {
        *v = Vec::new();
    } else if v.capacity() > 2 * v.len() + 8 {
        v.shrink_to(v.len() + v.len() / 2 + 4);
    }
}

impl Bucket {
    /// Removes what is behind `floor`; returns the entries removed. The runs and span anchors
    /// it no longer holds go to `dropped` (their holds to let go of once the section commits).
    pub(super) fn prune(&mut self, floor: Tick, dropped: &mut Dropped) -> usize {
        let mut removed = 0;
        if let Some(last) = floor.checked_sub(1) {
            self.runs.retain_mut(|r| {
                let old = r.present_within(0, last);
                removed += old.count_ones() as usize;
                r.present &= !old;
                if r.present == 0 {
                    // The bucket's pointer, with its hold, leaves with the run (`retain_mut`
                    // drops the run itself).
                    dropped.runs.push(r.entries.clone());
                }
                r.present != 0
            });
        }
        self.contacts.retain(|c| c.tick >= floor);
        self.records.retain(|r| r.until > floor);
        self.woken.retain(|c| c.awake.tick >= floor);
        super::span::drop_spans(&mut self.spans, |s| s.until <= floor, &mut dropped.anchors);
        self.met.retain(|c| c.tick() >= floor);
        // A bucket serves different (cell, slice) pairs over a run: room kept for a crowded
        // cell of one slice would stay with it, and in time every bucket would keep the room
        // of the most crowded cell ever hashed to it. (Found: with the lock backend, which
        // changes buckets in place, a `bouncing` 110 run's heap grew without bound, and
        // `pyramids` 10010 with contact groups reached 21 GB; the STM, which then copied a
        // bucket at each write with room for one more entry only, was spared.)
        shrink(&mut self.runs);
        shrink(&mut self.contacts);
        shrink(&mut self.records);
        shrink(&mut self.woken);
        shrink(&mut self.spans);
        shrink(&mut self.met);
        removed
    }

    pub(super) fn has_old(&self, floor: Tick) -> bool {
        self.runs
            .iter()
            .any(|r| r.first + Tick::from(r.present.trailing_zeros()) < floor)
            || self.contacts.iter().any(|c| c.tick < floor)
            || self.records.iter().any(|r| r.until <= floor)
            || self.woken.iter().any(|c| c.awake.tick < floor)
            || self.spans.iter().any(|s| s.until <= floor)
            || self.met.iter().any(|c| c.tick() < floor)
    }
}

impl Tvht {
    /// Raises the floor to `tick` (it never goes down) and reclaims every entry and contact
    /// before it; returns how many stored entry copies (one per bucket) were removed. Call it
    /// with `tick <= GVT` only: nothing at or after GVT may be reclaimed. One small section
    /// per bucket: a full sweep, for tests and the end of a run; during a run use
    /// [`Tvht::prune_step`].
    pub fn prune_before(&self, tick: Tick) -> usize {
        let floor = self.raise_floor(tick);
        self.prune_buckets(0..self.table.len(), floor)
    }

    /// Notes in the ledger that a section of `entity` changed buckets `keys`, the newest tick
    /// it put in any being `tick`: they are swept once the floor passes that tick's slice.
    /// Outside the section (which may have run several times), after it committed.
    pub(super) fn note(&self, entity: EntityId, tick: Tick, keys: impl Iterator<Item = usize>) {
        let slice = tick >> self.span_shift;
        let i = (slice as usize % LEDGER_RING) * LEDGER_SHARDS + entity as usize % LEDGER_SHARDS;
        self.ledger[i]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(keys.map(|k| (slice, k)));
    }

    /// Raises the floor to `tick` (`<= GVT`) and sweeps the buckets the ledger noted under
    /// each slice that is now wholly behind the floor (see the module documentation); any number of
    /// threads may call it, each slice is swept by one of them. A bucket noted under a later
    /// slice that shares a slice's place in the ring stays noted (it is swept when its own
    /// slice comes round); one noted late, under a slice already swept, is swept when the ring
    /// comes round to it again. Returns the copies removed.
    pub fn prune_touched(&self, tick: Tick) -> usize {
        let floor = self.raise_floor(tick);
        let behind = floor >> self.span_shift;
        let mut removed = 0;
        let mut keys = Vec::new();
        loop {
            let s = self.drained.load(Ordering::Acquire);
            if s >= behind {
                return removed;
            }
            if self
                .drained
                .compare_exchange(s, s + 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            keys.clear();
            let ring = s as usize % LEDGER_RING;
            for list in &self.ledger[ring * LEDGER_SHARDS..(ring + 1) * LEDGER_SHARDS] {
                let mut list = list.lock().unwrap_or_else(|p| p.into_inner());
                list.retain(|&(slice, k)| {
                    let due = slice <= s;
                    if due {
                        keys.push(k);
                    }
                    !due
                });
                // Room kept after a crowded slice would stay with its place in the ring.
                shrink(&mut list);
            }
            // Each bucket once, in the order noted: a bit per bucket (a slice's notes run to
            // thousands, and sorting them was 1.7% of a `parallel` run's instructions).
            let mut met = vec![0u64; self.table.len().div_ceil(64)];
            keys.retain(|&k| {
                let (word, bit) = (k / 64, 1u64 << (k % 64));
                let new = met[word] & bit == 0;
                met[word] |= bit;
                new
            });
            removed += self.prune_buckets(keys.iter().copied(), floor);
        }
    }

    /// How many bucket notes the ledger holds (it must not grow without bound).
    #[cfg(test)]
    pub(super) fn noted(&self) -> usize {
        self.ledger
            .iter()
            .map(|l| l.lock().unwrap_or_else(|p| p.into_inner()).len())
            .sum()
    }

    /// Raises the floor to `tick` (`<= GVT`) and sweeps the next `buckets` buckets, round
    /// robin: calling it with `buckets / window` buckets per committed tick sweeps the whole
    /// table once per window, which keeps memory flat at a small, steady cost (writes also
    /// drop old entries from the buckets they change). Returns the copies removed.
    pub fn prune_step(&self, tick: Tick, buckets: usize) -> usize {
        let floor = self.raise_floor(tick);
        let n = buckets.min(self.table.len());
        let start = self.cursor.fetch_add(n as u64, Ordering::Relaxed);
        let slots = self.table.len() as u64;
        self.prune_buckets((0..n as u64).map(|i| ((start + i) % slots) as usize), floor)
    }

    fn raise_floor(&self, tick: Tick) -> Tick {
        self.floor.fetch_max(tick, Ordering::AcqRel).max(tick)
    }

    /// Sweeps buckets `keys` below `floor`, each in a section of its own; lets go of the holds
    /// of the runs and anchors they dropped together, at the end. Returns the copies removed.
    fn prune_buckets(&self, keys: impl Iterator<Item = usize>, floor: Tick) -> usize {
        let mut dropped = Dropped::default();
        let removed = keys
            .map(|k| self.prune_bucket(k, floor, &mut dropped))
            .sum();
        // SAFETY: `dropped` holds what each bucket's committed sweep took out of it
        // (`prune_bucket`), once per bucket.
        unsafe { self.release_dropped(dropped) };
        removed
    }

    /// Sweeps bucket `k` below `floor`; adds the runs and anchors it dropped to `dropped`
    /// (their holds are the caller's to let go of).
    fn prune_bucket(&self, k: usize, floor: Tick, dropped: &mut Dropped) -> usize {
        // Changed only if it holds something old (under the STM, seen first on a read-only
        // look): most buckets of a sweep do not. Entries only age, so a bucket seen clean may
        // be swept next time.
        let pruned = self.table.update_if(
            k,
            |b| b.has_old(floor),
            |b| {
                let mut dropped = Dropped::default();
                (b.prune(floor, &mut dropped), dropped)
            },
        );
        pruned.map_or(0, |(n, more)| {
            dropped.append(more);
            n
        })
    }

    /// Lets go of the holds of the runs (or span anchors) that a committed section dropped
    /// from its buckets.
    ///
    /// # Safety
    /// Each of `dropped` is the pointer of a bucket that a committed section took the run
    /// (anchor) out of, once per such bucket (what its closure's last run returned): its hold
    /// is the caller's to let go of ([`HeldRef::release`]).
    pub(super) unsafe fn release_all<T: Send + Sync + 'static>(&self, dropped: Vec<HeldRef<T>>) {
        let mut retired = Vec::new();
        for r in dropped {
            // SAFETY: the bucket's hold is ours (this function's contract).
            unsafe { r.release(&mut retired) };
        }
        self.graveyard.retire_all(retired);
    }

    /// [`Tvht::release_all`] of the runs and of the anchors of `dropped`.
    ///
    /// # Safety
    /// As for [`Tvht::release_all`], for each of them.
    pub(super) unsafe fn release_dropped(&self, dropped: Dropped) {
        // SAFETY: the caller's contract, for both lists.
        unsafe {
            self.release_all(dropped.runs);
            self.release_all(dropped.anchors);
        }
    }
}
