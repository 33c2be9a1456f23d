//! Section statistics for the run summary, cheap enough to leave on.
//!
//! Every critical section adds to a few counters: sections run, attempts (an STM section that
//! aborted and re-ran counts each run; a lock section is one attempt; kept as the runs beyond
//! each section's first, so that a snapshot taken while other threads add never shows fewer
//! attempts than sections), keys named, and mutexes taken by the lock backend. Like the STM crate's own counters, they must not add contention
//! to what they measure, so they are striped: each thread adds to one of [`STRIPES`]
//! cache-padded blocks, chosen once per thread, and [`stats`] sums the blocks. The STM's own
//! commit and abort counts come from `timewarp_stm::stats()` (process-wide) and are attached to
//! the snapshot in builds that carry the STM.
//!
//! **Per class.** One abort ratio for the whole run says *that* sections conflict, not *where*.
//! The engine guards several structures with tables — the TVHT, the GVT buffer, the island
//! graph of contact groups — and they fail in different ways: a TVHT bucket is shared by the
//! bodies that pass through one cell at one tick, a GVT chunk by 64 bodies recording the same
//! tick, a group slot by the bodies of one island. To say which of them the aborts come from,
//! every [`Table`](super::Table) carries a [`Class`], given where it is made
//! ([`Table::with_class`](super::Table::with_class); a plain `Table::new` is
//! [`Class::Other`]), and each block holds one row of counters per class. The totals of
//! [`SyncStats`] are the sums of its [`ByClass`] rows, taken from the same loads, so the two
//! always agree. A block is 4 classes x 4 counters x 8 bytes = 128 bytes, one cache-padded
//! unit, and a section still makes the same few relaxed additions to its own thread's block.
//!
//! These are plain `std` atomics even under loom (see the engine's `primitive` module): they
//! never influence a decision.

use crossbeam::utils::CachePadded;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// How many counter blocks threads are spread over.
pub const STRIPES: usize = 16;

/// How many table classes there are ([`Class::ALL`]).
pub const CLASSES: usize = 4;

/// Which shared structure a table guards, so that the counters can say where sections ran and
/// where they aborted (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// The temporal volumetric hash table (`warp::tvht`).
    Tvht,
    /// The GVT frame buffer (`warp::gvt`).
    Gvt,
    /// The island graph of contact groups (`warp::groups`).
    Groups,
    /// Any other table (tests, models, benches).
    Other,
}

impl Class {
    /// Every class, in the order of [`ByClass`]'s rows.
    pub const ALL: [Class; CLASSES] = [Class::Tvht, Class::Gvt, Class::Groups, Class::Other];

    /// The name the summary and the bench report print.
    pub const fn name(self) -> &'static str {
        match self {
            Class::Tvht => "TVHT",
            Class::Gvt => "GVT",
            Class::Groups => "groups",
            Class::Other => "other",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

const SECTIONS: usize = 0;
/// Attempts beyond the first of each section (aborted and re-run): a snapshot's attempts are
/// its sections plus these, so no snapshot, and no difference of two, has fewer attempts than
/// sections, whatever additions of other threads it caught half done.
const RETRIES: usize = 1;
const KEYS: usize = 2;
const LOCKS: usize = 3;
const N: usize = 4;

type Block = CachePadded<[[AtomicU64; N]; CLASSES]>;

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const ROW: [AtomicU64; N] = [ZERO; N];
#[allow(clippy::declare_interior_mutable_const)]
const BLOCK: Block = CachePadded::new([ROW; CLASSES]);
static BLOCKS: [Block; STRIPES] = [BLOCK; STRIPES];
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

std::thread_local! {
    static STRIPE: usize = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
}

/// Adds one finished section's counts, on a table of class `class`.
pub(crate) fn add_section(class: Class, attempts: u64, keys: u64, locks: u64) {
    let s = STRIPE.try_with(|s| *s).unwrap_or(0);
    let b = &BLOCKS[s][class.index()];
    b[SECTIONS].fetch_add(1, Ordering::Relaxed);
    b[RETRIES].fetch_add(attempts.saturating_sub(1), Ordering::Relaxed);
    b[KEYS].fetch_add(keys, Ordering::Relaxed);
    if locks != 0 {
        b[LOCKS].fetch_add(locks, Ordering::Relaxed);
    }
}

/// The section counters of one class of tables (the fields mean what [`SyncStats`]'s do).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClassStats {
    pub sections: u64,
    pub attempts: u64,
    pub keys: u64,
    pub lock_acquisitions: u64,
}

impl ClassStats {
    /// Each counter of `self` and `other` combined by `op`.
    fn zip(&self, other: &ClassStats, op: fn(u64, u64) -> u64) -> ClassStats {
        ClassStats {
            sections: op(self.sections, other.sections),
            attempts: op(self.attempts, other.attempts),
            keys: op(self.keys, other.keys),
            lock_acquisitions: op(self.lock_acquisitions, other.lock_acquisitions),
        }
    }

    /// The counts accumulated between `earlier` and `self`.
    pub fn since(&self, earlier: &ClassStats) -> ClassStats {
        self.zip(earlier, u64::wrapping_sub)
    }

    /// Both counts added (e.g. over the runs of a benchmark row).
    pub fn plus(&self, other: &ClassStats) -> ClassStats {
        self.zip(other, u64::wrapping_add)
    }

    /// Section attempts that were aborted and re-run (always 0 under locks).
    pub fn retried(&self) -> u64 {
        self.attempts.saturating_sub(self.sections)
    }

    /// Attempts that were aborted and re-run, over all attempts (0 when none ran).
    pub fn retry_ratio(&self) -> f64 {
        if self.attempts == 0 {
            0.0
        } else {
            self.retried() as f64 / self.attempts as f64
        }
    }
}

/// One [`ClassStats`] per [`Class`]. Serialised as a map from class name to counts, of the
/// classes that ran sections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByClass(pub [ClassStats; CLASSES]);

impl ByClass {
    /// The counts of `class`.
    pub fn get(&self, class: Class) -> &ClassStats {
        &self.0[class.index()]
    }

    /// The counts accumulated between `earlier` and `self`, class by class.
    pub fn since(&self, earlier: &ByClass) -> ByClass {
        ByClass(std::array::from_fn(|i| self.0[i].since(&earlier.0[i])))
    }

    /// Both counts added, class by class.
    pub fn plus(&self, other: &ByClass) -> ByClass {
        ByClass(std::array::from_fn(|i| self.0[i].plus(&other.0[i])))
    }

    /// The classes that ran sections, with their counts, in [`Class::ALL`] order.
    pub fn ran(&self) -> impl Iterator<Item = (Class, &ClassStats)> + '_ {
        Class::ALL
            .into_iter()
            .zip(&self.0)
            .filter(|(_, s)| s.sections != 0)
    }

    /// The sum over all classes.
    pub fn total(&self) -> ClassStats {
        self.0
            .iter()
            .fold(ClassStats::default(), |sum, s| sum.plus(s))
    }
}

impl serde::Serialize for ByClass {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.ran().map(|(c, s)| (c.name(), s)))
    }
}

/// A snapshot of the section counters since the start of the process (compare two with
/// [`SyncStats::since`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncStats {
    /// Critical sections completed (both backends).
    pub sections: u64,
    /// Runs of section closures: equal to `sections` for the lock backend; for the STM,
    /// `attempts - sections` sections were aborted and re-run.
    pub attempts: u64,
    /// Distinct keys named by completed sections (sum).
    pub keys: u64,
    /// Mutexes taken by the lock backend (one per key per section).
    pub lock_acquisitions: u64,
    /// The same counts split by the class of the table the sections ran on; each total above
    /// is the sum of its column here.
    pub by_class: ByClass,
    /// The STM's process-wide counters (commits, aborts by cause, set sizes); it also counts
    /// transactions run outside the seam.
    #[cfg(feature = "stm")]
    pub stm: timewarp_stm::Stats,
}

impl SyncStats {
    /// The totals as one [`ClassStats`].
    pub fn totals(&self) -> ClassStats {
        ClassStats {
            sections: self.sections,
            attempts: self.attempts,
            keys: self.keys,
            lock_acquisitions: self.lock_acquisitions,
        }
    }

    /// The counts accumulated between `earlier` and `self`.
    pub fn since(&self, earlier: &SyncStats) -> SyncStats {
        let t = self.totals().since(&earlier.totals());
        SyncStats {
            sections: t.sections,
            attempts: t.attempts,
            keys: t.keys,
            lock_acquisitions: t.lock_acquisitions,
            by_class: self.by_class.since(&earlier.by_class),
            #[cfg(feature = "stm")]
            stm: self.stm.since(&earlier.stm),
        }
    }

    /// Section attempts that were aborted and re-run, over all attempts (0 when none ran).
    pub fn retry_ratio(&self) -> f64 {
        self.totals().retry_ratio()
    }

    /// Mean keys per section.
    pub fn mean_keys(&self) -> f64 {
        if self.sections == 0 {
            0.0
        } else {
            self.keys as f64 / self.sections as f64
        }
    }
}

/// The section counters summed over all threads (a sum of finished sections, not an instant).
pub fn stats() -> SyncStats {
    let mut c = [[0u64; N]; CLASSES];
    for b in &BLOCKS {
        for (row, counters) in c.iter_mut().zip(b.iter()) {
            for (s, a) in row.iter_mut().zip(counters) {
                *s = s.wrapping_add(a.load(Ordering::Relaxed));
            }
        }
    }
    let by_class = ByClass(c.map(|r| ClassStats {
        sections: r[SECTIONS],
        attempts: r[SECTIONS].wrapping_add(r[RETRIES]),
        keys: r[KEYS],
        lock_acquisitions: r[LOCKS],
    }));
    let total = by_class.total();
    SyncStats {
        sections: total.sections,
        attempts: total.attempts,
        keys: total.keys,
        lock_acquisitions: total.lock_acquisitions,
        by_class,
        #[cfg(feature = "stm")]
        stm: timewarp_stm::stats(),
    }
}

// Under loom the tables must live inside `loom::model`: these std-thread tests are for std builds.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sync::{Backend, Table};

    /// Sections on a GVT-class and a groups-class table are counted under their classes, and
    /// the totals are the sums of the classes. The counters are process-wide and other tests
    /// (warp runs) may add to these classes meanwhile, so the deltas are at least ours.
    #[test]
    fn sections_are_counted_under_their_tables_class() {
        for &b in Backend::COMPILED {
            let gvt = Table::with_class(b, 8, Class::Gvt, |i| i as u64);
            let groups = Table::with_class(b, 4, Class::Groups, |_| 0u64);
            assert_eq!((gvt.class(), groups.class()), (Class::Gvt, Class::Groups));
            assert_eq!(Table::new(b, 1, |_| 0u8).class(), Class::Other);
            let before = stats();
            for i in 0..30 {
                gvt.section(&[i % 8, (i + 3) % 8], |v| *v.get_mut(i % 8) += 1);
            }
            for i in 0..20 {
                groups.section(&[i % 4], |v| *v.get_mut(i % 4) += 1);
            }
            // `read` and `update_if` are sections too (update_if is a read and a section
            // under the STM, one section under locks).
            assert_eq!(groups.read(0, |x| *x), 5);
            assert_eq!(groups.update_if(1, |x| *x == 5, |x| *x), Some(5));
            let after = stats();
            let d = after.since(&before);
            let (g, q) = (d.by_class.get(Class::Gvt), d.by_class.get(Class::Groups));
            assert!(g.sections >= 30 && g.keys >= 60, "{b:?}: {g:?}");
            assert!(q.sections >= 22 && q.keys >= 22, "{b:?}: {q:?}");
            assert!(g.attempts >= g.sections && q.attempts >= q.sections);
            if b.name() == "locks" {
                assert!(g.lock_acquisitions >= 60 && q.lock_acquisitions >= 22);
            }
            for s in [&before, &after, &d] {
                assert_eq!(s.totals(), s.by_class.total(), "{b:?}: {s:?}");
            }
            assert!(d.sections >= g.sections + q.sections);
        }
    }

    #[test]
    fn by_class_lists_and_serialises_the_classes_that_ran() {
        let mut b = ByClass::default();
        b.0[Class::Other.index()] = ClassStats {
            sections: 1,
            attempts: 1,
            keys: 2,
            lock_acquisitions: 0,
        };
        b.0[Class::Tvht.index()] = ClassStats {
            sections: 3,
            attempts: 4,
            keys: 5,
            lock_acquisitions: 0,
        };
        let ran: Vec<Class> = b.ran().map(|(c, _)| c).collect();
        assert_eq!(ran, [Class::Tvht, Class::Other]);
        assert_eq!(b.get(Class::Tvht).retried(), 1);
        assert_eq!(b.get(Class::Tvht).retry_ratio(), 0.25);
        assert_eq!(b.get(Class::Gvt).retry_ratio(), 0.0);
        assert_eq!(b.total().sections, 4);
        assert_eq!(b.plus(&b).since(&b), b);
        assert_eq!(
            serde_json::to_string(&b).unwrap(),
            r#"{"TVHT":{"sections":3,"attempts":4,"keys":5,"lock_acquisitions":0},"other":{"sections":1,"attempts":1,"keys":2,"lock_acquisitions":0}}"#
        );
    }
}
