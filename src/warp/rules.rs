//! # The per-tick rules of the warp engine
//!
//! Seed 000 (Koenig, Karamouzas and Guy), Sections 3 and 5: an entity moves from tick `k` to
//! `k + 1` by one substep, applying the collision events at `k` first (Algorithm 5,
//! `applyEvent` then `integrate`). For the committed frames to be a pure function of the scene
//! (`DESIGN.md`, "Determinism is a contract"), the move must depend only on the body's state
//! at `k` and the contacts at `k`, never on who detected a contact or when. These rules say
//! exactly that, and both the parallel engine ([`super::entity`]) and the sequential reference
//! ([`super::reference`]) call them, so the two can only differ by the protocol that decides
//! *which* contacts each entity sees:
//!
//! 1. **Bounds.** A body's box at a tick is its shape's box at its pre-event state, grown by
//!    [`AABB_MARGIN`] and swept along its velocity over one tick (the box at `k` joined with
//!    the same box moved by `v dt`; in the TVHT the sweep is cut to [`SWEEP_SIDES`] times the
//!    largest body's side per axis, see [`Rules::aabb`]). Only bodies whose boxes overlap can
//!    be in contact (the TVHT's question).
//! 2. **Contact.** Two bodies (or a body and a static one) whose boxes overlap are *in contact
//!    at `k`* when the narrow phase ([`collide`]) finds a point that they touch at `k`, or
//!    they meet within the tick, and [`resolve`], from both pre-event states at `k`, gives a
//!    non-zero impulse (they approach). The narrow phase keeps points down to a gap of
//!    `|v_B - v_A| dt` (how far the two can close in one tick). When no point touches, the
//!    pair is a *speculative* contact, the swept test that keeps a fast body from stepping
//!    over a thin one between two ticks (50 m/s is 5.2 cm per tick at 960 ticks per second):
//!    it is a contact only if the two, moving at their velocities, meet within the tick
//!    ([`impact`], the time of impact: closed form for two spheres, parry3d's shape cast for
//!    the others), and then the impulse takes the deepest point and the normal of the contact
//!    *at that moment*, with the levers from the bodies' centres then. So a pair that passes
//!    by gets nothing, however near (a speculative point's normal at `k` would have pushed
//!    it: a phantom collision), and a grazing one is pushed along the normal it truly meets at
//!    (issue #36). Such a body turns back up to one tick before it would have touched, with
//!    the impulse (and restitution) of the touch. A touching pair's impulse acts at the
//!    deepest manifold point (the first of equal depth), along the manifold normal. A pair
//!    with a plane keeps the linear test at `k` (`-v_n dt >= gap` at its deepest point): a
//!    plane's normal is the same at any time. A dynamic pair is always evaluated with the
//!    lower body id as A, so the result is the same bits whichever of the two computes it
//!    (`resolve` and the time of impact are symmetric too).
//!    **2b. Static contacts** are the entity's own business (no other entity is involved), so
//!    they use every point of the manifold that the body reaches within the tick: the impulse
//!    acts at those points' centroid, which lets a box rest flat on its face instead of rocking
//!    on one corner at a time (sequential impulses over the corners in a fixed order left a net
//!    torque: the box turned and walked 0.06 mm per frame); and the body is moved out of the
//!    static body along the normal by [`STATIC_CORRECTION`] of its depth beyond
//!    [`STATIC_SLOP`], so that resting bodies do not sink by the `g dt^2 / 2` of every tick.
//!    Both depend only on the body's pre-event state at `k`. A body that touches no point of
//!    a static body other than a plane at `k` meets it, as in rule 2, only at its time of
//!    impact within the tick, at the centroid and along the normal of the contact then.
//!    **2c. Rolling resistance.** A contact whose bodies have rolling resistance (the scene's
//!    material, mixed as the larger of the two) adds, after its impulse, the angular impulse
//!    that stops the two bodies' relative rotation, clamped to the resistance times the lever
//!    times the normal impulse ([`rolling_impulse`], the island solver's rule for one contact):
//!    a ball rolling on the ground slows at `(5/7) c g` in every engine.
//! 3. **Canonical order.** Each contact contributes a change of linear and angular velocity,
//!    computed from the pre-event states only (never from the result of another contact at the
//!    same tick, so no entity needs another's intermediate state). The changes are added to
//!    the pre-event velocities in ascending scene index of the other body (statics and
//!    dynamics interleaved by scene order): float addition is not associative, so the order is
//!    fixed by ids, not by arrival.
//! 4. **Anchored flight.** A body's *anchor* is its state just after its last event (the
//!    post-event state of a tick with kicks, or where its run or its group started it) with
//!    that tick `k0`; between events it flies in closed form, so its pre-event state at tick
//!    `k` is `flight(anchor, k - k0)`: the parabola `x + v t + g t² / 2`, `v + g t` and the
//!    exponential map of its spin for `t = (k - k0) dt` ([`Rules::flight`]). A tick with kicks
//!    makes a new anchor there ([`Rules::advance`]); a tick without keeps the old one. The
//!    state at a tick is thus a pure function of the anchor and the tick, whatever batches or
//!    spans the engine steps in, and a run cut and resumed must carry the anchors over
//!    (checkpoints save them). Long flights turn by sin and cos once `|w| t` passes 0.1 (the
//!    exponential map's Taylor branch below it): committed frames then rest on the platform's
//!    `libm` as well as on IEEE arithmetic.

use super::Tick;
use super::group_rules::Move;
use crate::dynamics::{BodyState, FreeFlight, MassProps, resolve, rolling_impulse, ticks_f32};
use crate::geometry::{Aabb, Manifold, Motion, Pose, collide, impact, lowest_along, shape_aabb};
use crate::scene::{Scene, Shape, mix_friction, mix_restitution, mix_rolling_resistance};
use glam::{Mat3, Vec3};

/// Boxes are grown by this much (m), so that a touching pair always overlaps.
pub const AABB_MARGIN: f32 = 1e-3;
/// A TVHT box is swept by at most this many times the largest body's side per axis.
pub const SWEEP_SIDES: f32 = 4.0;

/// Penetration into a static body tolerated without correction (m).
pub const STATIC_SLOP: f32 = 2e-4;
/// Share of the penetration beyond the slop removed per tick (rule 2b).
pub const STATIC_CORRECTION: f32 = 0.2;

/// A body's change from one contact: velocities, and a position correction (static contacts
/// only, zero for dynamic pairs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Kick {
    /// Scene index of the other body (the canonical order).
    pub other: u32,
    pub dv: Vec3,
    pub dw: Vec3,
    pub dp: Vec3,
}

/// How two dynamic bodies in contact meet ([`Rules::meeting`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Meeting {
    /// How fast they approach along the normal at the contact point (m/s).
    pub approach: f32,
    /// Their relative speed at the contact point (m/s).
    pub speed: f32,
    /// They meet within the tick, not touching at it (a time of impact after the tick).
    pub impact: bool,
}

/// A contact between two dynamic bodies A < B (rule 2): the impulse and the angular impulse of
/// rolling resistance on B (A gets their opposites), and where they meet.
struct PairContact {
    impulse: Vec3,
    angular: Vec3,
    touch: Touch,
}

/// Where two bodies meet within a tick (rule 2): the point and the normal (from A to B) at the
/// moment of impact, `time` seconds into the tick (0 when they touch at the tick), and the
/// depth there.
#[derive(Clone, Copy, Debug)]
struct Touch {
    point: Vec3,
    normal: Vec3,
    time: f32,
    depth: f32,
}

impl Touch {
    /// Touching at the tick itself.
    fn at_tick(point: Vec3, normal: Vec3, depth: f32) -> Touch {
        Touch {
            point,
            normal,
            time: 0.0,
            depth,
        }
    }
}

/// A body's state as its motion over the tick moves it: its pose `time` seconds on
/// ([`Motion::at`], the same poses [`impact`] found the contact at), its velocities unchanged.
fn at_impact(s: &BodyState, time: f32) -> BodyState {
    if time == 0.0 {
        return *s;
    }
    let pose = s.motion().at(time);
    BodyState {
        position: pose.position,
        rotation: pose.rotation,
        ..*s
    }
}

/// The static description of a scene for the per-tick rules.
#[derive(Clone, Debug)]
pub struct Rules {
    /// Per dynamic body (numbered in scene order among dynamic bodies).
    pub shapes: Vec<Shape>,
    pub masses: Vec<MassProps>,
    pub restitution: Vec<f32>,
    pub friction: Vec<f32>,
    pub rolling_resistance: Vec<f32>,
    /// Scene index of each dynamic body.
    pub scene_index: Vec<u32>,
    /// Initial states of the dynamic bodies.
    pub initial: Vec<BodyState>,
    /// Static bodies: (scene index, shape, state, box, restitution, friction).
    pub statics: Vec<StaticBody>,
    pub gravity: Vec3,
    /// Seconds per tick.
    pub dt: f32,
    /// Largest side of any dynamic body's box (sizes the TVHT cells).
    pub largest_side: f32,
    /// Whether contact groups may fall asleep (rule 5 of [`super::group_rules`]; `--sleep`,
    /// on unless set off). Off, nothing ever sleeps: a group never counts rest, so it never
    /// naps, and the engine and the grouped reference both step every group at every tick.
    pub sleep: bool,
    /// The island solver's substep, in ticks (rule 4 of [`super::group_rules`]): a group with
    /// contacts solves them for this many ticks at once from every tick that is a multiple of
    /// it, and for the largest power of two that divides any other ([`Rules::substep_at`]).
    /// 1 steps every group tick by tick. Committed frames depend on it, as on `sleep`.
    pub group_substep: u64,
}

/// A static body as the rules see it.
#[derive(Clone, Debug)]
pub struct StaticBody {
    pub index: u32,
    pub shape: Shape,
    pub state: BodyState,
    pub aabb: Aabb,
    pub restitution: f32,
    pub friction: f32,
    pub rolling_resistance: f32,
}

impl Rules {
    /// The rules of `scene`, or why it cannot be run: what [`Scene::validate`] refuses (no
    /// dynamic body, a bad tick rate, a value out of range).
    pub fn new(scene: &Scene) -> Result<Rules, String> {
        scene.validate().map_err(|e| e.to_string())?;
        let w = &scene.world;
        let mut r = Rules {
            shapes: Vec::new(),
            masses: Vec::new(),
            restitution: Vec::new(),
            friction: Vec::new(),
            rolling_resistance: Vec::new(),
            scene_index: Vec::new(),
            initial: Vec::new(),
            statics: Vec::new(),
            gravity: w.gravity,
            dt: 1.0 / w.ticks_per_second as f32,
            largest_side: 0.0,
            sleep: true,
            group_substep: super::group_rules::GROUP_SUBSTEP,
        };
        for (i, b) in scene.bodies.iter().enumerate() {
            let state = BodyState::from_desc(b);
            let is_static = b.is_static || matches!(b.shape, Shape::Plane { .. });
            if is_static {
                r.statics.push(StaticBody {
                    index: i as u32,
                    shape: b.shape,
                    state,
                    aabb: shape_aabb(&b.shape, state.position, state.rotation)
                        .expanded(AABB_MARGIN),
                    restitution: b.restitution,
                    friction: b.friction,
                    rolling_resistance: b.rolling_resistance,
                });
                continue;
            }
            let m = MassProps::for_body(b);
            let bx = shape_aabb(&b.shape, state.position, state.rotation);
            r.largest_side = r.largest_side.max((bx.max - bx.min).max_element());
            r.shapes.push(b.shape);
            r.masses.push(m);
            r.restitution.push(b.restitution);
            r.friction.push(b.friction);
            r.rolling_resistance.push(b.rolling_resistance);
            r.scene_index.push(i as u32);
            r.initial.push(state);
        }
        Ok(r)
    }

    /// The length in ticks of a group's solver substep that starts at tick `k`: the largest
    /// power of two that divides `k`, at most the group substep `S` (so `S` at a multiple of
    /// `S`). Every substep ends where a longer one may start, so the substeps of every group
    /// are aligned to multiples of their length, and a group born or kicked between two
    /// multiples of `S` reaches the next in at most `log2 S` substeps (1, 2, 4, 8 from an
    /// odd tick): few solves where one-tick substeps took up to `S - 1`, and a short first
    /// substep on average, so a group kicked again soon after throws little solving away
    /// (one substep to the next multiple would solve up to `S - 1` ticks each time).
    #[inline]
    pub fn substep_at(&self, k: Tick) -> u64 {
        1 << k.trailing_zeros().min(self.group_substep.trailing_zeros())
    }

    /// Number of dynamic bodies.
    pub fn bodies(&self) -> usize {
        self.shapes.len()
    }

    /// Rule 1: body `i`'s box at state `s`, swept along its velocity over one tick: the box the
    /// TVHT sees. The sweep is cut to [`SWEEP_SIDES`] times the largest body's side per axis,
    /// so that a tiny, fast body's box still covers a few TVHT cells (their side is twice the
    /// largest side), not thousands; past that, two dynamic bodies closing faster than this
    /// per tick may step over each other (with 0.1 m bodies at 960 ticks per second: 384 m/s).
    pub fn aabb(&self, i: usize, s: &BodyState) -> Aabb {
        let limit = Vec3::splat(SWEEP_SIDES * self.largest_side);
        self.swept(i, s, (s.velocity * self.dt).clamp(-limit, limit))
    }

    /// Body `i`'s box at `s` grown by [`AABB_MARGIN`] and moved along `d`.
    fn swept(&self, i: usize, s: &BodyState, d: Vec3) -> Aabb {
        swept_box(shape_aabb(&self.shapes[i], s.position, s.rotation), d)
    }

    /// Rule 2: how far two bodies with relative velocity `v` can close within one tick.
    fn sweep(&self, v: Vec3) -> f32 {
        v.length() * self.dt
    }

    /// Rule 2: where dynamic bodies `a` (at `sa`) and `b` (at `sb`) meet within this tick,
    /// given their manifold `m` at the tick: its deepest point when it touches (depth >= 0), at
    /// the tick itself; else, when the two touch within the tick moving at their velocities,
    /// the deepest point and the normal of their contact at that moment ([`impact`]: the
    /// *time of impact*, not the start of the tick, so that a grazing pair is pushed along the
    /// normal it truly meets at, and a pair that passes by is not pushed at all).
    fn reached(
        &self,
        a: usize,
        sa: &BodyState,
        b: usize,
        sb: &BodyState,
        m: &Manifold,
    ) -> Option<Touch> {
        let (depth, point) = deepest(m)?;
        if depth >= 0.0 {
            return Some(Touch::at_tick(point, m.normal, depth));
        }
        let hit = impact(
            &self.shapes[a],
            &sa.motion(),
            &self.shapes[b],
            &sb.motion(),
            self.dt,
        )?;
        let (depth, point) = deepest(&hit.manifold)?;
        Some(Touch {
            point,
            normal: hit.manifold.normal,
            time: hit.time,
            depth,
        })
    }

    /// Rule 2b: the centroid of the manifold points that are in contact or reached within the
    /// tick (as in [`Rules::reached`]), and the deepest point's depth; `None` if none is.
    fn reached_centroid(
        &self,
        m: &Manifold,
        sa: &BodyState,
        sb: &BodyState,
    ) -> Option<(Vec3, f32)> {
        let (mut sum, mut n, mut depth) = (Vec3::ZERO, 0.0f32, f32::NEG_INFINITY);
        for p in m.points() {
            let vn = (sb.point_velocity(p.position) - sa.point_velocity(p.position)).dot(m.normal);
            if p.depth >= 0.0 || vn * self.dt <= p.depth {
                sum += p.position;
                n += 1.0;
                depth = depth.max(p.depth);
            }
        }
        (n > 0.0).then(|| (sum / n, depth))
    }

    /// Rule 2 for dynamic bodies `a < b` at their pre-event states: the impulse on `b` and
    /// the angular impulse of rolling resistance on `b` ([`rolling_impulse`] after the
    /// contact's impulse, zero when neither body has any), and where they meet; `None` when
    /// they are not in contact. Boxes must be checked by the caller.
    fn pair_contact(
        &self,
        a: usize,
        sa: &BodyState,
        b: usize,
        sb: &BodyState,
    ) -> Option<PairContact> {
        debug_assert!(a < b);
        let m = collide(
            &self.shapes[a],
            &Pose::new(sa.position, sa.rotation),
            &self.shapes[b],
            &Pose::new(sb.position, sb.rotation),
            self.sweep(sb.velocity - sa.velocity),
        );
        let touch = self.reached(a, sa, b, sb, &m)?;
        let (sa, sb) = (&at_impact(sa, touch.time), &at_impact(sb, touch.time));
        let r = resolve(
            sa,
            &self.masses[a],
            sb,
            &self.masses[b],
            touch.point,
            touch.normal,
            mix_restitution(self.restitution[a], self.restitution[b]),
            mix_friction(self.friction[a], self.friction[b]),
        );
        if !(r.impulse != Vec3::ZERO && r.impulse.is_finite()) {
            return None;
        }
        let resistance =
            mix_rolling_resistance(self.rolling_resistance[a], self.rolling_resistance[b]);
        let angular = if resistance > 0.0 {
            let lever = (touch.point - sa.position)
                .length()
                .max((touch.point - sb.position).length());
            rolling_impulse(
                self.masses[a].world_inv_inertia(sa.rotation),
                r.a.angular_velocity,
                self.masses[b].world_inv_inertia(sb.rotation),
                r.b.angular_velocity,
                resistance,
                lever,
                r.impulse.dot(touch.normal),
            )
        } else {
            Vec3::ZERO
        };
        Some(PairContact {
            impulse: r.impulse,
            angular,
            touch,
        })
    }

    /// Whether dynamic bodies `a` and `b` (any order) are in contact at these pre-event states
    /// (boxes included).
    pub fn in_contact(&self, a: usize, sa: &BodyState, b: usize, sb: &BodyState) -> bool {
        self.contact_of(a, sa, b, sb).is_some()
    }

    /// Dynamic bodies `a` and `b` (any order) at these pre-event states, if their boxes
    /// overlap and they are in contact: their contact ([`Rules::pair_contact`], the lower id
    /// as A) and their states in that order.
    fn contact_of<'s>(
        &self,
        a: usize,
        sa: &'s BodyState,
        b: usize,
        sb: &'s BodyState,
    ) -> Option<(PairContact, &'s BodyState, &'s BodyState)> {
        if a == b || !self.aabb(a, sa).overlaps(&self.aabb(b, sb)) {
            return None;
        }
        let (x, sx, y, sy) = if a < b {
            (a, sa, b, sb)
        } else {
            (b, sb, a, sa)
        };
        self.pair_contact(x, sx, y, sy).map(|c| (c, sx, sy))
    }

    /// When dynamic bodies `a` and `b` (any order) are in contact at these pre-event states:
    /// how they meet (the same bits whichever order they are given in). Contact groups fuse
    /// on slow contacts ([`super::group_rules`]).
    pub fn meeting(&self, a: usize, sa: &BodyState, b: usize, sb: &BodyState) -> Option<Meeting> {
        let (c, sx, sy) = self.contact_of(a, sa, b, sb)?;
        let (sx, sy) = (at_impact(sx, c.touch.time), at_impact(sy, c.touch.time));
        let point = c.touch.point;
        let relative = sy.point_velocity(point) - sx.point_velocity(point);
        Some(Meeting {
            approach: -relative.dot(c.touch.normal),
            speed: relative.length(),
            impact: c.touch.time > 0.0,
        })
    }

    /// Body `me`'s kick from its contact with dynamic body `other`, both at their pre-event
    /// states (`None` if not in contact).
    pub fn pair_kick(
        &self,
        me: usize,
        s_me: &BodyState,
        other: usize,
        s_other: &BodyState,
    ) -> Option<Kick> {
        if me == other || !self.aabb(me, s_me).overlaps(&self.aabb(other, s_other)) {
            return None;
        }
        let (p, l, c) = if me < other {
            let c = self.pair_contact(me, s_me, other, s_other)?;
            // The impulses are on B = other; A = me gets their opposites.
            (-c.impulse, -c.angular, c)
        } else {
            let c = self.pair_contact(other, s_other, me, s_me)?;
            (c.impulse, c.angular, c)
        };
        let at = at_impact(s_me, c.touch.time);
        Some(self.kick(me, &at, self.scene_index[other], p, l, c.touch.point))
    }

    /// Body `me`'s kick from impulse `p` at `point` and angular impulse `l`, `s` its state at
    /// the moment of impact (the lever is the point from its centre then).
    fn kick(&self, me: usize, s: &BodyState, other: u32, p: Vec3, l: Vec3, point: Vec3) -> Kick {
        let m = &self.masses[me];
        let inv_inertia = m.world_inv_inertia(s.rotation);
        let mut dw = inv_inertia * (point - s.position).cross(p);
        if l != Vec3::ZERO {
            dw += inv_inertia * l;
        }
        Kick {
            other,
            dv: p * m.inv_mass,
            dw,
            dp: Vec3::ZERO,
        }
    }

    /// Body `me`'s kicks from the static bodies at pre-event state `s`, in scene order.
    pub fn static_kicks(&self, me: usize, s: &BodyState, out: &mut Vec<Kick>) {
        if self.statics.is_empty() {
            return;
        }
        // Statics are not in the TVHT: the whole sweep, at any speed.
        let tight = shape_aabb(&self.shapes[me], s.position, s.rotation);
        let bx = swept_box(tight, s.velocity * self.dt);
        let gauge = Gauge::of(&tight);
        let margin = self.sweep(s.velocity);
        for st in &self.statics {
            // The plane test first: a plane's box is everything.
            if gauge.clear_of_plane(&st.shape, margin) || !bx.overlaps(&st.aabb) {
                continue;
            }
            let m = collide(
                &self.shapes[me],
                &Pose::new(s.position, s.rotation),
                &st.shape,
                &Pose::new(st.state.position, st.state.rotation),
                margin,
            );
            // Rule 2b: one impulse at the centroid of the manifold points the body reaches
            // within the tick (body A = me, the normal points from me into the static body).
            let Some(touch) = self.static_touch(me, s, st, &m) else {
                continue;
            };
            let at = at_impact(s, touch.time);
            let r = resolve(
                &at,
                &self.masses[me],
                &st.state,
                &MassProps::STATIC,
                touch.point,
                touch.normal,
                mix_restitution(self.restitution[me], st.restitution),
                mix_friction(self.friction[me], st.friction),
            );
            let mut cur = r.a;
            let resistance =
                mix_rolling_resistance(self.rolling_resistance[me], st.rolling_resistance);
            if resistance > 0.0 {
                let inv_inertia = self.masses[me].world_inv_inertia(at.rotation);
                let l = rolling_impulse(
                    inv_inertia,
                    cur.angular_velocity,
                    Mat3::ZERO,
                    Vec3::ZERO,
                    resistance,
                    (touch.point - at.position).length(),
                    r.impulse.dot(touch.normal),
                );
                cur.angular_velocity -= inv_inertia * l;
            }
            if r.impulse != Vec3::ZERO
                && cur.velocity.is_finite()
                && cur.angular_velocity.is_finite()
            {
                let push = (touch.depth - STATIC_SLOP).max(0.0) * STATIC_CORRECTION;
                out.push(Kick {
                    other: st.index,
                    dv: cur.velocity - s.velocity,
                    dw: cur.angular_velocity - s.angular_velocity,
                    dp: -touch.normal * push,
                });
            }
        }
    }

    /// Rule 2b: where body `me` at `s` meets static body `st` within the tick, given their
    /// manifold `m` at the tick: the centroid of the points it touches or reaches
    /// ([`Rules::reached_centroid`]) when it touches at the tick or `st` is a plane (whose
    /// normal is the same at any time); else, when it touches `st` within the tick moving at
    /// its velocities, the centroid of the points and the normal of their contact at that
    /// moment ([`impact`]).
    fn static_touch(
        &self,
        me: usize,
        s: &BodyState,
        st: &StaticBody,
        m: &Manifold,
    ) -> Option<Touch> {
        let (deepest, _) = deepest(m)?;
        if deepest >= 0.0 || matches!(st.shape, Shape::Plane { .. }) {
            let (point, depth) = self.reached_centroid(m, s, &st.state)?;
            return Some(Touch::at_tick(point, m.normal, depth));
        }
        let hit = impact(
            &self.shapes[me],
            &s.motion(),
            &st.shape,
            &Motion::fixed(Pose::new(st.state.position, st.state.rotation)),
            self.dt,
        )?;
        let points = hit.manifold.points();
        let centroid = points.iter().map(|p| p.position).sum::<Vec3>() / points.len() as f32;
        let (depth, _) = self::deepest(&hit.manifold)?;
        Some(Touch {
            point: centroid,
            normal: hit.manifold.normal,
            time: hit.time,
            depth,
        })
    }

    /// Rule 4: the pre-event state at tick `k` of a body anchored at `a` (`k >= a.tick`): its
    /// anchor's state flown for `k - a.tick` ticks ([`crate::dynamics::free_flight`] for
    /// `(k - a.tick) dt`: the parabola and the exponential map of its spin), `a.state` itself
    /// at `a.tick`. A pure function of the anchor and the tick, so the same bits however a run
    /// batches its ticks.
    #[inline]
    pub fn flight(&self, a: &Anchor, k: Tick) -> BodyState {
        debug_assert!(
            k >= a.tick,
            "flight back in time: anchor {} to tick {k}",
            a.tick
        );
        let n = k - a.tick;
        if n == 0 {
            return a.state;
        }
        if let Some(g) = &a.glide {
            debug_assert!(n <= g.len, "a glide of {} ticks asked at {n}", g.len);
            return g.by.state(&a.state, n, g.len);
        }
        self.free_flight().after(&a.state, n)
    }

    /// Rule 4's free flight (gravity, tick length) as a value: what the GVT buffer computes
    /// committed frames with.
    pub fn free_flight(&self) -> FreeFlight {
        FreeFlight {
            gravity: self.gravity,
            dt: self.dt,
        }
    }

    /// The radius of a sphere around body `i`'s shape at any rotation (its own radius for a
    /// sphere, [`shape_extent`](crate::geometry::shape_extent) for the others): what bounds a
    /// turning body over a span or an interval.
    fn extent(&self, i: usize) -> f32 {
        match self.shapes[i] {
            Shape::Sphere { radius } => radius,
            ref other => crate::geometry::shape_extent(other),
        }
    }

    /// Rule 1 over the ticks `from..=to` of a glide (`a.glide`, `a.tick <= from <= to <=
    /// a.tick + len`): its position moves along the line of its substep's move, monotonically
    /// in each axis and in f32 too (the share `n / len` rounds monotonically, and so do its
    /// product with the move and the sum with the start), so it lies between its positions at
    /// `from` and `to`; its velocities stay the solved ones. The shape turns as the move's
    /// rotation is interpolated: spheres keep their box, other shapes are bounded by the sphere
    /// of their extent, as in [`Rules::span`].
    fn glide_span(&self, i: usize, a: &Anchor, from: Tick, to: Tick) -> SpanSweep {
        let (p0, p1) = (self.flight(a, from).position, self.flight(a, to).position);
        let half = self.extent(i);
        let v = a.state.velocity;
        let magnitude = p0.abs().max(p1.abs()) + Vec3::splat(half);
        let slack = magnitude * SPAN_SLACK + Vec3::splat(1e-6);
        let step = v * self.dt;
        let step_slack = v.abs() * (SPAN_SLACK * self.dt);
        let speed = v.length();
        SpanSweep {
            tight: Aabb::new(
                p0.min(p1) - Vec3::splat(half) - slack,
                p0.max(p1) + Vec3::splat(half) + slack,
            ),
            step_min: step - step_slack,
            step_max: step + step_slack,
            speed: speed * (1.0 + SPAN_SLACK),
            slowest: (speed * (1.0 - SPAN_SLACK)).max(0.0),
        }
    }

    /// Rule 1 over a span: what body `i`, flying from anchor `a` (not asleep), sweeps over the
    /// ticks `from..=to` (`a.tick <= from <= to`). Its position is a parabola in each axis, so
    /// its extremes over the span lie at the span's ends or at the parabola's vertex; its
    /// velocity is linear, so the extremes of `v dt` lie at the ends. The shape's box turns with
    /// the body: spheres keep theirs, other shapes are bounded by the sphere of their extent.
    pub fn span(&self, i: usize, a: &Anchor, from: Tick, to: Tick) -> SpanSweep {
        debug_assert!(a.tick <= from && from <= to);
        if a.glide.is_some() {
            return self.glide_span(i, a, from, to);
        }
        let (x, v, g) = (a.state.position, a.state.velocity, self.gravity);
        let (t0, t1) = (
            ticks_f32(from - a.tick) * self.dt,
            ticks_f32(to - a.tick) * self.dt,
        );
        let at = |t: f32| x + v * t + g * (0.5 * t * t);
        let (p0, p1) = (at(t0), at(t1));
        let (mut lo, mut hi) = (p0.min(p1), p0.max(p1));
        // The vertex of each axis's parabola, where it lies inside the span.
        for k in 0..3 {
            if g[k] != 0.0 {
                let tv = -v[k] / g[k];
                if tv > t0 && tv < t1 {
                    let pv = x[k] + v[k] * tv + 0.5 * g[k] * tv * tv;
                    lo[k] = lo[k].min(pv);
                    hi[k] = hi[k].max(pv);
                }
            }
        }
        let half = self.extent(i);
        let magnitude = x.abs() + v.abs() * t1 + g.abs() * (0.5 * t1 * t1) + Vec3::splat(half);
        let slack = magnitude * SPAN_SLACK + Vec3::splat(1e-6);
        let (v0, v1) = (v + g * t0, v + g * t1);
        let step_slack = (v.abs() + g.abs() * t1) * (SPAN_SLACK * self.dt);
        SpanSweep {
            tight: Aabb::new(
                lo - Vec3::splat(half) - slack,
                hi + Vec3::splat(half) + slack,
            ),
            step_min: v0.min(v1) * self.dt - step_slack,
            step_max: v0.max(v1) * self.dt + step_slack,
            speed: v0.length().max(v1.length()) * (1.0 + SPAN_SLACK),
            slowest: {
                // The velocity is a line in time: its smallest length is at the point of the
                // line nearest zero, clamped to the span.
                let gg = g.length_squared();
                let tm = if gg > 0.0 {
                    (-v.dot(g) / gg).clamp(t0, t1)
                } else {
                    t0
                };
                ((v + g * tm).length() * (1.0 - SPAN_SLACK)
                    - (v.abs() + g.abs() * t1).max_element() * SPAN_SLACK)
                    .max(0.0)
            },
        }
    }

    /// Rule 2 over an interval: whether bodies `a` and `b`, each flying from an anchor or still
    /// at a state, certainly do not touch ([`Rules::in_contact`]) at any tick of `from..=to`.
    /// Two bodies touch at a tick only if their shapes touch or meet within the tick moving at
    /// their velocities (rule 2: `collide`'s points down to the tick's sweep of their relative
    /// velocity, the time of impact within the tick); each shape lies within its bounding
    /// sphere (the radius, or [`shape_extent`]) around the body's position, whatever its
    /// rotation, so their centres are then within both spheres and that sweep. Under
    /// one gravity two flights differ by a line in time, a flight and a still body by a
    /// parabola: the least distance of their centres over the interval is that of the line
    /// (less the parabola's bend), computed in f64, and the pair is apart if it exceeds both
    /// spheres and the fastest relative sweep of a tick (not the boxes' margins: a pair whose
    /// boxes overlap but whose shapes do not touch makes no contact), with a slack of
    /// [`APART_SLACK`] of the larger body's magnitudes (its radius and the larger of its
    /// anchor's position, displacement and bend to the interval's end and the interval's own)
    /// and 0.1 mm.
    ///
    /// [`shape_extent`]: crate::geometry::shape_extent
    pub fn apart(
        &self,
        a: (usize, super::tvht::Motion<'_>),
        b: (usize, super::tvht::Motion<'_>),
        from: Tick,
        to: Tick,
    ) -> bool {
        self.near_ticks(a, b, from, to).is_none()
    }

    /// Rule 2 over an interval, narrowed: the ticks of `from..=to` outside of which bodies `a`
    /// and `b` certainly do not touch (`None`: at none, [`Rules::apart`]). The same bound as
    /// `apart`'s: at a tick they touch only if the line part of their distance, `d0 + d1 s`,
    /// is within its reach `R` (the spheres, the fastest sweep, the slack and the
    /// parabola's bend over the whole interval); `|d0 + d1 s| <= R` is a quadratic in `s`
    /// whose roots, solved in f64 and widened by a tick each way, bound the ticks. Where the
    /// relative motion over the interval is too slight to solve for, the whole interval.
    pub fn near_ticks(
        &self,
        (a, ma): (usize, super::tvht::Motion<'_>),
        (b, mb): (usize, super::tvht::Motion<'_>),
        from: Tick,
        to: Tick,
    ) -> Option<(Tick, Tick)> {
        use super::tvht::Motion;
        let dt = f64::from(self.dt);
        let g = self.gravity.as_dvec3();
        // Position p(s) = c0 + c1 s + c2 s^2 and velocity v0 + v1 s, `s` seconds after tick
        // `from`; and the magnitude of the f32 arithmetic that gives the engine's states: the
        // anchor's position, displacement and bend over the whole flight to `to` (a position
        // near zero may be the sum of large terms) or those of the interval, whichever is
        // larger, and the radius.
        let span = (to - from) as f64 * dt;
        let poly = |m: Motion<'_>, r: f64| match m {
            Motion::Flying(an) if an.glide.is_some() => {
                // A glide (`Move::state`): the start moved by the share `n / len` of the move,
                // a line in time with no bend, at the solved (constant) velocity; the f32
                // arithmetic is on the start's position and the move.
                let g = an.glide.expect("a glide");
                debug_assert!(an.tick <= from && to - an.tick <= g.len);
                let (p, d) = (an.state.position.as_dvec3(), g.by.position.as_dvec3());
                let len = g.len as f64;
                let c0 = p + d * ((from - an.tick) as f64 / len);
                let c1 = d / (len * dt);
                let z = glam::DVec3::ZERO;
                let v = an.state.velocity.as_dvec3();
                (c0, c1, z, (v, z), p.length() + d.length() + r)
            }
            Motion::Flying(an) => {
                debug_assert!(an.tick <= from);
                let t0 = (from - an.tick) as f64 * dt;
                let t1 = t0 + span;
                let (p, v) = (an.state.position.as_dvec3(), an.state.velocity.as_dvec3());
                let c1 = v + g * t0;
                let c0 = p + v * t0 + g * (0.5 * t0 * t0);
                // The larger of the flight's terms from its anchor to the interval's end and
                // the interval's own (position, displacement at either velocity, bend).
                let flight = p.length() + v.length() * t1 + g.length() * 0.5 * t1 * t1;
                let interval = c0.length()
                    + (c1.length() + v.length()) * span
                    + g.length() * 0.5 * span * span;
                (c0, c1, g * 0.5, (c1, g), flight.max(interval) + r)
            }
            Motion::Still(st) => {
                let (p, z) = (st.position.as_dvec3(), glam::DVec3::ZERO);
                (p, z, z, (st.velocity.as_dvec3(), z), p.length() + r)
            }
        };
        let (ra, rb) = (f64::from(self.extent(a)), f64::from(self.extent(b)));
        let (pa, va, ca, (wa0, wa1), size_a) = poly(ma, ra);
        let (pb, vb, cb, (wb0, wb1), size_b) = poly(mb, rb);
        let (d0, d1, d2) = (pa - pb, va - vb, ca - cb);
        // The relative velocity is a line in time: fastest at either end.
        let fastest = [0.0, span]
            .iter()
            .map(|&s| ((wa0 - wb0) + (wa1 - wb1) * s).length())
            .fold(0.0, f64::max);
        let ll = d1.length_squared();
        let s_near = if ll > 0.0 {
            (-d0.dot(d1) / ll).clamp(0.0, span)
        } else {
            0.0
        };
        let nearest = (d0 + d1 * s_near).length() - d2.length() * span * span;
        let magnitude = size_a.max(size_b);
        let reach = ra + rb + fastest * dt;
        let within = reach + APART_SLACK * magnitude + 1e-4;
        if nearest > within {
            return None;
        }
        // a s^2 + 2 b s + c <= 0, with the stable pair of roots.
        let r = within + d2.length() * span * span;
        let (qa, qb, qc) = (ll, d0.dot(d1), d0.length_squared() - r * r);
        // (Too slight, or not a number: the whole interval.)
        if qa * span * span <= 1e-12 * r * r || qa.is_nan() || r.is_nan() {
            return Some((from, to));
        }
        let root = (qb * qb - qa * qc).max(0.0).sqrt();
        let q = -(qb + root.copysign(qb));
        let (s1, s2) = if q != 0.0 {
            let (x, y) = (q / qa, qc / q);
            (x.min(y), x.max(y))
        } else {
            (-qb / qa, -qb / qa)
        };
        let last = (to - from) as f64;
        let (lo, hi) = ((s1 / dt).floor() - 1.0, (s2 / dt).ceil() + 1.0);
        if !(lo.is_finite() && hi.is_finite()) || hi < lo {
            return Some((from, to));
        }
        // Two spheres flying apart touch at no tick (see `separating_after`).
        let hi = match self.separating_after((a, ma), (b, mb), (d0, d1), r, magnitude, to) {
            Some(s) if s.is_finite() => hi.min((s / dt).ceil()),
            _ => hi,
        };
        if hi < lo.max(0.0) {
            return None;
        }
        Some((
            from + lo.clamp(0.0, last) as Tick,
            from + hi.clamp(0.0, last) as Tick,
        ))
    }

    /// Rule 2 for two spheres flying from their anchors (no glide, neither still): the
    /// seconds after the interval's start from which they certainly do not touch, because
    /// they separate. Their relative position is the line `d0 + d1 s` (one gravity moves both
    /// alike), the normal of a sphere pair lies along it and the contact point on it, so the
    /// normal velocity of `resolve` is `d1 . d / |d|`, and `resolve` gives no impulse at
    /// `v_n >= 0` ([`Rules::in_contact`] is then false). Past the closest approach
    /// `s* = -d0 . d1 / |d1|^2`, `d1 . d = |d1|^2 (s - s*) > 0`; the pair is called separating
    /// only where that margin exceeds what the f32 arithmetic of `v_n` can take off it, at any
    /// distance within `r` (the window's reach, beyond which they do not touch): the states'
    /// position error (`APART_SLACK` of `magnitude`, and 0.1 mm) on the line and on the
    /// spin's lever, their velocity error, and the rounding of the products, each bounded
    /// generously (a factor of two over the sum, and a tick more in the caller).
    fn separating_after(
        &self,
        (a, ma): (usize, super::tvht::Motion<'_>),
        (b, mb): (usize, super::tvht::Motion<'_>),
        (d0, d1): (glam::DVec3, glam::DVec3),
        r: f64,
        magnitude: f64,
        to: Tick,
    ) -> Option<f64> {
        use super::tvht::Motion;
        let (Shape::Sphere { radius: ra }, Shape::Sphere { radius: rb }) =
            (&self.shapes[a], &self.shapes[b])
        else {
            return None;
        };
        let (Motion::Flying(aa), Motion::Flying(ab)) = (ma, mb) else {
            return None;
        };
        if aa.glide.is_some() || ab.glide.is_some() {
            return None;
        }
        let ll = d1.length_squared();
        if ll.is_nan() || ll <= 0.0 {
            return None;
        }
        let (g, dt) = (f64::from(self.gravity.length()), f64::from(self.dt));
        // Each body's speed over its flight to the interval's end (tick `to`), and its spin.
        let speed =
            |an: &Anchor| f64::from(an.state.velocity.length()) + g * ((to - an.tick) as f64 * dt);
        let (va, vb) = (speed(aa), speed(ab));
        let spin = f64::from(aa.state.angular_velocity.length())
            + f64::from(ab.state.angular_velocity.length());
        let rr = f64::from(ra + rb);
        let dp = APART_SLACK * magnitude + 1e-4;
        let eps = 1e-6;
        let vrel = d1.length() + spin * rr;
        let err = d1.length() * dp + r * (eps * (va + vb) + spin * (dp + eps * rr) + eps * vrel);
        Some((-d0.dot(d1) + 2.0 * err) / ll)
    }

    /// Rule 1 over a span: a box that contains body `i`'s box of rule 1 ([`Rules::aabb`]) at
    /// every tick of `sweep`'s span (the TVHT's box of a span record).
    pub fn span_aabb(&self, sweep: &SpanSweep) -> Aabb {
        let limit = Vec3::splat(SWEEP_SIDES * self.largest_side);
        let b = sweep.tight.expanded(AABB_MARGIN);
        Aabb::new(
            b.min + sweep.step_min.clamp(-limit, limit).min(Vec3::ZERO),
            b.max + sweep.step_max.clamp(-limit, limit).max(Vec3::ZERO),
        )
    }

    /// Rule 2b over a span: whether body `i` can meet no static body at any tick of `sweep`'s
    /// span (then [`Rules::static_kicks`] finds nothing at any of them, and the span needs no
    /// test tick by tick). The same two tests as a tick's, on bounds of all the span's ticks:
    /// a plane is clear of the lowest corner of the span's box by more than the fastest
    /// tick's sweep; any other static body's box misses the span's box swept both ways.
    pub fn span_clear_of_statics(&self, sweep: &SpanSweep) -> bool {
        if self.statics.is_empty() {
            return true;
        }
        let gauge = Gauge::of(&sweep.tight);
        let margin = sweep.speed * self.dt;
        let b = sweep.tight.expanded(AABB_MARGIN);
        let swept = Aabb::new(
            b.min + sweep.step_min.min(Vec3::ZERO),
            b.max + sweep.step_max.max(Vec3::ZERO),
        );
        self.statics.iter().all(|st| match st.shape {
            Shape::Plane { .. } => gauge.clear_of_plane(&st.shape, margin),
            _ => !swept.overlaps(&st.aabb),
        })
    }

    /// Rules 3 and 4 at tick `k` of a body whose pre-event state at `k` is `s`, flown from
    /// anchor `a`: with kicks at `k` (dynamic and static, any order: they are sorted here),
    /// their sum added to `s` in the canonical order makes its new anchor, at `k`; without,
    /// it keeps `a`. Returns the anchor for the ticks after `k` and the pre-event state at
    /// `k + 1`.
    pub fn advance(
        &self,
        a: &Anchor,
        s: &BodyState,
        k: Tick,
        kicks: &mut [Kick],
    ) -> (Anchor, BodyState) {
        if kicks.is_empty() {
            return (*a, self.flight(a, k + 1));
        }
        kicks.sort_unstable_by_key(|k| k.other);
        let mut post = *s;
        for k in kicks.iter() {
            post.velocity += k.dv;
            post.angular_velocity += k.dw;
            post.position += k.dp;
        }
        let anchor = Anchor::at(k, post);
        (anchor, self.flight(&anchor, k + 1))
    }
}

/// The TVHT asks a span's state and box at a tick of the rules (rules 4 and 1): the table then
/// refines a span record to the tick exactly as the engine computes the body there.
impl super::tvht::Flight for Rules {
    #[inline]
    fn state(&self, _body: super::BodyId, anchor: &Anchor, tick: Tick) -> BodyState {
        self.flight(anchor, tick)
    }

    #[inline]
    fn aabb(&self, body: super::BodyId, state: &BodyState) -> Aabb {
        Rules::aabb(self, body as usize, state)
    }

    /// The engine acts only on pairs that touch (rule 2): the table keeps no other contact of
    /// a span (boxes that overlap without touching cost no event).
    #[inline]
    fn touches(&self, c: &super::tvht::Contact) -> bool {
        self.in_contact(c.a.body as usize, &c.a.state, c.b.body as usize, &c.b.state)
    }

    /// Rule 1 over a span ([`Rules::span_aabb`]): its box holds the box of every tick.
    #[inline]
    fn sweep(&self, body: super::BodyId, anchor: &Anchor, from: Tick, to: Tick) -> Option<Aabb> {
        Some(self.span_aabb(&self.span(body as usize, anchor, from, to)))
    }

    /// Rule 2 over an interval, narrowed ([`Rules::near_ticks`]).
    #[inline]
    fn near_ticks(
        &self,
        (a, ma): (super::BodyId, super::tvht::Motion<'_>),
        (b, mb): (super::BodyId, super::tvht::Motion<'_>),
        from: Tick,
        to: Tick,
    ) -> Option<(Tick, Tick)> {
        Rules::near_ticks(self, (a as usize, ma), (b as usize, mb), from, to)
    }
}

/// What a body's flight from one anchor sweeps over a span of ticks `from..=to` (rule 1 over
/// a span, [`Rules::span`]): a box around its shape's box at every tick, the extremes of its
/// per-tick displacement `v dt`, and its fastest speed, each conservative in f32 (a slack of
/// [`SPAN_SLACK`] of the magnitudes involved covers the rounding of the per-tick arithmetic).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpanSweep {
    /// Contains the shape's box (without margin or sweep) at every tick of the span.
    pub tight: Aabb,
    /// Per axis, at most / at least `v dt` at any tick of the span.
    pub step_min: Vec3,
    pub step_max: Vec3,
    /// At least `|v|` at any tick of the span.
    pub speed: f32,
    /// At most `|v|` at any tick of the span.
    pub slowest: f32,
}

/// Relative slack of a span's bounds over the values they bound (see [`SpanSweep`]): f32's
/// rounding is 6e-8 of a value; the flight's few operations stay far inside this.
pub const SPAN_SLACK: f32 = 1e-5;

/// The relative slack of [`Rules::apart`]: a state's flight is a few f32 operations on
/// magnitudes up to its position, displacement and radius, each rounded by at most half an
/// ulp (6e-8 of the magnitude), and the contact test rounds the distance of two such states
/// again: about 5e-7 of the magnitude in all, so 4e-6 leaves a factor of eight.
pub const APART_SLACK: f64 = 4e-6;

/// A body's anchor (rule 4): its state just after its last event (kicks, a static body's
/// correction, a step of its group's solver, a change of its group) and that event's tick, or
/// where a run starts it. Between events the body flies in closed form from it
/// ([`Rules::flight`]).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Anchor {
    pub tick: Tick,
    pub state: BodyState,
    /// A body of a contact group inside its group's substep (rule 4 of
    /// [`super::group_rules`]) glides instead of flying: its state at `tick + n` is
    /// [`Move::state`] of `state` (the substep's start, with the solved velocities), `n` of
    /// the glide's `len` ticks. Only the records of a glide carry one (a group's island keeps
    /// its substep itself), so a checkpoint, which saves islands, never holds one: the field
    /// is not in the file (whose format stays as it was).
    #[serde(skip)]
    pub glide: Option<Glide>,
}

/// What the island solver did to a body over a substep of `len` ticks (see [`Anchor::glide`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Glide {
    pub by: Move,
    pub len: u64,
}

impl Anchor {
    /// A body at `state` at tick `tick`, flying from there.
    pub fn at(tick: Tick, state: BodyState) -> Anchor {
        Anchor {
            tick,
            state,
            glide: None,
        }
    }

    /// A body of a group at `state` at tick `tick`, the start of a substep of `len` ticks
    /// that moves it `by`.
    pub fn gliding(tick: Tick, state: BodyState, by: Move, len: u64) -> Anchor {
        Anchor {
            tick,
            state,
            glide: Some(Glide { by, len }),
        }
    }

    /// Whether two anchors are the same bits (floats compared by bits: `-0.0` differs from
    /// `0.0`, a NaN equals itself).
    pub fn same_bits(&self, o: &Anchor) -> bool {
        let glide = |a: &Anchor| {
            a.glide.map(|g| {
                let (p, q) = (g.by.position, g.by.rotation);
                ([p.x, p.y, p.z, q.x, q.y, q.z, q.w].map(f32::to_bits), g.len)
            })
        };
        self.tick == o.tick
            && self.state.to_array().map(f32::to_bits) == o.state.to_array().map(f32::to_bits)
            && glide(self) == glide(o)
    }
}

/// A body's box grown by [`AABB_MARGIN`] and moved along `d` (joined with where it was).
fn swept_box(b: Aabb, d: Vec3) -> Aabb {
    let b = b.expanded(AABB_MARGIN);
    Aabb::new(b.min + d.min(Vec3::ZERO), b.max + d.max(Vec3::ZERO))
}

/// What the plane test needs of a body's tight box, worked out once per tick for all the
/// statics (six planes in `bouncing`).
pub(super) struct Gauge {
    center: Vec3,
    half: Vec3,
    /// The centre's largest coordinate magnitude (for the rounding slack).
    reach: f32,
}

impl Gauge {
    pub(super) fn of(tight: &Aabb) -> Gauge {
        let center = tight.center();
        Gauge {
            center,
            half: tight.half(),
            reach: center.abs().max_element(),
        }
    }

    /// Whether `shape` is a plane that the body in box `tight` is too far above for the narrow
    /// phase to find anything: it keeps points down to a gap of `margin`, and the box's lowest
    /// corner along the normal (as [`Aabb::lowest_along`] has it) is no higher than the body's
    /// lowest point, so nothing is lost (the slack absorbs rounding between this bound and the
    /// narrow phase's own arithmetic). A plane's box is everything, so without this every body
    /// met every plane at every tick in the full narrow phase: a quarter of the instructions of
    /// `bouncing` (six walls).
    #[inline]
    pub(super) fn clear_of_plane(&self, shape: &Shape, margin: f32) -> bool {
        let Shape::Plane { normal, offset } = *shape else {
            return false;
        };
        let gap = lowest_along(self.center, self.half, normal) - offset;
        gap > margin + PLANE_SLACK * (1.0 + offset.abs() + self.reach)
    }
}

/// See [`Gauge::clear_of_plane`]: the slack, per metre of coordinate magnitude (and 1 m).
pub(super) const PLANE_SLACK: f32 = 1e-4;

/// The deepest point of a manifold (the first of equal depth) and its depth, if any.
fn deepest(m: &Manifold) -> Option<(f32, Vec3)> {
    let mut best: Option<(f32, Vec3)> = None;
    for p in m.points() {
        if best.is_none_or(|(d, _)| p.depth > d) {
            best = Some((p.depth, p.position));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::SplitMix64;
    use glam::Quat;

    /// Rule 4: a body flies from its anchor in closed form. Its state at any tick is the
    /// parabola of its anchor (to f32 rounding over 10 s of flight), exactly its anchor at the
    /// anchor's tick, the same bits whether asked directly or tick after tick through
    /// [`Rules::advance`] without kicks, and a kick makes a new anchor at its tick.
    #[test]
    fn a_body_flies_from_its_anchor() {
        let scene = crate::scene::SceneBuilder::new()
            .gravity(Vec3::new(0.0, -9.81, 0.0))
            .body(
                crate::scene::BodySpec::sphere(0.5)
                    .velocity(Vec3::new(3.0, 8.0, -1.0))
                    .angular_velocity(Vec3::new(0.0, 0.0, 30.0)),
            )
            .build()
            .unwrap();
        let rules = Rules::new(&scene).unwrap();
        let s0 = rules.initial[0];
        let a = Anchor::at(40, s0);
        assert_eq!(rules.flight(&a, 40), s0);
        let (mut anchor, mut s) = (a, s0);
        for k in 40..40 + 9600 {
            (anchor, s) = rules.advance(&anchor, &s, k, &mut []);
            assert_eq!(anchor, a, "no kick, no new anchor");
            assert_eq!(s, rules.flight(&a, k + 1), "tick {}", k + 1);
        }
        let t = 10.0f32;
        let x = s0.position + s0.velocity * t + rules.gravity * (0.5 * t * t);
        assert!(
            (s.position - x).length() < 1e-3 * x.length(),
            "{} for {x}",
            s.position
        );
        assert!((s.velocity - (s0.velocity + rules.gravity * t)).length() < 1e-3);
        // A kick at tick 50: the new anchor is the post-event state there.
        let mut kicks = [Kick {
            other: 7,
            dv: Vec3::X,
            dw: Vec3::ZERO,
            dp: Vec3::ZERO,
        }];
        let pre = rules.flight(&a, 50);
        let (b, next) = rules.advance(&a, &pre, 50, &mut kicks);
        assert_eq!(b.tick, 50);
        assert_eq!(b.state.velocity, pre.velocity + Vec3::X);
        assert_eq!(next, rules.flight(&b, 51));
    }

    /// Rule 1 and 2b over a span, against every tick of it: random bodies (spheres, boxes,
    /// cylinders), anchors near the origin, kilometres from it or 75 km from it (the far end of
    /// `parallel` 100,000, where an ulp of a position is 8 mm), fast or slow, spinning, under
    /// gravity of any direction, and spans of 1 to 2048 ticks starting at any distance from
    /// their anchor. The span's box must hold every tick's box of rule 1 (in f32, where a box
    /// one ulp short is a missed contact), and a span found clear of the static bodies (a
    /// ground plane, a tilted plane, a static box) must have no static kick at any tick.
    #[test]
    fn a_span_bounds_every_tick_of_its_flight() {
        use crate::scene::{BodySpec, SceneBuilder};
        let mut rng = SplitMix64::new(31);
        let mut cleared = 0;
        for case in 0..3000 {
            let mut u = || rng.next_signed();
            let g = Vec3::new(u(), u(), u()) * if case % 4 == 0 { 0.0 } else { 20.0 };
            let shape = match case % 3 {
                0 => BodySpec::sphere(0.05 + u().abs()),
                1 => BodySpec::cuboid(Vec3::new(u(), u(), u()).abs() + 0.05),
                _ => BodySpec::cylinder(0.05 + u().abs(), 0.05 + u().abs()),
            };
            let far = match case % 10 {
                0 => 75_000.0,
                5 => 5000.0,
                _ => 20.0,
            };
            let scene = SceneBuilder::new()
                .gravity(g)
                .plane(Vec3::Y, -far)
                .body(BodySpec::plane(Vec3::new(1.0, 0.3, 0.1).normalize(), far))
                .body(
                    BodySpec::cuboid(Vec3::new(3.0, 1.0, 2.0))
                        .position(Vec3::new(u(), u(), u()) * far)
                        .fixed(true),
                )
                .body(shape.position(Vec3::ZERO))
                .build()
                .unwrap();
            let rules = Rules::new(&scene).unwrap();
            let speed = if case % 2 == 0 { 2.0 } else { 60.0 };
            let state = BodyState {
                position: Vec3::new(u(), u(), u()) * far,
                rotation: Quat::from_scaled_axis(Vec3::new(u(), u(), u()) * 3.0).normalize(),
                velocity: Vec3::new(u(), u(), u()) * speed,
                angular_velocity: Vec3::new(u(), u(), u()) * 40.0,
            };
            let a = Anchor::at(100, state);
            let from = 100 + (u().abs() * 3000.0) as Tick;
            let to = from + (u().abs() * 2047.0) as Tick;
            let sweep = rules.span(0, &a, from, to);
            let bx = rules.span_aabb(&sweep);
            let clear = rules.span_clear_of_statics(&sweep);
            cleared += usize::from(clear);
            let mut kicks = Vec::new();
            for t in from..=to {
                let s = rules.flight(&a, t);
                let b = rules.aabb(0, &s);
                assert!(
                    bx.min.cmple(b.min).all() && bx.max.cmpge(b.max).all(),
                    "case {case}, tick {t} of {from}..={to}: {b:?} outside {bx:?}"
                );
                if clear {
                    rules.static_kicks(0, &s, &mut kicks);
                    assert!(kicks.is_empty(), "case {case}, tick {t}: {kicks:?}");
                }
            }
        }
        assert!(cleared > 200, "only {cleared} spans of 3000 cleared");
    }

    /// Rule 2 over an interval: whenever [`Rules::apart`] says two bodies never touch over an
    /// interval, [`Rules::in_contact`] is false at every tick of it (in f32, where a pair
    /// called apart one ulp too soon is a missed contact). Random pairs of spheres, boxes and
    /// cylinders, flying or one still (a sleep record's state), spinning, under gravity of any
    /// direction, near the origin or 75 km from it (the far end of `parallel` 100,000), or back
    /// near it after 20 s of fast flight (a position that sums kilometres of terms), passing
    /// within a few radii of each other over 1 to 300 ticks; and it calls most far pairs apart.
    /// Every tick at which a pair touches is within [`Rules::near_ticks`]'s window, which is
    /// often much narrower than the interval.
    #[test]
    fn bodies_called_apart_never_touch() {
        use super::super::tvht::Motion;
        use crate::scene::SceneBuilder;
        let mut rng = SplitMix64::new(77);
        let (mut apart, mut touched, mut far_apart) = (0, 0, 0);
        let (mut late_apart, mut late_touched, mut narrowed) = (0, 0, 0);
        for case in 0..4000 {
            let mut u = || rng.next_signed();
            let g = Vec3::new(u(), u(), u()) * if case % 3 == 0 { 0.0 } else { 10.0 };
            let (sa, sb) = (pair_shape(case, &mut u), pair_shape(case / 3, &mut u));
            let scene = SceneBuilder::new()
                .gravity(g)
                .body(sa.position(Vec3::ZERO))
                .body(sb.position(Vec3::new(5.0, 0.0, 0.0)))
                .build()
                .unwrap();
            let rules = Rules::new(&scene).unwrap();
            let origin = match case % 4 {
                0 => Vec3::new(75_000.0, 0.0, 0.0),
                1 => Vec3::new(u(), u(), u()) * 5000.0,
                _ => Vec3::new(u(), u(), u()) * 20.0,
            };
            let speed = if case % 2 == 0 { 2.0 } else { 20.0 };
            let state = |u: &mut dyn FnMut() -> f32| BodyState {
                position: origin + Vec3::new(u(), u(), u()) * 3.0,
                rotation: Quat::from_scaled_axis(Vec3::new(u(), u(), u()) * 3.0).normalize(),
                velocity: Vec3::new(u(), u(), u()) * speed,
                angular_velocity: Vec3::new(u(), u(), u()) * 20.0,
            };
            let mut a = Anchor::at(100, state(&mut u));
            // One case in seven: a fast flight 20 s old, near `origin` again at the interval
            // as the sum of kilometres of position, displacement and bend.
            let late: Tick = if case % 7 == 3 { 19_200 } else { 0 };
            if late > 0 {
                let t = late as f32 * rules.dt;
                a.state.velocity *= 30.0;
                a.state.position -= a.state.velocity * t + rules.gravity * (0.5 * t * t);
            }
            let mut b = Anchor::at(100 + late + (u().abs() * 50.0) as Tick, state(&mut u));
            let still = case % 5 == 0;
            let from = b.tick + (u().abs() * 50.0) as Tick;
            let to = from + (u().abs() * 300.0) as Tick;
            if case % 2 == 1 {
                // A near miss or a graze: at a tick `k` of the interval the centres are
                // `f` times the sum of the bounding radii apart, `f` in 0.6..1.6.
                let k = from + (u().abs() * (to - from) as f32) as Tick;
                let gap = (rules.extent(0) + rules.extent(1)) * (1.1 + 0.5 * u());
                let n = Vec3::new(u(), u(), u()).normalize_or(Vec3::X) * gap;
                let at_k = rules.flight(&a, k).position - n;
                b.state.position = if still {
                    at_k
                } else {
                    // Back from tick `k` to b's anchor along its own flight.
                    let t = (k - b.tick) as f32 * rules.dt;
                    at_k - b.state.velocity * t - rules.gravity * (0.5 * t * t)
                };
            }
            let mb = if still {
                Motion::Still(&b.state)
            } else {
                Motion::Flying(&b)
            };
            let said = rules.apart((0, Motion::Flying(&a)), (1, mb), from, to);
            let window = rules.near_ticks((0, Motion::Flying(&a)), (1, mb), from, to);
            assert_eq!(said, window.is_none(), "case {case}");
            let mut any = false;
            for t in touch_ticks(&rules, (&a, &b, still), from, to) {
                any = true;
                assert!(
                    !said,
                    "case {case}: called apart over {from}..={to}, touch at {t}"
                );
                let (lo, hi) = window.unwrap();
                assert!(
                    (lo..=hi).contains(&t),
                    "case {case}: near only at {lo}..={hi} of {from}..={to}, touch at {t}"
                );
            }
            narrowed += usize::from(window.is_some_and(|(lo, hi)| 2 * (hi - lo) < to - from));
            apart += usize::from(said);
            touched += usize::from(any);
            far_apart += usize::from(said && case % 4 == 0);
            late_apart += usize::from(said && late > 0);
            late_touched += usize::from(any && late > 0);
        }
        assert!(
            apart > 1000 && touched > 500 && far_apart > 200,
            "apart {apart}, touched {touched}, apart 75 km out {far_apart} of 4000"
        );
        assert!(
            late_apart > 100 && late_touched > 50,
            "of the flights 20 s old, {late_apart} apart and {late_touched} touched"
        );
        assert!(
            narrowed > 500,
            "{narrowed} of 4000 pairs near at most half their interval"
        );
    }

    /// Rule 2 over an interval for two spheres flying apart ([`Rules::separating_after`]):
    /// every tick at which they touch is inside [`Rules::near_ticks`]'s window, which ends
    /// soon after their closest approach. Random pairs whose centres pass at `0.2` to `1.02`
    /// of their summed radii (most overlap there, a sixth graze), at a tick inside the
    /// interval, at relative speeds from 5 mm/s to 45 m/s, spinning up to 50 rad/s, under
    /// gravity of any direction, near the origin or 75 km from it, or back near it after 20 s
    /// of fast flight: where the f32 arithmetic blurs the sign of the normal velocity most.
    #[test]
    fn spheres_flying_apart_touch_only_inside_the_window() {
        use super::super::tvht::Motion;
        use crate::scene::{BodySpec, SceneBuilder};
        let mut rng = SplitMix64::new(1931);
        let (mut touched, mut cut, mut last_inside) = (0, 0, 0);
        for case in 0..3000 {
            let mut u = || rng.next_signed();
            let g = Vec3::new(u(), u(), u()) * if case % 3 == 0 { 0.0 } else { 10.0 };
            let (ra, rb) = (0.1 + 0.5 * u().abs(), 0.1 + 0.5 * u().abs());
            let scene = SceneBuilder::new()
                .gravity(g)
                .body(BodySpec::sphere(ra).position(Vec3::ZERO))
                .body(BodySpec::sphere(rb).position(Vec3::new(5.0, 0.0, 0.0)))
                .build()
                .unwrap();
            let rules = Rules::new(&scene).unwrap();
            let origin = match case % 4 {
                0 => Vec3::new(75_000.0, 0.0, 0.0),
                1 => Vec3::new(u(), u(), u()) * 5000.0,
                _ => Vec3::new(u(), u(), u()) * 20.0,
            };
            let spin = |u: &mut dyn FnMut() -> f32| Vec3::new(u(), u(), u()) * 30.0;
            let late: Tick = if case % 7 == 3 { 19_200 } else { 0 };
            let speed = [0.01, 0.3, 3.0, 30.0][case % 4];
            let va = Vec3::new(u(), u(), u()) * 10.0 * if late > 0 { 30.0 } else { 1.0 };
            let dv = Vec3::new(u(), u(), u()).normalize_or(Vec3::Y) * speed * (0.5 + u().abs());
            let from: Tick = 200 + late;
            let to = from + 20 + (u().abs() * 300.0) as Tick;
            // Closest approach at tick `k`, the centres `gap` apart, across the velocity.
            let k = from + (u().abs() * (to - from) as f32) as Tick;
            let graze = case % 6 == 0;
            let gap = (ra + rb)
                * if graze {
                    0.98 + 0.04 * u().abs()
                } else {
                    0.2 + 0.8 * u().abs()
                };
            let across = Vec3::new(u(), u(), u())
                .reject_from(dv)
                .try_normalize()
                .unwrap_or_else(|| dv.any_orthonormal_vector());
            let t_k = (k - 100) as f32 * rules.dt;
            let a_at_k = origin + Vec3::new(u(), u(), u());
            // A sphere flying from tick 100 at `v`, spinning, to be at `at_k` at tick `k`.
            let mut flying = |at_k: Vec3, v: Vec3| Anchor {
                tick: 100,
                state: BodyState {
                    position: at_k - v * t_k - g * (0.5 * t_k * t_k),
                    rotation: Quat::from_scaled_axis(spin(&mut u) * 0.1).normalize(),
                    velocity: v,
                    angular_velocity: spin(&mut u),
                },
                glide: None,
            };
            let a = flying(a_at_k, va);
            let b = flying(a_at_k + across * gap, va + dv);
            let window =
                rules.near_ticks((0, Motion::Flying(&a)), (1, Motion::Flying(&b)), from, to);
            let ticks = touch_ticks(&rules, (&a, &b, false), from, to);
            for &t in &ticks {
                let (lo, hi) = window.expect("a pair that touches is near");
                assert!(
                    (lo..=hi).contains(&t),
                    "case {case}: near only at {lo}..={hi} of {from}..={to}, touch at {t} \
                     (closest at {k})"
                );
            }
            touched += usize::from(!ticks.is_empty());
            cut += usize::from(window.is_some_and(|(_, hi)| hi < to && hi <= k + 40));
            last_inside += usize::from(
                window.is_some_and(|(_, hi)| ticks.last().is_some_and(|&t| hi - t <= 2)),
            );
        }
        assert!(
            touched > 1000 && cut > 500 && last_inside > 100,
            "of 3000 pairs {touched} touched, {cut} windows end within 40 ticks of the \
             closest approach, {last_inside} within 2 ticks of the last touch"
        );
    }

    /// One of a random pair of bodies for the tests of rule 2 over an interval: a sphere, a
    /// box or a cylinder (by `k`) of random size.
    fn pair_shape(k: usize, u: &mut dyn FnMut() -> f32) -> crate::scene::BodySpec {
        use crate::scene::BodySpec;
        match k % 3 {
            0 => BodySpec::sphere(0.1 + 0.5 * u().abs()),
            1 => BodySpec::cuboid(Vec3::new(u(), u(), u()).abs() * 0.5 + 0.05),
            _ => BodySpec::cylinder(0.1 + 0.5 * u().abs(), 0.1 + 0.5 * u().abs()),
        }
    }

    /// The ticks of `from..=to` at which bodies 0 and 1 touch ([`Rules::in_contact`]), body 0
    /// flying or gliding from `a`, body 1 from `b` or, if `still`, standing at `b`'s state.
    fn touch_ticks(
        rules: &Rules,
        (a, b, still): (&Anchor, &Anchor, bool),
        from: Tick,
        to: Tick,
    ) -> Vec<Tick> {
        (from..=to)
            .filter(|&t| {
                let x = rules.flight(a, t);
                let y = if still { b.state } else { rules.flight(b, t) };
                rules.in_contact(0, &x, 1, &y)
            })
            .collect()
    }

    /// A random glide for the tests below: a substep of `len` ticks (a power of two up to 16)
    /// from `state` at tick 100, moving by up to `reach` metres and turning up to a radian and
    /// a half.
    fn random_glide(u: &mut dyn FnMut() -> f32, state: BodyState, reach: f32) -> Anchor {
        let len = 1 << ((u().abs() * 4.99) as u32);
        let by = Move {
            position: Vec3::new(u(), u(), u()) * reach,
            rotation: Quat::from_scaled_axis(Vec3::new(u(), u(), u()) * 0.9).normalize(),
        };
        Anchor::gliding(100, state, by, len)
    }

    /// Rule 1 over a glide (issue #32), against every tick of it: random bodies (spheres,
    /// boxes, cylinders), starts far from the origin or near it, moves short or long, fast or
    /// slow solved velocities, over any part of a substep of 1 to 16 ticks. The glide's box
    /// must hold every tick's box of rule 1, in f32 (one ulp short is a missed contact).
    #[test]
    fn a_glide_bounds_every_tick_of_its_substep() {
        use crate::scene::{BodySpec, SceneBuilder};
        let mut rng = SplitMix64::new(32);
        for case in 0..5000 {
            let mut u = || rng.next_signed();
            let shape = match case % 3 {
                0 => BodySpec::sphere(0.05 + u().abs()),
                1 => BodySpec::cuboid(Vec3::new(u(), u(), u()).abs() + 0.05),
                _ => BodySpec::cylinder(0.05 + u().abs(), 0.05 + u().abs()),
            };
            let far = [20.0, 5000.0, 75_000.0][case % 3 / 2 + case % 5 / 4];
            let scene = SceneBuilder::new()
                .gravity(Vec3::new(0.0, -9.81, 0.0))
                .body(shape.position(Vec3::ZERO))
                .build()
                .unwrap();
            let rules = Rules::new(&scene).unwrap();
            let speed = [0.01, 2.0, 60.0][case % 3];
            let state = BodyState {
                position: Vec3::new(u(), u(), u()) * far,
                rotation: Quat::from_scaled_axis(Vec3::new(u(), u(), u()) * 3.0).normalize(),
                velocity: Vec3::new(u(), u(), u()) * speed,
                angular_velocity: Vec3::new(u(), u(), u()) * 40.0,
            };
            let reach = [1e-4, 0.01, 1.0][case % 7 % 3];
            let a = random_glide(&mut u, state, reach);
            let len = a.glide.unwrap().len;
            let from = 100 + (u().abs() * len as f32) as Tick;
            let to = from + (u().abs() * (100 + len - from) as f32) as Tick;
            let bx = rules.span_aabb(&rules.span(0, &a, from, to));
            for t in from..=to {
                let b = rules.aabb(0, &rules.flight(&a, t));
                assert!(
                    bx.min.cmple(b.min).all() && bx.max.cmpge(b.max).all(),
                    "case {case}, tick {t} of {from}..={to} (len {len}): {b:?} outside {bx:?}"
                );
            }
        }
    }

    /// Rule 2 over an interval with a glide (issue #32): whenever [`Rules::near_ticks`] bounds
    /// where a glide and another body (gliding, flying or still) may touch, they touch at no
    /// tick outside it ([`Rules::in_contact`], in f32). Random pairs near each other or
    /// grazing, near the origin or 5 km from it, over any part of a substep; and most pairs
    /// that do not touch are called apart or narrowed.
    #[test]
    fn a_glide_touches_only_where_near_ticks_says() {
        use super::super::tvht::Motion;
        use crate::scene::SceneBuilder;
        let mut rng = SplitMix64::new(78);
        let (mut touched, mut apart) = (0, 0);
        for case in 0..6000 {
            let mut u = || rng.next_signed();
            let (sa, sb) = (pair_shape(case, &mut u), pair_shape(case / 3, &mut u));
            let scene = SceneBuilder::new()
                .gravity(Vec3::new(0.0, -9.81, 0.0))
                .body(sa.position(Vec3::ZERO))
                .body(sb.position(Vec3::new(5.0, 0.0, 0.0)))
                .build()
                .unwrap();
            let rules = Rules::new(&scene).unwrap();
            let origin = if case % 4 == 0 {
                Vec3::new(u(), u(), u()) * 5000.0
            } else {
                Vec3::new(u(), u(), u()) * 20.0
            };
            let state = |u: &mut dyn FnMut() -> f32, spread: f32| BodyState {
                position: origin + Vec3::new(u(), u(), u()) * spread,
                rotation: Quat::from_scaled_axis(Vec3::new(u(), u(), u()) * 3.0).normalize(),
                velocity: Vec3::new(u(), u(), u()) * 3.0,
                angular_velocity: Vec3::new(u(), u(), u()) * 5.0,
            };
            let sa0 = state(&mut u, 0.0);
            let a = random_glide(&mut u, sa0, 0.5);
            let len = a.glide.unwrap().len;
            let from = 100 + (u().abs() * len as f32) as Tick;
            let to = from + (u().abs() * (100 + len - from) as f32) as Tick;
            let spread = [0.3, 1.0, 3.0][case % 3];
            let sb0 = state(&mut u, spread);
            let b = match case % 3 {
                0 => random_glide(&mut u, sb0, 0.5),
                _ => Anchor::at(100, sb0),
            };
            // `b` glides with a substep as long as `a`'s, or flies, or stands still.
            let mut b = match b.glide {
                Some(g) => Anchor::gliding(100, b.state, g.by, len),
                None => b,
            };
            let still = case % 3 == 2;
            if case % 2 == 1 {
                // A near miss or a graze: at a tick `k` of the interval the centres are `f`
                // times the sum of the bounding radii apart, `f` in 0.6..1.6.
                let k = from + (u().abs() * (to - from) as f32) as Tick;
                let gap = (rules.extent(0) + rules.extent(1)) * (1.1 + 0.5 * u());
                let n = Vec3::new(u(), u(), u()).normalize_or(Vec3::X) * gap;
                let target = rules.flight(&a, k).position - n;
                // Back from tick `k` to b's anchor along its own motion.
                b.state.position = target - (rules.flight(&b, k).position - b.state.position);
            }
            let mb = if still {
                Motion::Still(&b.state)
            } else {
                Motion::Flying(&b)
            };
            let window = rules.near_ticks((0, Motion::Flying(&a)), (1, mb), from, to);
            let mut any = false;
            for t in touch_ticks(&rules, (&a, &b, still), from, to) {
                any = true;
                let (lo, hi) = window.unwrap_or_else(|| {
                    panic!("case {case}: called apart over {from}..={to}, touch at {t}")
                });
                assert!(
                    (lo..=hi).contains(&t),
                    "case {case}: near only at {lo}..={hi} of {from}..={to}, touch at {t}"
                );
            }
            touched += usize::from(any);
            apart += usize::from(window.is_none());
        }
        assert!(
            touched > 500 && apart > 500,
            "touched {touched}, apart {apart} of 6000"
        );
    }

    /// The plane skip loses nothing: whenever it says a body is clear of a plane, the narrow
    /// phase finds no point for that body and plane. Random spheres, boxes and cylinders at
    /// random poses, near tilted planes at near and far offsets, with small and large margins;
    /// and it does skip most of those that are far.
    #[test]
    fn a_body_clear_of_a_plane_has_no_contact_with_it() {
        let mut rng = SplitMix64::new(11);
        let (mut skipped, mut far) = (0, 0);
        for i in 0..20_000 {
            let shape = match i % 3 {
                0 => Shape::Sphere {
                    radius: 0.05 + rng.next_unit(),
                },
                1 => Shape::Cuboid {
                    half_extents: Vec3::new(rng.next_unit(), rng.next_unit(), rng.next_unit())
                        + 0.05,
                },
                _ => Shape::Cylinder {
                    radius: 0.05 + rng.next_unit(),
                    half_height: 0.05 + rng.next_unit(),
                },
            };
            let axis = Vec3::new(rng.next_signed(), rng.next_signed(), rng.next_signed());
            let rotation =
                Quat::from_axis_angle(axis.normalize_or(Vec3::X), 4.0 * rng.next_signed());
            let normal = if i % 4 == 0 {
                Vec3::Y
            } else {
                Vec3::new(rng.next_signed(), rng.next_signed(), rng.next_signed())
                    .normalize_or(Vec3::Y)
            };
            let offset = 100.0 * rng.next_signed();
            // The body's centre at a height above the plane of -1 to 4 m.
            let tangent = normal.any_orthonormal_vector() * 50.0 * rng.next_signed();
            let position = normal * (offset + 4.0 * rng.next_unit() - 1.0 + 0.0) + tangent;
            let margin = if i % 2 == 0 {
                0.0
            } else {
                0.5 * rng.next_unit()
            };
            let plane = Shape::Plane { normal, offset };
            let tight = shape_aabb(&shape, position, rotation);
            let pose = Pose::new(position, rotation);
            let m = collide(
                &shape,
                &pose,
                &plane,
                &Pose::new(Vec3::ZERO, Quat::IDENTITY),
                margin,
            );
            if Gauge::of(&tight).clear_of_plane(&plane, margin) {
                skipped += 1;
                assert_eq!(m.count, 0, "{shape:?} at {position} {rotation}: {m:?}");
            }
            if normal.dot(position) - offset > 3.0 {
                far += 1;
            }
        }
        assert!(skipped >= far, "skipped {skipped} of 20000, {far} far ones");
        assert!(!Gauge::of(&Aabb::EVERYTHING).clear_of_plane(&Shape::Sphere { radius: 1.0 }, 0.0));
    }
}
