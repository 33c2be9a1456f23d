//! Broad phase: sort and sweep over two sets.
//!
//! The broad phase finds every pair of bodies whose (inflated) AABBs overlap, cheaply, so the
//! narrow phase only sees pairs that may touch. Bodies fall into two sets: *moving* (awake dynamic
//! bodies, whose boxes change every step) and *resting* (static bodies other than planes, and
//! sleeping bodies, whose boxes do not change). Both are sorted by the lower x bound of their
//! boxes; a sweep over the moving set finds moving-moving pairs (a box can only overlap the boxes
//! that start before its upper x bound), and a merged sweep of the two sorted sets finds
//! moving-resting pairs. Resting-resting pairs are never searched: two sleeping bodies keep the
//! contact they had when they fell asleep (Box2D v3, seed 002: sleeping islands cost nothing), and
//! static bodies never touch each other. The resting set is re-sorted only when it changes; the
//! moving set is kept between steps in its last order and re-sorted by insertion sort, which costs
//! little more than a pass when bodies move a little per step (temporal coherence).
//!
//! Sorting uses the key `(min.x, body id)`, a total order, so the output is the same whatever the
//! thread count; the pairs are returned as sorted keys `a << 32 | b` with `a < b`.

use crate::geometry::Aabb;

/// A body's box in a sorted set.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct Entry {
    aabb: Aabb,
    id: u32,
}

/// The broad phase's sorted sets, kept between steps.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct BroadPhase {
    moving: Vec<Entry>,
    resting: Vec<Entry>,
    /// Whether a body is in `moving`.
    present: Vec<bool>,
    // Scratch of one call, no state between steps (nor in a checkpoint).
    #[serde(skip)]
    added: Vec<Entry>,
    #[serde(skip)]
    merged: Vec<Entry>,
    #[serde(skip)]
    slabbed: Vec<(u32, Entry)>,
    #[serde(skip)]
    slab_entries: Vec<Entry>,
}

#[inline]
fn overlaps_yz(a: &Aabb, b: &Aabb) -> bool {
    a.min.y <= b.max.y && b.min.y <= a.max.y && a.min.z <= b.max.z && b.min.z <= a.max.z
}

#[inline]
fn key(a: u32, b: u32) -> u64 {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    ((lo as u64) << 32) | hi as u64
}

/// Pairs between two x-sorted lists (each pair once): the merged sweep.
fn cross_sweep(mv: &[Entry], rs: &[Entry], out: &mut Vec<u64>) {
    let (mut i, mut j) = (0, 0);
    while i < mv.len() && j < rs.len() {
        if mv[i].aabb.min.x <= rs[j].aabb.min.x {
            let a = &mv[i];
            for b in &rs[j..] {
                if b.aabb.min.x > a.aabb.max.x {
                    break;
                }
                if overlaps_yz(&a.aabb, &b.aabb) {
                    out.push(key(a.id, b.id));
                }
            }
            i += 1;
        } else {
            let b = &rs[j];
            for a in &mv[i..] {
                if a.aabb.min.x > b.aabb.max.x {
                    break;
                }
                if overlaps_yz(&a.aabb, &b.aabb) {
                    out.push(key(a.id, b.id));
                }
            }
            j += 1;
        }
    }
}

/// Pairs within one x-sorted list.
fn self_sweep(mv: &[Entry], out: &mut Vec<u64>) {
    for (i, a) in mv.iter().enumerate() {
        for b in &mv[i + 1..] {
            if b.aabb.min.x > a.aabb.max.x {
                break;
            }
            if overlaps_yz(&a.aabb, &b.aabb) {
                out.push(key(a.id, b.id));
            }
        }
    }
}

#[inline]
fn before_order(a: &Entry, b: &Entry) -> std::cmp::Ordering {
    a.aabb.min.x.total_cmp(&b.aabb.min.x).then(a.id.cmp(&b.id))
}

#[inline]
fn before(a: &Entry, b: &Entry) -> bool {
    a.aabb.min.x < b.aabb.min.x || (a.aabb.min.x == b.aabb.min.x && a.id < b.id)
}

/// Insertion sort: linear on nearly sorted input.
fn insertion_sort(v: &mut [Entry]) {
    for i in 1..v.len() {
        let e = v[i];
        let mut j = i;
        while j > 0 && before(&e, &v[j - 1]) {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = e;
    }
}

fn sort(v: &mut [Entry]) {
    v.sort_unstable_by(|a, b| a.aabb.min.x.total_cmp(&b.aabb.min.x).then(a.id.cmp(&b.id)));
}

impl BroadPhase {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether every body the sets name is below `n` (a restored state fits its scene).
    pub fn fits(&self, n: usize) -> bool {
        self.present.len() <= n
            && self
                .moving
                .iter()
                .chain(&self.resting)
                .all(|e| (e.id as usize) < n)
    }

    /// Replaces the resting set with `ids` (their boxes in `aabbs`).
    pub fn set_resting(&mut self, ids: impl Iterator<Item = u32>, aabbs: &[Aabb]) {
        self.resting.clear();
        self.resting.extend(ids.map(|id| Entry {
            aabb: aabbs[id as usize],
            id,
        }));
        sort(&mut self.resting);
    }

    /// Finds the overlapping pairs among the moving bodies (`moving[i]`) and between them and the
    /// resting set, appending distinct keys to `out` (cleared first; unsorted).
    pub fn find_pairs(&mut self, moving: &[bool], aabbs: &[Aabb], out: &mut Vec<u64>) {
        out.clear();
        let n = moving.len();
        self.present.resize(n, false);
        let present = &mut self.present;
        self.moving.retain_mut(|e| {
            if moving[e.id as usize] {
                e.aabb = aabbs[e.id as usize];
                true
            } else {
                present[e.id as usize] = false;
                false
            }
        });
        insertion_sort(&mut self.moving);
        self.added.clear();
        for (i, &m) in moving.iter().enumerate() {
            if m && !present[i] {
                present[i] = true;
                self.added.push(Entry {
                    aabb: aabbs[i],
                    id: i as u32,
                });
            }
        }
        if !self.added.is_empty() {
            sort(&mut self.added);
            self.merged.clear();
            let (mut i, mut j) = (0, 0);
            let (a, b) = (&self.moving, &self.added);
            while i < a.len() || j < b.len() {
                if j == b.len() || (i < a.len() && before(&a[i], &b[j])) {
                    self.merged.push(a[i]);
                    i += 1;
                } else {
                    self.merged.push(b[j]);
                    j += 1;
                }
            }
            std::mem::swap(&mut self.moving, &mut self.merged);
        }
        self.moving_pairs(out);
        cross_sweep(&self.moving, &self.resting, out);
    }

    /// Moving-moving pairs. A single sweep along x meets every body whose x interval overlaps,
    /// whatever its z, which is quadratic for a pile seen from above; so the moving bodies are
    /// also cut into slabs along z as wide as the widest box, sorted by (slab, x), and swept
    /// within a slab and against the next slab only (a box cannot reach two slabs further).
    fn moving_pairs(&mut self, out: &mut Vec<u64>) {
        let mv = &self.moving;
        if mv.len() < 64 {
            self_sweep(mv, out);
            return;
        }
        let mut width = 0.0f32;
        let mut z0 = f32::MAX;
        for e in mv {
            width = width.max(e.aabb.max.z - e.aabb.min.z);
            z0 = z0.min(e.aabb.min.z);
        }
        if !(width > 0.0 && width.is_finite() && z0.is_finite()) {
            self_sweep(mv, out);
            return;
        }
        self.slabbed.clear();
        self.slabbed.extend(mv.iter().map(|e| {
            let slab = ((e.aabb.min.z - z0) / width).min(u32::MAX as f32) as u32;
            (slab, *e)
        }));
        self.slabbed
            .sort_unstable_by(|(sa, a), (sb, b)| sa.cmp(sb).then_with(|| before_order(a, b)));
        self.slab_entries.clear();
        self.slab_entries
            .extend(self.slabbed.iter().map(|&(_, e)| e));
        let mut start = 0;
        while start < self.slabbed.len() {
            let slab = self.slabbed[start].0;
            let mut end = start;
            while end < self.slabbed.len() && self.slabbed[end].0 == slab {
                end += 1;
            }
            let here = &self.slab_entries[start..end];
            self_sweep(here, out);
            let mut next_end = end;
            while next_end < self.slabbed.len() && self.slabbed[next_end].0 == slab + 1 {
                next_end += 1;
            }
            if next_end > end {
                cross_sweep(here, &self.slab_entries[end..next_end], out);
            }
            start = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;

    /// A tiny deterministic generator for the test boxes.
    fn lcg(s: &mut u64) -> f32 {
        *s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*s >> 40) as f32) / (1u64 << 24) as f32
    }

    #[test]
    fn matches_brute_force() {
        let mut s = 42;
        let n = 300;
        let aabbs: Vec<Aabb> = (0..n)
            .map(|_| {
                let c = Vec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * 10.0;
                let h = Vec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * 0.8 + Vec3::splat(0.05);
                Aabb::from_center_half(c, h)
            })
            .collect();
        // Bodies 0..100 rest, 100.. move.
        let mut bp = BroadPhase::new();
        bp.set_resting(0..100u32, &aabbs);
        let mut out = Vec::new();
        let mut moving: Vec<bool> = (0..n).map(|i| i >= 100).collect();
        bp.find_pairs(&moving, &aabbs, &mut out);
        out.sort_unstable();
        let mut expect = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                if b >= 100 && aabbs[a].overlaps(&aabbs[b]) {
                    expect.push(key(a as u32, b as u32));
                }
            }
        }
        assert!(!expect.is_empty());
        assert_eq!(out, expect);
        // Next step: boxes moved a little, some stopped moving, and the set stays consistent.
        let moved: Vec<Aabb> = aabbs
            .iter()
            .map(|b| {
                let d = Vec3::new(lcg(&mut s) - 0.5, lcg(&mut s) - 0.5, lcg(&mut s) - 0.5) * 0.3;
                Aabb::new(b.min + d, b.max + d)
            })
            .collect();
        for m in moving.iter_mut().skip(250) {
            *m = false;
        }
        bp.find_pairs(&moving, &moved, &mut out);
        out.sort_unstable();
        let mut expect = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                let ma = (100..250).contains(&a);
                let mb = (100..250).contains(&b);
                if (ma || mb)
                    && b < 250
                    && moved_or(a, &aabbs, &moved).overlaps(&moved_or(b, &aabbs, &moved))
                {
                    expect.push(key(a as u32, b as u32));
                }
            }
        }
        assert_eq!(out, expect);
    }

    /// Resting boxes keep their old bounds (the resting set was not refreshed).
    fn moved_or(i: usize, old: &[Aabb], new: &[Aabb]) -> Aabb {
        if (100..250).contains(&i) {
            new[i]
        } else {
            old[i]
        }
    }
}
