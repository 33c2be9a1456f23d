//! Rigid-body dynamics: body state, exact free flight, collision impulses, the island solver.

mod body;

pub use body::*;
