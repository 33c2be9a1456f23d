//! The run checksum: one 64-bit fingerprint of every committed frame's bits.
//!
//! Determinism is a contract (DESIGN.md): the committed frames must be bit-identical for any
//! thread count, backend and schedule. Tests and users compare runs by this hash, printed as
//! `checksum: <16 hex digits>`. It is FNV-1a (Fowler, Noll, Vo) taken over 32-bit words
//! instead of bytes: starting from the offset basis [`FNV_OFFSET`], each word `w` does
//! `h = (h ^ w) * FNV_PRIME (mod 2^64)`. The words, for each committed frame in order:
//!
//! 1. the frame index as a u64, low 32 bits then high 32 bits;
//! 2. for each dynamic body in scene order, the `f32::to_bits` of its 13 numbers: position x, y,
//!    z; rotation x, y, z, w; velocity x, y, z; angular velocity x, y, z.
//!
//! Static bodies never move and are left out, as in the CSV file. Both steps of the update are
//! bijections (xor with `w` for a fixed `h`; multiplication by the odd prime modulo 2^64), so
//! changing any single word — one bit of one number of one body in one frame — always changes
//! the final hash; several changes collide with probability about 2^-64. Word-wise hashing is
//! four times fewer multiplies than byte-wise, cheap next to a physics step.

use std::io;

use super::sink::{FrameSink, dynamic_bodies, frame_state};
use crate::dynamics::BodyState;
use crate::scene::Scene;

/// FNV-1a 64-bit offset basis.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Hashes committed frames (see the module docs for the exact definition).
#[derive(Clone, Debug)]
pub struct Checksum {
    hash: u64,
    frames: u64,
    dynamic: Vec<u32>,
}

#[inline]
fn mix(h: u64, w: u32) -> u64 {
    (h ^ u64::from(w)).wrapping_mul(FNV_PRIME)
}

impl Checksum {
    pub fn new(scene: &Scene) -> Self {
        Checksum {
            hash: FNV_OFFSET,
            frames: 0,
            dynamic: dynamic_bodies(scene),
        }
    }

    /// A checksum that goes on from `hash` after `frames` frames (a resumed run's, from the
    /// values a checkpoint saved): feeding it the remaining frames gives the hash of the whole
    /// run.
    pub fn resume(scene: &Scene, hash: u64, frames: u64) -> Self {
        Checksum {
            hash,
            frames,
            dynamic: dynamic_bodies(scene),
        }
    }

    /// The hash of the frames seen so far.
    pub fn value(&self) -> u64 {
        self.hash
    }

    /// Frames hashed so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// `checksum: <16 lowercase hex digits>`.
    pub fn line(&self) -> String {
        format!("checksum: {:016x}", self.hash)
    }
}

impl FrameSink for Checksum {
    fn frame(&mut self, frame: u64, _time: f64, states: &[BodyState]) -> io::Result<()> {
        let mut h = mix(mix(self.hash, frame as u32), (frame >> 32) as u32);
        for &id in &self.dynamic {
            let words = frame_state(states, frame, id)?.to_array();
            for x in words {
                h = mix(h, x.to_bits());
            }
        }
        self.hash = h;
        self.frames += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::{BodySpec, SceneBuilder};
    use glam::{Quat, Vec3};

    /// Byte-free reference: the definition written out directly over a word list.
    fn reference(words: &[u32]) -> u64 {
        let mut h: u64 = 14695981039346656037;
        for &w in words {
            h ^= w as u64;
            h = h.wrapping_mul(1099511628211);
        }
        h
    }

    fn state(k: f32) -> BodyState {
        BodyState {
            position: Vec3::new(k, 2.0 * k, -k),
            rotation: Quat::from_xyzw(0.0, 0.6, 0.0, 0.8),
            velocity: Vec3::new(0.5, -0.0, k),
            angular_velocity: Vec3::new(1.0, 2.0, 3.0),
        }
    }

    fn words(frame: u64, s: &BodyState) -> Vec<u32> {
        let mut w = vec![frame as u32, (frame >> 32) as u32];
        for x in [
            s.position.to_array().as_slice(),
            s.rotation.to_array().as_slice(),
            s.velocity.to_array().as_slice(),
            s.angular_velocity.to_array().as_slice(),
        ]
        .concat()
        {
            w.push(x.to_bits());
        }
        w
    }

    #[test]
    fn matches_the_documented_definition_and_skips_statics() {
        let scene = SceneBuilder::new()
            .body(BodySpec::cuboid(Vec3::ONE).fixed(true))
            .sphere(1.0, Vec3::ZERO)
            .build()
            .unwrap();
        let mut c = Checksum::new(&scene);
        assert_eq!(c.value(), reference(&[]));
        let f0 = [state(100.0), state(1.0)];
        let f1 = [state(200.0), state(2.0)];
        c.frame(0, 0.0, &f0).unwrap();
        c.frame(1 << 33 | 5, 0.1, &f1).unwrap();
        let all = [words(0, &f0[1]), words(1 << 33 | 5, &f1[1])].concat();
        assert_eq!(c.value(), reference(&all));
        assert_eq!(c.frames(), 2);
        assert_eq!(c.line(), format!("checksum: {:016x}", reference(&all)));
        assert_eq!(c.line().len(), "checksum: ".len() + 16);
    }

    #[test]
    fn any_single_bit_changes_the_hash() {
        let scene = SceneBuilder::new().sphere(1.0, Vec3::ZERO).build().unwrap();
        let run = |s: BodyState, frame: u64| {
            let mut c = Checksum::new(&scene);
            c.frame(frame, 0.0, &[s]).unwrap();
            c.value()
        };
        let base = run(state(1.0), 3);
        let mut flipped = state(1.0);
        flipped.velocity.y = 0.0; // -0.0 -> +0.0: equal as numbers, different bits
        assert_ne!(run(flipped, 3), base);
        let mut nudged = state(1.0);
        nudged.angular_velocity.z = f32::from_bits(3.0f32.to_bits() + 1);
        assert_ne!(run(nudged, 3), base);
        assert_ne!(run(state(1.0), 4), base);
    }
}
