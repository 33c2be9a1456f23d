//! `Table<T>`: a fixed array of guarded slots and the critical sections over them.
//!
//! A section names the slots (keys) it will touch, then runs a closure that sees exactly those
//! slots through a [`View`]. The two backends give the closure the same guarantee — it runs
//! as if alone on its keys — in different ways:
//!
//! * **locks** (`Backend::Locks`): one `Mutex<T>` per slot. The keys are sorted and deduplicated
//!   and the mutexes taken in ascending key order, all of them before the closure runs, and
//!   released only after it returns (Koenig et al., seed 000, Section 4, Algorithm 1). The view
//!   hands out the held guards. The closure runs exactly once.
//! * **STM** (`Backend::Stm`): one `TVar<Arc<T>>` per slot. The section is one `timewarp-stm`
//!   transaction: an attempt reads every named slot first (a shared handle to its value, not
//!   a copy: values are never changed in place, so this is an opaque, consistent snapshot and
//!   the closure never sees a half-done section of another thread), runs the closure on
//!   them, copies a slot the first time it is taken with [`View::get_mut`] (copy on write),
//!   and buffers the write of every such copy; the commit publishes them all at once, or the
//!   attempt aborts and runs again on a fresh snapshot.
//!
//! So a section closure **may run more than once** and must be safe to re-run: it must have no
//! effect outside the view (no I/O, no messages, no pushes to outer vectors, no atomics or other
//! locks): it *returns* what it found, and the caller acts on it after `section` returns. Only
//! the last run's return value is returned. It must also not start another section (the STM
//! does not nest; the locks would self-deadlock on a shared key).
//!
//! A closure that wants to fail without effect (bad input found halfway) must check before it
//! mutates: under locks, a `get_mut` changes the slot in place at once.
//!
//! **Cost.** The STM backend clones every slot an attempt changes (reads borrow the published
//! value); slot contents should therefore be small or cheap to clone (the TVHT keeps buckets
//! short by hashing cell *and* tick; the GVT buffer splits a tick into 64-body chunks). The
//! `tvht` bench measures both backends.
//!
//! **Class.** Every table has a [`Class`] naming the structure it guards (TVHT, GVT buffer,
//! contact groups, other), set where it is made ([`Table::with_class`]; [`Table::new`] makes
//! [`Class::Other`]). Each finished section is counted under its table's class (see
//! [`stats`](mod@super::stats)), so that the run summary and the bench report can say which
//! structure the STM's aborts come from, not only how many there were.
//!
//! ## Lemma 1: the lock backend cannot deadlock
//!
//! (Seed 000, Lemma 1, adapted.) A deadlock needs a cycle of threads, each holding a mutex and
//! waiting for one held by the next (Coffman's circular wait). In a section, a thread waits
//! only while acquiring, and it acquires its keys in strictly ascending order (sorted,
//! duplicates removed, so it never waits for a mutex it holds). So a thread waiting for key
//! `k` holds only keys `< k`. Along a cycle `T1 → T2 → … → T1`, where `Ti` waits for `ki` held
//! by `Ti+1`, the thread `Ti+1` holds `ki` and waits for `ki+1 > ki`; going round the cycle
//! gives `k1 < k2 < … < k1`, a contradiction. Sections do not nest and closures take no other
//! locks (the contract above), so no other wait can close a cycle. Every waiting thread thus
//! eventually acquires, provided every closure terminates.
//!
//! The STM backend needs no such argument: its commit locks with a bounded spin and aborts
//! instead of waiting, and after a few conflicts a section runs irrevocably (the STM's
//! progress guarantee, see `timewarp_stm`).

use super::backend::Backend;
use super::stats::{Class, add_section};
#[cfg(feature = "locks")]
use crate::primitive::{Mutex, MutexGuard};
#[cfg(feature = "stm")]
use std::sync::Arc;
#[cfg(feature = "stm")]
use timewarp_stm::{TVar, atomically};

/// The sorted keys of one section, inline up to this many (most sections name a few slots).
type Small<T> = smallvec::SmallVec<[T; 16]>;

enum Slots<T> {
    #[cfg(feature = "stm")]
    Stm(Box<[TVar<Arc<T>>]>),
    #[cfg(feature = "locks")]
    Locks(Box<[Mutex<T>]>),
}

/// A fixed array of guarded slots.
pub struct Table<T> {
    slots: Slots<T>,
    class: Class,
}

/// A named slot's value in an STM attempt: the published value, borrowed, until the closure
/// takes it mutably; then a copy of its own, written back at commit.
#[cfg(feature = "stm")]
enum StmValue<T> {
    /// The value the attempt read (see `Table::guarded_section` for why it stays valid).
    Read(*const T),
    Copy(T),
}

enum ViewInner<'s, T> {
    #[cfg(feature = "stm")]
    /// Each named slot's value.
    Stm { values: Vec<StmValue<T>> },
    #[cfg(feature = "locks")]
    Locks { guards: Vec<MutexGuard<'s, T>> },
    /// Test-only (`cfg(timewarp_broken)`): unguarded copies, see [`Table::section_unguarded`].
    #[cfg(timewarp_broken)]
    Copies { values: Vec<(T, bool)> },
    /// Never built: keeps `'s` used in a build without the lock backend.
    #[allow(dead_code)]
    Never(std::marker::PhantomData<&'s T>),
}

/// What a section closure sees: the slots it named, and nothing else.
pub struct View<'s, T> {
    keys: &'s [usize],
    inner: ViewInner<'s, T>,
}

impl<'s, T: Clone> View<'s, T> {
    /// The named keys, sorted ascending, without duplicates.
    pub fn keys(&self) -> &[usize] {
        self.keys
    }

    /// Whether `key` was named by the section.
    pub fn contains(&self, key: usize) -> bool {
        self.keys.binary_search(&key).is_ok()
    }

    /// The position of `key` in [`View::keys`] (which the section must have named), for
    /// [`View::at`] and [`View::at_mut`]: a caller that looks at one slot many times finds it
    /// once.
    pub fn index(&self, key: usize) -> usize {
        match self.keys.binary_search(&key) {
            Ok(i) => i,
            Err(_) => panic!("section touched key {key}, which it did not name"),
        }
    }

    /// The slot `key` (which the section must have named).
    pub fn get(&self, key: usize) -> &T {
        self.at(self.index(key))
    }

    /// The slot at position `i` of [`View::keys`] (no search: for callers that look up a slot
    /// many times and so find its position once).
    pub fn at(&self, i: usize) -> &T {
        match &self.inner {
            #[cfg(feature = "stm")]
            ViewInner::Stm { values } => match &values[i] {
                // SAFETY: `p` points to the value of a slot this attempt read, published and
                // never changed in place; the attempt's epoch guard, pinned when it read it,
                // keeps it from being freed until the attempt finishes, after the view is gone
                // (see `Table::guarded_section`). The view lives only inside the attempt.
                StmValue::Read(p) => unsafe { &**p },
                StmValue::Copy(t) => t,
            },
            #[cfg(feature = "locks")]
            ViewInner::Locks { guards } => &guards[i],
            #[cfg(timewarp_broken)]
            ViewInner::Copies { values } => &values[i].0,
            ViewInner::Never(_) => unreachable!(),
        }
    }

    /// The slot at position `i` of [`View::keys`], to modify (see [`View::get_mut`]).
    pub fn at_mut(&mut self, i: usize) -> &mut T {
        match &mut self.inner {
            #[cfg(feature = "stm")]
            ViewInner::Stm { values } => {
                if let StmValue::Read(p) = values[i] {
                    // SAFETY: as in `View::at`: the value read is alive for the attempt.
                    values[i] = StmValue::Copy(unsafe { (*p).clone() });
                }
                match &mut values[i] {
                    StmValue::Copy(t) => t,
                    StmValue::Read(_) => unreachable!("copied just above"),
                }
            }
            #[cfg(feature = "locks")]
            ViewInner::Locks { guards } => &mut guards[i],
            #[cfg(timewarp_broken)]
            ViewInner::Copies { values } => {
                values[i].1 = true;
                &mut values[i].0
            }
            ViewInner::Never(_) => unreachable!(),
        }
    }

    /// The slot `key`, to modify (which the section must have named). Under the STM it is
    /// written back at commit; under locks it is changed in place at once.
    pub fn get_mut(&mut self, key: usize) -> &mut T {
        self.at_mut(self.index(key))
    }
}

/// Sorts and deduplicates `keys` into `out`, checking them against `len`.
fn sort_keys(keys: &[usize], len: usize, out: &mut Small<usize>) {
    out.clear();
    out.extend_from_slice(keys);
    if !out.is_sorted() {
        out.sort_unstable();
    }
    out.dedup();
    if let Some(&last) = out.last() {
        assert!(
            last < len,
            "section key {last} out of range (table of {len} slots)"
        );
    }
}

impl<T: Clone + Send + Sync + 'static> Table<T> {
    /// A table of `len` slots guarded by `backend`, slot `i` holding `init(i)`, of class
    /// [`Class::Other`] (see [`Table::with_class`]).
    pub fn new(backend: Backend, len: usize, init: impl FnMut(usize) -> T) -> Self {
        Self::with_class(backend, len, Class::Other, init)
    }

    /// A table of `len` slots guarded by `backend`, slot `i` holding `init(i)`, whose sections
    /// are counted under `class` in [`stats`](super::stats()).
    pub fn with_class(
        backend: Backend,
        len: usize,
        class: Class,
        mut init: impl FnMut(usize) -> T,
    ) -> Self {
        let slots = match backend {
            #[cfg(feature = "stm")]
            Backend::Stm => Slots::Stm((0..len).map(|i| TVar::new(Arc::new(init(i)))).collect()),
            #[cfg(feature = "locks")]
            Backend::Locks => Slots::Locks((0..len).map(|i| Mutex::new(init(i))).collect()),
        };
        Table { slots, class }
    }

    /// A table of `len` slots guarded by `backend`, every slot holding `value`, whose sections
    /// are counted under `class`. Under the STM the slots share one allocation of `value`
    /// until each is first written (a write installs a new value; none is changed in place),
    /// so a large table of empty buckets costs one pointer per slot to build, not one value.
    pub fn filled(backend: Backend, len: usize, class: Class, value: T) -> Self {
        let slots = match backend {
            #[cfg(feature = "stm")]
            Backend::Stm => {
                let shared = Arc::new(value);
                Slots::Stm((0..len).map(|_| TVar::new(Arc::clone(&shared))).collect())
            }
            #[cfg(feature = "locks")]
            Backend::Locks => Slots::Locks((0..len).map(|_| Mutex::new(value.clone())).collect()),
        };
        Table { slots, class }
    }

    /// The class its sections are counted under.
    pub fn class(&self) -> Class {
        self.class
    }

    /// The backend guarding this table.
    pub fn backend(&self) -> Backend {
        match &self.slots {
            #[cfg(feature = "stm")]
            Slots::Stm(_) => Backend::Stm,
            #[cfg(feature = "locks")]
            Slots::Locks(_) => Backend::Locks,
        }
    }

    /// The number of slots.
    pub fn len(&self) -> usize {
        match &self.slots {
            #[cfg(feature = "stm")]
            Slots::Stm(s) => s.len(),
            #[cfg(feature = "locks")]
            Slots::Locks(s) => s.len(),
        }
    }

    /// Whether the table has no slot.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs `f` as one critical section over the slots `keys` (any order, duplicates allowed;
    /// each must be `< len`, else this panics: keys are computed by the engine, never input).
    /// `f` may run several times and must have no effect outside the view (see the module
    /// documentation); the value of its last run is returned.
    #[inline]
    pub fn section<R>(&self, keys: &[usize], f: impl FnMut(&mut View<'_, T>) -> R) -> R {
        #[cfg(timewarp_broken)]
        if super::broken("unguarded_sections") {
            return self.section_unguarded(keys, f);
        }
        self.guarded_section(keys, f)
    }

    /// The section behind [`Table::section`]: always, but in a test-only `cfg(timewarp_broken)`
    /// build with `TIMEWARP_BROKEN=unguarded_sections` (see `sync::broken`).
    ///
    /// Only this wrapper is generic over the closure: it keeps the value of the closure's last
    /// run, and the section itself ([`Table::section_dyn`]) is compiled once per slot type.
    /// (Compiled once per closure, the STM's attempt, validation and commit were fourteen
    /// copies of 6-8 KB; a turn of the warp engine ran several of them, more code than the
    /// instruction cache holds.)
    #[inline]
    fn guarded_section<R>(&self, keys: &[usize], mut f: impl FnMut(&mut View<'_, T>) -> R) -> R {
        let mut last = None;
        self.section_dyn(keys, &mut |v| last = Some(f(v)));
        last.expect("a section runs its closure at least once")
    }

    /// [`Table::guarded_section`] with the closure behind a pointer; the closure leaves what it
    /// found where its caller reads it after the last run.
    #[inline(never)]
    fn section_dyn(&self, keys: &[usize], f: &mut dyn FnMut(&mut View<'_, T>)) {
        let mut sorted = Small::new();
        sort_keys(keys, self.len(), &mut sorted);
        let sorted = &sorted[..];
        match &self.slots {
            #[cfg(feature = "stm")]
            Slots::Stm(vars) => {
                let mut attempts = 0u64;
                atomically(|tx| {
                    attempts += 1;
                    // Each slot is borrowed, not cloned: no reference count changes hands (a
                    // count is a write to a line every reader of the slot shares). The pointer
                    // stays valid for the attempt: `read_with` pins the attempt's epoch guard,
                    // values are never changed in place, and a replaced one is freed only after
                    // every guard pinned before its replacement unpins, which for this attempt
                    // happens when it finishes, after the view below is gone.
                    let mut values = Vec::with_capacity(sorted.len());
                    for &k in sorted {
                        let p = tx.read_with(&vars[k], |v: &Arc<T>| Arc::as_ptr(v))?;
                        values.push(StmValue::Read(p));
                    }
                    let mut view = View {
                        keys: sorted,
                        inner: ViewInner::Stm { values },
                    };
                    f(&mut view);
                    if let ViewInner::Stm { values } = view.inner {
                        for (v, &k) in values.into_iter().zip(sorted) {
                            if let StmValue::Copy(t) = v {
                                tx.write(&vars[k], Arc::new(t))?;
                            }
                        }
                    }
                    Ok(())
                });
                add_section(self.class, attempts, sorted.len() as u64, 0);
            }
            #[cfg(feature = "locks")]
            Slots::Locks(mutexes) => {
                #[cfg(timewarp_broken)]
                if super::broken("unsorted_locks") {
                    // BROKEN ON PURPOSE (test-only negative control, see `sync::broken`): the
                    // mutexes are taken in the order the keys were given, so two sections
                    // naming shared keys in different orders can wait on each other forever.
                    let mut taken: Vec<(usize, MutexGuard<'_, T>)> = Vec::new();
                    for &k in keys {
                        if !taken.iter().any(|(j, _)| *j == k) {
                            taken.push((k, mutexes[k].lock().expect("poisoned")));
                        }
                    }
                    taken.sort_by_key(|(k, _)| *k);
                    let guards = taken.into_iter().map(|(_, g)| g).collect();
                    let mut view = View {
                        keys: sorted,
                        inner: ViewInner::Locks { guards },
                    };
                    f(&mut view);
                    return;
                }
                // Algorithm 1: ascending order, all before the closure, held to its end.
                let guards = sorted
                    .iter()
                    .map(|&k| {
                        mutexes[k]
                            .lock()
                            .expect("a section panicked while holding this slot")
                    })
                    .collect();
                let mut view = View {
                    keys: sorted,
                    inner: ViewInner::Locks { guards },
                };
                f(&mut view);
                drop(view);
                add_section(self.class, 1, sorted.len() as u64, sorted.len() as u64);
            }
        }
    }

    /// **BROKEN ON PURPOSE** (test-only negative control, `TIMEWARP_BROKEN=unguarded_tvht`
    /// for the TVHT's sections, `unguarded_sections` for every table's, in a
    /// `cfg(timewarp_broken)` build, see `sync::broken`): runs `f` on copies of the slots
    /// read in one section, then writes the slots it changed back in a second section, so
    /// nothing guards the read-modify-write as a whole (another section can run in between).
    #[cfg(timewarp_broken)]
    pub(crate) fn section_unguarded<R>(
        &self,
        keys: &[usize],
        mut f: impl FnMut(&mut View<'_, T>) -> R,
    ) -> R {
        let mut sorted = Small::new();
        sort_keys(keys, self.len(), &mut sorted);
        let values = self.guarded_section(&sorted, |v| {
            sorted.iter().map(|&k| (v.get(k).clone(), false)).collect()
        });
        let mut view = View {
            keys: &sorted,
            inner: ViewInner::Copies { values },
        };
        let r = f(&mut view);
        let ViewInner::Copies { values } = view.inner else {
            unreachable!()
        };
        let dirty: Vec<(usize, T)> = values
            .into_iter()
            .zip(&sorted)
            .filter(|((_, d), _)| *d)
            .map(|((v, _), &k)| (k, v))
            .collect();
        let dirty_keys: Vec<usize> = dirty.iter().map(|(k, _)| *k).collect();
        self.guarded_section(&dirty_keys, |v| {
            for (k, val) in &dirty {
                *v.get_mut(*k) = val.clone();
            }
        });
        r
    }

    /// Reads one slot through `f`, with no copy under the STM (one read-only transaction) and
    /// the slot's lock held for `f` under locks: a cheap look before a section, for callers
    /// that can act on a value that may be stale by the time they act.
    pub fn read<R>(&self, key: usize, f: impl Fn(&T) -> R) -> R {
        assert!(
            key < self.len(),
            "key {key} out of range (table of {} slots)",
            self.len()
        );
        match &self.slots {
            #[cfg(feature = "stm")]
            Slots::Stm(vars) => {
                // A read-only transaction can abort too (a newer version met): count its runs.
                let mut attempts = 0u64;
                let r = atomically(|tx| {
                    attempts += 1;
                    tx.read_with(&vars[key], |v: &Arc<T>| f(v))
                });
                add_section(self.class, attempts, 1, 0);
                r
            }
            #[cfg(feature = "locks")]
            Slots::Locks(mutexes) => {
                let r = f(&mutexes[key]
                    .lock()
                    .expect("a section panicked while holding this slot"));
                add_section(self.class, 1, 1, 1);
                r
            }
        }
    }

    /// Changes the one slot `key` with `f` if `test` holds for it, as one section; returns
    /// `f`'s value, or `None` (and changes nothing) if the test fails. For sweeps, where most
    /// slots looked at may need nothing: under the STM the test is first made on a read-only
    /// look (no copy, no write), and again in the section; under locks it is made once, with
    /// the lock held for both (where a `read` then a `section` would take it twice).
    pub fn update_if<R>(
        &self,
        key: usize,
        test: impl Fn(&T) -> bool,
        mut f: impl FnMut(&mut T) -> R,
    ) -> Option<R> {
        match &self.slots {
            #[cfg(feature = "stm")]
            Slots::Stm(_) => {
                if !self.read(key, &test) {
                    return None;
                }
                self.section(&[key], |v| test(v.get(key)).then(|| f(v.get_mut(key))))
            }
            #[cfg(feature = "locks")]
            Slots::Locks(mutexes) => {
                let mut slot = mutexes[key]
                    .lock()
                    .expect("a section panicked while holding this slot");
                let r = test(&slot).then(|| f(&mut slot));
                drop(slot);
                add_section(self.class, 1, 1, 1);
                r
            }
        }
    }

    /// Takes the table apart, handing each slot's value to `f` in key order: no section and
    /// no copy (the table is owned, so no other thread can hold a slot).
    pub fn into_each(self, mut f: impl FnMut(T)) {
        match self.slots {
            #[cfg(feature = "stm")]
            Slots::Stm(vars) => vars
                .into_iter()
                .for_each(|v| f(Arc::unwrap_or_clone(v.into_inner()))),
            #[cfg(feature = "locks")]
            Slots::Locks(mutexes) => mutexes.into_iter().for_each(|m| {
                f(m.into_inner()
                    .expect("a section panicked while holding this slot"))
            }),
        }
    }

    /// A consistent copy of every slot (one section over all keys; meant for checks and
    /// tests, it serialises with every other section).
    pub fn snapshot(&self) -> Vec<T> {
        let keys: Vec<usize> = (0..self.len()).collect();
        self.section(&keys, |v| keys.iter().map(|&k| v.get(k).clone()).collect())
    }
}

// Under loom the tables must live inside `loom::model`: these std-thread tests are for std builds.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn sections_see_and_change_only_their_keys() {
        for &b in Backend::COMPILED {
            let t = Table::new(b, 8, |i| i as u64 * 10);
            assert_eq!(t.backend(), b);
            assert_eq!(t.len(), 8);
            let r = t.section(&[5, 2, 5], |v| {
                assert_eq!(v.keys(), &[2, 5]);
                assert!(v.contains(2) && !v.contains(3));
                let s = *v.get(2) + *v.get(5);
                *v.get_mut(5) += 1;
                s
            });
            assert_eq!(r, 70);
            assert_eq!(t.snapshot(), vec![0, 10, 20, 30, 40, 51, 60, 70]);
            let mut all = Vec::new();
            t.into_each(|x| all.push(x));
            assert_eq!(all, vec![0, 10, 20, 30, 40, 51, 60, 70]);
        }
    }

    /// A filled table's slots start equal and change apart (under the STM they share one
    /// value until written).
    #[test]
    fn filled_slots_change_apart() {
        for &b in Backend::COMPILED {
            let t = Table::filled(b, 64, Class::Other, vec![1u64, 2]);
            t.section(&[3, 40], |v| {
                v.get_mut(3).push(3);
                v.get_mut(40).clear();
            });
            let all = t.snapshot();
            assert_eq!(
                (&all[3], &all[40], &all[4]),
                (&vec![1, 2, 3], &vec![], &vec![1, 2])
            );
            assert!(
                all.iter()
                    .enumerate()
                    .all(|(k, v)| k == 3 || k == 40 || v == &[1, 2])
            );
        }
    }

    #[test]
    fn update_if_changes_a_slot_only_when_its_test_holds() {
        for &b in Backend::COMPILED {
            let t = Table::new(b, 4, |i| i as u64);
            let odd = |x: &u64| x % 2 == 1;
            assert_eq!(t.update_if(2, odd, |x| std::mem::replace(x, 7)), None);
            assert_eq!(t.update_if(3, odd, |x| std::mem::replace(x, 8)), Some(3));
            assert_eq!(t.update_if(3, odd, |x| std::mem::replace(x, 9)), None);
            assert_eq!(t.snapshot(), vec![0, 1, 2, 8], "{b:?}");
        }
    }

    /// Many threads bump a counter slot through `update_if` while it is below a limit: it ends
    /// exactly at the limit (the test and the change are one section).
    #[test]
    fn update_if_tests_and_changes_atomically() {
        for &b in Backend::COMPILED {
            let t = Arc::new(Table::new(b, 1, |_| 0u64));
            let done: u64 = std::thread::scope(|s| {
                let hs: Vec<_> = (0..16)
                    .map(|_| {
                        let t = &t;
                        s.spawn(move || {
                            (0..200)
                                .filter(|_| t.update_if(0, |x| *x < 1000, |x| *x += 1).is_some())
                                .count() as u64
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).sum()
            });
            assert_eq!((done, t.snapshot()[0]), (1000, 1000), "{b:?}");
        }
    }

    #[test]
    #[should_panic(expected = "did not name")]
    fn touching_an_unnamed_key_panics() {
        let t = Table::new(Backend::default(), 4, |_| 0u8);
        t.section(&[1], |v| *v.get(2));
    }

    /// Transfers between random slot pairs from many threads; the total is audited inside
    /// sections over all keys, and it never changes.
    #[test]
    fn concurrent_transfers_conserve_the_total() {
        for &b in Backend::COMPILED {
            let t = Arc::new(Table::new(b, 16, |_| 1000i64));
            let before = super::super::stats();
            let handles: Vec<_> = (0..16u64)
                .map(|seed| {
                    let t = t.clone();
                    std::thread::spawn(move || {
                        let mut rng = crate::scene::SplitMix64::new(seed);
                        for i in 0..300 {
                            let a = (rng.next_u64() % 16) as usize;
                            let c = (rng.next_u64() % 16) as usize;
                            if i % 50 == 0 {
                                let all: Vec<usize> = (0..16).rev().collect();
                                let sum: i64 =
                                    t.section(&all, |v| all.iter().map(|&k| *v.get(k)).sum());
                                assert_eq!(sum, 16_000);
                            }
                            t.section(&[a, c], |v| {
                                *v.get_mut(a) -= 7;
                                *v.get_mut(c) += 7;
                            });
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
            assert_eq!(t.snapshot().iter().sum::<i64>(), 16_000);
            let s = super::super::stats().since(&before);
            assert!(s.sections >= 16 * 306);
            assert!(s.attempts >= s.sections);
        }
    }
}
