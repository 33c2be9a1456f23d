//! Scenes: what is simulated. The model, the TOML scene format, validation and the built-ins.
//!
//! A [`Scene`] is plain data (`model.rs`): the [`World`] settings and the bodies in scene order,
//! every value checked so that the engines never meet a NaN, a negative radius or a
//! non-unit quaternion: by [`Scene::validate`] (`validate.rs`), the one validator, which the
//! builder, both engines and checkpoints call. Scenes come from three places, all through the
//! one resolution path of `spec.rs` ([`SceneBuilder::build`]):
//!
//! - scene files (`load.rs`): the TOML schema of DESIGN.md ("Scene file"), `[world]`,
//!   `[defaults]`, `[[body]]` and `[[grid]]`, unknown keys rejected;
//! - the builder API ([`SceneBuilder`], [`BodySpec`], [`GridSpec`]) for library users;
//! - the built-in scenes of DESIGN.md (`builtin.rs`): `parallel`, `cylinders`, `bouncing`
//!   (Koenig et al., seed 000), `pyramids` (Box2D, seed 002), `avalanche` (Mirtich, seed 001).
//!
//! Errors are [`SceneError`]s whose one-line message names the entry, its line in the file, the
//! field and the value. Randomness (grid jitter, the bouncing velocities) comes from a seeded
//! SplitMix64 (`rng.rs`), so a scene is a pure function of its description.

mod builtin;
mod error;
mod load;
mod model;
mod rng;
mod spec;
mod validate;

pub use builtin::{
    BOUNCING_SEED, Builtin, bouncing_side, builtin, builtin_names, builtin_spec, builtin_toml,
    pyramid_count,
};
pub use error::{Location, SceneError};
pub use load::{from_toml_str, load, parse_toml, to_toml};
pub use model::*;
pub use rng::SplitMix64;
pub use spec::{
    BodySpec, DEFAULT_DENSITY, DEFAULT_FRICTION, DEFAULT_RESTITUTION, DEFAULT_ROLLING_RESISTANCE,
    GridSpec, Item, MAX_ANGULAR_SPEED, MAX_BODIES, MAX_COORDINATE, MAX_GRAVITY,
    MAX_ROLLING_RESISTANCE, MAX_SIZE, MAX_SPEED, QUAT_TOLERANCE, SceneBuilder, WorldSpec,
    shape_volume,
};
pub use validate::{MATERIALS, Material, UNIT_TOLERANCE};
