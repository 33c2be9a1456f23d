//! Free flight: exact ballistic motion under constant gravity.
//!
//! Between collisions a body moves under gravity alone, and that motion has a closed form:
//! `x(t + dt) = x + v dt + ½ g dt²`, `v(t + dt) = v + g dt`. Using it (rather than an Euler step)
//! makes a ballistic body follow its parabola to f32 precision whatever the step, which the
//! timewarp engine relies on: an entity may advance by any number of ticks at once and land on
//! the same state (Koenig et al., seed 000, "step"). Without torque the angular velocity is
//! constant in world coordinates (the gyroscopic term of a non-spherical body is neglected, as in
//! Box2D), and the rotation advances by the exponential map `q ← exp(½ ω dt) q`, renormalised so
//! that rounding never lets the quaternion drift off the unit sphere.

use super::BodyState;
use glam::{Quat, Vec3, Vec3A};

/// Rotation `q` advanced by world angular velocity `w` over `dt` (exponential map, renormalised).
#[inline]
pub fn integrate_rotation(q: Quat, w: Vec3, dt: f32) -> Quat {
    if w.length_squared() * dt * dt == 0.0 {
        return q;
    }
    advance_rotation(q, w, dt).normalize()
}

/// [`integrate_rotation`] without the final renormalisation (for a caller that renormalises
/// once after several steps).
#[inline]
pub fn advance_rotation(q: Quat, w: Vec3, dt: f32) -> Quat {
    let angle2 = w.length_squared() * dt * dt;
    if angle2 == 0.0 {
        return q;
    }
    let e = if angle2 < 1e-2 {
        // exp(½ θ) by its Taylor series: for θ < 0.1 the first omitted terms are below f32's
        // resolution (θ⁶/46080 < 3e-11), and no sin/cos is needed.
        let c = 1.0 - angle2 / 8.0 + angle2 * angle2 / 384.0;
        let s = 0.5 - angle2 / 48.0 + angle2 * angle2 / 3840.0;
        let v = w * (dt * s);
        Quat::from_xyzw(v.x, v.y, v.z, c)
    } else {
        Quat::from_scaled_axis(w * dt)
    };
    e * q
}

/// The exact free flight of `state` under constant `gravity` for `dt` seconds.
#[inline]
pub fn free_flight(state: &BodyState, gravity: Vec3, dt: f32) -> BodyState {
    Launch::of(state).flown(Vec3A::from(gravity), dt)
}

/// `ticks as f32`, the same value for every count below 2^63 (the range of tick counts and
/// their differences): converted as a signed integer, which x86-64 does in one instruction,
/// where the unsigned conversion branches and takes several (the commit computes one per body
/// and frame).
#[inline]
pub fn ticks_f32(ticks: u64) -> f32 {
    debug_assert!(ticks < 1 << 63);
    ticks as i64 as f32
}

/// Free flight under one gravity at one tick length, as a value: the state `ticks` ticks after
/// `state` ([`free_flight`] for `ticks * dt` seconds, `state` itself at 0 ticks). The warp
/// engine's rule 4 (a body's state at tick `k` after its anchor at `k0`) and its GVT buffer
/// (which computes committed frames from the anchors recorded for them) both fly through this
/// one function, so a frame has the same bits whichever of them computed it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FreeFlight {
    pub gravity: Vec3,
    /// Seconds per tick.
    pub dt: f32,
}

impl FreeFlight {
    /// `state` flown for `ticks` ticks.
    #[inline]
    pub fn after(&self, state: &BodyState, ticks: u64) -> BodyState {
        if ticks == 0 {
            return *state;
        }
        free_flight(state, self.gravity, ticks_f32(ticks) * self.dt)
    }

    /// `launch`'s state flown for `ticks` ticks: [`FreeFlight::after`] of that state, bit for
    /// bit, with the work that depends on the state alone done once, in [`Launch::of`].
    #[inline]
    pub fn fly(&self, launch: &Launch, ticks: u64) -> BodyState {
        if ticks == 0 {
            return launch.state();
        }
        launch.flown(Vec3A::from(self.gravity), ticks_f32(ticks) * self.dt)
    }
}

/// A state ready to be flown ([`free_flight`]), for a state flown many times, as the GVT
/// buffer's commit flies each anchor to every frame it holds ([`FreeFlight::fly`]): its
/// conversions to 4-lane vectors and its test for a spin, done once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Launch {
    position: Vec3A,
    velocity: Vec3A,
    rotation: Quat,
    angular_velocity: Vec3,
    /// Whether the angular velocity is not zero: without spin the rotation is the state's for
    /// every `dt` ([`integrate_rotation`]'s first test is then true whatever `dt` is).
    spins: bool,
}

impl Launch {
    /// `state`, ready to be flown.
    #[inline]
    pub fn of(state: &BodyState) -> Launch {
        Launch {
            position: Vec3A::from(state.position),
            velocity: Vec3A::from(state.velocity),
            rotation: state.rotation,
            angular_velocity: state.angular_velocity,
            spins: state.angular_velocity.length_squared() != 0.0,
        }
    }

    /// The state it was made from (a 4-lane vector holds its 3 lanes' bits).
    #[inline]
    pub fn state(&self) -> BodyState {
        BodyState {
            position: self.position.into(),
            rotation: self.rotation,
            velocity: self.velocity.into(),
            angular_velocity: self.angular_velocity,
        }
    }

    /// Flown under `gravity` for `dt` seconds (in 4-lane vectors: the same IEEE operations per
    /// axis as in `Vec3`, so the same bits).
    #[inline]
    fn flown(&self, g: Vec3A, dt: f32) -> BodyState {
        let (p, v) = (self.position, self.velocity);
        BodyState {
            position: (p + v * dt + g * (0.5 * dt * dt)).into(),
            rotation: if self.spins {
                integrate_rotation(self.rotation, self.angular_velocity, dt)
            } else {
                self.rotation
            },
            velocity: (v + g * dt).into(),
            angular_velocity: self.angular_velocity,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parabola_is_exact_for_any_step() {
        let s0 = BodyState {
            position: Vec3::new(0.0, 10.0, 0.0),
            rotation: Quat::IDENTITY,
            velocity: Vec3::new(3.0, 4.0, -1.0),
            angular_velocity: Vec3::new(0.0, 2.0, 0.0),
        };
        let g = Vec3::new(0.0, -9.81, 0.0);
        let mut s = s0;
        for _ in 0..120 {
            s = free_flight(&s, g, 1.0 / 60.0);
        }
        let t = 2.0;
        let x = s0.position + s0.velocity * t + g * (0.5 * t * t);
        assert!(
            (s.position - x).length() < 1e-4,
            "{:?} vs {x:?}",
            s.position
        );
        assert!((s.velocity - (s0.velocity + g * t)).length() < 1e-4);
        // Rotation: 2 rad/s about y for 2 s is 4 rad about y.
        let q = Quat::from_rotation_y(4.0);
        assert!(s.rotation.dot(q).abs() > 1.0 - 1e-5);
        assert!((s.rotation.length() - 1.0).abs() < 1e-6);
    }

    /// `fly` of a launch has the bits of `FreeFlight::after`, for every kind of state:
    /// spinning or not (and spinning too slowly for a tick to turn it), under gravity or not,
    /// at zero ticks (the state itself, signed zeros included) and up to a window of ticks.
    #[test]
    fn a_launch_flies_to_the_bits_of_after() {
        let mut rng = crate::scene::SplitMix64::new(29);
        let mut f =
            |scale: f32| ((rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale;
        let bits = |s: &BodyState| s.to_array().map(f32::to_bits);
        for i in 0..20_000 {
            let spin = match i % 4 {
                0 => Vec3::ZERO,
                1 => Vec3::new(f(1e-20), 0.0, 0.0),
                _ => Vec3::new(f(30.0), f(30.0), f(30.0)),
            };
            let s = BodyState {
                position: Vec3::new(f(2e3), if i % 5 == 0 { -0.0 } else { f(2e3) }, f(2e3)),
                rotation: Quat::from_rotation_y(f(6.0)),
                velocity: Vec3::new(f(40.0), f(40.0), f(40.0)),
                angular_velocity: spin,
            };
            let flight = FreeFlight {
                gravity: if i % 3 == 0 {
                    Vec3::ZERO
                } else {
                    Vec3::new(f(20.0), -9.81, f(20.0))
                },
                dt: 1.0 / 960.0,
            };
            let launch = Launch::of(&s);
            assert_eq!(launch.state().to_array().map(f32::to_bits), bits(&s));
            for ticks in [
                0,
                1,
                2,
                15,
                16,
                255,
                4095,
                5120,
                (i as u64 * 7919) % 100_000,
            ] {
                assert_eq!(
                    bits(&flight.fly(&launch, ticks)),
                    bits(&flight.after(&s, ticks)),
                    "{s:?} under {flight:?}, {ticks} ticks"
                );
            }
        }
    }

    /// The vector arithmetic of `free_flight` gives the bits of the same formula in `Vec3`
    /// (per axis, the same IEEE products and sums), which the committed frames rely on.
    #[test]
    fn free_flight_has_the_bits_of_the_scalar_formula() {
        let mut rng = crate::scene::SplitMix64::new(11);
        let mut f =
            |scale: f32| ((rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale;
        for _ in 0..10_000 {
            let s = BodyState {
                position: Vec3::new(f(2e3), f(2e3), f(2e3)),
                rotation: Quat::from_rotation_y(f(6.0)),
                velocity: Vec3::new(f(40.0), f(40.0), f(40.0)),
                angular_velocity: Vec3::ZERO,
            };
            let (g, dt) = (Vec3::new(f(20.0), f(20.0), f(20.0)), f(4.0).abs());
            let got = free_flight(&s, g, dt);
            let want = s.position + s.velocity * dt + g * (0.5 * dt * dt);
            assert_eq!(
                got.position.to_array().map(f32::to_bits),
                want.to_array().map(f32::to_bits)
            );
            let want = s.velocity + g * dt;
            assert_eq!(
                got.velocity.to_array().map(f32::to_bits),
                want.to_array().map(f32::to_bits)
            );
        }
    }

    /// The signed conversion rounds every count below 2^63 to the unsigned one's bits: small
    /// counts, the ends of each binade and random counts of every magnitude.
    #[test]
    fn ticks_convert_as_unsigned_counts_do() {
        let mut rng = crate::scene::SplitMix64::new(5);
        let mut counts: Vec<u64> = (0..100_000).collect();
        for b in 0..63 {
            counts.extend([(1u64 << b) - 1, 1 << b, (1 << b) + 1]);
        }
        counts.extend((0..100_000).map(|_| rng.next_u64() >> (1 + rng.next_u64() % 63)));
        counts.push((1 << 63) - 1);
        for t in counts {
            assert_eq!(ticks_f32(t).to_bits(), (t as f32).to_bits(), "{t}");
        }
    }

    #[test]
    fn series_and_exact_exponential_agree() {
        let q = Quat::from_rotation_x(0.4);
        for &(w, dt) in &[
            (Vec3::new(1.0, 2.0, -3.0), 1.0 / 240.0),
            (Vec3::new(0.0, 20.0, 0.0), 0.004),
        ] {
            let exact = (Quat::from_scaled_axis(w * dt) * q).normalize();
            let fast = integrate_rotation(q, w, dt);
            assert!(exact.dot(fast) > 1.0 - 1e-7);
            assert!((exact - fast).length() < 1e-6);
        }
    }
}
