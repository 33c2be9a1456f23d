//! Scenes: the model, TOML loading and validation, and the built-in scenes of DESIGN.md.

mod model;

pub use model::*;
