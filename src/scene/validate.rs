//! One validator of a resolved scene: [`Scene::validate`].
//!
//! The engines are built for a range of values (`spec.rs`, "Values", "World" and "Limits"):
//! finite numbers, positive sizes and masses, unit quaternions and normals, materials in their
//! ranges, static planes that do not move, positions, speeds, sizes and gravity within their
//! limits, and a dynamic body's inverse mass and inertia positive and finite. This is the one
//! place those rules are checked on a [`Scene`], and everything that takes one calls it: the
//! builder and the loader ([`SceneBuilder::build`](super::SceneBuilder::build)) on what they
//! resolved, each engine on the scene it is given (a library user can make a `Scene` by hand),
//! and a checkpoint on the scene it carries when it is read (a file edited by hand, with its
//! hash made again, carries whatever it was given).
//!
//! Materials are one list, [`MATERIALS`]: each property's name, range and place in a scene
//! file's entry and in a resolved body, so that the file's fields (checked as written, on the
//! entry or in `[defaults]`) and a resolved scene are checked against the same ranges.

use glam::Vec3;

use super::error::{Location, SceneError};
use super::model::{BodyDesc, Scene, Shape, World};
use super::spec::{
    BodySpec, MAX_ANGULAR_SPEED, MAX_BODIES, MAX_COORDINATE, MAX_GRAVITY, MAX_ROLLING_RESISTANCE,
    MAX_SIZE, MAX_SPEED, finite, finite_vec, fmt_vec, positive,
};

/// How far from 1 the length of a resolved unit vector may be: a plane's normal and a body's
/// rotation quaternion. The loader normalises both (a scene file's rotation may be off by
/// [`QUAT_TOLERANCE`](super::QUAT_TOLERANCE) before that), which leaves them within a few
/// f32 roundings of 1.
pub const UNIT_TOLERANCE: f32 = 1e-5;

/// A material property of a body: its name in a scene file, its range, and where it is in a
/// file's entry and in a resolved body (see the module documentation).
pub struct Material {
    pub name: &'static str,
    pub min: f32,
    /// `f32::INFINITY`: no upper bound.
    pub max: f32,
    pub of_spec: fn(&BodySpec) -> Option<f32>,
    pub of_body: fn(&BodyDesc) -> f32,
}

/// Every material property: one entry each.
pub const MATERIALS: [Material; 3] = [
    Material {
        name: "restitution",
        min: 0.0,
        max: 1.0,
        of_spec: |s| s.restitution,
        of_body: |b| b.restitution,
    },
    Material {
        name: "friction",
        min: 0.0,
        max: f32::INFINITY,
        of_spec: |s| s.friction,
        of_body: |b| b.friction,
    },
    Material {
        name: "rolling_resistance",
        min: 0.0,
        max: MAX_ROLLING_RESISTANCE,
        of_spec: |s| s.rolling_resistance,
        of_body: |b| b.rolling_resistance,
    },
];

impl Material {
    /// Whether `x` is a valid value of this property.
    pub fn check(&self, x: f32) -> Result<(), String> {
        let name = self.name;
        finite(name, x)?;
        if x >= self.min && x <= self.max {
            Ok(())
        } else if self.max.is_finite() {
            Err(format!(
                "{name} must be between {} and {}, got {x}",
                self.min, self.max
            ))
        } else if self.min == 0.0 {
            Err(format!("{name} must not be negative, got {x}"))
        } else {
            Err(format!("{name} must be at least {}, got {x}", self.min))
        }
    }
}

impl Scene {
    /// Checks every value of the scene against the ranges the engines are built for (see the
    /// module documentation); the error names the part of the scene (`world`, `body 3`,
    /// `scene`), the field and the value, on one line.
    pub fn validate(&self) -> Result<(), SceneError> {
        self.world
            .validate()
            .map_err(|m| SceneError::invalid(Location::World, m))?;
        check_body_count(self.bodies.len())?;
        for (index, body) in self.bodies.iter().enumerate() {
            body.validate()
                .map_err(|m| SceneError::invalid(Location::Body { index, line: None }, m))?;
        }
        if !self.bodies.iter().any(|b| !b.is_static) {
            return Err(SceneError::invalid(
                Location::Scene,
                "the scene has no dynamic bodies (every body is static or there are none)",
            ));
        }
        Ok(())
    }
}

/// A scene of `n` bodies is within [`MAX_BODIES`].
pub(super) fn check_body_count(n: usize) -> Result<(), SceneError> {
    if n > MAX_BODIES {
        return Err(SceneError::invalid(
            Location::Scene,
            format!("{n} bodies is more than the limit of {MAX_BODIES}"),
        ));
    }
    Ok(())
}

impl World {
    /// The world's part of [`Scene::validate`].
    pub fn validate(&self) -> Result<(), String> {
        for (name, ticks) in [
            ("ticks_per_second", self.ticks_per_second),
            ("frame_ticks", self.frame_ticks),
            ("window", self.window),
        ] {
            if ticks == 0 {
                return Err(format!(
                    "{name} must be a whole number of at least 1, got 0"
                ));
            }
        }
        if self.ticks_per_second % self.frame_ticks != 0 {
            return Err(format!(
                "frame_ticks ({}) must divide ticks_per_second ({})",
                self.frame_ticks, self.ticks_per_second
            ));
        }
        let g = self.gravity.to_array();
        finite_vec("gravity", &g)?;
        if g.iter().any(|x| x.abs() > MAX_GRAVITY) {
            return Err(format!(
                "gravity {g:?} is too strong (at most {MAX_GRAVITY:e} m/s² per axis)"
            ));
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0) {
            return Err(format!(
                "seconds must be finite and positive, got {}",
                self.seconds
            ));
        }
        Ok(())
    }
}

impl BodyDesc {
    /// One body's part of [`Scene::validate`].
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("position", self.position),
            ("velocity", self.velocity),
            ("angular_velocity", self.angular_velocity),
        ] {
            finite_vec(name, &v.to_array())?;
        }
        let q = self.rotation.to_array();
        finite_vec("rotation", &q)?;
        let norm = self.rotation.length();
        if (norm - 1.0).abs() > UNIT_TOLERANCE {
            return Err(format!(
                "rotation must be a unit quaternion [x, y, z, w], got {} (norm {norm})",
                fmt_vec(&q)
            ));
        }
        match self.shape {
            Shape::Sphere { radius } => {
                positive("radius", radius)?;
            }
            Shape::Cuboid { half_extents } => {
                let h = half_extents.to_array();
                finite_vec("half_extents", &h)?;
                if h.iter().any(|&x| x <= 0.0) {
                    return Err(format!(
                        "half_extents must be positive, got {}",
                        fmt_vec(&h)
                    ));
                }
            }
            Shape::Cylinder {
                radius,
                half_height,
            } => {
                positive("radius", radius)?;
                positive("half_height", half_height)?;
            }
            Shape::Plane { normal, offset } => {
                let n = normal.to_array();
                finite_vec("normal", &n)?;
                let len = normal.length();
                if (len - 1.0).abs() > UNIT_TOLERANCE {
                    return Err(format!(
                        "normal must be a unit vector, got {} (length {len})",
                        fmt_vec(&n)
                    ));
                }
                finite("offset", offset)?;
                if !self.is_static {
                    return Err("a plane must be static (set static = true)".to_string());
                }
            }
        }
        if self.is_static {
            for (name, v) in [
                ("velocity", self.velocity),
                ("angular_velocity", self.angular_velocity),
            ] {
                if v != Vec3::ZERO {
                    return Err(format!(
                        "a static body cannot move: {name} must be zero, got {}",
                        fmt_vec(&v.to_array())
                    ));
                }
            }
        } else {
            positive("mass", self.mass)?;
        }
        for m in &MATERIALS {
            m.check((m.of_body)(self))?;
        }
        check_limits(self)
    }
}

/// The ranges the engines are built for, checked on a resolved body: every product and square
/// the engines form of these numbers stays finite in f32, so a valid scene cannot turn into
/// NaN. Beyond them a scene is refused with the limit named, not run into overflow.
fn check_limits(b: &BodyDesc) -> Result<(), String> {
    let far = |v: Vec3| v.abs().max_element() > MAX_COORDINATE;
    match b.shape {
        Shape::Plane { offset, .. } if offset.abs() > MAX_COORDINATE => {
            return Err(format!(
                "offset {offset} is too far from the origin (at most {MAX_COORDINATE:e} m)"
            ));
        }
        Shape::Plane { .. } => {}
        _ if far(b.position) => {
            return Err(format!(
                "position {:?} is too far from the origin (at most {MAX_COORDINATE:e} m per axis)",
                b.position.to_array()
            ));
        }
        _ => {}
    }
    let sizes: &[f32] = match &b.shape {
        Shape::Sphere { radius } => &[*radius],
        Shape::Cuboid { half_extents } => &half_extents.to_array(),
        Shape::Cylinder {
            radius,
            half_height,
        } => &[*radius, *half_height],
        Shape::Plane { .. } => &[],
    };
    if let Some(s) = sizes.iter().find(|&&s| s > MAX_SIZE) {
        return Err(format!(
            "size {s} m is too large (radius, half extents and half height at most {MAX_SIZE:e} m)"
        ));
    }
    let speed = b.velocity.length();
    if speed > MAX_SPEED {
        return Err(format!(
            "velocity {:?} is too fast ({speed:e} m/s, at most {MAX_SPEED:e})",
            b.velocity.to_array()
        ));
    }
    let spin = b.angular_velocity.length();
    if spin > MAX_ANGULAR_SPEED {
        return Err(format!(
            "angular_velocity {:?} is too fast ({spin:e} rad/s, at most {MAX_ANGULAR_SPEED:e})",
            b.angular_velocity.to_array()
        ));
    }
    if !b.is_static {
        let m = crate::dynamics::MassProps::for_body(b);
        let fine = |x: f32| x.is_finite() && x > 0.0;
        if !(fine(m.inv_mass) && m.inv_inertia_local.to_array().into_iter().all(fine)) {
            return Err(format!(
                "mass {} kg and this shape give an inverse mass {} and inverse inertia {} that are not positive and finite (too light or too small)",
                b.mass,
                m.inv_mass,
                fmt_vec(&m.inv_inertia_local.to_array())
            ));
        }
    }
    Ok(())
}
