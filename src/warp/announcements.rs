//! # Announced group changes, made once their tick is committed
//!
//! A contact group whose step meets a fusion or a fission at its LVT `t` that cannot be made
//! speculatively (see "Speculative changes" in [`super::entity`]) *announces* `(t, entity)` and
//! waits; once the GVT passes `t`, some worker makes the change. Any worker may find itself the one to
//! do it — after a turn, or while idle — so the hand-off must neither lose an announcement nor
//! make one twice, and no worker may ever wait for another here:
//!
//! * [`Announcements::announce`] pushes onto a short queue, then lowers `next`, the smallest tick
//!   announced and not yet made (a cheap test for everyone else: nothing to do while
//!   `next >= GVT`);
//! * [`Announcements::make_committed`] *tries* the maker's lock (one maker at a time; the others
//!   return at once), moves the queue into its own ordered list, makes every change whose tick is
//!   below the GVT, in tick order, and stores the new `next`. Then it looks at the queue again: an
//!   announcement pushed after the maker emptied it, whose `fetch_min` the maker's store may have
//!   overwritten, and whose announcer found the lock taken, would otherwise wait for a `next`
//!   that nobody lowers any more. Seeing the queue empty after the store means every later
//!   announcement lowers `next` after that store, so the next caller sees it.
//!
//! The loom model `engine_announcements` runs this code with two announcers racing a maker and
//! checks that every announcement below the GVT is made exactly once; its negative control
//! (`TIMEWARP_BROKEN=no_announcement_recheck`) drops the second look at the queue.

use super::{EntityId, Tick};
use crate::primitive::{AtomicU64, Mutex, Ordering};
use std::collections::{BTreeMap, BTreeSet};

/// The changes announced and not made yet (see the module documentation).
pub struct Announcements {
    /// Announced since the maker last looked.
    queue: Mutex<Vec<(Tick, EntityId)>>,
    /// The smallest tick announced and not made (`u64::MAX`: none).
    next: AtomicU64,
    /// The maker's lock, and the announcements it has taken, by tick.
    waiting: Mutex<BTreeMap<Tick, BTreeSet<EntityId>>>,
}

impl Default for Announcements {
    fn default() -> Self {
        Announcements {
            queue: Mutex::new(Vec::new()),
            next: AtomicU64::new(u64::MAX),
            waiting: Mutex::new(BTreeMap::new()),
        }
    }
}

impl Announcements {
    /// Entity `id` must change its group at tick `t`.
    pub fn announce(&self, t: Tick, id: EntityId) {
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((t, id));
        self.next.fetch_min(t, Ordering::SeqCst);
    }

    /// Whether some announced change has a tick below `gvt` (a look, without locks).
    pub fn due(&self, gvt: Tick) -> bool {
        self.next.load(Ordering::SeqCst) < gvt
    }

    /// Unless another caller is at it: makes, with `make(t, entities)`, every announced change
    /// whose tick is below `gvt`, in tick order (each tick once, with every entity announced for
    /// it). Stops at the first error of `make` and returns it.
    pub fn make_committed<E>(
        &self,
        gvt: Tick,
        mut make: impl FnMut(Tick, BTreeSet<EntityId>) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.due(gvt) {
            return Ok(());
        }
        let Ok(mut waiting) = self.waiting.try_lock() else {
            return Ok(());
        };
        loop {
            let taken = std::mem::take(&mut *self.queue.lock().unwrap_or_else(|p| p.into_inner()));
            for (t, id) in taken {
                waiting.entry(t).or_default().insert(id);
            }
            while let Some(entry) = waiting.first_entry() {
                if *entry.key() >= gvt {
                    break;
                }
                let (t, ids) = entry.remove_entry();
                make(t, ids)?;
            }
            let next = waiting.first_key_value().map_or(u64::MAX, |(&t, _)| t);
            self.next.store(next, Ordering::SeqCst);
            // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
            // `TIMEWARP_BROKEN=no_announcement_recheck` (a loom negative control): no second
            // look, so an announcement made while this maker held the lock can be lost.
            #[cfg(timewarp_broken)]
            if crate::sync::broken("no_announcement_recheck") {
                return Ok(());
            }
            if self
                .queue
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty()
            {
                return Ok(());
            }
        }
    }
}
