//! The island contact solver: Box2D v3's soft step.
//!
//! An island (seed 002: a connected component of bodies joined by touching contacts) is solved on
//! its own, so islands run in parallel. The solver is Erin Catto's *soft step* of Box2D v3
//! ("Solver2D", the solver Box2D v3 ships): a frame of `dt` is cut into `substeps` substeps of
//! `h = dt / substeps`; the contact data (anchors, effective masses, softness) is prepared once per
//! frame, and each substep does
//!
//! 1. integrate velocities (gravity);
//! 2. warm start: re-apply the accumulated impulses of the previous substep;
//! 3. solve with bias: sequential impulses, where penetration is pushed out by a *soft*
//!    constraint (a damped spring of `contact_hertz`, damping ratio 10, push speed capped) and a
//!    speculative point (still apart by `s > 0`) allows exactly the approach `s / h`;
//! 4. integrate positions (`dp += h v`, `dq ← exp(½ h ω) dq`);
//! 5. relax: the same iteration without the bias, which removes the velocity the soft push added,
//!    so resting stacks do not gain energy.
//!
//! After the substeps a *restitution* pass gives each point that was hit faster than
//! `restitution_threshold` the impulse that makes its separation speed `e` times its approach
//! speed. The approach speed is measured at the start of the last substep before the point first
//! pushes, before that substep's warm start (rather than at the start of the frame as in Box2D),
//! so a ball bouncing on the ground keeps `e²` of its height to within a substep of gravity, and
//! the impulses a persistent contact carries over do not count as an impact on its neighbours. The current separation of a point is tracked without
//! re-running the narrow phase from each body's position and rotation change since the frame began
//! (`dp`, `dq`) and the anchors `r_A`, `r_B` fixed at preparation.
//!
//! Friction has two tangent directions per point, solved together and clamped to the friction
//! disc `|λ_t| ≤ μ λ_n` (Coulomb). Every body of an island lives in one flat slice
//! ([`SolverBody`]); constraints refer to bodies by index into that slice. A static body is the
//! slice's last element, with zero inverse mass and inertia, so no formula needs a branch for it.

use super::MassProps;
use super::integrate::{advance_rotation, integrate_rotation};
use crate::geometry::Manifold;
use glam::{Mat3A, Quat, Vec3, Vec3A};

/// Approach speeds below this (m/s) do not bounce: Box2D v3's default restitution threshold
/// (`b2_defaultWorldDef`'s `restitutionThreshold`), [`SolverParams::restitution_threshold`].
pub const RESTITUTION_THRESHOLD: f32 = 1.0;

/// Solver settings for one frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolverParams {
    /// Frame length in seconds.
    pub dt: f32,
    pub substeps: u32,
    pub gravity: Vec3,
    /// Stiffness of contacts between two dynamic bodies (static contacts use twice this).
    pub contact_hertz: f32,
    pub damping_ratio: f32,
    /// Largest speed at which penetration is pushed out (m/s).
    pub max_push_velocity: f32,
    /// Approach speeds below this (m/s) do not bounce.
    pub restitution_threshold: f32,
}

impl SolverParams {
    /// Box2D v3's defaults for a frame of `dt` cut into `substeps`.
    pub fn new(dt: f32, substeps: u32, gravity: Vec3) -> SolverParams {
        let substeps = substeps.max(1);
        SolverParams {
            dt,
            substeps,
            gravity,
            contact_hertz: (0.25 * substeps as f32 / dt).min(30.0),
            damping_ratio: 10.0,
            max_push_velocity: 3.0,
            restitution_threshold: RESTITUTION_THRESHOLD,
        }
    }
}

/// One body as the solver sees it (SIMD-aligned vectors: this is the hot data).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolverBody {
    pub velocity: Vec3A,
    pub angular_velocity: Vec3A,
    /// Position change since the start of the frame.
    pub delta_position: Vec3A,
    /// Rotation change since the start of the frame.
    pub delta_rotation: Quat,
    /// `delta_rotation` as a matrix (rotating an anchor costs three multiply-adds); kept only
    /// when `rotating_anchors`.
    pub delta_matrix: Mat3A,
    /// Whether contacts need this body's rotated anchors (false for spheres: see
    /// [`ContactConstraint::rotate_a`]); saves the matrix per substep.
    pub rotating_anchors: bool,
    /// World inverse inertia at the start of the frame.
    pub inv_inertia: Mat3A,
    pub inv_mass: f32,
}

impl SolverBody {
    /// The static body: never moves, absorbs any impulse.
    pub const STATIC: SolverBody = SolverBody {
        velocity: Vec3A::ZERO,
        angular_velocity: Vec3A::ZERO,
        delta_position: Vec3A::ZERO,
        delta_rotation: Quat::IDENTITY,
        delta_matrix: Mat3A::IDENTITY,
        rotating_anchors: false,
        inv_inertia: Mat3A::ZERO,
        inv_mass: 0.0,
    };

    pub fn new(velocity: Vec3, angular_velocity: Vec3, rotation: Quat, mass: &MassProps) -> Self {
        SolverBody {
            velocity: velocity.into(),
            angular_velocity: angular_velocity.into(),
            delta_position: Vec3A::ZERO,
            delta_rotation: Quat::IDENTITY,
            delta_matrix: Mat3A::IDENTITY,
            rotating_anchors: true,
            inv_inertia: Mat3A::from(mass.world_inv_inertia(rotation)),
            inv_mass: mass.inv_mass,
        }
    }

    /// Writes the end-of-frame state into `state` (the state the body had when it was made by
    /// [`SolverBody::new`]): position and rotation advanced by the deltas, the new velocities.
    #[inline]
    pub fn apply_to(&self, state: &mut super::BodyState) {
        state.position += Vec3::from(self.delta_position);
        state.rotation = (self.delta_rotation * state.rotation).normalize();
        state.velocity = self.velocity.into();
        state.angular_velocity = self.angular_velocity.into();
    }
}

/// Soft-constraint coefficients (Box2D v3 `b2Softness`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Softness {
    pub bias_rate: f32,
    pub mass_scale: f32,
    pub impulse_scale: f32,
}

impl Softness {
    /// A damped spring of `hertz` and damping ratio `zeta` as seen by a step of `h`.
    pub fn new(hertz: f32, zeta: f32, h: f32) -> Softness {
        if hertz == 0.0 {
            return Softness {
                bias_rate: 0.0,
                mass_scale: 1.0,
                impulse_scale: 0.0,
            };
        }
        let omega = 2.0 * std::f32::consts::PI * hertz;
        let a1 = 2.0 * zeta + h * omega;
        let a2 = h * omega * a1;
        let a3 = 1.0 / (1.0 + a2);
        Softness {
            bias_rate: omega / a1,
            mass_scale: a2 * a3,
            impulse_scale: a3,
        }
    }
}

/// One contact point of a constraint.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ConstraintPoint {
    pub anchor_a: Vec3A,
    pub anchor_b: Vec3A,
    /// Separation minus `n · (r_B - r_A)`: add the current `n · (p_B - p_A)` to get separation.
    pub base_separation: f32,
    pub normal_mass: f32,
    pub tangent_mass: [f32; 2],
    pub normal_impulse: f32,
    pub tangent_impulse: [f32; 2],
    pub max_normal_impulse: f32,
    /// Normal approach speed before the point first pushed (negative when approaching).
    pub relative_velocity: f32,
    /// The angular parts of the point's three rows, fixed for the frame.
    pub rows: Rows,
}

/// The angular parts of a point's constraint rows along `d` = normal, tangent 1, tangent 2,
/// fixed for the frame like the anchors (Box2D v3): `j = r × d` projects an angular velocity on the
/// row (`(ω × r) · d = ω · (r × d)`), and `k = I⁻¹ (r × d)` is the angular velocity change of a unit
/// impulse along `d`. With them a row costs a few dot products and multiply-adds, no cross products
/// or matrix products in the iterations.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rows {
    pub ja: [Vec3A; 3],
    pub jb: [Vec3A; 3],
    pub ka: [Vec3A; 3],
    pub kb: [Vec3A; 3],
}

/// A contact between bodies `body_a` and `body_b` (indices into the island's body slice). Its
/// points are `points[first .. first + count]` of the island's point slice, so a one-point sphere
/// contact costs one point of memory, not four.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactConstraint {
    pub normal: Vec3A,
    pub tangents: [Vec3A; 2],
    pub body_a: u32,
    pub body_b: u32,
    pub first: u32,
    pub count: u32,
    pub friction: f32,
    pub restitution: f32,
    pub softness: Softness,
    /// The engine's contact index, to store the impulses back.
    pub contact: u32,
    /// Whether the separation depends on A's (B's) rotation: false for static bodies and spheres,
    /// whose surface stays where it is when they turn, so their anchors need not be rotated.
    pub rotate_a: bool,
    pub rotate_b: bool,
    /// Both sides are spheres or static: the normal impulse passes through the centres (no
    /// torque) and the inertia is a scalar (`inv_inertia_a`, `inv_inertia_b`), the fast path.
    pub round: bool,
    pub inv_inertia_a: f32,
    pub inv_inertia_b: f32,
    /// Rolling and spinning resistance of this contact (see `rolling_resistance` below), the
    /// larger of its two bodies' materials as Box2D v3 mixes it
    /// ([`crate::scene::mix_rolling_resistance`]); 0 (what [`ContactConstraint::new`] sets)
    /// turns it off. Both engines set it from the scene's `rolling_resistance`.
    pub rolling_resistance: f32,
    /// The pair was apart at the frame's start and meets within it, at a relative speed of the
    /// restitution threshold or more (the frame engine's impacts, `frame::contacts`): it
    /// bounces whatever the normal component of its approach, which for a grazing pass is
    /// below the threshold. false (what [`ContactConstraint::new`] sets) keeps the threshold.
    pub impact: bool,
}

/// One side of a contact, as [`ContactConstraint::new`] needs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConstraintBody {
    /// Index into the island's body slice.
    pub index: u32,
    /// Centre at the start of the frame.
    pub position: Vec3,
    pub is_static: bool,
    /// A sphere: turning it does not move its surface and its inertia is a scalar.
    pub is_round: bool,
    /// A sphere's inverse moment of inertia (ignored otherwise).
    pub inv_inertia: f32,
}

/// Two unit vectors orthogonal to unit `n` and to each other, chosen deterministically from `n`.
#[inline]
pub fn tangent_basis(n: Vec3) -> [Vec3; 2] {
    let t1 = if n.x.abs() > 0.57735 {
        Vec3::new(n.y, -n.x, 0.0).normalize()
    } else {
        Vec3::new(0.0, n.z, -n.y).normalize()
    };
    [t1, n.cross(t1)]
}

impl ContactConstraint {
    /// A constraint from `manifold` between bodies `a` and `b` (positions at the start of the
    /// frame); its points are written to `points[first ..]` (the island's point slice). A static
    /// side anchors at the contact point itself (it never moves). Warm-start impulses come from
    /// the manifold points.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        a: ConstraintBody,
        b: ConstraintBody,
        manifold: &Manifold,
        friction: f32,
        restitution: f32,
        contact: u32,
        points: &mut [ConstraintPoint],
        first: u32,
    ) -> ContactConstraint {
        let n = manifold.normal;
        let tangents = tangent_basis(n);
        for (cp, mp) in points[first as usize..].iter_mut().zip(manifold.points()) {
            let anchor = |side: &ConstraintBody| {
                if side.is_static {
                    Vec3::ZERO
                } else {
                    mp.position - side.position
                }
            };
            let (ra, rb) = (anchor(&a), anchor(&b));
            *cp = ConstraintPoint {
                anchor_a: ra.into(),
                anchor_b: rb.into(),
                base_separation: -mp.depth - n.dot(rb - ra),
                normal_impulse: mp.normal_impulse,
                tangent_impulse: [
                    mp.tangent_impulse.dot(tangents[0]),
                    mp.tangent_impulse.dot(tangents[1]),
                ],
                ..ConstraintPoint::default()
            };
        }
        let round_a = a.is_static || a.is_round;
        let round_b = b.is_static || b.is_round;
        ContactConstraint {
            normal: n.into(),
            tangents: [tangents[0].into(), tangents[1].into()],
            body_a: a.index,
            body_b: b.index,
            first,
            count: manifold.count,
            friction,
            restitution,
            softness: Softness::default(),
            contact,
            rotate_a: !round_a,
            rotate_b: !round_b,
            round: round_a && round_b,
            inv_inertia_a: if a.is_static { 0.0 } else { a.inv_inertia },
            inv_inertia_b: if b.is_static { 0.0 } else { b.inv_inertia },
            rolling_resistance: 0.0,
            impact: false,
        }
    }

    /// This constraint's points in the island's point slice.
    #[inline]
    pub fn points<'p>(&self, points: &'p [ConstraintPoint]) -> &'p [ConstraintPoint] {
        &points[self.first as usize..(self.first + self.count) as usize]
    }

    /// Copies the accumulated impulses (from the island's point slice) into the manifold for the
    /// next frame's warm start.
    pub fn store_impulses(&self, points: &[ConstraintPoint], manifold: &mut Manifold) {
        let pts = self.points(points);
        let n = pts.len().min(manifold.count as usize);
        for (mp, cp) in manifold.points[..n].iter_mut().zip(&pts[..n]) {
            mp.normal_impulse = cp.normal_impulse;
            mp.tangent_impulse = (self.tangents[0] * cp.tangent_impulse[0]
                + self.tangents[1] * cp.tangent_impulse[1])
                .into();
        }
    }
}

/// The velocities of one side of a constraint, loaded once and stored back once.
#[derive(Clone, Copy)]
struct Side {
    v: Vec3A,
    w: Vec3A,
    inv_mass: f32,
    inv_inertia: Mat3A,
}

impl Side {
    #[inline]
    fn load(b: &SolverBody) -> Side {
        Side {
            v: b.velocity,
            w: b.angular_velocity,
            inv_mass: b.inv_mass,
            inv_inertia: b.inv_inertia,
        }
    }

    #[inline]
    fn point_velocity(&self, r: Vec3A) -> Vec3A {
        self.v + self.w.cross(r)
    }
}

#[inline]
fn relative_velocity(a: &Side, b: &Side, ra: Vec3A, rb: Vec3A) -> Vec3A {
    b.point_velocity(rb) - a.point_velocity(ra)
}

#[inline]
fn range(c: &ContactConstraint) -> std::ops::Range<usize> {
    c.first as usize..(c.first + c.count) as usize
}

fn prepare(
    params: &SolverParams,
    bodies: &[SolverBody],
    constraints: &mut [ContactConstraint],
    points: &mut [ConstraintPoint],
) {
    let h = params.dt / params.substeps as f32;
    let dynamic = Softness::new(params.contact_hertz, params.damping_ratio, h);
    let fixed = Softness::new(2.0 * params.contact_hertz, params.damping_ratio, h);
    for c in constraints.iter_mut() {
        let a = Side::load(&bodies[c.body_a as usize]);
        let b = Side::load(&bodies[c.body_b as usize]);
        c.softness = if a.inv_mass == 0.0 || b.inv_mass == 0.0 {
            fixed
        } else {
            dynamic
        };
        if c.round {
            // Spheres and statics: scalar inertia, normal through the centres, no rows needed.
            let (ja, jb) = (c.inv_inertia_a, c.inv_inertia_b);
            let lin = a.inv_mass + b.inv_mass;
            for cp in &mut points[range(c)] {
                let (ra, rb) = (cp.anchor_a, cp.anchor_b);
                let tangent = |t: Vec3A| {
                    let k =
                        lin + ja * ra.cross(t).length_squared() + jb * rb.cross(t).length_squared();
                    if k > 0.0 { 1.0 / k } else { 0.0 }
                };
                cp.normal_mass = if lin > 0.0 { 1.0 / lin } else { 0.0 };
                cp.tangent_mass = [tangent(c.tangents[0]), tangent(c.tangents[1])];
                cp.max_normal_impulse = 0.0;
                cp.relative_velocity = c.normal.dot(b.v - a.v);
            }
            continue;
        }
        let dirs = [c.normal, c.tangents[0], c.tangents[1]];
        for cp in &mut points[range(c)] {
            let (ra, rb) = (cp.anchor_a, cp.anchor_b);
            let mut rows = Rows::default();
            let mut mass = [0.0f32; 3];
            for (k, d) in dirs.iter().enumerate() {
                rows.ja[k] = ra.cross(*d);
                rows.jb[k] = rb.cross(*d);
                rows.ka[k] = a.inv_inertia * rows.ja[k];
                rows.kb[k] = b.inv_inertia * rows.jb[k];
                let kk = a.inv_mass
                    + b.inv_mass
                    + rows.ja[k].dot(rows.ka[k])
                    + rows.jb[k].dot(rows.kb[k]);
                mass[k] = if kk > 0.0 { 1.0 / kk } else { 0.0 };
            }
            cp.rows = rows;
            cp.normal_mass = mass[0];
            cp.tangent_mass = [mass[1], mass[2]];
            cp.max_normal_impulse = 0.0;
            cp.relative_velocity = c.normal.dot(relative_velocity(&a, &b, ra, rb));
        }
    }
}

/// Linear and angular velocity of one side, loaded once per constraint and stored back once.
#[derive(Clone, Copy)]
struct Vel {
    v: Vec3A,
    w: Vec3A,
    m: f32,
}

impl Vel {
    #[inline]
    fn load(b: &SolverBody) -> Vel {
        Vel {
            v: b.velocity,
            w: b.angular_velocity,
            m: b.inv_mass,
        }
    }

    /// Writes the velocities back (never into the shared static stand-in).
    #[inline]
    fn store(&self, b: &mut SolverBody) {
        if self.m > 0.0 {
            b.velocity = self.v;
            b.angular_velocity = self.w;
        }
    }
}

/// Relative velocity of B against A along row `k` (direction `d`).
#[inline]
fn row_velocity(a: &Vel, b: &Vel, rows: &Rows, k: usize, d: Vec3A) -> f32 {
    d.dot(b.v - a.v) + rows.jb[k].dot(b.w) - rows.ja[k].dot(a.w)
}

/// Applies impulse `lambda` along row `k` (direction `d`): to B, and its opposite to A.
#[inline]
fn row_apply(a: &mut Vel, b: &mut Vel, rows: &Rows, k: usize, d: Vec3A, lambda: f32) {
    a.v -= d * (lambda * a.m);
    a.w -= rows.ka[k] * lambda;
    b.v += d * (lambda * b.m);
    b.w += rows.kb[k] * lambda;
}

/// The approach speed for restitution of every point that has not pushed yet this frame: its
/// normal speed now, at the start of a substep, before the warm start. (Measured after the warm
/// start, a persistent contact took the velocity that its neighbours' carried impulses gave for
/// an impact: a sphere wedged between two nearly opposite planes then bounced off each in turn
/// with ever larger carried impulses, its speed growing 80-fold per frame under contact groups,
/// whose island steps one substep per tick. Found by `tests/fuzz_sim.rs`.)
fn approach_speeds(
    bodies: &[SolverBody],
    constraints: &[ContactConstraint],
    points: &mut [ConstraintPoint],
) {
    for c in constraints {
        let a = Vel::load(&bodies[c.body_a as usize]);
        let b = Vel::load(&bodies[c.body_b as usize]);
        let n = c.normal;
        for cp in &mut points[range(c)] {
            if cp.max_normal_impulse == 0.0 {
                cp.relative_velocity = if c.round {
                    n.dot(b.v - a.v)
                } else {
                    row_velocity(&a, &b, &cp.rows, 0, n)
                };
            }
        }
    }
}

fn warm_start(
    bodies: &mut [SolverBody],
    constraints: &[ContactConstraint],
    points: &[ConstraintPoint],
) {
    for c in constraints {
        let (ia, ib) = (c.body_a as usize, c.body_b as usize);
        let mut a = Vel::load(&bodies[ia]);
        let mut b = Vel::load(&bodies[ib]);
        for cp in &points[range(c)] {
            if c.round {
                let p = c.normal * cp.normal_impulse
                    + c.tangents[0] * cp.tangent_impulse[0]
                    + c.tangents[1] * cp.tangent_impulse[1];
                a.v -= p * a.m;
                a.w -= cp.anchor_a.cross(p) * c.inv_inertia_a;
                b.v += p * b.m;
                b.w += cp.anchor_b.cross(p) * c.inv_inertia_b;
                continue;
            }
            let r = &cp.rows;
            row_apply(&mut a, &mut b, r, 0, c.normal, cp.normal_impulse);
            row_apply(&mut a, &mut b, r, 1, c.tangents[0], cp.tangent_impulse[0]);
            row_apply(&mut a, &mut b, r, 2, c.tangents[1], cp.tangent_impulse[1]);
        }
        a.store(&mut bodies[ia]);
        b.store(&mut bodies[ib]);
    }
}

/// Bias, mass scale and impulse scale of a point at separation `s` (Box2D v3 soft contact).
#[inline]
fn soft_terms(
    s: f32,
    inv_h: f32,
    softness: &Softness,
    max_push: f32,
    use_bias: bool,
) -> (f32, f32, f32) {
    if s > 0.0 {
        (s * inv_h, 1.0, 0.0)
    } else if use_bias {
        (
            (softness.bias_rate * s).max(-max_push),
            softness.mass_scale,
            softness.impulse_scale,
        )
    } else {
        (0.0, 1.0, 0.0)
    }
}

/// The accumulated, clamped normal impulse update; returns the increment.
#[inline]
fn normal_increment(cp: &mut ConstraintPoint, vn: f32, terms: (f32, f32, f32)) -> f32 {
    let (bias, mass_scale, impulse_scale) = terms;
    let impulse = -cp.normal_mass * mass_scale * (vn + bias) - impulse_scale * cp.normal_impulse;
    let new = (cp.normal_impulse + impulse).max(0.0);
    let delta = new - cp.normal_impulse;
    cp.normal_impulse = new;
    cp.max_normal_impulse = cp.max_normal_impulse.max(new);
    delta
}

/// The friction impulse update from the tangential velocities `(v1, v2)`, clamped to the Coulomb
/// disc; returns the increments along the two tangents.
#[inline]
fn friction_increment(cp: &mut ConstraintPoint, friction: f32, v1: f32, v2: f32) -> (f32, f32) {
    let old = cp.tangent_impulse;
    let mut l0 = old[0] - cp.tangent_mass[0] * v1;
    let mut l1 = old[1] - cp.tangent_mass[1] * v2;
    let max = friction * cp.normal_impulse;
    let len2 = l0 * l0 + l1 * l1;
    if len2 > max * max {
        let scale = if len2 > 0.0 { max / len2.sqrt() } else { 0.0 };
        l0 *= scale;
        l1 *= scale;
    }
    cp.tangent_impulse = [l0, l1];
    (l0 - old[0], l1 - old[1])
}

fn solve(
    bodies: &mut [SolverBody],
    constraints: &[ContactConstraint],
    points: &mut [ConstraintPoint],
    inv_h: f32,
    params: &SolverParams,
    use_bias: bool,
) {
    for c in constraints {
        if c.round {
            solve_round(bodies, c, points, inv_h, params, use_bias);
            continue;
        }
        let (ia, ib) = (c.body_a as usize, c.body_b as usize);
        let mut a = Vel::load(&bodies[ia]);
        let mut b = Vel::load(&bodies[ib]);
        let n = c.normal;
        let dp = bodies[ib].delta_position - bodies[ia].delta_position;
        let (qa, qb) = (bodies[ia].delta_matrix, bodies[ib].delta_matrix);
        let pts = &mut points[range(c)];
        for cp in pts.iter_mut() {
            let (ra, rb) = (cp.anchor_a, cp.anchor_b);
            // Current separation from the bodies' motion since the frame began.
            let pa = if c.rotate_a { qa * ra } else { ra };
            let pb = if c.rotate_b { qb * rb } else { rb };
            let s = n.dot(dp + (pb - pa)) + cp.base_separation;
            let terms = soft_terms(s, inv_h, &c.softness, params.max_push_velocity, use_bias);
            let vn = row_velocity(&a, &b, &cp.rows, 0, n);
            let delta = normal_increment(cp, vn, terms);
            row_apply(&mut a, &mut b, &cp.rows, 0, n, delta);
        }
        // Friction: both tangent directions together, clamped to the Coulomb disc.
        let (t1, t2) = (c.tangents[0], c.tangents[1]);
        for cp in pts.iter_mut() {
            let v1 = row_velocity(&a, &b, &cp.rows, 1, t1);
            let v2 = row_velocity(&a, &b, &cp.rows, 2, t2);
            let (d1, d2) = friction_increment(cp, c.friction, v1, v2);
            row_apply(&mut a, &mut b, &cp.rows, 1, t1, d1);
            row_apply(&mut a, &mut b, &cp.rows, 2, t2, d2);
        }
        a.store(&mut bodies[ia]);
        b.store(&mut bodies[ib]);
    }
}

/// The sphere path: one point, normal through the centres, scalar inertia.
#[inline]
fn solve_round(
    bodies: &mut [SolverBody],
    c: &ContactConstraint,
    points: &mut [ConstraintPoint],
    inv_h: f32,
    params: &SolverParams,
    use_bias: bool,
) {
    let (ia, ib) = (c.body_a as usize, c.body_b as usize);
    let (ba, bb) = (&bodies[ia], &bodies[ib]);
    let (mut va, mut wa, ma) = (ba.velocity, ba.angular_velocity, ba.inv_mass);
    let (mut vb, mut wb, mb) = (bb.velocity, bb.angular_velocity, bb.inv_mass);
    let (ja, jb) = (c.inv_inertia_a, c.inv_inertia_b);
    let n = c.normal;
    let dp = bb.delta_position - ba.delta_position;
    for cp in &mut points[range(c)] {
        let (ra, rb) = (cp.anchor_a, cp.anchor_b);
        let s = n.dot(dp + (rb - ra)) + cp.base_separation;
        let terms = soft_terms(s, inv_h, &c.softness, params.max_push_velocity, use_bias);
        let vn = n.dot(vb - va);
        let delta = normal_increment(cp, vn, terms);
        let p = n * delta;
        va -= p * ma;
        vb += p * mb;
        let vr = (vb + wb.cross(rb)) - (va + wa.cross(ra));
        let (d1, d2) =
            friction_increment(cp, c.friction, vr.dot(c.tangents[0]), vr.dot(c.tangents[1]));
        let p = c.tangents[0] * d1 + c.tangents[1] * d2;
        va -= p * ma;
        wa -= ra.cross(p) * ja;
        vb += p * mb;
        wb += rb.cross(p) * jb;
    }
    if ma > 0.0 {
        bodies[ia].velocity = va;
        bodies[ia].angular_velocity = wa;
    }
    if mb > 0.0 {
        bodies[ib].velocity = vb;
        bodies[ib].angular_velocity = wb;
    }
}

fn restitution(
    bodies: &mut [SolverBody],
    constraints: &[ContactConstraint],
    points: &mut [ConstraintPoint],
    threshold: f32,
) {
    for c in constraints {
        if c.restitution == 0.0 {
            continue;
        }
        let threshold = if c.impact { 0.0 } else { threshold };
        let (ia, ib) = (c.body_a as usize, c.body_b as usize);
        let mut a = Vel::load(&bodies[ia]);
        let mut b = Vel::load(&bodies[ib]);
        let n = c.normal;
        for cp in &mut points[range(c)] {
            if cp.relative_velocity > -threshold || cp.max_normal_impulse == 0.0 {
                continue;
            }
            // Round pairs: the normal passes through the centres, no angular part.
            let vn = if c.round {
                n.dot(b.v - a.v)
            } else {
                row_velocity(&a, &b, &cp.rows, 0, n)
            };
            let impulse = -cp.normal_mass * (vn + c.restitution * cp.relative_velocity);
            let new = (cp.normal_impulse + impulse).max(0.0);
            let delta = new - cp.normal_impulse;
            cp.normal_impulse = new;
            cp.max_normal_impulse = cp.max_normal_impulse.max(new);
            if c.round {
                a.v -= n * (delta * a.m);
                b.v += n * (delta * b.m);
            } else {
                row_apply(&mut a, &mut b, &cp.rows, 0, n, delta);
            }
        }
        a.store(&mut bodies[ia]);
        b.store(&mut bodies[ib]);
    }
}

/// Rolling and spinning resistance (Box2D v3's `rollingResistance`, taken to 3D): each contact
/// with a `rolling_resistance` above 0 resists the relative angular velocity of its two bodies,
/// rolling and spinning about the normal alike, with an angular impulse of at most `resistance × R × N`, where `N` is the
/// contact's accumulated normal impulse and `R` the lever of its first point (a sphere's radius
/// on the ground). Without it a sphere on a plane rolls, or spins about the vertical, forever:
/// a point contact has no torque to stop it. `impulses` accumulates per constraint (cleared by
/// the caller every substep, since `N` is a substep's impulse), so the clamp holds for the
/// substep, as friction's does. (Cleared once a frame instead, a frame of 4 substeps resisted
/// with a quarter of the torque: `tests/physics.rs` measured 0.35 m/s² for 1.40.)
fn rolling_resistance(
    bodies: &mut [SolverBody],
    constraints: &[ContactConstraint],
    points: &[ConstraintPoint],
    impulses: &mut [Vec3A],
) {
    for (c, acc) in constraints.iter().zip(impulses.iter_mut()) {
        let resistance = c.rolling_resistance;
        if resistance <= 0.0 {
            continue;
        }
        let pts = &points[range(c)];
        let Some(first) = pts.first() else { continue };
        let normal: f32 = pts.iter().map(|p| p.normal_impulse).sum();
        let lever = first.anchor_a.length().max(first.anchor_b.length());
        let limit = resistance * lever * normal;
        if limit <= 0.0 {
            continue;
        }
        let (ia, ib) = (c.body_a as usize, c.body_b as usize);
        let (ka, kb) = (bodies[ia].inv_inertia, bodies[ib].inv_inertia);
        let k = ka + kb;
        if k.determinant().abs() <= f32::EPSILON {
            continue;
        }
        let w = bodies[ib].angular_velocity - bodies[ia].angular_velocity;
        let old = *acc;
        let mut new = old - k.inverse() * w;
        if new.length() > limit {
            new *= limit / new.length();
        }
        let delta = new - old;
        *acc = new;
        bodies[ia].angular_velocity -= ka * delta;
        bodies[ib].angular_velocity += kb * delta;
    }
}

/// The most a body solved with contacts may turn in one substep (radians), Box2D v3's
/// `B2_MAX_ROTATION`: in [`solve_island`], when the slice has constraints, every dynamic body's
/// angular velocity is clamped to this over the substep before they are solved (a slice without
/// any flies ballistically, unclamped). The
/// contacts are linearised at the start of the frame; a body turning further than this within a
/// substep leaves them behind, and the solver can then feed it energy. (Found by
/// `tests/fuzz_sim.rs`: a heavy 4.5 cm x 4.4 m stick, friction 1.47, spinning up from 64 to
/// 7,000 rad/s in six frames against a plane, then NaN. At 60 frames of 4 substeps the bound is
/// 188 rad/s; at the warp engine's one substep of 1/960 s, 754 rad/s.)
pub const MAX_ROTATION: f32 = 0.25 * std::f32::consts::PI;

/// Solves one island (or a batch of islands) for one frame: `bodies` (the last may be the shared
/// static stand-in), the contact constraints between them and their points, built with
/// [`ContactConstraint::new`]. On return each body's `velocity`, `angular_velocity`,
/// `delta_position` and `delta_rotation` give its end-of-frame state, and the points hold the
/// impulses to store for the next warm start. Bodies without constraints fly exactly (ballistic)
/// for the whole frame only when the slice has no constraints at all.
pub fn solve_island(
    params: &SolverParams,
    bodies: &mut [SolverBody],
    constraints: &mut [ContactConstraint],
    points: &mut [ConstraintPoint],
) {
    let g = Vec3A::from(params.gravity);
    if constraints.is_empty() {
        let dt = params.dt;
        for b in bodies.iter_mut().filter(|b| b.inv_mass > 0.0) {
            b.delta_position = b.velocity * dt + g * (0.5 * dt * dt);
            b.velocity += g * dt;
            b.delta_rotation = integrate_rotation(Quat::IDENTITY, b.angular_velocity.into(), dt);
        }
        return;
    }
    let h = params.dt / params.substeps as f32;
    let inv_h = 1.0 / h;
    prepare(params, bodies, constraints, points);
    let mut rolling = if constraints.iter().any(|c| c.rolling_resistance > 0.0) {
        vec![Vec3A::ZERO; constraints.len()]
    } else {
        Vec::new()
    };
    let max_spin = MAX_ROTATION * inv_h;
    for _ in 0..params.substeps {
        for b in bodies.iter_mut() {
            if b.inv_mass > 0.0 {
                b.velocity += g * h;
                let w2 = b.angular_velocity.length_squared();
                if w2 > max_spin * max_spin {
                    b.angular_velocity *= max_spin / w2.sqrt();
                }
            }
        }
        approach_speeds(bodies, constraints, points);
        warm_start(bodies, constraints, points);
        solve(bodies, constraints, points, inv_h, params, true);
        if !rolling.is_empty() {
            // Per substep, as the normal impulses it is bounded by (each substep warm-starts
            // with the whole accumulated normal impulse: it is a substep's impulse).
            rolling.fill(Vec3A::ZERO);
            rolling_resistance(bodies, constraints, points, &mut rolling);
        }
        for b in bodies.iter_mut() {
            if b.inv_mass > 0.0 {
                b.delta_position += b.velocity * h;
                // Not renormalised per substep: the exponential map keeps unit length to
                // rounding, and `apply_to` normalises the frame's rotation once.
                b.delta_rotation = advance_rotation(b.delta_rotation, b.angular_velocity.into(), h);
                if b.rotating_anchors {
                    b.delta_matrix = Mat3A::from_quat(b.delta_rotation);
                }
            }
        }
        solve(bodies, constraints, points, inv_h, params, false);
    }
    restitution(bodies, constraints, points, params.restitution_threshold);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::Shape;

    /// Two spheres in contact, A spinning and sliding into B, on the static stand-in.
    fn setup(
        round: bool,
    ) -> (
        Vec<SolverBody>,
        Vec<ContactConstraint>,
        Vec<ConstraintPoint>,
    ) {
        let m = MassProps::from_shape(&Shape::Sphere { radius: 0.5 }, 2.0);
        let bodies = vec![
            SolverBody::new(
                Vec3::new(2.0, 0.3, -0.4),
                Vec3::new(1.0, -2.0, 3.0),
                Quat::IDENTITY,
                &m,
            ),
            SolverBody::new(Vec3::new(-1.0, 0.0, 0.2), Vec3::ZERO, Quat::IDENTITY, &m),
            SolverBody::STATIC,
        ];
        let mut manifold = Manifold {
            normal: Vec3::X,
            ..Manifold::default()
        };
        manifold.push(Vec3::new(0.5, 0.0, 0.0), 0.001, 0);
        let side = |index: u32, x: f32| ConstraintBody {
            index,
            position: Vec3::new(x, 0.0, 0.0),
            is_static: false,
            is_round: true,
            inv_inertia: m.inv_inertia_local.x,
        };
        let mut points = vec![ConstraintPoint::default(); 1];
        let mut c = ContactConstraint::new(
            side(0, 0.0),
            side(1, 1.0),
            &manifold,
            0.5,
            0.5,
            0,
            &mut points,
            0,
        );
        c.round = round;
        (bodies, vec![c], points)
    }

    #[test]
    fn sphere_path_matches_general_path() {
        let params = SolverParams::new(1.0 / 60.0, 4, Vec3::ZERO);
        let (mut b1, mut c1, mut p1) = setup(true);
        let (mut b2, mut c2, mut p2) = setup(false);
        solve_island(&params, &mut b1, &mut c1, &mut p1);
        solve_island(&params, &mut b2, &mut c2, &mut p2);
        for (x, y) in b1.iter().zip(&b2) {
            assert!((x.velocity - y.velocity).length() < 1e-5);
            assert!((x.angular_velocity - y.angular_velocity).length() < 1e-4);
        }
        // The collision happened: approach speed 3 m/s, restitution 0.5 -> separation 1.5 m/s.
        let vn = (b1[1].velocity - b1[0].velocity).x;
        assert!((vn - 1.5).abs() < 0.02, "separation speed {vn}");
        // Momentum is conserved (equal masses).
        let p = b1[0].velocity + b1[1].velocity;
        assert!((p - Vec3A::new(1.0, 0.3, -0.2)).length() < 1e-5);
        // The static stand-in never moved.
        assert_eq!(b1[2], SolverBody::STATIC);
    }

    /// Regression (fuzz_sim): a body in contact spins at most a quarter turn per substep;
    /// without contacts it keeps its spin.
    #[test]
    fn a_body_in_contact_turns_at_most_a_quarter_turn_per_substep() {
        let params = SolverParams::new(1.0 / 60.0, 4, Vec3::ZERO);
        let (mut bodies, mut cs, mut ps) = setup(true);
        bodies[0].angular_velocity = Vec3A::new(0.0, 1000.0, 0.0);
        solve_island(&params, &mut bodies, &mut cs, &mut ps);
        let bound = MAX_ROTATION * 240.0; // 188.5 rad/s
        let w = bodies[0].angular_velocity.length();
        // Clamped to the bound, then changed by at most the friction of one collision
        // (|J_t| <= 0.5 |J_n|, J_n about 4.5 N s, lever 0.5 m, inertia 0.2 kg m^2: ~6 rad/s).
        assert!((w - bound).abs() < 10.0, "spin {w} rad/s, bound {bound}");
        let (mut free, mut none, mut no_points) = (setup(true).0, Vec::new(), Vec::new());
        free[0].angular_velocity = Vec3A::new(0.0, 1000.0, 0.0);
        solve_island(&params, &mut free, &mut none, &mut no_points);
        assert_eq!(free[0].angular_velocity, Vec3A::new(0.0, 1000.0, 0.0));
    }

    #[test]
    fn softness_limits() {
        let s = Softness::new(30.0, 10.0, 1.0 / 240.0);
        assert!(s.mass_scale > 0.0 && s.mass_scale < 1.0);
        assert!((s.mass_scale + s.impulse_scale - 1.0).abs() < 1e-6);
        let rigid = Softness::new(0.0, 10.0, 1.0 / 240.0);
        assert_eq!((rigid.mass_scale, rigid.impulse_scale), (1.0, 0.0));
    }
}
