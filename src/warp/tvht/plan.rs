//! # Plans: which buckets a request names
//!
//! A section of the seam names its keys up front (seed 000, Algorithm 1: the lock build sorts
//! them and locks them all in order; the STM reads them all first). So before its section, a
//! write or delete request is checked and **planned**: each body's box at each step gives its
//! cells ([`Tvht::cell_range`], which refuses bad boxes), and the cells at that tick's slice
//! give the distinct buckets the section must name (with sleep records, also the distinct
//! sleep buckets of the cells). A body whose cells and slice stay the same from one step to
//! the next keeps its plan, so a batch of consecutive ticks has a plan per slice or cell
//! change, not per tick; most steps are told to keep it by comparisons alone
//! ([`Plan::keeps`]). A request that names a body twice at a tick is refused here, before any
//! section.
//!
//! Invariants: a plan's buckets are exactly the distinct buckets of its cells at its slice;
//! [`Plan::keeps`] holds only for a box whose cells are the plan's (exact while cell
//! coordinates are below 2^24, and false beyond); plans are numbered in order of first use;
//! [`Planned::sorted`] is the section's key list and [`Planned::at`] maps each of a plan's keys
//! to its position there.

use super::cells::{Cell, cells};
use super::write::{WriteBuffers, emptied};
use super::{BodyId, Step, Tick, Tvht, TvhtError};
use crate::geometry::Aabb;

/// Appends the distinct values of `new` to `keys`, sorted; returns their range.
pub(super) fn push_distinct(
    keys: &mut Vec<usize>,
    new: impl Iterator<Item = usize>,
) -> std::ops::Range<usize> {
    let start = keys.len();
    keys.extend(new);
    let mine = &mut keys[start..];
    mine.sort_unstable();
    let mut n = 0;
    for i in 0..mine.len() {
        if i == 0 || mine[i] != mine[n - 1] {
            mine[n] = mine[i];
            n += 1;
        }
    }
    keys.truncate(start + n);
    start..start + n
}

/// The cells of one body's box at one tick and the distinct buckets they hash to: sorted,
/// `keys[buckets]` of the request's flat key list ([`Planned::keys`]).
#[derive(Clone)]
pub(super) struct Plan {
    pub(super) body: BodyId,
    pub(super) lo: Cell,
    pub(super) hi: Cell,
    /// `lo` and `hi` as floats, when every coordinate is below 2^24 in magnitude (so they
    /// and the next integers are exact): see [`Plan::keeps`].
    cells_f: Option<(glam::Vec3, glam::Vec3)>,
    pub(super) slice: Tick,
    pub(super) buckets: std::ops::Range<usize>,
    /// The distinct sleep buckets of its cells (empty without sleep records).
    pub(super) sleep: std::ops::Range<usize>,
}

impl Plan {
    /// Whether a box whose corners over the cell side are `smin <= smax` (as
    /// [`Tvht::cell_range`] scales them) covers exactly this plan's cells: `floor(smin) = lo`
    /// and `floor(smax) = hi` per axis, tested as `lo <= smin < lo + 1` (and the same for `hi`),
    /// which is exact while the cells' coordinates are below 2^24. Such a box passes every
    /// check of `cell_range` (its corners are finite and within the bounds, and its cells are
    /// this plan's, already counted): a body that stays in its cells, tick after tick, is then
    /// planned with comparisons alone. A NaN fails every comparison.
    #[inline]
    fn keeps(&self, b: &Aabb, smin: glam::Vec3, smax: glam::Vec3) -> bool {
        let Some((lo, hi)) = self.cells_f else {
            return false;
        };
        let one = glam::Vec3::ONE;
        b.min.cmple(b.max).all()
            & smin.cmpge(lo).all()
            & smin.cmplt(lo + one).all()
            & smax.cmpge(hi).all()
            & smax.cmplt(hi + one).all()
    }
}

/// A checked request: its distinct plans, each body's plan at each step, the flat list of
/// the plans' buckets, and the request's (tick, body) pairs, sorted. A body whose cells and
/// time slice stay the same from one step to the next keeps its plan: a batch of consecutive
/// ticks has a plan per time slice or cell change, not per tick.
#[derive(Default)]
pub(super) struct Planned {
    /// The distinct plans, in order of first use.
    plans: Vec<Plan>,
    /// For each body of each step, in request order (step by step): its plan in `plans`.
    uses: Vec<u32>,
    pub(super) keys: Vec<usize>,
    pub(super) seen: Vec<(Tick, BodyId)>,
    /// The request's distinct keys, sorted: the section's [`View::keys`].
    pub(super) sorted: Vec<usize>,
    /// For each of `keys`, its position in `sorted` (for [`View::at`]: no search per look).
    pub(super) at: Vec<usize>,
}

impl Planned {
    /// The plans of each step (indices into `plans`, one per body), in order, zipped with the
    /// steps.
    pub(super) fn per_step<'p, 's>(
        &'p self,
        steps: &'p [Step<'s>],
    ) -> impl Iterator<Item = (&'p Step<'s>, &'p [u32])> + 'p {
        let mut at = 0;
        steps.iter().map(move |s| {
            let ps = &self.uses[at..at + s.bodies.len()];
            at += s.bodies.len();
            (s, ps)
        })
    }

    /// Plan `i`.
    #[inline]
    pub(super) fn plan(&self, i: u32) -> &Plan {
        &self.plans[i as usize]
    }

    /// The distinct buckets of a plan.
    pub(super) fn buckets(&self, p: &Plan) -> &[usize] {
        &self.keys[p.buckets.clone()]
    }

    /// The view positions of a plan's distinct buckets.
    pub(super) fn slots(&self, p: &Plan) -> &[usize] {
        &self.at[p.buckets.clone()]
    }

    /// The view positions of a plan's distinct sleep buckets.
    pub(super) fn sleep_slots(&self, p: &Plan) -> &[usize] {
        &self.at[p.sleep.clone()]
    }

    /// The distinct sleep buckets of a plan.
    pub(super) fn sleep_buckets(&self, p: &Plan) -> &[usize] {
        &self.keys[p.sleep.clone()]
    }

    /// Every plan of the request.
    pub(super) fn plans(&self) -> &[Plan] {
        &self.plans
    }

    /// The plans used by the first `n` bodies of the request (in request order): plans are
    /// numbered in order of first use, so these are a prefix of `plans`.
    pub(super) fn used_by_first(&self, n: usize) -> &[Plan] {
        let last = self.uses[..n].iter().max().map_or(0, |&i| i as usize + 1);
        &self.plans[..last]
    }
}

impl Tvht {
    /// Appends the distinct buckets of the cells `lo ..= hi` of `body` at `tick` to `keys`
    /// (sorted) and returns their plan.
    fn plan_into(
        &self,
        body: BodyId,
        tick: Tick,
        (lo, hi): (Cell, Cell),
        keys: &mut Vec<usize>,
    ) -> Plan {
        let slice = tick >> self.span_shift;
        let buckets = push_distinct(keys, cells(lo, hi).map(|c| self.bucket_of(c, tick)));
        let sleep = if self.sleep {
            push_distinct(keys, cells(lo, hi).map(|c| self.sleep_slot(c)))
        } else {
            keys.len()..keys.len()
        };
        const EXACT: i32 = 1 << 24;
        let exact = lo.iter().chain(&hi).all(|&c| c.abs() < EXACT);
        let float = |c: Cell| glam::Vec3::new(c[0] as f32, c[1] as f32, c[2] as f32);
        Plan {
            body,
            lo,
            hi,
            cells_f: exact.then(|| (float(lo), float(hi))),
            slice,
            buckets,
            sleep,
        }
    }

    /// The distinct buckets of a body's box at `tick`, sorted.
    pub(super) fn plan_buckets(
        &self,
        body: BodyId,
        tick: Tick,
        b: &Aabb,
    ) -> Result<Vec<usize>, TvhtError> {
        let mut keys = Vec::new();
        let p = self.plan_into(body, tick, self.cell_range(body, tick, b)?, &mut keys);
        keys.truncate(p.buckets.end);
        Ok(keys)
    }

    /// Checks a request and plans its buckets: one plan per body per step, and all keys.
    /// Writes below the floor are refused; deletes there are allowed (the entries may be
    /// gone, which is then reported as `NotFound`).
    /// Also returns the request's (tick, body) pairs, sorted.
    pub(super) fn plan_steps(
        &self,
        steps: &[Step<'_>],
        check_floor: bool,
        bufs: &mut WriteBuffers,
    ) -> Result<Planned, TvhtError> {
        let floor = self.floor();
        let bodies: usize = steps.iter().map(|s| s.bodies.len()).sum();
        let mut seen = emptied(&mut bufs.planned.seen);
        seen.reserve(bodies);
        let mut plans = emptied(&mut bufs.planned.plans);
        let mut uses = emptied(&mut bufs.planned.uses);
        uses.reserve(bodies);
        let mut keys = emptied(&mut bufs.planned.keys);
        // The plan of the body at each place of the step before.
        let mut prev = emptied(&mut bufs.prev);
        for s in steps {
            if check_floor && s.tick < floor {
                return Err(TvhtError::BehindFloor {
                    tick: s.tick,
                    floor,
                });
            }
            let slice = s.tick >> self.span_shift;
            for (j, b) in s.bodies.iter().enumerate() {
                // The same body in the same cells and time slice as at the step before: the
                // same buckets. Most steps are, and are told by comparisons alone
                // ([`Plan::keeps`]: `cell_range` for every box, its casts checked for NaN and
                // saturated, was 7% of a `parallel` run's instructions).
                let (smin, smax) = (self.scaled(b.aabb.min), self.scaled(b.aabb.max));
                let before = prev.get(j).copied().filter(|&i| {
                    let p = &plans[i as usize];
                    p.body == b.body && p.slice == slice
                });
                let plan = match before {
                    Some(i) if plans[i as usize].keeps(&b.aabb, smin, smax) => i,
                    _ => {
                        let (lo, hi) = self.cell_range(b.body, s.tick, &b.aabb)?;
                        match before {
                            Some(i) if (plans[i as usize].lo, plans[i as usize].hi) == (lo, hi) => {
                                i
                            }
                            _ => {
                                plans.push(self.plan_into(b.body, s.tick, (lo, hi), &mut keys));
                                (plans.len() - 1) as u32
                            }
                        }
                    }
                };
                if j < prev.len() {
                    prev[j] = plan;
                } else {
                    prev.push(plan);
                }
                uses.push(plan);
                seen.push((s.tick, b.body));
            }
        }
        if seen.len() > 1 {
            // In tick order already for one body (steps are consecutive ticks).
            if !seen.is_sorted() {
                seen.sort_unstable();
            }
            if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
                return Err(TvhtError::Duplicate {
                    body: w[0].1,
                    tick: w[0].0,
                });
            }
        }
        bufs.prev = prev;
        let mut sorted = emptied(&mut bufs.planned.sorted);
        sorted.extend_from_slice(&keys);
        sorted.sort_unstable();
        sorted.dedup();
        let mut at = emptied(&mut bufs.planned.at);
        at.extend(
            keys.iter()
                .map(|k| sorted.binary_search(k).expect("a key of the request")),
        );
        Ok(Planned {
            plans,
            uses,
            keys,
            seen,
            sorted,
            at,
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::TvhtConfig;
    use super::super::cells::GRID_OFFSET;
    use super::*;
    use crate::sync::Backend;
    use glam::Vec3;

    /// `Plan::keeps` (the planning shortcut) says yes exactly when `cell_range` would give the
    /// plan's cells: boxes on, just off and between cell boundaries, near 2^24 cells (where
    /// floats stop being exact), beyond it, inverted and NaN, for three cell sides.
    #[test]
    fn a_plan_keeps_exactly_the_boxes_that_cover_its_cells() {
        let mut rng = crate::scene::SplitMix64::new(24);
        let bases: [i64; 12] = [
            0,
            -1,
            1,
            7,
            -8,
            (1 << 24) - 3,
            (1 << 24) - 1,
            -(1 << 24) + 1,
            1 << 24,
            -(1 << 24) - 2,
            (1 << 25) + 6,
            1000,
        ];
        let fractions = [0.0f32, 1e-7, 0.25, 0.5, 0.999_999, 1.0, -1e-7];
        let extents = [0.0f32, 1e-6, 0.3, 0.999, 1.0, 1.7];
        let (mut kept, mut told) = (0, 0);
        let shapes = [1.0f32, 0.7, 3.0].map(|c| [(c, 0.0), (c, GRID_OFFSET)]);
        for (cell_size, grid_offset) in shapes.into_iter().flatten() {
            let t = Tvht::new(
                Backend::default(),
                TvhtConfig {
                    buckets: 64,
                    cell_size,
                    max_cells_per_body: 64,
                    span_ticks: 4,
                    grid_offset,
                    sleep_records: false,
                },
            )
            .unwrap();
            let mut pick = |n: usize| (rng.next_u64() % n as u64) as usize;
            let corner = |pick: &mut dyn FnMut(usize) -> usize| {
                let base = bases[pick(bases.len())];
                // (Cell `k` starts at `k - grid_offset` cells.)
                let c = (base as f32 + fractions[pick(fractions.len())] - grid_offset) * cell_size;
                // One ulp either side, sometimes.
                match pick(3) {
                    0 => c.next_down(),
                    1 => c.next_up(),
                    _ => c,
                }
            };
            let mut boxes = Vec::new();
            for _ in 0..4000 {
                let min = Vec3::new(corner(&mut pick), corner(&mut pick), corner(&mut pick));
                let ext = Vec3::new(
                    extents[pick(extents.len())],
                    extents[pick(extents.len())],
                    extents[pick(extents.len())],
                ) * cell_size;
                let mut b = Aabb {
                    min,
                    max: min + ext,
                };
                match pick(40) {
                    0 => b.min.y = f32::NAN,
                    1 => b.max.z = f32::NAN,
                    2 => std::mem::swap(&mut b.min, &mut b.max),
                    _ => {}
                }
                boxes.push(b);
            }
            let mut keys = Vec::new();
            for w in boxes.windows(2) {
                let from = w[0];
                let Ok(cells) = t.cell_range(1, 0, &from) else {
                    continue;
                };
                keys.clear();
                let p = t.plan_into(1, 0, cells, &mut keys);
                // Against the next box, the box itself, or a box with corners on, or an ulp
                // off, the boundaries of the plan's cells (inverted or NaN now and then).
                let b = match pick(3) {
                    0 => w[1],
                    1 => from,
                    _ => {
                        let mut near = |c: i32| {
                            let f = [0.0f32, 1.0, 0.5, 2.0, -1.0][pick(5)];
                            let x = (c as f32 + f - grid_offset) * cell_size;
                            [x, x.next_down(), x.next_up()][pick(3)]
                        };
                        let mut b = Aabb {
                            min: Vec3::new(near(p.lo[0]), near(p.lo[1]), near(p.lo[2])),
                            max: Vec3::new(near(p.hi[0]), near(p.hi[1]), near(p.hi[2])),
                        };
                        match pick(20) {
                            0 => std::mem::swap(&mut b.min.x, &mut b.max.x),
                            1 => b.max.x = f32::NAN,
                            _ => {}
                        }
                        b
                    }
                };
                let (smin, smax) = (t.scaled(b.min), t.scaled(b.max));
                let keeps = p.keeps(&b, smin, smax);
                let range = t.cell_range(1, 0, &b);
                if keeps {
                    kept += 1;
                    assert_eq!(range, Ok((p.lo, p.hi)), "kept {b:?} for {from:?}");
                }
                if p.cells_f.is_some() && range == Ok((p.lo, p.hi)) {
                    told += 1;
                    assert!(keeps, "did not keep {b:?} for {from:?}");
                }
            }
        }
        // Both ways were met, many times.
        assert!(kept > 1000 && told == kept, "kept {kept}, told {told}");
    }
}
