//! The frame engine proper: state, the step pipeline and statistics (see the module essay in
//! `frame/mod.rs` for the pipeline and the determinism argument).

use super::broad::BroadPhase;
use super::contacts::Contact;
use crate::dynamics::{
    BodyState, ConstraintBody, ConstraintPoint, ContactConstraint, MassProps, SolverBody,
    SolverParams, solve_island,
};
use crate::geometry::{Aabb, shape_aabb, shape_extent};
use crate::islands::{IslandGraph, SleepConfig};
use crate::scene::{Scene, Shape};
use glam::Vec3;
use rayon::prelude::*;

/// Contacts are kept down to this separation (m): resting contacts persist between steps.
pub const SPECULATIVE_DISTANCE: f32 = 0.02;
/// A body slower than this (m/s, and its surface from spinning) may sleep.
pub const SLEEP_VELOCITY: f32 = 0.05;
/// An island sleeps when all its bodies have been slow for this long (s).
pub const TIME_TO_SLEEP: f32 = 0.5;
/// Small islands are packed into solver tasks of up to this many bodies.
pub(super) const BATCH_BODIES: u32 = 64;

/// Settings of the frame engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameConfig {
    /// Worker threads of the engine's rayon pool (at least 1).
    pub threads: usize,
    /// Solver substeps per frame.
    pub substeps: u32,
    /// Whether islands may fall asleep.
    pub sleep: bool,
}

impl Default for FrameConfig {
    fn default() -> Self {
        FrameConfig {
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            substeps: 4,
            sleep: true,
        }
    }
}

/// Counters of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EngineStats {
    /// Frames stepped.
    pub frames: u64,
    /// Largest number of touching contacts in one frame.
    pub contacts_max: usize,
    /// Awake islands solved in the last frame.
    pub islands_awake_last: usize,
    /// Sleeping islands after the last frame.
    pub islands_sleeping_last: usize,
    /// Island edges added (contacts that began touching between two dynamic bodies).
    pub island_links: u64,
    /// Islands split into two or more (the deferred split of seed 002).
    pub island_splits: u64,
    /// Island edges removed (contacts between two dynamic bodies that stopped touching).
    pub island_unlinks: u64,
    /// Touching contacts in the last frame.
    pub contacts_last: usize,
    /// Broad-phase pairs in the last frame.
    pub pairs_last: usize,
    /// Islands put to sleep, and woken, over the run.
    pub sleeps: u64,
    pub wakes: u64,
}

pub(super) const NONE: u32 = u32::MAX;

/// The frame-centric baseline engine.
pub struct FrameEngine {
    pub(super) config: FrameConfig,
    pub(super) pool: std::sync::Arc<rayon::ThreadPool>,
    pub(super) params: SolverParams,
    pub(super) dt: f64,
    pub(super) shapes: Vec<Shape>,
    pub(super) masses: Vec<MassProps>,
    pub(super) restitution: Vec<f32>,
    pub(super) friction: Vec<f32>,
    pub(super) rolling_resistance: Vec<f32>,
    pub(super) extents: Vec<f32>,
    pub(super) is_static: Vec<bool>,
    pub(super) planes: Vec<u32>,
    pub(super) states: Vec<BodyState>,
    /// Dynamic and not sleeping.
    pub(super) awake: Vec<bool>,
    pub(super) aabbs: Vec<Aabb>,
    pub(super) broad: BroadPhase,
    pub(super) resting_dirty: bool,
    pub(super) pairs: Vec<u64>,
    pub(super) contacts: Vec<Contact>,
    pub(super) next_contacts: Vec<Contact>,
    pub(super) change_bits: Vec<u64>,
    /// The persistent island graph (seed 002): links and unlinks follow the narrow phase's
    /// begin/end events; it wakes, sleeps and splits islands.
    pub(super) graph: IslandGraph,
    pub(super) linear: Vec<Vec3>,
    pub(super) angular: Vec<Vec3>,
    pub(super) island_of: Vec<u32>,
    pub(super) slot: Vec<u32>,
    pub(super) local: Vec<u32>,
    pub(super) island_contacts: Vec<u32>,
    pub(super) points: Vec<ConstraintPoint>,
    pub(super) point_start: Vec<u32>,
    pub(super) island_size: Vec<u32>,
    pub(super) island_has_contact: Vec<bool>,
    pub(super) island_batch: Vec<u32>,
    pub(super) island_offset: Vec<u32>,
    pub(super) batch_size: Vec<u32>,
    pub(super) cursor: Vec<u32>,
    pub(super) order: Vec<u32>,
    pub(super) body_start: Vec<u32>,
    pub(super) contact_start: Vec<u32>,
    pub(super) solver_bodies: Vec<SolverBody>,
    pub(super) constraints: Vec<ContactConstraint>,
    pub(super) frame: u64,
    pub(super) stats: EngineStats,
    /// Islands are packed into solver tasks of up to this many bodies.
    pub(super) batch_bodies: u32,
    /// Why the simulation cannot go on (a non-finite state), once that happened.
    pub(super) fault: Option<String>,
}

impl FrameEngine {
    /// An engine at the scene's initial state. Panics where [`FrameEngine::try_new`] gives an
    /// error (a scene the loader would have refused, or no threads); loaded scenes never do.
    pub fn new(scene: &Scene, config: FrameConfig) -> Self {
        Self::try_new(scene, config).unwrap_or_else(|e| panic!("frame engine: {e}"))
    }

    /// An engine at the scene's initial state, or the reason it cannot start: a scene that
    /// [`Scene::validate`] refuses (the loader's own check, so this guards scenes built in
    /// code), or a thread pool that would not start.
    pub fn try_new(scene: &Scene, config: FrameConfig) -> Result<Self, String> {
        scene.validate().map_err(|e| e.to_string())?;
        let w = &scene.world;
        let threads = config.threads.max(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| format!("cannot start {threads} worker threads: {e}"))?;
        let dt = w.frame_ticks as f64 / w.ticks_per_second as f64;
        let n = scene.bodies.len();
        let bodies = &scene.bodies;
        let is_static: Vec<bool> = bodies
            .iter()
            .map(|b| b.is_static || matches!(b.shape, Shape::Plane { .. }))
            .collect();
        let planes = (0..n as u32)
            .filter(|&i| matches!(bodies[i as usize].shape, Shape::Plane { .. }))
            .collect();
        let states: Vec<BodyState> = bodies.iter().map(BodyState::from_desc).collect();
        let mut graph = IslandGraph::new(&is_static).map_err(|e| e.to_string())?;
        graph
            .set_sleep_config(SleepConfig {
                linear_threshold: SLEEP_VELOCITY,
                time_to_sleep: if config.sleep {
                    TIME_TO_SLEEP
                } else {
                    f32::INFINITY
                },
                ..SleepConfig::default()
            })
            .map_err(|e| e.to_string())?;
        let aabbs = bodies
            .iter()
            .map(|b| shape_aabb(&b.shape, b.position, b.rotation).expanded(SPECULATIVE_DISTANCE))
            .collect();
        Ok(FrameEngine {
            config: FrameConfig {
                threads,
                substeps: config.substeps.max(1),
                sleep: config.sleep,
            },
            pool: std::sync::Arc::new(pool),
            params: SolverParams::new(dt as f32, config.substeps.max(1), w.gravity),
            dt,
            shapes: bodies.iter().map(|b| b.shape).collect(),
            masses: bodies
                .iter()
                .zip(&is_static)
                .map(|(b, &s)| {
                    if s {
                        MassProps::STATIC
                    } else {
                        MassProps::for_body(b)
                    }
                })
                .collect(),
            restitution: bodies.iter().map(|b| b.restitution).collect(),
            friction: bodies.iter().map(|b| b.friction).collect(),
            rolling_resistance: bodies.iter().map(|b| b.rolling_resistance).collect(),
            extents: bodies
                .iter()
                .zip(&is_static)
                .map(|(b, &s)| if s { 0.0 } else { shape_extent(&b.shape) })
                .collect(),
            awake: is_static.iter().map(|&s| !s).collect(),
            is_static,
            planes,
            states,
            aabbs,
            broad: BroadPhase::new(),
            resting_dirty: true,
            pairs: Vec::new(),
            contacts: Vec::new(),
            next_contacts: Vec::new(),
            change_bits: Vec::new(),
            graph,
            linear: vec![Vec3::ZERO; n],
            angular: vec![Vec3::ZERO; n],
            island_of: vec![NONE; n],
            slot: vec![NONE; n],
            local: vec![NONE; n],
            island_contacts: Vec::new(),
            points: Vec::new(),
            point_start: Vec::new(),
            island_size: Vec::new(),
            island_has_contact: Vec::new(),
            island_batch: Vec::new(),
            island_offset: Vec::new(),
            batch_size: Vec::new(),
            cursor: Vec::new(),
            order: Vec::new(),
            body_start: Vec::new(),
            contact_start: Vec::new(),
            solver_bodies: Vec::new(),
            constraints: Vec::new(),
            frame: 0,
            stats: EngineStats::default(),
            batch_bodies: BATCH_BODIES,
            fault: None,
        })
    }

    /// All bodies in scene order, statics included.
    pub fn states(&self) -> &[BodyState] {
        &self.states
    }

    /// Frames stepped so far (0 = initial state).
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Simulated seconds.
    pub fn time(&self) -> f64 {
        self.frame as f64 * self.dt
    }

    /// The frame length in seconds.
    pub fn dt(&self) -> f64 {
        self.dt
    }

    pub fn config(&self) -> FrameConfig {
        self.config
    }

    /// Whether dynamic body `body` is asleep (static bodies and bad ids: false).
    pub fn is_sleeping(&self, body: usize) -> bool {
        body < self.states.len() && !self.is_static[body] && !self.awake[body]
    }

    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    /// Why the simulation went wrong (a body's state became non-finite), if it did: the states
    /// are then meaningless and the run should stop with this message.
    pub fn fault(&self) -> Option<&str> {
        self.fault.as_deref()
    }

    /// Checks the engine's invariants: contacts sorted by distinct keys `a < b` with valid
    /// manifolds and `touching` matching the point count; static bodies never awake; sleeping
    /// bodies at rest; every state finite.
    pub fn validate(&self) -> Result<(), String> {
        if !self.contacts.windows(2).all(|w| w[0].key < w[1].key) {
            return Err("contacts are not sorted by distinct keys".into());
        }
        for c in &self.contacts {
            if c.a() >= c.b() || c.b() >= self.states.len() {
                return Err(format!("contact {:x} has bad bodies", c.key));
            }
            c.manifold
                .validate()
                .map_err(|e| format!("contact {}-{}: {e}", c.a(), c.b()))?;
            if c.touching != (c.manifold.count > 0) {
                return Err(format!(
                    "contact {}-{}: touching flag is stale",
                    c.a(),
                    c.b()
                ));
            }
        }
        self.graph.validate()?;
        for (i, s) in self.states.iter().enumerate() {
            if !self.is_static[i] && self.graph.is_body_awake(i) != Ok(self.awake[i]) {
                return Err(format!(
                    "body {i}: awake flag differs from the island graph"
                ));
            }
            if self.is_static[i] && self.awake[i] {
                return Err(format!("static body {i} is awake"));
            }
            if !self.is_static[i]
                && !self.awake[i]
                && (s.velocity != Vec3::ZERO || s.angular_velocity != Vec3::ZERO)
            {
                return Err(format!("sleeping body {i} moves"));
            }
            let finite = s.position.is_finite()
                && s.rotation.is_finite()
                && s.velocity.is_finite()
                && s.angular_velocity.is_finite();
            if !finite {
                return Err(format!("body {i} has a non-finite state"));
            }
        }
        Ok(())
    }

    /// Advances the world by one frame.
    pub fn step(&mut self) {
        if !self.awake.iter().any(|&a| a) {
            // Everything sleeps (or is static): nothing moves and nothing can wake.
            self.stats.islands_awake_last = 0;
            self.stats.pairs_last = 0;
            self.frame += 1;
            self.stats.frames = self.frame;
            return;
        }
        if self.config.threads == 1 {
            self.pipeline();
        } else {
            // One hand-off to the pool per frame: the stages' parallel loops then run on it
            // directly (an `install` from inside the pool runs in place).
            let pool = std::sync::Arc::clone(&self.pool);
            pool.install(|| self.pipeline());
        }
    }

    fn pipeline(&mut self) {
        self.update_bounds();
        self.find_pairs();
        self.merge_contacts();
        self.narrow_phase();
        self.build_islands();
        self.solve();
        self.sleep();
        self.frame += 1;
        self.stats.frames = self.frame;
    }

    /// Stage 1: AABBs of awake bodies, inflated by their motion over the frame.
    fn update_bounds(&mut self) {
        let dt = self.params.dt;
        let (states, shapes, awake, extents) =
            (&self.states, &self.shapes, &self.awake, &self.extents);
        let bound = |(i, bb): (usize, &mut Aabb)| {
            if awake[i] {
                let s = &states[i];
                // Swept along the velocity (Box2D's fat AABB made directional), and grown by
                // how far the surface can move from spinning.
                let spin = s.angular_velocity.length() * extents[i] * dt;
                let b = shape_aabb(&shapes[i], s.position, s.rotation)
                    .expanded(SPECULATIVE_DISTANCE + spin);
                let d = s.velocity * dt;
                *bb = Aabb::new(b.min + d.min(Vec3::ZERO), b.max + d.max(Vec3::ZERO));
            }
        };
        if self.config.threads == 1 {
            self.aabbs.iter_mut().enumerate().for_each(bound);
        } else {
            self.pool.install(|| {
                self.aabbs
                    .par_iter_mut()
                    .enumerate()
                    .with_min_len(256)
                    .for_each(bound)
            });
        }
    }

    /// Stage 2: broad phase.
    fn find_pairs(&mut self) {
        let n = self.states.len();
        if self.resting_dirty {
            for i in 0..n {
                if !self.awake[i] && !matches!(self.shapes[i], Shape::Plane { .. }) {
                    let s = &self.states[i];
                    self.aabbs[i] = shape_aabb(&self.shapes[i], s.position, s.rotation)
                        .expanded(SPECULATIVE_DISTANCE);
                }
            }
            let (awake, shapes) = (&self.awake, &self.shapes);
            self.broad.set_resting(
                (0..n as u32).filter(|&i| {
                    !awake[i as usize] && !matches!(shapes[i as usize], Shape::Plane { .. })
                }),
                &self.aabbs,
            );
            self.resting_dirty = false;
        }
        self.broad
            .find_pairs(&self.awake, &self.aabbs, &mut self.pairs);
        // Planes against every awake body.
        for &p in &self.planes {
            let Shape::Plane { normal, offset } = self.shapes[p as usize] else {
                continue;
            };
            for i in 0..n {
                if !self.awake[i] {
                    continue;
                }
                if self.aabbs[i].lowest_along(normal) <= offset {
                    let (lo, hi) = if (p as usize) < i {
                        (p, i as u32)
                    } else {
                        (i as u32, p)
                    };
                    self.pairs.push(((lo as u64) << 32) | hi as u64);
                }
            }
        }
        self.pairs.sort_unstable();
        self.stats.pairs_last = self.pairs.len();
    }

    /// Stage 6: solve awake islands in parallel and write the new states back.
    fn solve(&mut self) {
        let batches = self.body_start.len().saturating_sub(1);
        let params = self.params;
        {
            type Task<'a> = (
                &'a mut [SolverBody],
                &'a mut [ContactConstraint],
                &'a mut [ConstraintPoint],
                &'a [u32],
                u32,
            );
            let mut tasks: Vec<Task> = Vec::with_capacity(batches);
            let mut rest_b: &mut [SolverBody] = &mut self.solver_bodies;
            let mut rest_c: &mut [ContactConstraint] = &mut self.constraints;
            let mut rest_p: &mut [ConstraintPoint] = &mut self.points;
            for k in 0..batches {
                let nb = (self.body_start[k + 1] - self.body_start[k]) as usize;
                let nc = (self.contact_start[k + 1] - self.contact_start[k]) as usize;
                let np = (self.point_start[k + 1] - self.point_start[k]) as usize;
                let (hb, tb) = std::mem::take(&mut rest_b).split_at_mut(nb);
                let (hc, tc) = std::mem::take(&mut rest_c).split_at_mut(nc);
                let (hp, tp) = std::mem::take(&mut rest_p).split_at_mut(np);
                rest_b = tb;
                rest_c = tc;
                rest_p = tp;
                let order =
                    &self.order[self.contact_start[k] as usize..self.contact_start[k + 1] as usize];
                tasks.push((hb, hc, hp, order, self.batch_size[k]));
            }
            let (contacts, states, is_static, shapes, masses, local) = (
                &self.contacts,
                &self.states,
                &self.is_static,
                &self.shapes,
                &self.masses,
                &self.local,
            );
            let run = |(bodies, constraints, points, order, stand_in): &mut Task| {
                // Build this batch's constraints from its contacts, then solve.
                let mut first = 0u32;
                for (slot, &ci) in constraints.iter_mut().zip(order.iter()) {
                    let c = &contacts[ci as usize];
                    let side = |i: usize| ConstraintBody {
                        index: if is_static[i] { *stand_in } else { local[i] },
                        position: states[i].position,
                        is_static: is_static[i],
                        is_round: matches!(shapes[i], Shape::Sphere { .. }),
                        inv_inertia: masses[i].inv_inertia_local.x,
                    };
                    *slot = ContactConstraint {
                        rolling_resistance: c.rolling_resistance,
                        impact: c.impact,
                        ..ContactConstraint::new(
                            side(c.a()),
                            side(c.b()),
                            &c.manifold,
                            c.friction,
                            c.restitution,
                            ci,
                            points,
                            first,
                        )
                    };
                    first += c.manifold.count;
                }
                solve_island(&params, bodies, constraints, points);
            };
            if self.config.threads == 1 {
                tasks.iter_mut().for_each(run);
            } else {
                tasks.par_iter_mut().for_each(run);
            }
        }
        for k in 0..batches {
            let pts = &self.points[self.point_start[k] as usize..self.point_start[k + 1] as usize];
            let cs = self.contact_start[k] as usize..self.contact_start[k + 1] as usize;
            for c in &self.constraints[cs] {
                c.store_impulses(pts, &mut self.contacts[c.contact as usize].manifold);
            }
        }
        let (slots, sb) = (&self.slot, &self.solver_bodies);
        let write = |(s, &slot): (&mut BodyState, &u32)| {
            if slot == NONE {
                return;
            }
            sb[slot as usize].apply_to(s);
        };
        if self.config.threads == 1 {
            self.states.iter_mut().zip(slots.iter()).for_each(write);
        } else {
            self.pool.install(|| {
                self.states
                    .par_iter_mut()
                    .zip(slots.par_iter())
                    .with_min_len(256)
                    .for_each(write)
            });
        }
    }

    /// Stage 7: per-island sleep and the deferred split of at most one island (seed 002), both
    /// by the island graph.
    fn sleep(&mut self) {
        for (i, st) in self.states.iter().enumerate() {
            self.linear[i] = st.velocity;
            self.angular[i] = st.angular_velocity;
        }
        let slept = match self
            .graph
            .update_sleep(self.params.dt, &self.linear, &self.angular)
        {
            Ok(slept) => slept,
            Err(e) => {
                // Only a non-finite velocity is refused: report it instead of going on with it.
                self.fault
                    .get_or_insert(format!("frame {}: {e}", self.frame + 1));
                return;
            }
        };
        for island in &slept {
            let Ok(bodies) = self.graph.bodies(*island) else {
                continue;
            };
            for b in bodies {
                self.awake[b] = false;
                self.states[b].velocity = Vec3::ZERO;
                self.states[b].angular_velocity = Vec3::ZERO;
            }
        }
        if !slept.is_empty() {
            self.resting_dirty = true;
            self.stats.sleeps += slept.len() as u64;
            self.stats.islands_sleeping_last += slept.len();
            self.stats.islands_awake_last =
                self.stats.islands_awake_last.saturating_sub(slept.len());
        }
        if let Some(split) = self.graph.split_one() {
            if split.islands.len() > 1 {
                self.stats.island_splits += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::{BodyDesc, World};
    use glam::Quat;

    fn scene() -> Scene {
        let desc = |shape, position, is_static| BodyDesc {
            shape,
            position,
            rotation: Quat::from_rotation_y(0.3),
            velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
            mass: 1.0,
            restitution: 0.3,
            friction: 0.5,
            rolling_resistance: 0.0,
            is_static,
        };
        let mut bodies = vec![desc(
            Shape::Plane {
                normal: Vec3::Y,
                offset: 0.0,
            },
            Vec3::ZERO,
            true,
        )];
        for i in 0..40 {
            let p = Vec3::new(
                (i % 5) as f32 * 1.5,
                0.5 + (i / 5) as f32 * 1.1,
                (i % 3) as f32 * 0.2,
            );
            let shape = if i % 3 == 0 {
                Shape::Cuboid {
                    half_extents: Vec3::splat(0.45),
                }
            } else {
                Shape::Sphere { radius: 0.45 }
            };
            bodies.push(desc(shape, p, false));
        }
        // A few far away, flying freely (islands without contacts).
        for i in 0..5 {
            let mut b = desc(
                Shape::Sphere { radius: 0.3 },
                Vec3::new(50.0 + 3.0 * i as f32, 20.0, 0.0),
                false,
            );
            b.velocity = Vec3::new(0.0, 3.0, 1.0);
            b.angular_velocity = Vec3::new(1.0, 2.0, 0.0);
            bodies.push(b);
        }
        Scene {
            world: World::default(),
            bodies,
        }
    }

    fn run(batch: u32) -> Vec<BodyState> {
        let mut e = FrameEngine::new(
            &scene(),
            FrameConfig {
                threads: 1,
                ..FrameConfig::default()
            },
        );
        e.batch_bodies = batch;
        for _ in 0..90 {
            e.step();
        }
        e.states().to_vec()
    }

    #[test]
    fn batching_islands_changes_no_bit() {
        let one = run(0);
        for batch in [8, 64, 10_000] {
            let other = run(batch);
            for (a, b) in one.iter().zip(&other) {
                assert_eq!(
                    a.position.to_array().map(f32::to_bits),
                    b.position.to_array().map(f32::to_bits)
                );
                assert_eq!(
                    a.rotation.to_array().map(f32::to_bits),
                    b.rotation.to_array().map(f32::to_bits)
                );
                assert_eq!(
                    a.velocity.to_array().map(f32::to_bits),
                    b.velocity.to_array().map(f32::to_bits)
                );
            }
        }
        // Something happened: the stack moved and the free spheres flew exactly.
        let t = 1.5f32;
        let free = one[41];
        let expect = 20.0 + 3.0 * t - 0.5 * 9.81 * t * t;
        assert!((free.position.y - expect).abs() < 1e-3);
    }

    #[test]
    fn contacts_stay_sorted_and_manifolds_valid() {
        let mut e = FrameEngine::new(&scene(), FrameConfig::default());
        for _ in 0..120 {
            e.step();
            e.validate().unwrap();
        }
        assert!(e.stats().contacts_max > 20);
    }

    #[test]
    fn bad_scenes_are_refused_with_a_reason() {
        let mut s = scene();
        s.bodies[3].position.x = f32::NAN;
        let err = FrameEngine::try_new(&s, FrameConfig::default())
            .err()
            .unwrap();
        assert!(err.contains("body 3"), "{err}");
        let mut s = scene();
        s.bodies[2].mass = 0.0;
        let err = FrameEngine::try_new(&s, FrameConfig::default())
            .err()
            .unwrap();
        assert!(err.contains("body 2") && err.contains("mass"), "{err}");
        let mut s = scene();
        s.bodies[1].shape = Shape::Sphere { radius: -1.0 };
        assert!(FrameEngine::try_new(&s, FrameConfig::default()).is_err());
        let mut s = scene();
        s.world.frame_ticks = 0;
        assert!(FrameEngine::try_new(&s, FrameConfig::default()).is_err());
    }
}
