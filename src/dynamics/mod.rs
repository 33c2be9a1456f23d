//! Rigid-body dynamics: body state, exact free flight, collision impulses, the island solver.
//!
//! - [`body`](BodyState): state and mass properties.
//! - [`free_flight`]: exact ballistic motion between collisions.
//! - [`resolve`]: the two-body collision impulse from pre-event states (timewarp engines).
//! - [`solve_island`]: Box2D v3's soft-step contact solver for an island of touching bodies.

mod body;
mod collision;
mod integrate;
mod solver;

pub use body::*;
pub use collision::*;
pub use integrate::*;
pub use solver::*;
