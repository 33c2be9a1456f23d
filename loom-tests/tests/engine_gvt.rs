//! The GVT buffer's commit rule under concurrency (seed 000, Section 3: a tick's frame is
//! committed when every entity has recorded it; a rollback removes the record first), running
//! the real `timewarp::warp::GvtBuffer` under each backend of the sync seam.
//!
//! Two bodies, each its own entity; every tick is a frame (so the committed states are
//! checked); a ring of three ticks.
//!
//! * entity A (the model's main thread) records ticks 0 and 1, then drains the committed
//!   frames while B may still be running;
//! * entity B records tick 1 with a state it then rolls back (`unrecord`), records tick 0, and
//!   records tick 1 again with its final state.
//!
//! Tick 1 cannot commit before B's final record (B's rollback comes before its tick-0 record,
//! which tick 0's commit needs), so in every interleaving every operation succeeds, GVT ends at
//! 2 and never goes down, and the frames handed out (mid-run and after) are exactly ticks 0
//! and 1, each once, in order, holding the final states: a tick is committed exactly once,
//! never while a body is missing (that frame would hold B's rolled-back or a blank state, and
//! a later record of it would be refused), and never changed after commit (recording or
//! unrecording a committed tick is refused, the states handed out stay those recorded).
//!
//! Negative control: `TIMEWARP_BROKEN=gvt_no_count_check` lets a commit skip the "every body
//! has recorded the tick" check; loom must find an interleaving in which the commit of tick 0
//! carries on to an incomplete tick 1.
//!
//! Preemption bounds: under locks the model is explored exhaustively (22,417 executions, the
//! same at bound 20 and 30, about 3 s); under the STM, whose sections are many more atomic
//! steps, bound 2 (about 4,300 executions, 1 s; bound 3 takes 116,000 and half a minute).
#![cfg(all(loom, feature = "engine"))]

use glam::{Quat, Vec3};
use loom::thread;
use std::sync::Arc;
use timewarp::dynamics::BodyState;
use timewarp::sync::Backend;
use timewarp::warp::{GvtBuffer, GvtConfig, GvtError, Tick};

/// LOOM_MAX_PREEMPTIONS of the lock-backend model (exhaustive: no execution preempts more).
const LOCKS_PREEMPTIONS: usize = 20;
/// LOOM_MAX_PREEMPTIONS of the STM-backend model.
const STM_PREEMPTIONS: usize = 2;

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

fn ok(who: &str, r: Result<(), GvtError>) {
    if let Err(e) = r {
        panic!("GVT COMMIT BROKEN: {who} was refused: {e}");
    }
}

fn model(name: &str, backend: Backend, preemptions: usize) {
    timewarp_loom_tests::model_bounded(name, preemptions, move || {
        let config = GvtConfig {
            bodies: 2,
            start_tick: 0,
            frame_ticks: 1,
            window: 2,
            slack: 1,
        };
        let g = Arc::new(GvtBuffer::new(backend, config).expect("valid GVT configuration"));
        let gb = g.clone();
        let b = thread::spawn(move || {
            [
                gb.record(1, &[(1, st(1, 1, true))]),
                gb.unrecord(1, &[1]),
                gb.record(0, &[(1, st(1, 0, false))]),
                gb.record(1, &[(1, st(1, 1, false))]),
            ]
        });
        ok("A's record of tick 0", g.record(0, &[(0, st(0, 0, false))]));
        ok("A's record of tick 1", g.record(1, &[(0, st(0, 1, false))]));
        let gvt_mid = g.gvt();
        let mut frames = g.drain_committed();
        let [r1x, u1, r0, r1] = b.join().unwrap();
        ok("B's first record of tick 1", r1x);
        ok("B's rollback of tick 1", u1);
        ok("B's record of tick 0", r0);
        ok("B's final record of tick 1", r1);
        let gvt_end = g.gvt();
        assert!(
            gvt_mid <= gvt_end && gvt_end == 2,
            "GVT COMMIT BROKEN: GVT went {gvt_mid} -> {gvt_end}, expected to end at 2"
        );
        frames.extend(g.drain_committed());
        let want: Vec<(Tick, Vec<BodyState>)> = (0..2)
            .map(|t| (t, vec![st(0, t, false), st(1, t, false)]))
            .collect();
        assert!(
            frames == want,
            "GVT COMMIT BROKEN: committed frames {frames:?}, expected {want:?}"
        );
        // Committed ticks are final.
        assert!(
            g.unrecord(1, &[0]) == Err(GvtError::Committed { tick: 1 })
                && g.record(0, &[(1, st(1, 0, true))]) == Err(GvtError::Committed { tick: 0 })
                && g.drain_committed().is_empty(),
            "GVT COMMIT BROKEN: a committed tick changed"
        );
        if let Err(e) = g.validate() {
            panic!("GVT COMMIT BROKEN: invariant: {e}");
        }
    });
}

#[test]
fn gvt_records_and_rollbacks_locks() {
    model(
        "gvt_records_and_rollbacks_locks",
        Backend::Locks,
        LOCKS_PREEMPTIONS,
    );
}

#[test]
fn gvt_records_and_rollbacks_stm() {
    model(
        "gvt_records_and_rollbacks_stm",
        Backend::Stm,
        STM_PREEMPTIONS,
    );
}
