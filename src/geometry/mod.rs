//! Geometry: axis-aligned boxes for the broad phase and contact manifolds for the narrow phase.
//!
//! Collision detection runs in two phases. The *broad phase* (in [`crate::frame`]) bounds every
//! shape with an axis-aligned box ([`Aabb`], see [`shape_aabb`]) and keeps only the pairs whose
//! boxes overlap; the *narrow phase* ([`collide`]) turns each such pair into a contact
//! [`Manifold`]: one unit normal pointing from body A to body B and up to four points, each with a
//! world position (midway between the two surfaces), a penetration depth (positive when the
//! shapes overlap, negative but above `-margin` for *speculative* points that are about to touch)
//! and a feature id that names the pair of features (vertex, edge, face) that produced it, so that
//! the solver can warm start a point from the impulse it carried in the previous step (Box2D v3's
//! persistent contact pairs, seed 002, section "Making persistent islands fast": a pair is an
//! island edge while its manifold has at least one point).
//!
//! Pairs with a sphere, box-plane, box-box and cylinder-plane are written by hand (the hot
//! paths of the built-in scenes, and the plane pairs exact at any depth); box-box is the
//! separating-axis test over the 15 axes followed by Sutherland-Hodgman clipping of the incident
//! face against the reference face, reduced to four points. Pairs without a hand-written path
//! (cylinder against box or cylinder) fall back to parry3d's GJK/EPA `contact` query, which
//! gives one point.

mod aabb;
mod boxes;
mod cylinder;
mod impact;
mod manifold;
mod sphere;

pub use aabb::*;
pub use impact::{IMPACT_MARGIN, Impact, Motion, closest_approach, impact};
pub use manifold::*;
