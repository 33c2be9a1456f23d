//! The CSV trajectory file of the contract (DESIGN.md, "Command line": `--out FILE.csv`).
//!
//! Header `frame,time,body,x,y,z,qx,qy,qz,qw,vx,vy,vz,wx,wy,wz`, then one row per dynamic body
//! per committed frame, frame 0 being the initial state; `body` is the scene-order index
//! (statics are numbered but have no rows), `time` is in seconds. Every f32 is printed in its
//! shortest round-trip form (Rust's `{:?}`: `0.1`, `-3.0`, `1e-7`), so parsing a value gives
//! back the exact bits the engine committed; `time` likewise as an f64.
//!
//! The file appears whole or not at all ([`AtomicFile`]): rows stream into a temporary file in
//! the target's directory, renamed onto the target only by `finish`, i.e. after the last frame
//! of a completed run; a sink dropped without `finish` (an error, a panic, an early return)
//! deletes the temporary.

use std::io::{self, Write};
use std::path::Path;

use super::atomic::{AtomicFile, context};
use super::sink::{FrameSink, dynamic_bodies, frame_state};
use crate::dynamics::BodyState;
use crate::scene::Scene;

/// The first line of every CSV file.
pub const CSV_HEADER: &str = "frame,time,body,x,y,z,qx,qy,qz,qw,vx,vy,vz,wx,wy,wz";

/// Streams committed frames to a CSV file, atomically published by [`FrameSink::finish`].
pub struct CsvSink {
    file: AtomicFile,
    dynamic: Vec<u32>,
    rows: u64,
}

impl CsvSink {
    /// Opens the temporary file beside `path` and writes the header. The target itself is not
    /// touched until [`FrameSink::finish`].
    pub fn create(path: &Path, scene: &Scene) -> io::Result<Self> {
        let mut file = AtomicFile::create(path)?;
        file.write_all(format!("{CSV_HEADER}\n").as_bytes())?;
        Ok(CsvSink {
            file,
            dynamic: dynamic_bodies(scene),
            rows: 0,
        })
    }

    /// The file the sink publishes to.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Data rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    fn write_frame(&mut self, frame: u64, time: f64, states: &[BodyState]) -> io::Result<()> {
        let out = self.file.writer()?;
        for &id in &self.dynamic {
            let s = frame_state(states, frame, id)?;
            let (p, q, v, w) = (s.position, s.rotation, s.velocity, s.angular_velocity);
            writeln!(
                out,
                "{frame},{time:?},{id},{:?},{:?},{:?},{:?},{:?},{:?},{:?},{:?},{:?},{:?},{:?},{:?},{:?}",
                p.x, p.y, p.z, q.x, q.y, q.z, q.w, v.x, v.y, v.z, w.x, w.y, w.z
            )?;
        }
        self.rows += self.dynamic.len() as u64;
        Ok(())
    }
}

impl FrameSink for CsvSink {
    fn frame(&mut self, frame: u64, time: f64, states: &[BodyState]) -> io::Result<()> {
        self.write_frame(frame, time, states)
            .map_err(|e| context(self.file.path(), e))
    }

    fn finish(&mut self) -> io::Result<()> {
        self.file.commit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::test_scene as scene;
    use glam::{Quat, Vec3};
    use std::fs;

    fn states(scene: &Scene, t: f32) -> Vec<BodyState> {
        scene
            .bodies
            .iter()
            .map(|b| BodyState {
                position: b.position + Vec3::splat(t),
                rotation: Quat::from_rotation_y(t),
                velocity: Vec3::new(1e-7, -0.0, 1.0 / 3.0),
                angular_velocity: Vec3::new(t, 2.5, -1e30),
            })
            .collect()
    }

    fn files_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn writes_dynamic_rows_that_parse_back_to_the_same_bits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        let scene = scene();
        let mut sink = CsvSink::create(&path, &scene).unwrap();
        let frames = [states(&scene, 0.0), states(&scene, 0.3)];
        sink.frame(0, 0.0, &frames[0]).unwrap();
        sink.frame(1, 1.0 / 60.0, &frames[1]).unwrap();
        assert!(!path.exists(), "nothing under the final name before finish");
        sink.finish().unwrap();
        assert_eq!(sink.rows(), 4);
        drop(sink);
        assert_eq!(files_in(dir.path()), vec!["out.csv".to_string()]);

        let text = fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(CSV_HEADER));
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 4);
        let expect_ids = [(0u64, 1usize), (0, 3), (1, 1), (1, 3)];
        for (row, &(frame, id)) in rows.iter().zip(&expect_ids) {
            assert_eq!(row.len(), 16);
            assert_eq!(row[0].parse::<u64>().unwrap(), frame);
            assert_eq!(
                row[1].parse::<f64>().unwrap(),
                if frame == 0 { 0.0 } else { 1.0 / 60.0 }
            );
            assert_eq!(row[2].parse::<usize>().unwrap(), id);
            let s = frames[frame as usize][id];
            let want = [
                s.position.to_array().to_vec(),
                s.rotation.to_array().to_vec(),
                s.velocity.to_array().to_vec(),
                s.angular_velocity.to_array().to_vec(),
            ]
            .concat();
            for (field, w) in row[3..].iter().zip(want) {
                assert_eq!(
                    field.parse::<f32>().unwrap().to_bits(),
                    w.to_bits(),
                    "{field}"
                );
            }
        }
        assert!(text.contains(",-0.0,"), "negative zero keeps its sign");
    }

    #[test]
    fn an_unfinished_run_leaves_no_file_and_keeps_an_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.csv");
        let scene = scene();
        {
            let mut sink = CsvSink::create(&path, &scene).unwrap();
            sink.frame(0, 0.0, &states(&scene, 0.0)).unwrap();
            assert_eq!(files_in(dir.path()).len(), 1, "only the temporary exists");
            // Dropped without finish, as when the run fails.
        }
        assert!(files_in(dir.path()).is_empty());

        fs::write(&path, "previous results\n").unwrap();
        {
            let mut sink = CsvSink::create(&path, &scene).unwrap();
            sink.frame(0, 0.0, &states(&scene, 0.0)).unwrap();
            let short = &states(&scene, 0.0)[..2];
            let e = sink.frame(1, 0.1, short).unwrap_err();
            assert!(e.to_string().contains("body 3 is missing"), "{e}");
        }
        assert_eq!(fs::read_to_string(&path).unwrap(), "previous results\n");
        assert_eq!(files_in(dir.path()), vec!["run.csv".to_string()]);
    }

    #[test]
    fn unwritable_targets_are_reported_with_the_path() {
        let e = CsvSink::create(Path::new("/nonexistent-dir/x.csv"), &scene())
            .err()
            .unwrap();
        assert!(e.to_string().starts_with("/nonexistent-dir/x.csv: "), "{e}");
    }
}
