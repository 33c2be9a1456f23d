//! The frame sink seam: the one call through which committed frames leave an engine.
//!
//! A sink receives each committed frame once, in order, with the states of all bodies in scene
//! order (statics included, so that body ids are indices), and `finish` once after the last
//! frame of a run that completed. A sink that is dropped without `finish` must not pretend the
//! run completed (the CSV sink deletes its partial file). A sink that wants the contact groups
//! of each frame says so, and gets them just before the frame (only the warp engine with
//! contact groups has them). [`Tee`] fans a frame out to several sinks, in the order given,
//! stopping at the first error.

use std::io;

use crate::dynamics::BodyState;
use crate::scene::Scene;

/// Receives committed frames.
pub trait FrameSink {
    /// Frame `frame` at `time` seconds; `states` holds every body in scene order.
    fn frame(&mut self, frame: u64, time: f64, states: &[BodyState]) -> io::Result<()>;

    /// Called once after the last frame of a completed run.
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Whether the sink wants each frame's contact groups ([`FrameSink::groups`]). The warp
    /// engine with contact groups then logs its islands at every frame, which costs a little;
    /// other runs have no groups to give.
    fn wants_groups(&self) -> bool {
        false
    }

    /// The contact groups of frame `frame`, handed just before that frame: for each dynamic
    /// body in scene order, the scene id of its group's smallest body, with
    /// [`super::GROUP_ASLEEP`] set while the group sleeps.
    fn groups(&mut self, _frame: u64, _groups: &[u32]) -> io::Result<()> {
        Ok(())
    }
}

/// Ids of the dynamic bodies of `scene`, in scene order: the bodies sinks report.
pub fn dynamic_bodies(scene: &Scene) -> Vec<u32> {
    scene
        .bodies
        .iter()
        .enumerate()
        .filter(|(_, b)| !b.is_static)
        .map(|(i, _)| i as u32)
        .collect()
}

/// Fans frames out to several borrowed sinks, so the caller can read them afterwards.
#[derive(Default)]
pub struct Tee<'a> {
    sinks: Vec<&'a mut dyn FrameSink>,
}

impl<'a> Tee<'a> {
    pub fn new() -> Self {
        Tee { sinks: Vec::new() }
    }

    pub fn push(&mut self, sink: &'a mut dyn FrameSink) {
        self.sinks.push(sink);
    }

    pub fn len(&self) -> usize {
        self.sinks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sinks.is_empty()
    }
}

impl FrameSink for Tee<'_> {
    fn frame(&mut self, frame: u64, time: f64, states: &[BodyState]) -> io::Result<()> {
        for sink in &mut self.sinks {
            sink.frame(frame, time, states)?;
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        for sink in &mut self.sinks {
            sink.finish()?;
        }
        Ok(())
    }

    fn wants_groups(&self) -> bool {
        self.sinks.iter().any(|s| s.wants_groups())
    }

    fn groups(&mut self, frame: u64, groups: &[u32]) -> io::Result<()> {
        for sink in &mut self.sinks {
            sink.groups(frame, groups)?;
        }
        Ok(())
    }
}

/// The state of body `id` in a frame's `states`, or an error naming the frame and the body when a
/// sink is handed fewer states than the scene has bodies.
pub(crate) fn frame_state(states: &[BodyState], frame: u64, id: u32) -> io::Result<&BodyState> {
    states.get(id as usize).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "frame {frame} has {} body states, body {id} is missing",
                states.len()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Quat, Vec3};

    #[derive(Default)]
    struct Log(Vec<(u64, usize)>, u32);

    impl FrameSink for Log {
        fn frame(&mut self, frame: u64, _: f64, states: &[BodyState]) -> io::Result<()> {
            self.0.push((frame, states.len()));
            Ok(())
        }
        fn finish(&mut self) -> io::Result<()> {
            self.1 += 1;
            Ok(())
        }
    }

    struct Fail;

    impl FrameSink for Fail {
        fn frame(&mut self, _: u64, _: f64, _: &[BodyState]) -> io::Result<()> {
            Err(io::Error::other("disk full"))
        }
    }

    #[test]
    fn tee_forwards_in_order_and_stops_at_an_error() {
        let s = BodyState {
            position: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
        };
        let (mut a, mut b) = (Log::default(), Log::default());
        {
            let mut tee = Tee::new();
            tee.push(&mut a);
            tee.push(&mut b);
            tee.frame(0, 0.0, &[s, s]).unwrap();
            tee.frame(1, 0.5, &[s, s]).unwrap();
            tee.finish().unwrap();
        }
        assert_eq!(a.0, vec![(0, 2), (1, 2)]);
        assert_eq!(a.0, b.0);
        assert_eq!((a.1, b.1), (1, 1));
        let (mut fail, mut after) = (Fail, Log::default());
        let mut tee = Tee::new();
        tee.push(&mut fail);
        tee.push(&mut after);
        assert!(tee.frame(0, 0.0, &[s]).is_err());
        drop(tee);
        assert!(after.0.is_empty());
    }
}
