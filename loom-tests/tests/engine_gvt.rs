//! The GVT buffer's commit rule under concurrency (seed 000, Section 3: a tick's frame is
//! committed when every entity has recorded it; a rollback removes the record first), running
//! the real `timewarp::warp::GvtBuffer` under each backend of the sync seam.
//!
//! Two bodies, each its own entity; every tick is a frame (so the committed states are
//! checked); a ring of three ticks, one slot each (window 2), and again with a window of 8,
//! where the buffer keeps ticks in blocks of two (ticks 0 and 1 in the same slots).
//!
//! * entity A (a thread) records ticks 0 and 1, then drains the committed frames while B may
//!   still be running;
//! * entity B (another thread) records tick 0, then records tick 1 with a state it then rolls
//!   back (`unrecord`); after both threads end, B records tick 1 again with its final state.
//!
//! The model's main thread only spawns and joins them, then drains the rest.
//!
//! Once A and B have both recorded tick 1, it may commit before B's rollback. The buffer's
//! contract then refuses the rollback and the re-record (`GvtError::Committed`), and the frame
//! holds the rolled-back state; otherwise both succeed and the frame holds the final state.
//! (The re-record runs after the threads join, and the main thread waits, so that the
//! rollback-versus-commit race, the point of the model, is reached within 2 preemptions.)
//! Every interleaving must give one of these two sequential outcomes: all other operations
//! succeed, GVT ends at 2 and never goes down, and the frames handed out (mid-run and after)
//! are exactly ticks 0 and 1, each once, in order. So a tick is committed exactly once, never
//! while a body is missing (the frame would hold the rolled-back state while the rollback
//! succeeded), and never changed after commit (a refused operation changed nothing; the
//! committed ticks stay refused at the end).
//!
//! Negative controls: `TIMEWARP_BROKEN=gvt_commit_min_outside` reads the least front in a
//! section of its own and moves the clock to it in a second one; loom must find the
//! interleaving where B's rollback slips between the two and tick 1 commits without B.
//! `TIMEWARP_BROKEN=gvt_unrecord_trusts_word` makes a rollback check the GVT word (read before
//! its section, and raised only after a commit's frames are copied) instead of the clock:
//! loom must find the rollback that takes back tick 1 after its commit, before the word rose.
//! Both show as a rollback that succeeded followed by a refused re-record (`GVT COMMITTED A
//! TICK WITHOUT A BODY`).
//!
//! A second model checks liveness with spans: A records ticks 0 and 1 one at a time while B
//! records both in one span. Whichever record completes a tick must see it committed, through
//! the handshake of the GVT buffer's "Liveness": after its section a record fences and reads
//! the GVT word; a committer raises the word, fences and commits again. Its negative control,
//! `TIMEWARP_BROKEN=gvt_commit_no_retry`, drops the committer's second look: loom must find
//! the interleaving where A completes tick 1 while B's commit of tick 0 has not raised the word
//! yet, so A leaves the commit to B, which never looks again (`GVT LEFT COMPLETE TICKS
//! UNCOMMITTED`).
//!
//! A third model checks the frames computed from pieces (the buffer's "Frame states, from
//! anchors"): B records pieces, takes them back and records one piece in their place while A's
//! record lets the commit of tick 0 move B's cursor; the frames must come from B's last pieces.
//! Its negative control, `TIMEWARP_BROKEN=gvt_pop_keeps_key`, leaves a popped piece's key in
//! its cell, and the commit takes it for the live piece its position holds next (`GVT
//! COMMITTED A POPPED PIECE`).
//!
//! A fourth model checks the reuse of anchor cells (the buffer's "Reuse") with a ring of two
//! cells per body: B's third piece takes the cell of its first, whose frame the commit still
//! needs until A's record lets it commit; B's record must take nothing until then. Its negative
//! control, `TIMEWARP_BROKEN=gvt_ring_unchecked`, reuses the cell without asking (`GVT
//! COMMITTED A FRAME FROM A REUSED CELL`).
//!
//! Each assertion has a message of its own, so that a control shows which it broke;
//! `run-models.sh` names which one each control must fail with.
//!
//! The first model runs with one chunk of both bodies and again with one body per chunk
//! (a record then raises its chunk's minimum and tries to commit every time).
//!
//! Preemption bounds: under locks the models are explored exhaustively (bound 20); under the
//! STM, whose sections are many more atomic steps, bound 2.
#![cfg(all(loom, feature = "engine"))]

use glam::{Quat, Vec3};
use loom::thread;
use std::sync::Arc;
use timewarp::dynamics::{BodyState, FreeFlight};
use timewarp::sync::Backend;
use timewarp::warp::{GvtBuffer, GvtConfig, GvtError, MAX_POSITIONS, Piece, Tick};
use timewarp_loom_tests::Outcomes;

/// LOOM_MAX_PREEMPTIONS of the lock-backend model (exhaustive: no execution preempts more).
const LOCKS_PREEMPTIONS: usize = 20;
/// LOOM_MAX_PREEMPTIONS of the STM-backend model.
const STM_PREEMPTIONS: usize = 2;

/// Frames that hold their anchor's state (the models of records of single ticks).
const STILL: FreeFlight = FreeFlight {
    gravity: Vec3::ZERO,
    dt: 0.0,
};

/// Body `body`'s state at `tick`; `rolled_back` marks a state that is later taken back.
fn st(body: u32, tick: Tick, rolled_back: bool) -> BodyState {
    BodyState {
        position: Vec3::new(
            body as f32,
            tick as f32,
            if rolled_back { 9.0 } else { 0.0 },
        ),
        rotation: Quat::IDENTITY,
        velocity: Vec3::ZERO,
        angular_velocity: Vec3::ZERO,
    }
}

fn ok<T>(who: &str, r: Result<T, GvtError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("GVT BUFFER REFUSED A RECORD THAT MUST SUCCEED: {who}: {e}"),
    }
}

/// A record that must take every one of its ticks, up to `end`.
fn took(who: &str, r: Result<Tick, GvtError>, end: Tick) {
    let e = ok(who, r);
    assert!(
        e == end,
        "GVT BUFFER TOOK PART OF A RECORD THAT MUST SUCCEED: {who}: up to {e}, not {end}"
    );
}

fn model(name: &str, backend: Backend, preemptions: usize, window: u64, chunk: usize) {
    let outcomes = Outcomes::new(&[
        "rollback before tick 1's commit",
        "rollback after it (refused)",
    ]);
    let seen = outcomes.clone();
    timewarp_loom_tests::model_bounded(name, preemptions, move || {
        let config = GvtConfig {
            bodies: 2,
            start_tick: 0,
            frame_ticks: 1,
            window,
            slack: 1,
            chunk,
            copiers: 1,
            positions: MAX_POSITIONS,
            flight: STILL,
        };
        let g = Arc::new(GvtBuffer::new(backend, config).expect("valid GVT configuration"));
        let gb = g.clone();
        let b = thread::spawn(move || {
            (
                gb.record(0, &[(1, st(1, 0, false))]),
                gb.record(1, &[(1, st(1, 1, true))]),
                gb.unrecord(1, &[1]),
            )
        });
        let ga = g.clone();
        let a = thread::spawn(move || {
            let r = [
                ga.record(0, &[(0, st(0, 0, false))]),
                ga.record(1, &[(0, st(0, 1, false))]),
            ];
            (r, ga.gvt(), ga.drain_committed())
        });
        let ([a0, a1], gvt_mid, mut frames) = a.join().unwrap();
        let (r0, r1x, u1) = b.join().unwrap();
        took("A's record of tick 0", a0, 1);
        took("A's record of tick 1", a1, 2);
        let r1 = g.record(1, &[(1, st(1, 1, false))]);
        took("B's record of tick 0", r0, 1);
        took("B's first record of tick 1", r1x, 2);
        // Either B's rollback came before tick 1's commit (both succeed), or after it (both
        // are refused, and the commit holds the rolled-back state).
        let rolled_back = match (u1, r1) {
            (Ok(()), Ok(2)) => false,
            (Err(GvtError::Committed { tick: 1 }), Err(GvtError::Committed { tick: 1 })) => true,
            // The rollback took B's record away, and tick 1 was committed before B recorded
            // it again.
            (Ok(()), Err(GvtError::Committed { tick: 1 })) => {
                panic!(
                    "GVT COMMITTED A TICK WITHOUT A BODY: B's rollback of tick 1 succeeded, then its re-record was refused as committed"
                )
            }
            other => panic!(
                "GVT ROLLBACK AND RE-RECORD MATCH NO SERIAL ORDER: B's rollback and re-record of tick 1: {other:?}"
            ),
        };
        let gvt_end = g.gvt();
        assert!(
            gvt_mid <= gvt_end && gvt_end == 2,
            "GVT WENT DOWN OR DID NOT END AT 2: GVT went {gvt_mid} -> {gvt_end}"
        );
        frames.extend(g.drain_committed());
        let want = vec![
            (0, vec![st(0, 0, false), st(1, 0, false)]),
            (1, vec![st(0, 1, false), st(1, 1, rolled_back)]),
        ];
        assert!(
            frames == want,
            "GVT COMMITTED THE WRONG FRAMES: committed frames {frames:?}, expected {want:?}"
        );
        // Committed ticks are final.
        assert!(
            g.unrecord(1, &[0]) == Err(GvtError::Committed { tick: 1 })
                && g.record(0, &[(1, st(1, 0, true))]) == Err(GvtError::Committed { tick: 0 })
                && g.drain_committed().is_empty(),
            "GVT COMMITTED TICK CHANGED AFTERWARDS"
        );
        if let Err(e) = g.validate() {
            panic!("GVT BUFFER INVARIANT BROKEN AFTER THE RACE: {e}");
        }
        seen.saw(usize::from(rolled_back));
    });
    outcomes.check_all_reached(name);
}

#[test]
fn gvt_records_and_rollbacks_locks() {
    model(
        "gvt_records_and_rollbacks_locks",
        Backend::Locks,
        LOCKS_PREEMPTIONS,
        2,
        64,
    );
}

#[test]
fn gvt_records_and_rollbacks_stm() {
    model(
        "gvt_records_and_rollbacks_stm",
        Backend::Stm,
        STM_PREEMPTIONS,
        2,
        64,
    );
}

/// The same with one body per chunk (the engine uses chunks of 8 to 64): each record raises
/// its chunk's minimum, so each tries to commit, racing the other's records and rollback.
#[test]
fn gvt_records_and_rollbacks_chunk_per_body_locks() {
    model(
        "gvt_records_and_rollbacks_chunk_per_body_locks",
        Backend::Locks,
        LOCKS_PREEMPTIONS,
        8,
        1,
    );
}

#[test]
fn gvt_records_and_rollbacks_chunk_per_body_stm() {
    model(
        "gvt_records_and_rollbacks_chunk_per_body_stm",
        Backend::Stm,
        STM_PREEMPTIONS,
        8,
        1,
    );
}

/// A records ticks 0 and 1 one at a time, B both in one span; a body per chunk. Every
/// interleaving must end with both ticks committed and their frames handed out once, in order.
fn span_model(name: &str, backend: Backend, preemptions: usize) {
    timewarp_loom_tests::model_bounded(name, preemptions, move || {
        let config = GvtConfig {
            bodies: 2,
            start_tick: 0,
            frame_ticks: 1,
            window: 2,
            slack: 1,
            chunk: 1,
            copiers: 1,
            positions: MAX_POSITIONS,
            flight: STILL,
        };
        let g = Arc::new(GvtBuffer::new(backend, config).expect("valid GVT configuration"));
        let ga = g.clone();
        let a = thread::spawn(move || {
            [
                ga.record(0, &[(0, st(0, 0, false))]),
                ga.record(1, &[(0, st(0, 1, false))]),
            ]
        });
        let gb = g.clone();
        let b =
            thread::spawn(move || gb.record_span(0, 2, &[1], |t, _| Piece::at(t, st(1, t, false))));
        let [a0, a1] = a.join().unwrap();
        let b01 = b.join().unwrap();
        took("A's record of tick 0", a0, 1);
        took("A's record of tick 1", a1, 2);
        took("B's span of ticks 0 and 1", b01, 2);
        let gvt = g.gvt();
        assert!(
            gvt == 2,
            "GVT LEFT COMPLETE TICKS UNCOMMITTED: both bodies recorded ticks 0 and 1, GVT is {gvt}"
        );
        let want = [
            (0, vec![st(0, 0, false), st(1, 0, false)]),
            (1, vec![st(0, 1, false), st(1, 1, false)]),
        ];
        frames_are(&g, &g.drain_committed(), &want);
    });
}

/// After the threads: A records ticks 1 and 2, which commits them; every frame handed out.
fn a_finishes(g: &GvtBuffer) -> Vec<(Tick, Vec<BodyState>)> {
    took(
        "A's record of tick 1",
        g.record(1, &[(0, st(0, 1, false))]),
        2,
    );
    took(
        "A's record of tick 2",
        g.record(2, &[(0, st(0, 2, false))]),
        3,
    );
    g.drain_committed()
}

/// The frames handed out are `want`, and the buffer is valid at rest.
fn frames_are(g: &GvtBuffer, frames: &[(Tick, Vec<BodyState>)], want: &[(Tick, Vec<BodyState>)]) {
    assert!(
        frames == want,
        "GVT COMMITTED THE WRONG FRAMES: committed frames {frames:?}, expected {want:?}"
    );
    if let Err(e) = g.validate() {
        panic!("GVT BUFFER INVARIANT BROKEN AFTER THE RACE: {e}");
    }
}

#[test]
fn gvt_span_commits_locks() {
    span_model("gvt_span_commits_locks", Backend::Locks, LOCKS_PREEMPTIONS);
}

#[test]
fn gvt_span_commits_stm() {
    span_model("gvt_span_commits_stm", Backend::Stm, STM_PREEMPTIONS);
}

/// A state at position `x` moving at `v` per tick along x (the pieces model flies at one tick a
/// second, without gravity).
fn moving(x: f32, v: f32) -> BodyState {
    BodyState {
        position: Vec3::new(x, 0.0, 0.0),
        rotation: Quat::IDENTITY,
        velocity: Vec3::new(v, 0.0, 0.0),
        angular_velocity: Vec3::ZERO,
    }
}

/// Frames computed from pieces (the GVT buffer's "Frame states, from anchors"), against a
/// rollback that pops pieces. Every tick is a frame; the flight moves a body by its velocity
/// each tick. A records tick 0 (so tick 0 may commit, and its commit moves B's cursor, while B
/// works); B records tick 0 as a piece of its own, then ticks 1 and 2 as two pieces (positions 1
/// and 2), rolls both back (they are popped), and records ticks 1 and 2 again as one piece
/// anchored at tick 0 (position 1 again). After the threads end, A records ticks 1 and 2 and
/// both commit. Every interleaving must hand out B's frames from the pieces it recorded last:
/// tick 1 and 2 flown from the last anchor. Its negative control,
/// `TIMEWARP_BROKEN=gvt_pop_keeps_key`, leaves the popped pieces' keys in their cells: the
/// commit of tick 2 takes the popped position 2 (its tag and first frame fit) for the live
/// piece that position will hold next (`GVT COMMITTED A POPPED PIECE`).
fn pieces_model(name: &str, backend: Backend, preemptions: usize) {
    timewarp_loom_tests::model_bounded(name, preemptions, move || {
        let config = GvtConfig {
            bodies: 2,
            start_tick: 0,
            frame_ticks: 1,
            window: 3,
            slack: 1,
            chunk: 64,
            copiers: 1,
            positions: MAX_POSITIONS,
            flight: FreeFlight {
                gravity: Vec3::ZERO,
                dt: 1.0,
            },
        };
        let g = Arc::new(GvtBuffer::new(backend, config).expect("valid GVT configuration"));
        let ga = g.clone();
        let a = thread::spawn(move || ga.record(0, &[(0, st(0, 0, false))]));
        let gb = g.clone();
        let b = thread::spawn(move || {
            (
                gb.record(0, &[(1, moving(0.0, 1.0))]),
                gb.record_span(1, 2, &[1], |t, _| Piece::at(t, moving(9.0, 9.0))),
                gb.unrecord_ticks(1..3, &[1]),
                gb.record_span(1, 2, &[1], |_, _| Piece {
                    tick: 0,
                    state: moving(0.0, 2.0),
                    last: 2,
                }),
            )
        });
        took("A's record of tick 0", a.join().unwrap(), 1);
        let (b0, b12, u12, b12again) = b.join().unwrap();
        took("B's record of tick 0", b0, 1);
        took("B's first record of ticks 1 and 2", b12, 3);
        ok("B's rollback of ticks 1 and 2", u12);
        took("B's second record of ticks 1 and 2", b12again, 3);
        let frames = a_finishes(&g);
        let b_at = |t: usize| frames.get(t).map(|f| f.1[1]);
        assert!(
            b_at(1) == Some(moving(2.0, 2.0)),
            "GVT COMMITTED THE WRONG FRAMES: B at tick 1: {:?}",
            b_at(1)
        );
        assert!(
            b_at(2) == Some(moving(4.0, 2.0)),
            "GVT COMMITTED A POPPED PIECE: B at tick 2: {:?}, expected {:?}",
            b_at(2),
            moving(4.0, 2.0)
        );
        let want = [
            (0, vec![st(0, 0, false), moving(0.0, 1.0)]),
            (1, vec![st(0, 1, false), moving(2.0, 2.0)]),
            (2, vec![st(0, 2, false), moving(4.0, 2.0)]),
        ];
        frames_are(&g, &frames, &want);
    });
}

#[test]
fn gvt_pieces_locks() {
    pieces_model("gvt_pieces_locks", Backend::Locks, LOCKS_PREEMPTIONS);
}

#[test]
fn gvt_pieces_stm() {
    pieces_model("gvt_pieces_stm", Backend::Stm, STM_PREEMPTIONS);
}

/// A ring of two anchor cells per body (the buffer's "Reuse"): B records ticks 0, 1 and 2 one at
/// a time, one piece (position) each, while A records tick 0. Position 2 takes the cell of
/// position 0, whose frame (tick 0) the commit needs until it is copied out, which needs A's
/// record: B's record of tick 2 must take nothing until then, and B tries again each time
/// (as an entity waits for the GVT word). After the threads end, A records ticks 1 and 2. Every
/// interleaving must hand out B's frames from its pieces. Its negative control,
/// `TIMEWARP_BROKEN=gvt_ring_unchecked`, reuses the cell without asking: loom must find B's
/// record of tick 2 before tick 0's commit, which then finds no piece of B's for frame 0 (`GVT
/// COMMITTED A FRAME FROM A REUSED CELL`).
fn ring_model(name: &str, backend: Backend, preemptions: usize) {
    timewarp_loom_tests::model_bounded(name, preemptions, move || {
        let config = GvtConfig {
            bodies: 2,
            start_tick: 0,
            frame_ticks: 1,
            window: 3,
            slack: 1,
            chunk: 64,
            copiers: 1,
            positions: 2,
            flight: STILL,
        };
        let g = Arc::new(GvtBuffer::new(backend, config).expect("valid GVT configuration"));
        let ga = g.clone();
        let a = thread::spawn(move || ga.record(0, &[(0, st(0, 0, false))]));
        let gb = g.clone();
        let b = thread::spawn(move || {
            let r0 = gb.record(0, &[(1, st(1, 0, false))]);
            let r1 = gb.record(1, &[(1, st(1, 1, false))]);
            let r2 = loop {
                match gb.record(2, &[(1, st(1, 2, false))]) {
                    Ok(2) => thread::yield_now(),
                    other => break other,
                }
            };
            (r0, r1, r2)
        });
        took("A's record of tick 0", a.join().unwrap(), 1);
        let (r0, r1, r2) = b.join().unwrap();
        took("B's record of tick 0", r0, 1);
        took("B's record of tick 1", r1, 2);
        took("B's record of tick 2", r2, 3);
        let frames = a_finishes(&g);
        let b_at = |t: usize| frames.get(t).map(|f| f.1[1]);
        assert!(
            b_at(0) == Some(st(1, 0, false)),
            "GVT COMMITTED A FRAME FROM A REUSED CELL: B at tick 0: {:?}",
            b_at(0)
        );
        let want = [
            (0, vec![st(0, 0, false), st(1, 0, false)]),
            (1, vec![st(0, 1, false), st(1, 1, false)]),
            (2, vec![st(0, 2, false), st(1, 2, false)]),
        ];
        frames_are(&g, &frames, &want);
    });
}

#[test]
fn gvt_ring_reuse_locks() {
    ring_model("gvt_ring_reuse_locks", Backend::Locks, LOCKS_PREEMPTIONS);
}

#[test]
fn gvt_ring_reuse_stm() {
    ring_model("gvt_ring_reuse_stm", Backend::Stm, STM_PREEMPTIONS);
}
