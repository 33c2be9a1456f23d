//! # Broad phase: a uniform grid of axis-aligned boxes
//!
//! The broad phase finds every pair of bodies whose axis-aligned bounding boxes overlap, so that
//! the narrow phase (and, through its touch changes, the island graph of seed 002) only looks
//! at pairs that may touch. Seed 004 (parallel transactional ODE) runs collision detection in
//! parallel; Mirtich (seed 001, appendix A) uses a hierarchical spatial hash of boxes. This is a
//! uniform grid built fresh for each query, parallel and deterministic:
//!
//! 1. Each box is mapped to the range of cells `lo..=hi` it covers, `lo = floor(min / s)`,
//!    `hi = floor(max / s)` per axis, for a cell side `s` (by default twice the median of the
//!    boxes' largest sides, so a typical box covers one or two cells per axis).
//! 2. Every (cell, box) entry is emitted in ascending box order and grouped by a hash of its
//!    cell with a stable counting sort (no comparison sort): within a bucket, boxes stay
//!    ascending; a bucket may mix cells, which the next step tells apart by the full cell key.
//! 3. Within each cell every pair of boxes is tested. A pair that overlaps is reported only in
//!    its *owner cell*, the componentwise maximum of the two `lo`s — the cell holding the lowest
//!    corner of the two boxes' intersection. Both boxes cover that cell (from `min_b <= max_a`,
//!    and floor of a scaled value being monotone, `lo_b <= hi_a`), so the pair is found there,
//!    and only there: no pair is missed and none is reported twice, with no hash set.
//! 4. Boxes covering more than `max_cells_per_box` cells (a long ramp, or a box beyond the
//!    ±2^20 cells the packed 21-bit cell coordinates can name) are kept out of the grid and
//!    tested against every box directly.
//! 5. All pairs are sorted and deduplicated.
//!
//! Every parallel step is a map whose results rayon collects in input order, the grouping is a
//! sequential stable counting sort, and the final sort is on unique keys, so the output — the sorted list of pairs `(a, b)` with `a < b` — is the same
//! for any thread count. Boxes are closed: boxes that only touch on a face overlap.
//!
//! Unbounded static shapes (planes) have no box; the caller tests them against every body.
//! The boxes are this module's own [`Bounds`] (min and max corners as `glam::Vec3`), so that it
//! does not depend on the geometry module's AABB type; converting is a field copy.

use glam::Vec3;
use rayon::prelude::*;
use std::fmt;

/// An axis-aligned box given by its min and max corners (closed: faces belong to the box).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub min: Vec3,
    pub max: Vec3,
}

impl Bounds {
    pub fn new(min: Vec3, max: Vec3) -> Self {
        Bounds { min, max }
    }

    /// Whether two boxes overlap or touch.
    pub fn overlaps(&self, other: &Bounds) -> bool {
        self.min.cmple(other.max).all() && other.min.cmple(self.max).all()
    }
}

/// Why a broad-phase query was refused.
#[derive(Clone, Debug, PartialEq)]
pub enum BroadPhaseError {
    /// A box has a NaN or infinite coordinate (unbounded shapes must be handled by the caller).
    NotFinite { index: usize },
    /// A box has `min > max` on some axis.
    Inverted { index: usize },
    /// The requested cell size is not finite and positive.
    BadCellSize(f32),
    /// More boxes than 32-bit ids can name.
    TooManyBoxes(usize),
}

impl fmt::Display for BroadPhaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BroadPhaseError::NotFinite { index } => {
                write!(
                    f,
                    "bounding box {index} is not finite (planes must be tested separately)"
                )
            }
            BroadPhaseError::Inverted { index } => {
                write!(f, "bounding box {index} has min > max")
            }
            BroadPhaseError::BadCellSize(s) => {
                write!(f, "grid cell size {s} must be finite and positive")
            }
            BroadPhaseError::TooManyBoxes(n) => write!(f, "{n} boxes are too many for 32-bit ids"),
        }
    }
}

impl std::error::Error for BroadPhaseError {}

/// Settings of the grid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridConfig {
    /// Side of a cell; `None` picks twice the median of the boxes' largest sides.
    pub cell_size: Option<f32>,
    /// Boxes covering more cells than this are tested against every box instead.
    pub max_cells_per_box: u64,
}

impl Default for GridConfig {
    fn default() -> Self {
        GridConfig {
            cell_size: None,
            max_cells_per_box: 64,
        }
    }
}

type Cell = [i32; 3];

/// The sorted, deduplicated pairs `(a, b)`, `a < b`, of overlapping boxes, with the default
/// grid settings. Parallel (rayon), and the same for any thread count.
pub fn overlapping_pairs(bounds: &[Bounds]) -> Result<Vec<(u32, u32)>, BroadPhaseError> {
    overlapping_pairs_with(bounds, GridConfig::default())
}

/// [`overlapping_pairs`] with explicit grid settings.
pub fn overlapping_pairs_with(
    bounds: &[Bounds],
    config: GridConfig,
) -> Result<Vec<(u32, u32)>, BroadPhaseError> {
    check(bounds)?;
    let s = match config.cell_size {
        Some(s) if s.is_finite() && s > 0.0 => s,
        Some(s) => return Err(BroadPhaseError::BadCellSize(s)),
        None => auto_cell_size(bounds),
    };
    let inv = 1.0 / s as f64;
    // Per box: its cell range, or None when it goes to the large list.
    let ranges: Vec<Option<(Cell, Cell)>> = bounds
        .par_iter()
        .map(|b| cell_range(b, inv, config.max_cells_per_box))
        .collect();
    // One (cell key, box) entry per covered cell, in ascending box order.
    let entries: Vec<(u64, u32)> = ranges
        .par_iter()
        .enumerate()
        .filter_map(|(i, r)| r.map(|r| (i as u32, r)))
        .flat_map_iter(|(i, (lo, hi))| {
            (lo[0]..=hi[0]).flat_map(move |x| {
                (lo[1]..=hi[1])
                    .flat_map(move |y| (lo[2]..=hi[2]).map(move |z| (pack([x, y, z]), i)))
            })
        })
        .collect();
    // Group the entries by a hash of their cell with a stable counting sort (O(entries); a
    // bucket keeps ascending box order). Different cells may share a bucket; the owner-cell
    // test below compares full keys, so a collision costs a test, never a wrong pair.
    let buckets = entries.len().next_power_of_two();
    let shift = 64 - buckets.trailing_zeros();
    let bucket_of = |key: u64| -> usize {
        if buckets == 1 {
            0
        } else {
            (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
        }
    };
    let mut starts = vec![0u32; buckets + 1];
    for &(key, _) in &entries {
        starts[bucket_of(key) + 1] += 1;
    }
    for k in 0..buckets {
        starts[k + 1] += starts[k];
    }
    let mut fill = starts.clone();
    let mut grouped = vec![(0u64, 0u32); entries.len()];
    for &(key, i) in &entries {
        let slot = &mut fill[bucket_of(key)];
        grouped[*slot as usize] = (key, i);
        *slot += 1;
    }
    let mut pairs: Vec<(u32, u32)> = (0..buckets)
        .into_par_iter()
        .filter(|&k| starts[k + 1] - starts[k] > 1)
        .flat_map_iter(|k| {
            let run = &grouped[starts[k] as usize..starts[k + 1] as usize];
            let ranges = &ranges;
            run.iter().enumerate().flat_map(move |(j, &(cell, a))| {
                run[j + 1..].iter().filter_map(move |&(cell_b, b)| {
                    if cell_b != cell {
                        return None;
                    }
                    let (Some((lo_a, _)), Some((lo_b, _))) =
                        (ranges[a as usize], ranges[b as usize])
                    else {
                        return None;
                    };
                    let owner = [
                        lo_a[0].max(lo_b[0]),
                        lo_a[1].max(lo_b[1]),
                        lo_a[2].max(lo_b[2]),
                    ];
                    (pack(owner) == cell && bounds[a as usize].overlaps(&bounds[b as usize]))
                        .then_some((a, b))
                })
            })
        })
        .collect();
    let large: Vec<u32> = (0..bounds.len() as u32)
        .filter(|&i| ranges[i as usize].is_none())
        .collect();
    let large_pairs: Vec<(u32, u32)> = large
        .par_iter()
        .flat_map_iter(|&l| {
            let ranges = &ranges;
            (0..bounds.len() as u32).filter_map(move |j| {
                // A large-large pair is reported by its smaller id only.
                let skip = j == l || (ranges[j as usize].is_none() && j < l);
                (!skip && bounds[l as usize].overlaps(&bounds[j as usize]))
                    .then_some((l.min(j), l.max(j)))
            })
        })
        .collect();
    pairs.extend(large_pairs);
    pairs.par_sort_unstable();
    pairs.dedup();
    Ok(pairs)
}

/// The reference: every pair tested, O(n²). Same output contract as [`overlapping_pairs`].
pub fn brute_force_pairs(bounds: &[Bounds]) -> Result<Vec<(u32, u32)>, BroadPhaseError> {
    check(bounds)?;
    let mut pairs = Vec::new();
    for a in 0..bounds.len() {
        for b in a + 1..bounds.len() {
            if bounds[a].overlaps(&bounds[b]) {
                pairs.push((a as u32, b as u32));
            }
        }
    }
    Ok(pairs)
}

fn check(bounds: &[Bounds]) -> Result<(), BroadPhaseError> {
    if bounds.len() > u32::MAX as usize {
        return Err(BroadPhaseError::TooManyBoxes(bounds.len()));
    }
    for (index, b) in bounds.iter().enumerate() {
        if !(b.min.is_finite() && b.max.is_finite()) {
            return Err(BroadPhaseError::NotFinite { index });
        }
        if !b.min.cmple(b.max).all() {
            return Err(BroadPhaseError::Inverted { index });
        }
    }
    Ok(())
}

/// Twice the median of the boxes' largest sides (1 when that is zero, e.g. all boxes are
/// points): a typical box then covers one or two cells per axis, and a cell holds a handful of
/// boxes. (With cells of one box side, boxes aligned on the cell lattice — stacked unit boxes —
/// touch 2 × 2 × 2 cells each; measured about twice as slow on the pyramids.)
fn auto_cell_size(bounds: &[Bounds]) -> f32 {
    if bounds.is_empty() {
        return 1.0;
    }
    let mut sides: Vec<f32> = bounds
        .iter()
        .map(|b| (b.max - b.min).max_element())
        .collect();
    let mid = sides.len() / 2;
    let (_, median, _) = sides.select_nth_unstable_by(mid, f32::total_cmp);
    if median.is_finite() && *median > 0.0 {
        2.0 * *median
    } else {
        1.0
    }
}

/// Cell coordinates must lie in `-CELL_LIMIT..CELL_LIMIT` (21 bits each when offset); boxes
/// beyond go to the large list.
const CELL_LIMIT: i32 = 1 << 20;

/// The cell's key: its three coordinates, offset to be non-negative, in 21 bits each.
fn pack(c: Cell) -> u64 {
    let f = |v: i32| (v + CELL_LIMIT) as u64;
    f(c[0]) << 42 | f(c[1]) << 21 | f(c[2])
}

fn cell_range(b: &Bounds, inv: f64, max_cells: u64) -> Option<(Cell, Cell)> {
    let to_cell = |v: f32| -> Option<i32> {
        let c = (v as f64 * inv).floor();
        (c >= -(CELL_LIMIT as f64) && c < CELL_LIMIT as f64).then_some(c as i32)
    };
    let mut lo = [0; 3];
    let mut hi = [0; 3];
    let mut cells: u64 = 1;
    for axis in 0..3 {
        lo[axis] = to_cell(b.min[axis])?;
        hi[axis] = to_cell(b.max[axis])?;
        cells = cells.saturating_mul((hi[axis] as i64 - lo[axis] as i64 + 1) as u64);
    }
    (cells <= max_cells).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn f(&mut self) -> f32 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 40) as f32 / (1u64 << 24) as f32
        }
    }

    fn random_boxes(seed: u64, n: usize) -> Vec<Bounds> {
        let mut r = Rng(seed);
        (0..n)
            .map(|k| {
                let c = Vec3::new(r.f(), r.f(), r.f()) * 20.0 - 10.0;
                let h = match k % 17 {
                    0 => Vec3::new(15.0 * r.f(), 0.3, 8.0 * r.f()), // large: ramps, walls
                    1 => Vec3::ZERO,                                // points
                    _ => Vec3::new(r.f(), r.f(), r.f()) * 0.9 + 0.05,
                };
                Bounds::new(c - h, c + h)
            })
            .collect()
    }

    #[test]
    fn grid_matches_brute_force_on_random_boxes() {
        for seed in 0..12 {
            let boxes = random_boxes(seed, 50 + 40 * seed as usize);
            let expected = brute_force_pairs(&boxes).unwrap();
            for cell_size in [None, Some(0.1), Some(0.7), Some(3.0), Some(50.0)] {
                let got = overlapping_pairs_with(
                    &boxes,
                    GridConfig {
                        cell_size,
                        ..GridConfig::default()
                    },
                )
                .unwrap();
                assert_eq!(got, expected, "seed {seed}, cell {cell_size:?}");
            }
        }
    }

    #[test]
    fn touching_faces_on_cell_boundaries_are_found_once() {
        // Unit boxes on an integer lattice, touching on faces, edges and corners, with cell
        // boundaries exactly on the faces.
        let mut boxes = Vec::new();
        for x in 0..4 {
            for y in 0..3 {
                for z in 0..2 {
                    let c = Vec3::new(x as f32, y as f32, z as f32);
                    boxes.push(Bounds::new(c, c + Vec3::ONE));
                }
            }
        }
        let expected = brute_force_pairs(&boxes).unwrap();
        // Every pair of lattice neighbours, including diagonal ones, touches.
        let mut count = 0;
        for a in 0..boxes.len() {
            for b in a + 1..boxes.len() {
                let d = (boxes[a].min - boxes[b].min).abs();
                if d.max_element() <= 1.0 {
                    count += 1;
                }
            }
        }
        assert_eq!(expected.len(), count);
        for s in [0.5, 1.0, 2.0] {
            let cfg = GridConfig {
                cell_size: Some(s),
                ..GridConfig::default()
            };
            assert_eq!(overlapping_pairs_with(&boxes, cfg).unwrap(), expected);
        }
    }

    #[test]
    fn same_pairs_for_any_thread_count() {
        let boxes = random_boxes(99, 3000);
        let reference = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| overlapping_pairs(&boxes).unwrap());
        assert!(!reference.is_empty());
        for threads in [2, 5, 16] {
            let got = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| overlapping_pairs(&boxes).unwrap());
            assert_eq!(got, reference, "{threads} threads");
        }
    }

    #[test]
    fn far_away_and_bad_boxes() {
        let far = vec![
            Bounds::new(Vec3::splat(-1e30), Vec3::splat(-1e30 + 1e25)),
            Bounds::new(Vec3::splat(-1e30), Vec3::splat(1e30)),
            Bounds::new(Vec3::ZERO, Vec3::ONE),
        ];
        assert_eq!(
            overlapping_pairs(&far).unwrap(),
            brute_force_pairs(&far).unwrap()
        );
        let nan = [
            Bounds::new(Vec3::ZERO, Vec3::ONE),
            Bounds::new(Vec3::NAN, Vec3::ONE),
        ];
        assert_eq!(
            overlapping_pairs(&nan),
            Err(BroadPhaseError::NotFinite { index: 1 })
        );
        let inverted = [Bounds::new(Vec3::ONE, Vec3::ZERO)];
        assert_eq!(
            overlapping_pairs(&inverted),
            Err(BroadPhaseError::Inverted { index: 0 })
        );
        let cfg = GridConfig {
            cell_size: Some(0.0),
            ..GridConfig::default()
        };
        assert_eq!(
            overlapping_pairs_with(&inverted[..0], cfg),
            Err(BroadPhaseError::BadCellSize(0.0))
        );
        assert_eq!(overlapping_pairs(&[]).unwrap(), vec![]);
    }
}
