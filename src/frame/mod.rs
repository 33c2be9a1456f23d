//! The frame engine: every body advances in lock-step by one frame per step.
//!
//! This is the synchronous baseline of DESIGN.md (Mirtich's "RD", seed 001, and the parallel
//! transactional ODE pipeline of seed 004, here without a transactional memory because every
//! parallel stage writes only data it owns). One [`FrameEngine::step`] advances the world by one
//! frame `dt = frame_ticks / ticks_per_second`:
//!
//! 1. **Bounds.** Awake bodies get an AABB inflated by the speculative distance and swept along
//!    their velocity over the frame (a contact that closes within the frame is found now).
//! 2. **Broad phase** (`broad`): sort and sweep over the moving bodies (in slabs along z, so a
//!    pile costs what its neighbourhoods cost) and against the resting ones (static and
//!    sleeping); planes are tested directly against each moving body.
//! 3. **Contact pairs.** The new pair list (sorted by body ids) is merged with the previous
//!    step's contacts, which carry their impulses for warm starting; a contact between two
//!    resting bodies is kept frozen as it was.
//! 4. **Narrow phase** in parallel (rayon): each pair recomputes its manifold. A pair whose touching
//!    state flips (begin or end, an island edge added or removed) sets a bit in a bit array
//!    (Box2D v3, seed 002, "Making persistent islands fast"). The contacts are cut into chunks of
//!    64 and each chunk owns one 64-bit word, so the threads need neither atomics nor a merge, and
//!    the set bits are then walked serially in contact order.
//! 5. **Islands.** Bodies joined by touching contacts form islands (static bodies join nothing),
//!    kept by the persistent island graph of [`crate::islands`]: the flipped pairs link and
//!    unlink edges in contact order, and a link wakes both islands whole (seed 002).
//! 6. **Solve.** Awake islands are solved in parallel, each with Box2D v3's soft step
//!    ([`crate::dynamics::solve_island`]); an island without contacts flies exactly (ballistic).
//!    Small islands are packed into tasks of up to 64 bodies (islands with contacts and free ones
//!    apart); the solver never couples two islands, so packing changes no result, only overhead.
//! 7. **Sleep and split.** Per island, by the graph: when every body has been slower than
//!    0.05 m/s (and 2 degrees per second) for 0.5 s, the island sleeps: its velocities become zero
//!    and it costs nothing until an awake body touches it. Then at most one island that lost an
//!    edge is split (Box2D's deferred split).
//!
//! **Determinism.** Results are bit-identical for any thread count: parallel stages compute each
//! item from read-only inputs into its own slot, every order is a function of body ids, and every
//! reduction runs serially in a fixed order. The engine runs its stages on its own rayon pool of
//! `threads` threads.

mod broad;
mod contacts;
mod engine;
mod layout;
mod snapshot;

pub use broad::BroadPhase;
pub use engine::*;
pub use snapshot::FrameSnapshot;
