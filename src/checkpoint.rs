//! # Checkpoints: a committed frame saved to a file, and runs resumed from one
//!
//! `timewarp run ... --checkpoint FILE` saves the state of the run at its last committed frame
//! (and with `--checkpoint-every S` also every `S` simulated seconds); `timewarp resume FILE`
//! continues it. The contract is bit-exactness: a run cut at frame `k` and resumed to frame `n`
//! prints the same `checksum:` line as one uninterrupted run to `n`. The run checksum
//! ([`crate::output::Checksum`]) covers every committed frame from frame 0, so a checkpoint
//! carries the running hash and the count of frames hashed, and the resumed run hashes on from
//! there.
//!
//! ## What a checkpoint holds
//!
//! A checkpoint stands alone: `resume` needs nothing else.
//!
//! - the scene itself, resolved (world settings and every body, floats as bits), and the label
//!   the run was given;
//! - the simulated seconds the run was asked for (`resume` goes on to them by default);
//! - the frame index, the running checksum and its frame count;
//! - the engine and its state at that frame ([`EngineState`]):
//!   - **frame engine**: everything one step hands to the next ([`FrameSnapshot`]: states,
//!     awake flags, boxes, broad-phase sets, contacts with their warm-start impulses, the
//!     persistent island graph with sleep timers and its free list of edge ids);
//!   - **warp engine**: the committed (pre-event) states of the dynamic bodies at the frame's
//!     tick and the anchor each flies from (rule 4 of [`crate::warp::rules`]: its state just
//!     after its last event and that event's tick). Nothing else is needed: by the rules the
//!     state at `k + 1` is a function of the states at `k` (contacts are found and resolved
//!     from pre-event states) and of the anchors, so entities restarted at tick `k` from them
//!     commit the same frames as the entities that were there. (The states alone would not do:
//!     a body that flew from an older anchor would be re-anchored at `k`, and fly a different
//!     last bit.) The entities logged the anchors as they recorded the tick
//!     ([`crate::warp::island_log`]). Speculation, the TVHT and the GVT buffer hold nothing
//!     committed and start empty.
//!   - **warp engine with contact groups**: the same states, and the islands of the groups
//!     alive at that tick as they stand before its rules (bodies, rest and split timers, sleep
//!     flag, warm-start impulses, anchors), which the entities logged the same way; the
//!     resumed groups count as born the tick before, so they may change at the checkpoint's
//!     tick as the groups of the run that was cut did.
//!
//!   Either engine's state carries the run's `--sleep` (the frame engine's in its snapshot),
//!   so that `resume` goes on with it.
//!
//! The thread count and the backend are not saved: committed frames are bit-identical for any
//! of them (DESIGN.md, "Determinism is a contract"), so a resumed run may use others.
//!
//! ## File format (version [`FORMAT_VERSION`]; older versions are refused, see [`OLDEST_VERSION`])
//!
//! ```text
//! offset  size  field
//!  0      8     signature  "TWARPCKP"
//!  8      4     format version, u32 little-endian
//! 12      8     payload length in bytes, u64 little-endian
//! 20      8     FNV-1a 64 hash of the payload bytes, u64 little-endian
//! 28      ...   payload: the checkpoint in postcard (serde), floats as their IEEE bits
//! ```
//!
//! postcard writes an `f32` as its four bytes, so every float round-trips bit for bit (NaN
//! payloads and the sign of zero included). Reading checks, in order: the signature (else the
//! file is *foreign*), the version (a newer one is refused: this build cannot know its layout),
//! the length (a shorter file is *truncated*, a longer one *corrupt*), the payload hash
//! (*corrupt*), the decoding (*corrupt*), the scene against the ranges the engines are built
//! for ([`Scene::validate`], as the loader: the hash only says the file is as written, and it may
//! have been written by hand), then the state against its scene (*inconsistent*).
//! Each case is one error line naming the file.
//!
//! ## Writing atomically
//!
//! A checkpoint is written to a temporary file in the target's directory (`.NAME.PID-N.tmp`),
//! synced to disk, renamed onto the target (atomic within one POSIX file system) and the
//! directory synced, so the target is always either the previous checkpoint or the new one,
//! whole. An error removes the temporary; a run that fails never writes a partial checkpoint.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::dynamics::BodyState;
use crate::frame::FrameSnapshot;
use crate::output::{Checksum, FNV_OFFSET, FNV_PRIME, FrameSink};
use crate::run::EngineKind;
use crate::scene::{Scene, SceneError};
use crate::warp::group_rules::{Island, check_partition};
use crate::warp::rules::Anchor;

/// The first bytes of every checkpoint file.
pub const SIGNATURE: [u8; 8] = *b"TWARPCKP";
/// The format this build writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 5;
/// The oldest format this build reads. Version 2 added the warp engine's state with contact
/// groups ([`EngineState::WarpGroups`]); version 3 the bodies' `rolling_resistance` (a field of
/// every body of the saved scene), the frame engine contacts' impact flag and the warp
/// engine's anchors; version 4 the warp engine's `--sleep` setting; version 5 the contact
/// groups' solver substeps (each island's substep in progress and the run's
/// `--group-substep`). Older payloads no longer decode and are refused by their version.
pub const OLDEST_VERSION: u32 = 5;
/// Bytes before the payload.
pub const HEADER_LEN: usize = 28;

/// An engine's state at a committed frame.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum EngineState {
    /// The frame engine's state between two steps.
    Frame(Box<FrameSnapshot>),
    /// The warp engine's committed pre-event states of the dynamic bodies, in scene order, and
    /// the anchor each flies from (rule 4 of [`crate::warp::rules`]); `sleep` is the run's
    /// `--sleep` (nothing sleeps without contact groups, but `resume` keeps the setting).
    Warp {
        states: Vec<BodyState>,
        anchors: Vec<Anchor>,
        sleep: bool,
    },
    /// The warp engine with contact groups: the same states, and the islands of the groups
    /// alive at the frame's tick as they stand before its rules (bodies, timers, sleep flag,
    /// warm-start impulses, substep in progress; [`crate::warp::island_log`]), ordered by
    /// smallest body; `sleep` whether groups may fall asleep
    /// ([`crate::warp::WarpConfig::sleep`], `--sleep`); `group_substep` the island solver's
    /// substep in ticks ([`crate::warp::WarpConfig::group_substep`], `--group-substep`).
    WarpGroups {
        states: Vec<BodyState>,
        islands: Vec<Island>,
        sleep: bool,
        group_substep: u64,
    },
}

impl EngineState {
    /// The engine this state belongs to.
    pub fn engine(&self) -> EngineKind {
        match self {
            EngineState::Frame(_) => EngineKind::Frame,
            EngineState::Warp { .. } | EngineState::WarpGroups { .. } => EngineKind::Warp,
        }
    }

    /// Whether the run had contact groups.
    pub fn groups(&self) -> bool {
        matches!(self, EngineState::WarpGroups { .. })
    }

    /// Whether the run let islands or contact groups fall asleep (`--sleep`).
    pub fn sleep(&self) -> bool {
        match self {
            EngineState::Frame(snap) => snap.sleep(),
            EngineState::Warp { sleep, .. } | EngineState::WarpGroups { sleep, .. } => *sleep,
        }
    }

    /// The contact groups' solver substep in ticks, for a run with contact groups.
    pub fn group_substep(&self) -> Option<u64> {
        match self {
            EngineState::WarpGroups { group_substep, .. } => Some(*group_substep),
            _ => None,
        }
    }
}

/// A checkpoint (see the module docs).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The scene's name or path in the run that wrote it.
    pub label: String,
    pub scene: Scene,
    /// The simulated seconds that run was asked for.
    pub seconds: f64,
    /// The committed frame the state is at.
    pub frame: u64,
    /// The run checksum over frames `0..=frame`.
    pub checksum: u64,
    /// Frames hashed into `checksum` (`frame + 1`).
    pub checksum_frames: u64,
    pub state: EngineState,
}

/// The same fields as [`Checkpoint`], borrowed: what a run serialises (postcard writes a
/// reference exactly as the value, so the bytes are a `Checkpoint`'s).
#[derive(Serialize)]
struct CheckpointRef<'a> {
    label: &'a str,
    scene: &'a Scene,
    seconds: f64,
    frame: u64,
    checksum: u64,
    checksum_frames: u64,
    state: &'a EngineState,
}

/// Why a checkpoint could not be read. `Display` is one line naming the file.
#[derive(Debug)]
pub enum CheckpointError {
    Io(PathBuf, io::Error),
    /// Not a checkpoint at all.
    Foreign(PathBuf),
    /// Written by a newer format.
    Version(PathBuf, u32),
    /// Shorter than its header says.
    Truncated {
        path: PathBuf,
        have: u64,
        want: u64,
    },
    /// Damaged: hash mismatch, trailing bytes or an undecodable payload.
    Corrupt(PathBuf, String),
    /// Whole and undamaged, but its scene is out of the ranges the engines are built for (the
    /// loader's, [`Scene::validate`]): a file edited by hand.
    Scene(PathBuf, SceneError),
    /// Whole and undamaged, but its state does not fit its scene.
    Inconsistent(PathBuf, String),
}

impl std::fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckpointError::Io(p, e) => write!(f, "cannot read checkpoint {}: {e}", p.display()),
            CheckpointError::Foreign(p) => write!(
                f,
                "{} is not a timewarp checkpoint (it does not begin with the checkpoint signature)",
                p.display()
            ),
            CheckpointError::Version(p, v) => write!(
                f,
                "{}: checkpoint format version {v} is not supported (this timewarp reads versions {OLDEST_VERSION} to {FORMAT_VERSION}{})",
                p.display(),
                if *v > FORMAT_VERSION {
                    "; it was written by a newer timewarp"
                } else {
                    "; it was written by an older timewarp: run it again to write a new one"
                }
            ),
            CheckpointError::Truncated { path, have, want } => write!(
                f,
                "{}: the checkpoint is truncated ({have} of {want} bytes)",
                path.display()
            ),
            CheckpointError::Corrupt(p, why) => {
                write!(f, "{}: the checkpoint is corrupt ({why})", p.display())
            }
            CheckpointError::Scene(p, e) => {
                write!(
                    f,
                    "{}: the checkpoint's scene is not valid: {e}",
                    p.display()
                )
            }
            CheckpointError::Inconsistent(p, why) => write!(
                f,
                "{}: the checkpoint's state does not fit its scene: {why}",
                p.display()
            ),
        }
    }
}

impl std::error::Error for CheckpointError {}

/// FNV-1a 64 over bytes.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
    })
}

fn frame_file(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&SIGNATURE);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&fnv1a(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

impl Checkpoint {
    /// The file's bytes.
    pub fn encode(&self) -> io::Result<Vec<u8>> {
        let payload = postcard::to_stdvec(self).map_err(io::Error::other)?;
        Ok(frame_file(&payload))
    }

    /// Reads a checkpoint from the bytes of the file `path` (named in errors).
    pub fn decode(path: &Path, bytes: &[u8]) -> Result<Checkpoint, CheckpointError> {
        let p = || path.to_path_buf();
        if bytes.len() < SIGNATURE.len() || bytes[..SIGNATURE.len()] != SIGNATURE {
            return Err(CheckpointError::Foreign(p()));
        }
        let word = |at: usize, n: usize| -> Option<u64> {
            let b = bytes.get(at..at + n)?;
            let mut w = [0u8; 8];
            w[..n].copy_from_slice(b);
            Some(u64::from_le_bytes(w))
        };
        let truncated = |want: u64| CheckpointError::Truncated {
            path: p(),
            have: bytes.len() as u64,
            want,
        };
        let version = word(8, 4).ok_or_else(|| truncated(HEADER_LEN as u64))? as u32;
        if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(CheckpointError::Version(p(), version));
        }
        let (Some(len), Some(hash)) = (word(12, 8), word(20, 8)) else {
            return Err(truncated(HEADER_LEN as u64));
        };
        let want = len.saturating_add(HEADER_LEN as u64);
        let have = bytes.len() as u64;
        if have < want {
            return Err(truncated(want));
        }
        if have > want {
            return Err(CheckpointError::Corrupt(
                p(),
                format!("{} bytes after its end", have - want),
            ));
        }
        let payload = &bytes[HEADER_LEN..];
        if fnv1a(payload) != hash {
            return Err(CheckpointError::Corrupt(
                p(),
                "its content checksum does not match".into(),
            ));
        }
        let c: Checkpoint = postcard::from_bytes(payload)
            .map_err(|e| CheckpointError::Corrupt(p(), format!("cannot decode it: {e}")))?;
        c.scene
            .validate()
            .map_err(|e| CheckpointError::Scene(p(), e))?;
        c.check()
            .map_err(|m| CheckpointError::Inconsistent(p(), m))?;
        Ok(c)
    }

    /// Reads the checkpoint file `path`.
    pub fn read(path: &Path) -> Result<Checkpoint, CheckpointError> {
        let bytes = fs::read(path).map_err(|e| CheckpointError::Io(path.to_path_buf(), e))?;
        Checkpoint::decode(path, &bytes)
    }

    /// Checks what the engines do not: frame numbers and counts against the scene, which has
    /// passed [`Scene::validate`]. (Each engine checks its own state against the scene when it
    /// starts from it.)
    fn check(&self) -> Result<(), String> {
        if self.checksum_frames != self.frame.wrapping_add(1) {
            return Err(format!(
                "frame {} but {} frames hashed",
                self.frame, self.checksum_frames
            ));
        }
        if self.frame > crate::run::MAX_FRAMES {
            return Err(format!("frame {} is out of range", self.frame));
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0) {
            return Err(format!("run length {} s is not positive", self.seconds));
        }
        match &self.state {
            EngineState::Frame(s) if s.frame() != self.frame => Err(format!(
                "the frame engine state is at frame {}, the checkpoint at {}",
                s.frame(),
                self.frame
            )),
            EngineState::Warp {
                states, anchors, ..
            } => {
                self.check_states(states)?;
                if anchors.len() != states.len() {
                    return Err(format!(
                        "{} anchors for {} warp states",
                        anchors.len(),
                        states.len()
                    ));
                }
                check_anchors(anchors, self.frame, &self.scene)
            }
            EngineState::WarpGroups {
                states,
                islands,
                sleep,
                group_substep,
            } => {
                self.check_states(states)?;
                if !(group_substep.is_power_of_two()
                    && *group_substep <= crate::run::MAX_GROUP_SUBSTEP)
                {
                    return Err(format!(
                        "the saved group substep of {group_substep} ticks is not a power of two \
                         from 1 to {}",
                        crate::run::MAX_GROUP_SUBSTEP
                    ));
                }
                check_islands(islands, states.len())?;
                if let Some(isl) = islands.iter().find(|i| i.asleep && !sleep) {
                    return Err(format!(
                        "island {:?} is asleep in a run with sleep off",
                        isl.bodies
                    ));
                }
                for isl in islands {
                    if isl.anchors.len() != isl.bodies.len() {
                        return Err(format!(
                            "island {:?} has {} anchors",
                            isl.bodies,
                            isl.anchors.len()
                        ));
                    }
                    check_anchors(&isl.anchors, self.frame, &self.scene)?;
                }
                Ok(())
            }
            EngineState::Frame(_) => Ok(()),
        }
    }

    /// The warp engine's states: one per dynamic body, finite.
    fn check_states(&self, states: &[BodyState]) -> Result<(), String> {
        let dynamic = self.scene.bodies.iter().filter(|b| !b.is_static).count();
        if states.len() != dynamic {
            return Err(format!(
                "{} warp states for {dynamic} dynamic bodies",
                states.len()
            ));
        }
        if !states
            .iter()
            .all(|s| s.to_array().iter().all(|x| x.is_finite()))
        {
            return Err("a saved body state is not finite".into());
        }
        Ok(())
    }
}

/// Anchors must be finite and not after the checkpoint's tick (frame `frame` of `scene`).
fn check_anchors(anchors: &[Anchor], frame: u64, scene: &Scene) -> Result<(), String> {
    let tick = frame.saturating_mul(u64::from(scene.world.frame_ticks));
    for a in anchors {
        if !a.state.to_array().iter().all(|x| x.is_finite()) {
            return Err("a saved anchor is not finite".into());
        }
        if a.tick > tick {
            return Err(format!(
                "an anchor at tick {} is after the checkpoint's tick {tick}",
                a.tick
            ));
        }
    }
    Ok(())
}

/// Islands must partition the bodies `0..bodies`, each island's bodies ascending, the islands
/// ordered by their smallest body, and carry finite warm-start data.
fn check_islands(islands: &[Island], bodies: usize) -> Result<(), String> {
    let mut last_rep = None;
    for isl in islands {
        let Some(&rep) = isl.bodies.first() else {
            return Err("an island without bodies".into());
        };
        if last_rep.is_some_and(|l| l >= rep) || !isl.bodies.is_sorted() {
            return Err(format!("island {:?} is out of order", isl.bodies));
        }
        last_rep = Some(rep);
        let finite = isl.warm.iter().all(|(_, m)| {
            m.normal.is_finite()
                && m.points.iter().all(|p| {
                    p.position.is_finite()
                        && p.depth.is_finite()
                        && p.normal_impulse.is_finite()
                        && p.tangent_impulse.is_finite()
                })
        });
        if !finite
            || isl
                .warm
                .iter()
                .any(|(_, m)| m.count as usize > m.points.len())
        {
            return Err(format!("island {:?} carries a broken contact", isl.bodies));
        }
        if let Some(sub) = &isl.substep {
            let from = isl.anchors.first().map_or(0, |a| a.tick);
            let finite = sub
                .moves
                .iter()
                .all(|m| m.position.is_finite() && m.rotation.is_finite());
            if sub.moves.len() != isl.bodies.len()
                || !finite
                || isl.anchors.iter().any(|a| a.tick != from)
                || sub.until <= from
            {
                return Err(format!("island {:?} carries a broken substep", isl.bodies));
            }
        }
    }
    check_partition(islands, bodies)
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, synced, then
/// renamed onto `path`, then the directory synced. On error the temporary is removed and
/// `path` is untouched. Errors name `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let context = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let (dir, temp) = crate::output::temp_beside(path).map_err(context)?;
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(context(e));
    }
    // The rename is durable once the directory is; some systems cannot sync a directory, and
    // the checkpoint is whole either way.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Checks before a run that a checkpoint can be written beside `path` (its directory exists and
/// takes a new file), so a run does not fail at its end for a typing error.
pub fn probe(path: &Path) -> io::Result<()> {
    let context = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    if path.is_dir() {
        return Err(context(io::Error::new(
            io::ErrorKind::InvalidInput,
            "is a directory",
        )));
    }
    let (_, temp) = crate::output::temp_beside(path).map_err(context)?;
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .map_err(context)?;
    fs::remove_file(&temp).map_err(context)
}

/// Writes the checkpoints of one run: it hashes every committed frame (the running checksum a
/// checkpoint carries) and saves the engine state when asked.
pub struct Checkpointer {
    path: PathBuf,
    every: Option<u64>,
    label: String,
    scene: Scene,
    seconds: f64,
    checksum: Checksum,
    saved: u64,
    last_saved: Option<u64>,
}

impl Checkpointer {
    /// Checkpoints to `path` for a run of `scene` (called `label`) asked for `seconds`;
    /// periodically every `every` frames when given. `resumed` is the checkpoint the run goes
    /// on from, if any (its running checksum continues). Fails if `path` cannot be written.
    pub fn new(
        path: &Path,
        scene: &Scene,
        label: &str,
        seconds: f64,
        every: Option<u64>,
        resumed: Option<&Checkpoint>,
    ) -> io::Result<Self> {
        probe(path)?;
        let checksum = match resumed {
            Some(c) => Checksum::resume(scene, c.checksum, c.checksum_frames),
            None => Checksum::new(scene),
        };
        Ok(Checkpointer {
            path: path.to_path_buf(),
            every: every.map(|e| e.max(1)),
            label: label.to_string(),
            scene: scene.clone(),
            seconds,
            checksum,
            saved: 0,
            last_saved: None,
        })
    }

    /// Hashes committed frame `frame` (every frame of the run, in order).
    pub fn observe(&mut self, frame: u64, time: f64, states: &[BodyState]) -> io::Result<()> {
        self.checksum.frame(frame, time, states)
    }

    /// The period of the periodic checkpoints, in frames, if any.
    pub fn every(&self) -> Option<u64> {
        self.every
    }

    /// Whether a periodic checkpoint is due at committed frame `frame`.
    pub fn due(&self, frame: u64) -> bool {
        frame > 0 && self.every.is_some_and(|e| frame % e == 0)
    }

    /// Saves `state`, the engine at committed frame `frame`, the last frame observed.
    pub fn save(&mut self, frame: u64, state: &EngineState) -> io::Result<()> {
        let c = CheckpointRef {
            label: &self.label,
            scene: &self.scene,
            seconds: self.seconds,
            frame,
            checksum: self.checksum.value(),
            checksum_frames: self.checksum.frames(),
            state,
        };
        let payload = postcard::to_stdvec(&c).map_err(io::Error::other)?;
        write_atomic(&self.path, &frame_file(&payload))?;
        self.saved += 1;
        self.last_saved = Some(frame);
        Ok(())
    }

    /// Checkpoints written so far.
    pub fn saved(&self) -> u64 {
        self.saved
    }

    /// The frame of the last checkpoint written.
    pub fn last_saved(&self) -> Option<u64> {
        self.last_saved
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The running checksum (over every frame observed, those before a resume included).
    pub fn checksum(&self) -> &Checksum {
        &self.checksum
    }
}
