//! # Cells, time slices and buckets: where a box goes
//!
//! The spatial hash of seed 000 (Koenig, Karamouzas and Guy, Section 4), with time hashed in
//! too. Space is cut into cubic **cells** of side `cell_size` (by default twice the largest
//! side of any dynamic body's box, so a body covers one or two cells per axis), offset by a
//! fraction `o` of a cell from the origin ([`GRID_OFFSET`]). A body's box at a tick covers the
//! cells `lo ..= hi`, `lo = floor(min / s + o)`, `hi = floor(max / s + o)` per axis. The pair
//! (cell, slice), where a **slice** is `span_ticks` consecutive ticks (`tick / span_ticks`), is
//! hashed to one of a fixed, power-of-two number of buckets.
//!
//! Hashing time too (the paper hashes the cell only) keeps buckets short, and makes entities
//! far apart in time touch different buckets, which is the point of a *temporal* table: "the
//! TVHT does not synchronize entities which are sufficiently separated in space or time"
//! (Section 3). Hashing the slice rather than the tick lets an entity that writes a batch of
//! consecutive ticks touch a few buckets, not one per tick: with the STM every bucket of a
//! section is copied and validated, and with locks each is a mutex. Sleep records, constant
//! over their interval, and span records, one for a whole flight, are hashed by space alone,
//! into the table's second half ([`Tvht::sleep_slot`]), and by a coarser cell: the *record
//! cell* of a cell, the cell of twice the side that holds it ([`RECORD_SHIFT`]; `>>` floors
//! negative coordinates too). Every record-half computation — where a record is copied, which
//! bucket owns a pair, the marks of a cell — goes through the record bucket of a cell, so the
//! argument below holds for it unchanged: the owner cell is covered by both boxes, so its
//! record cell is too.
//!
//! The **owner cell** of two boxes is the componentwise maximum of their `lo` cells: the cell
//! of the lowest corner of their intersection. When the boxes overlap, both cover it
//! (`lo_b <= hi_a` follows from `min_b <= max_a` and the monotonicity of `floor`), so both
//! entries are in its bucket: that bucket alone reports and records the pair ("Exactly once"
//! in the module documentation of `tvht`).
//!
//! Invariants: every box the table stores is finite, ordered (`min <= max`), within ±2^30
//! cells of the origin and covers at most `max_cells_per_body` cells ([`Tvht::cell_range`]
//! refuses the others), so its cell coordinates, their hash and [`floor_i32`] are exact;
//! nothing else bounds the world. A bucket is a pure function of the cell and the tick's slice.

use super::{BodyId, Tick, Tvht, TvhtEntry, TvhtError};
use crate::geometry::Aabb;

/// Cell coordinates beyond this magnitude are refused (their hash inputs stay exact).
const MAX_CELL_COORD: f32 = (1u32 << 30) as f32;

/// The grid offset of [`TvhtConfig::for_scene`](super::TvhtConfig::for_scene) (see
/// [`TvhtConfig::grid_offset`](super::TvhtConfig::grid_offset)): cell boundaries at
/// `(k - 0.382) * cell_size`, not on the multiples of the cell size. Scenes put bodies at round
/// coordinates (a ground at y = 0, a row along an axis, unit boxes on integer heights), and a
/// boundary there splits each such box, grown by its margin, across two cells on that axis:
/// twice the buckets for each of its writes. 0.382 (1 - 1/φ, the fraction least near any
/// simple one) keeps boundaries off them. Measured in `docs/results.md`, "2026-11-30".
pub const GRID_OFFSET: f32 = 0.381_966;

/// The record half hashes *record cells* of `2^RECORD_SHIFT` cells a side (see the module
/// documentation): a record there is a span or a sleep record, and a span's box is long, so
/// in cells of twice the side it is copied into about half as many buckets, each holding more.
/// Chosen by measurement among 1, 2 and 4 cells a side (`docs/results.md`, "2026-11-29,
/// evening").
pub(super) const RECORD_SHIFT: i32 = 1;

pub(super) type Cell = [i32; 3];

/// The cells `lo ..= hi`, x outermost.
pub(super) fn cells(lo: Cell, hi: Cell) -> Cells {
    Cells {
        lo,
        hi,
        next: (lo[0] <= hi[0] && lo[1] <= hi[1] && lo[2] <= hi[2]).then_some(lo),
    }
}

/// The iterator of [`cells`]: a counter over three axes (nested `flat_map`s kept the state of
/// three iterators, and planning a body's cells cost about a thousand instructions).
pub(super) struct Cells {
    lo: Cell,
    hi: Cell,
    next: Option<Cell>,
}

impl Iterator for Cells {
    type Item = Cell;

    #[inline]
    fn next(&mut self) -> Option<Cell> {
        let c = self.next?;
        let mut n = c;
        self.next = 'step: {
            for axis in (0..3).rev() {
                if n[axis] < self.hi[axis] {
                    n[axis] += 1;
                    break 'step Some(n);
                }
                n[axis] = self.lo[axis];
            }
            None
        };
        Some(c)
    }
}

/// `x.floor() as i32` for `|x| < 2^30`, without a call: `f32::floor` is a libm call on the
/// baseline x86-64 target (no SSE4.1 `roundss`), and three per box corner were 3.5% of the
/// instructions of a `parallel` run. Truncation rounds toward zero; one less for a negative
/// `x` with a fraction. (`trunc(x)` of an `f32` is an `f32`, so the comparison is exact.)
#[inline]
fn floor_i32(x: f32) -> i32 {
    let t = x as i32;
    t - i32::from(x < t as f32)
}

/// A cell's coordinates, mixed into one word (before [`mix`]).
#[inline]
fn cell_hash(c: Cell) -> u64 {
    (c[0] as u32 as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (c[1] as u32 as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
        ^ (c[2] as u32 as u64).wrapping_mul(0x1656_67b1_9e37_79f9)
}

#[inline]
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl Tvht {
    /// The bucket of a (cell, tick): the hash of the cell and the tick's slice.
    #[inline]
    pub(super) fn bucket_of(&self, c: Cell, tick: Tick) -> usize {
        let tick = tick >> self.span_shift;
        (mix(cell_hash(c) ^ tick.wrapping_mul(0xd6e8_feb8_6659_fd93)) & self.mask) as usize
    }

    /// The record bucket of a cell (sleep records, spans and their contacts): the hash of its
    /// *record cell* ([`RECORD_SHIFT`]), in the table's second half.
    #[inline]
    pub(super) fn sleep_slot(&self, c: Cell) -> usize {
        let r = [
            c[0] >> RECORD_SHIFT,
            c[1] >> RECORD_SHIFT,
            c[2] >> RECORD_SHIFT,
        ];
        (mix(cell_hash(r) ^ 0x5bd1_e995) & self.mask) as usize + self.buckets()
    }

    /// The owner cell of two boxes: the componentwise maximum of their lowest cells.
    #[inline]
    pub(super) fn owner_cell(&self, a: &Aabb, b: &Aabb) -> Cell {
        self.owner_cell_from(self.lo_of(a), b)
    }

    /// [`Tvht::owner_cell`] of a box whose lowest cell is `lo` (computed once for a box met
    /// with many) and box `b`.
    #[inline]
    pub(super) fn owner_cell_from(&self, lo: Cell, b: &Aabb) -> Cell {
        let b = self.lo_of(b);
        [lo[0].max(b[0]), lo[1].max(b[1]), lo[2].max(b[2])]
    }

    /// The owner bucket of a pair.
    pub(super) fn owner(&self, x: &TvhtEntry, y: &TvhtEntry) -> usize {
        self.bucket_of(self.owner_cell(&x.aabb, &y.aabb), x.tick)
    }

    /// The cell of a point whose coordinates, over the cell side, are below 2^30 in
    /// magnitude (`cell_range` checks it for every box written).
    #[inline]
    fn cell_of(&self, v: glam::Vec3) -> Cell {
        let s = self.scaled(v);
        [floor_i32(s.x), floor_i32(s.y), floor_i32(s.z)]
    }

    /// A point in cell units: its cell is the floor of each coordinate (the grid is offset by
    /// [`TvhtConfig::grid_offset`](super::TvhtConfig::grid_offset) of a cell). Monotone in each
    /// coordinate, as rounding is.
    #[inline]
    pub(super) fn scaled(&self, v: glam::Vec3) -> glam::Vec3 {
        v * self.inv_cell + glam::Vec3::splat(self.grid_offset)
    }

    /// The lowest cell of a stored box (stored boxes were checked when written).
    #[inline]
    pub(super) fn lo_of(&self, b: &Aabb) -> Cell {
        self.cell_of(b.min)
    }

    /// The checked cell range of a box.
    pub(super) fn cell_range(
        &self,
        body: BodyId,
        tick: Tick,
        b: &Aabb,
    ) -> Result<(Cell, Cell), TvhtError> {
        let (smin, smax) = (self.scaled(b.min), self.scaled(b.max));
        // Finite, ordered, and within ±2^30 cells, in three comparisons: NaN fails each, an
        // infinite corner fails the bound, and `min <= max` carries each bound to the other
        // corner (scaling by `inv_cell > 0` and adding the offset keep the order).
        let limit = glam::Vec3::splat(MAX_CELL_COORD);
        if !(b.min.cmple(b.max).all() && smin.cmpgt(-limit).all() && smax.cmplt(limit).all()) {
            return Err(TvhtError::BadAabb { body, tick });
        }
        let lo = [floor_i32(smin.x), floor_i32(smin.y), floor_i32(smin.z)];
        let hi = [floor_i32(smax.x), floor_i32(smax.y), floor_i32(smax.z)];
        // A side is at most 2^31 cells, so three make up to 2^93: counted in u128 (in u64 the
        // product wrapped, and 2^64 cells passed for none).
        let cells: u128 = (0..3).map(|i| (hi[i] - lo[i]) as u128 + 1).product();
        if cells > self.max_cells as u128 {
            return Err(TvhtError::TooManyCells {
                body,
                tick,
                cells: u64::try_from(cells).unwrap_or(u64::MAX),
                max: self.max_cells,
            });
        }
        Ok((lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cells` lists the cells of a range as three nested loops do, x outermost, and none of
    /// an empty range.
    #[test]
    fn cells_lists_a_range_as_nested_loops_do() {
        let mut rng = crate::scene::SplitMix64::new(3);
        for _ in 0..500 {
            let mut corner = || {
                let mut c = [0i32; 3];
                for v in &mut c {
                    *v = (rng.next_u64() % 7) as i32 - 3;
                }
                c
            };
            let (lo, hi) = (corner(), corner());
            let mut want = Vec::new();
            for x in lo[0]..=hi[0] {
                for y in lo[1]..=hi[1] {
                    for z in lo[2]..=hi[2] {
                        want.push([x, y, z]);
                    }
                }
            }
            assert_eq!(cells(lo, hi).collect::<Vec<_>>(), want, "{lo:?} ..= {hi:?}");
        }
        let top = 1 << 30;
        assert_eq!(cells([top - 1; 3], [top; 3]).count(), 8);
    }

    #[test]
    fn floor_i32_is_floor_below_two_to_the_thirty() {
        let edge = MAX_CELL_COORD - 64.0;
        let mut xs = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            2.999_999_8,
            -2.999_999_8,
            edge,
            -edge,
        ];
        xs.extend([f32::MIN_POSITIVE, -f32::MIN_POSITIVE, 1e-30, -1e-30]);
        // Every power of two's neighbours, and a spread of values with fractions.
        for e in -20..30 {
            let p = 2f32.powi(e);
            xs.extend([
                p,
                -p,
                p.next_up(),
                -p.next_up(),
                p.next_down(),
                -p.next_down(),
            ]);
        }
        let mut x = 0.37_f32;
        for _ in 0..10_000 {
            x = (x * 1.618_034 + 0.1).rem_euclid(2e6) - 1e6;
            xs.push(x);
        }
        for x in xs {
            assert_eq!(floor_i32(x), x.floor() as i32, "{x}");
        }
    }
}
