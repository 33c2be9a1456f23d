//! A recorded run: the committed frames of a run with the shapes they move, in memory.
//!
//! What the glTF file ([`super::glb`]) holds and what `timewarp view` plays: every body of the
//! scene in scene order (its shape, whether it is static, its initial pose), the frame times,
//! and per frame, for each dynamic body, its position, rotation and speed, and with contact
//! groups its group. Arrays are frame-major: the value of dynamic body `j` (the `j`-th entry of
//! [`Recording::dynamic`]) at frame `f` is at index `f * dynamic.len() + j`. Positions and
//! rotations are the committed f32 values bit for bit; the speed is `|v|` of the committed
//! velocity, in f32.
//!
//! A group is given as the scene id of the group's smallest body, with [`GROUP_ASLEEP`] set
//! while the group sleeps; a body alone is a group of one (its own id). Only the warp engine
//! with contact groups records them ([`super::FrameSink::wants_groups`]); a recording without
//! them has `groups: None`.
//!
//! Invariants ([`Recording::check`]): `times` ascending and finite; `positions`, `rotations`,
//! `speeds` and `groups` each `times.len() * dynamic.len()` long; `dynamic` the ascending ids of
//! the non-static bodies; planes static.
//!
//! [`Recording::from_csv`] reads one back from the CSV file of a run and the scene it ran
//! (the CSV has no shapes), checking that the file is the scene's: the header of the contract,
//! and each frame's rows the scene's dynamic bodies in order.

use std::io::{self, BufRead};

use glam::{Quat, Vec3};

use super::csv::CSV_HEADER;
use super::sink::{dynamic_bodies, frame_state};
use crate::dynamics::BodyState;
use crate::scene::{Scene, Shape};

/// Set in a group value while the group sleeps.
pub const GROUP_ASLEEP: u32 = 1 << 31;

/// One body of a recorded scene.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecordedBody {
    pub shape: Shape,
    pub is_static: bool,
    /// The initial pose (a static body's for good; ignored for planes).
    pub position: Vec3,
    pub rotation: Quat,
}

/// The committed frames of a run and the bodies they move (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recording {
    /// The scene's name or path.
    pub title: String,
    /// Every body, in scene order.
    pub bodies: Vec<RecordedBody>,
    /// Ids of the dynamic bodies, ascending.
    pub dynamic: Vec<u32>,
    /// Seconds of each recorded frame.
    pub times: Vec<f64>,
    pub positions: Vec<Vec3>,
    pub rotations: Vec<Quat>,
    pub speeds: Vec<f32>,
    pub groups: Option<Vec<u32>>,
}

impl Recording {
    /// A recording of `scene` with no frames yet.
    pub fn new(title: &str, scene: &Scene) -> Recording {
        Recording {
            title: title.to_string(),
            bodies: scene
                .bodies
                .iter()
                .map(|b| RecordedBody {
                    shape: b.shape,
                    is_static: b.is_static,
                    position: b.position,
                    rotation: b.rotation,
                })
                .collect(),
            dynamic: dynamic_bodies(scene),
            ..Recording::default()
        }
    }

    /// Frames recorded.
    pub fn frames(&self) -> usize {
        self.times.len()
    }

    /// Appends a frame: `states` holds every body in scene order.
    pub fn push_frame(&mut self, frame: u64, time: f64, states: &[BodyState]) -> io::Result<()> {
        for &id in &self.dynamic {
            frame_state(states, frame, id)?;
        }
        self.times.push(time);
        for &id in &self.dynamic {
            let s = &states[id as usize];
            self.positions.push(s.position);
            self.rotations.push(s.rotation);
            self.speeds.push(s.velocity.length());
        }
        Ok(())
    }

    /// The values of frame `f` of a frame-major array.
    pub fn at<'a, T>(&self, values: &'a [T], f: usize) -> &'a [T] {
        let d = self.dynamic.len();
        &values[f * d..(f + 1) * d]
    }

    /// Checks the invariants of the module docs; the error says which one fails.
    pub fn check(&self) -> Result<(), String> {
        let want: Vec<u32> = (0..self.bodies.len() as u32)
            .filter(|&i| !self.bodies[i as usize].is_static)
            .collect();
        if self.dynamic != want {
            return Err("the dynamic bodies are not the scene's non-static bodies".into());
        }
        if let Some(b) = self
            .bodies
            .iter()
            .position(|b| matches!(b.shape, Shape::Plane { .. }) && !b.is_static)
        {
            return Err(format!("body {b} is a plane that is not static"));
        }
        if self.times.iter().any(|t| !t.is_finite()) || self.times.windows(2).any(|w| w[0] >= w[1])
        {
            return Err("the frame times are not finite and ascending".into());
        }
        let n = self.times.len() * self.dynamic.len();
        let lengths = [
            ("positions", self.positions.len()),
            ("rotations", self.rotations.len()),
            ("speeds", self.speeds.len()),
            ("groups", self.groups.as_ref().map_or(n, Vec::len)),
        ];
        for (what, len) in lengths {
            if len != n {
                return Err(format!(
                    "{len} {what} for {} frames of {} dynamic bodies",
                    self.times.len(),
                    self.dynamic.len()
                ));
            }
        }
        Ok(())
    }

    /// Reads the CSV file of a run of `scene` (`source` names it in errors); the error is one
    /// line naming the source and the line.
    pub fn from_csv(
        input: impl BufRead,
        source: &str,
        title: &str,
        scene: &Scene,
    ) -> Result<Recording, String> {
        let mut rec = Recording::new(title, scene);
        let d = rec.dynamic.len();
        let mut lines = input.lines();
        let at = |n: usize, m: String| format!("{source}, line {n}: {m}");
        match lines.next() {
            Some(Ok(h)) if h.trim_end() == CSV_HEADER => {}
            Some(Ok(h)) => {
                return Err(at(
                    1,
                    format!(
                        "not a timewarp CSV file (the header is {:?}, expected {CSV_HEADER:?})",
                        h.chars().take(80).collect::<String>()
                    ),
                ));
            }
            Some(Err(e)) => return Err(at(1, e.to_string())),
            None => {
                return Err(format!(
                    "{source}: empty file, expected the header {CSV_HEADER}"
                ));
            }
        }
        let mut row = 0usize; // data rows so far
        let mut frame_no = 0u64;
        for (i, line) in lines.enumerate() {
            let n = i + 2;
            let line = line.map_err(|e| at(n, e.to_string()))?;
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split(',').collect();
            if fields.len() != 16 {
                return Err(at(n, format!("{} fields, expected 16", fields.len())));
            }
            let frame: u64 = fields[0]
                .parse()
                .map_err(|_| at(n, format!("bad frame number {:?}", fields[0])))?;
            let time: f64 = fields[1]
                .parse()
                .map_err(|_| at(n, format!("bad time {:?}", fields[1])))?;
            let body: u32 = fields[2]
                .parse()
                .map_err(|_| at(n, format!("bad body id {:?}", fields[2])))?;
            let mut v = [0f32; 13];
            for (k, f) in fields[3..].iter().enumerate() {
                v[k] = f
                    .parse()
                    .map_err(|_| at(n, format!("bad number {f:?} in column {}", k + 4)))?;
            }
            let j = row % d.max(1);
            if j == 0 {
                if d == 0 {
                    return Err(at(n, "a row, but the scene has no dynamic bodies".into()));
                }
                if rec.frames() > 0 && !(frame > frame_no && time > rec.times[rec.frames() - 1]) {
                    return Err(at(
                        n,
                        format!("frame {frame} does not follow frame {frame_no}"),
                    ));
                }
                frame_no = frame;
                rec.times.push(time);
            } else if frame != frame_no {
                return Err(at(
                    n,
                    format!(
                        "frame {frame_no} ends after {j} of the scene's {d} dynamic bodies \
                         (is this the scene the run used? see --scene and --bodies)"
                    ),
                ));
            }
            if body != rec.dynamic[j] {
                return Err(at(
                    n,
                    format!(
                        "body {body} where the scene's dynamic body {} comes (is this the scene \
                         the run used? see --scene and --bodies)",
                        rec.dynamic[j]
                    ),
                ));
            }
            rec.positions.push(Vec3::new(v[0], v[1], v[2]));
            rec.rotations.push(Quat::from_xyzw(v[3], v[4], v[5], v[6]));
            rec.speeds.push(Vec3::new(v[7], v[8], v[9]).length());
            row += 1;
        }
        if d > 0 && row % d != 0 {
            return Err(format!(
                "{source}: the last frame has {} of the scene's {d} dynamic bodies",
                row % d
            ));
        }
        if rec.frames() == 0 {
            return Err(format!("{source}: no frames"));
        }
        rec.check().map_err(|e| format!("{source}: {e}"))?;
        Ok(rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::test_scene as scene;
    use crate::output::{CsvSink, FrameSink};

    fn states(scene: &Scene, t: f32) -> Vec<BodyState> {
        scene
            .bodies
            .iter()
            .map(|b| BodyState {
                position: b.position + Vec3::new(t, -t, 1e-7),
                rotation: Quat::from_rotation_z(t),
                velocity: Vec3::new(3.0, -4.0 * t, 0.0),
                angular_velocity: Vec3::ZERO,
            })
            .collect()
    }

    #[test]
    fn a_csv_file_reads_back_as_the_frames_pushed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.csv");
        let scene = scene();
        let mut pushed = Recording::new("s", &scene);
        let mut csv = CsvSink::create(&path, &scene).unwrap();
        for (f, t) in [(0u64, 0.0f32), (1, 0.25), (2, 1.0)] {
            let s = states(&scene, t);
            csv.frame(f, f as f64 / 60.0, &s).unwrap();
            pushed.push_frame(f, f as f64 / 60.0, &s).unwrap();
        }
        csv.finish().unwrap();
        pushed.check().unwrap();
        assert_eq!(pushed.dynamic, vec![1, 3]);
        assert_eq!(pushed.speeds[4], 5.0, "|(3, -4, 0)| at frame 2");
        let text = std::fs::read_to_string(&path).unwrap();
        let read = Recording::from_csv(text.as_bytes(), "r.csv", "s", &scene).unwrap();
        assert_eq!(read, pushed);
        assert_eq!(read.at(&read.positions, 1)[1], Vec3::new(0.25, -0.25, 1e-7));
    }

    #[test]
    fn a_csv_file_of_another_scene_is_refused_with_its_line() {
        let scene = scene();
        let h = CSV_HEADER;
        let row = |f: u64, b: u32| format!("{f},0.5,{b},1,2,3,0,0,0,1,0,0,0,0,0,0\n");
        let cases = [
            ("x,y\n".to_string(), "line 1: not a timewarp CSV file"),
            (format!("{h}\n{}", row(0, 2)), "line 2: body 2 where"),
            (
                format!("{h}\n{}{}", row(0, 1), row(1, 3)),
                "line 3: frame 0 ends",
            ),
            (format!("{h}\n{}", row(0, 1)), "the last frame has 1 of"),
            (format!("{h}\n"), "no frames"),
            (format!("{h}\n0,0.5,1,1,2\n"), "line 2: 5 fields"),
            (
                format!("{h}\n0,0.5,1,1,2,x,0,0,0,1,0,0,0,0,0,0\n"),
                "bad number \"x\" in column 6",
            ),
            (
                format!("{h}\n{}{}{}{}", row(0, 1), row(0, 3), row(0, 1), row(0, 3)),
                "line 4: frame 0 does not follow frame 0",
            ),
            (String::new(), "empty file"),
        ];
        for (text, want) in cases {
            let e = Recording::from_csv(text.as_bytes(), "r.csv", "s", &scene).unwrap_err();
            assert!(
                e.starts_with("r.csv") && e.contains(want),
                "{e:?} lacks {want:?}"
            );
            assert!(!e.contains('\n'));
        }
    }
}
