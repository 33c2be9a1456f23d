//! Concurrent GVT-buffer tests, for every compiled backend.
//!
//! Many threads (one per "entity", each owning bodies spread over several 64-body chunks)
//! record ticks in order, run ahead no further than `LVT_ub = GVT + window`, and now and then
//! roll back: they unrecord their newest ticks (newest first; a tick found committed stops the
//! rollback there, as the protocol says it cannot be undone) and record them again with a new
//! version of their states. A consumer thread drains committed frames while they run. Checks:
//!
//! Now and then an entity records a span of several ticks at once (one record of an interval,
//! as entities in flight do), and now and then it tries to record out of order (`t + 1`
//! before `t`), which must be refused and change nothing; bodies are owned in contiguous
//! blocks, so 64-body chunks fill separately.
//!
//! * recording never finds its tick committed (a tick never commits while a body is missing);
//! * GVT only grows, ends at the last tick + 1, and no frame is drained ahead of it;
//! * each frame tick is handed out exactly once, in order, and holds, for every body, the last
//!   version that body recorded for it (so it was not changed after commit, and no body was
//!   missing when it committed);
//! * `validate` holds at the end.

use glam::{Quat, Vec3};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use timewarp::dynamics::BodyState;
use timewarp::scene::SplitMix64;
use timewarp::sync::Backend;
use timewarp::warp::{BodyId, GvtBuffer, GvtConfig, GvtError, MAX_POSITIONS, Piece, Tick};

fn state(body: BodyId, tick: Tick, version: u32) -> BodyState {
    BodyState {
        position: Vec3::new(body as f32, tick as f32, version as f32),
        rotation: Quat::IDENTITY,
        velocity: Vec3::ZERO,
        angular_velocity: Vec3::ZERO,
    }
}

/// One entity: records `0..end`, rolling back at random. Returns the last version it
/// recorded for each tick. A record may take less than it asked for only if `may_wait` (a ring
/// of fewer anchor cells than the window's frames); otherwise that fails the test.
fn entity(
    g: &GvtBuffer,
    seed: u64,
    bodies: &[BodyId],
    end: Tick,
    may_wait: bool,
) -> BTreeMap<Tick, u32> {
    let mut rng = SplitMix64::new(seed);
    let mut last = BTreeMap::new();
    let mut version = 0u32;
    let mut lvt: Tick = 0;
    let mut rollbacks = 0;
    while lvt < end {
        let waiting = std::time::Instant::now();
        while lvt > g.lvt_upper_bound() {
            // A stuck GVT (e.g. another entity panicked) fails instead of hanging.
            assert!(waiting.elapsed().as_secs() < 30, "GVT stuck at {}", g.gvt());
            std::thread::yield_now();
        }
        // Whether the tick was recorded: a ring of few cells takes none while the commit
        // still needs the cell its piece would take.
        let record = |t: Tick, last: &mut BTreeMap<Tick, u32>| {
            let states: Vec<(BodyId, BodyState)> =
                bodies.iter().map(|&b| (b, state(b, t, version))).collect();
            match g.record(t, &states) {
                Ok(e) if e == t + 1 => {
                    last.insert(t, version);
                    true
                }
                Ok(e) => {
                    assert_eq!(e, t, "a record of one tick took part of it");
                    false
                }
                Err(e) => panic!("tick {t} committed without us: {e}"),
            }
        };
        let ub = g.lvt_upper_bound();
        let word = g.gvt();
        let took = if lvt + 1 < end && lvt < ub && rng.next_u64() % 8 == 0 {
            // Out of order: tick lvt + 1 first is refused, and changes nothing.
            let early = [(bodies[0], state(bodies[0], lvt + 1, version + 1000))];
            assert!(
                matches!(g.record(lvt + 1, &early), Err(GvtError::OutOfOrder { .. })),
                "a record out of order was not refused"
            );
            record(lvt, &mut last)
        } else if lvt + 1 < end && lvt < ub && rng.next_u64() % 4 == 0 {
            // A span: several ticks in one record (or the ticks before the first piece that
            // the ring has no room for yet).
            let upto = (lvt + 1 + rng.next_u64() % 6).min(end - 1).min(ub);
            let n = (upto + 1 - lvt) as usize;
            let v = version;
            let e = g
                .record_span(lvt, n, bodies, |t, j| Piece::at(t, state(bodies[j], t, v)))
                .unwrap_or_else(|e| panic!("ticks {lvt}..={upto} committed without us: {e}"));
            assert!(
                lvt <= e && e <= upto + 1,
                "recorded {lvt}..{e} of {lvt}..={upto}"
            );
            assert!(
                may_wait || e == upto + 1,
                "a span was cut with a cell for every frame: {lvt}..{e} of {lvt}..={upto}"
            );
            for t in lvt..e {
                last.insert(t, version);
            }
            let took = e > lvt;
            if took {
                lvt = e - 1;
            }
            took
        } else {
            record(lvt, &mut last)
        };
        if !took {
            assert!(may_wait, "a record was refused with a cell for every frame");
            // The GVT word read before the record must rise (the ticks it waits for are ours,
            // recorded: the GVT reaches them without us).
            let waiting = std::time::Instant::now();
            while g.gvt() <= word {
                assert!(waiting.elapsed().as_secs() < 30, "GVT stuck at {}", g.gvt());
                std::thread::yield_now();
            }
            continue;
        }
        if rng.next_u64() % 8 == 0 {
            rollbacks += 1;
            version += 1;
            let back = 1 + rng.next_u64() % 4;
            let mut to = lvt.saturating_sub(back);
            for t in (to..=lvt).rev() {
                match g.unrecord(t, bodies) {
                    Ok(()) => {
                        last.remove(&t);
                    }
                    Err(GvtError::Committed { tick }) => {
                        assert_eq!(tick, t);
                        // The GVT word follows a commit a moment later.
                        let waiting = std::time::Instant::now();
                        while g.gvt() <= t {
                            assert!(waiting.elapsed().as_secs() < 30, "GVT word lags");
                            std::thread::yield_now();
                        }
                        to = t + 1;
                        break;
                    }
                    Err(e) => panic!("unrecord {t}: {e}"),
                }
            }
            lvt = to;
        } else {
            lvt += 1;
        }
    }
    assert!(rollbacks > 0);
    last
}

/// `threads` entities over `bodies` bodies in chunks of `chunk`, recording and rolling back
/// until tick `end` while a consumer drains.
fn run(backend: Backend, threads: usize, bodies: usize, chunk: usize, frame_ticks: u64, end: Tick) {
    run_with(
        backend,
        (threads, bodies, chunk),
        frame_ticks,
        end,
        MAX_POSITIONS,
    );
}

/// [`run`] with at most `positions` anchor cells per body.
fn run_with(
    backend: Backend,
    (threads, bodies, chunk): (usize, usize, usize),
    frame_ticks: u64,
    end: Tick,
    positions: usize,
) {
    let config = GvtConfig {
        chunk,
        positions,
        ..GvtConfig::new(bodies, frame_ticks, 8)
    };
    // A window of 8 ticks (and a slack of 2) needs at most 12 cells: with `MAX_POSITIONS` (32)
    // every record must be taken whole, as before the ring was bounded.
    let may_wait = positions < MAX_POSITIONS;
    let g = Arc::new(GvtBuffer::new(backend, config).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let consumer = {
        let (g, done) = (g.clone(), done.clone());
        std::thread::spawn(move || {
            let mut frames = Vec::new();
            let mut last_gvt = 0;
            loop {
                let finished = done.load(Ordering::SeqCst);
                let gvt = g.gvt();
                assert!(gvt >= last_gvt, "GVT went back from {last_gvt} to {gvt}");
                last_gvt = gvt;
                for f in g.drain_committed() {
                    assert!(
                        f.0 < g.gvt(),
                        "frame {} handed out before GVT passed it",
                        f.0
                    );
                    frames.push(f);
                }
                if finished {
                    return frames;
                }
                std::thread::yield_now();
            }
        })
    };
    let workers: Vec<_> = (0..threads)
        .map(|i| {
            let g = g.clone();
            std::thread::spawn(move || {
                let mine: Vec<BodyId> = (0..bodies as BodyId)
                    // Contiguous blocks: chunks fill one by one, some entities span two.
                    .filter(|&b| b as usize * threads / bodies == i)
                    .collect();
                let last = entity(&g, 77 + i as u64, &mine, end, may_wait);
                (mine, last)
            })
        })
        .collect();
    let logs: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    done.store(true, Ordering::SeqCst);
    let frames = consumer.join().unwrap();
    assert_eq!(g.gvt(), end);
    g.validate().unwrap();
    let want_ticks: Vec<Tick> = (0..end).filter(|t| t % frame_ticks == 0).collect();
    assert_eq!(frames.iter().map(|f| f.0).collect::<Vec<_>>(), want_ticks);
    let mut final_version = vec![BTreeMap::new(); bodies];
    for (mine, last) in &logs {
        assert_eq!(last.len() as u64, end, "every tick ends recorded");
        for &b in mine {
            final_version[b as usize] = last.clone();
        }
    }
    for (t, states) in &frames {
        let want: Vec<BodyState> = (0..bodies)
            .map(|b| state(b as BodyId, *t, final_version[b][t]))
            .collect();
        assert_eq!(states, &want, "frame {t}");
    }
}

#[test]
fn every_tick_commits_once_in_order_16_threads() {
    for &b in Backend::COMPILED {
        run(b, 16, 130, 64, 1, 300);
    }
}

#[test]
fn frames_every_4_ticks_48_threads() {
    for &b in Backend::COMPILED {
        run(b, 48, 200, 64, 4, 200);
    }
}

/// Chunks smaller than an entity's share (the engine's size for 16 workers, and single bodies):
/// most records raise a chunk's minimum and try to commit, so commits race the records and
/// rollbacks of other entities on every tick.
#[test]
fn small_chunks_count_every_tick_16_threads() {
    for &b in Backend::COMPILED {
        run(b, 16, 130, 16, 1, 300);
        run(b, 16, 40, 1, 2, 200);
    }
}

/// A ring of two and of three anchor cells per body (the window needs 12 and 7): a record whose piece
/// would take the cell of a position the commit still needs records only the ticks before it,
/// and its entity waits for the GVT word; every tick still commits once, in order, each frame
/// from its body's last record of it. (With two cells a body records at most about a frame
/// ahead of the word.)
#[test]
fn a_ring_of_few_cells_makes_records_wait_16_threads() {
    for &b in Backend::COMPILED {
        run_with(b, (16, 130, 16), 1, 300, 2);
        run_with(b, (16, 130, 64), 2, 300, 3);
    }
}

/// The ring's refusal, one step at a time: three cells per body, a frame every tick. Body 1
/// records ticks 0..6 as a piece per tick while body 0 has recorded nothing: positions 0 to 2
/// take free cells, position 3 (tick 3) would take position 0's, whose frame is not committed,
/// so the record takes ticks 0..3. Once body 0 has recorded ticks 0 and 1, frames 0 and 1 are
/// copied out: positions 3 and 4 fit, position 5 (whose cell holds position 2, frame 2) does
/// not yet. Every frame ends with body 1's piece of its tick.
#[test]
fn a_record_stops_at_the_piece_whose_cell_is_still_needed() {
    for &backend in Backend::COMPILED {
        let config = GvtConfig {
            positions: 3,
            ..GvtConfig::new(2, 1, 8)
        };
        let g = GvtBuffer::new(backend, config).unwrap();
        let piece = |t: Tick, _: usize| Piece::at(t, state(1, t, 0));
        assert_eq!(g.record_span(0, 6, &[1], piece), Ok(3));
        for t in 0..2 {
            assert_eq!(g.record(t, &[(0, state(0, t, 0))]), Ok(t + 1));
        }
        assert_eq!(g.gvt(), 2);
        assert_eq!(g.record_span(3, 3, &[1], piece), Ok(5));
        assert_eq!(g.record(2, &[(0, state(0, 2, 0))]), Ok(3));
        assert_eq!(g.record_span(5, 1, &[1], piece), Ok(6));
        for t in 3..6 {
            assert_eq!(g.record(t, &[(0, state(0, t, 0))]), Ok(t + 1));
        }
        let frames = g.drain_committed();
        assert_eq!(frames.len(), 6);
        for (t, states) in frames {
            assert_eq!(states, vec![state(0, t, 0), state(1, t, 0)], "frame {t}");
        }
        g.validate().unwrap();
    }
}

/// Issue 5, item 6: the buffer counts bodies, not entities, so fusion and fission never change
/// a tick's target. Body 0 and body 1 record alone until tick 20, then as one fused group; the
/// group {2, 3, 4, 5} records as one until tick 15, then as two halves. Each thread also rolls
/// its newest ticks back across its regroup once (undoing per body, re-recording in the
/// grouping of each tick). Every tick must commit once, in order, with all six bodies' last
/// states, while the consumer drains.
#[test]
fn regrouped_bodies_count_the_same() {
    for &backend in Backend::COMPILED {
        let end: Tick = 40;
        let g = Arc::new(GvtBuffer::new(backend, GvtConfig::new(6, 1, 8)).unwrap());
        type Grouping = fn(Tick) -> Vec<Vec<BodyId>>;
        let fusing: Grouping = |t| {
            if t < 20 {
                vec![vec![0], vec![1]]
            } else {
                vec![vec![0, 1]]
            }
        };
        let splitting: Grouping = |t| {
            if t < 15 {
                vec![vec![2, 3, 4, 5]]
            } else {
                vec![vec![2, 3], vec![4, 5]]
            }
        };
        let workers: Vec<_> = [(fusing, 22u64), (splitting, 17u64)]
            .into_iter()
            .map(|(grouping, rollback_at)| {
                let g = g.clone();
                std::thread::spawn(move || {
                    let mut version = BTreeMap::new();
                    let record = |t: Tick, v: u32| {
                        for group in grouping(t) {
                            let states: Vec<(BodyId, BodyState)> =
                                group.iter().map(|&b| (b, state(b, t, v))).collect();
                            assert_eq!(g.record(t, &states), Ok(t + 1), "tick {t} committed early");
                        }
                    };
                    let mut t = 0;
                    let mut rolled = false;
                    while t < end {
                        let waiting = std::time::Instant::now();
                        while t > g.lvt_upper_bound() {
                            // A stuck GVT fails instead of hanging.
                            assert!(waiting.elapsed().as_secs() < 30, "GVT stuck at {}", g.gvt());
                            std::thread::yield_now();
                        }
                        record(t, 0);
                        version.insert(t, 0u32);
                        if t == rollback_at && !rolled {
                            // Roll back newest first, across the regroup, as far as allowed.
                            rolled = true;
                            let mut back = t;
                            while back + 6 > t {
                                let bodies: Vec<BodyId> = grouping(back).concat();
                                match g.unrecord(back, &bodies) {
                                    Ok(()) => {}
                                    Err(GvtError::Committed { .. }) => break,
                                    Err(e) => panic!("unrecord {back}: {e}"),
                                }
                                version.remove(&back);
                                if back == 0 {
                                    break;
                                }
                                back -= 1;
                            }
                            let first = version.keys().next_back().map_or(0, |&k| k + 1);
                            for r in first..=t {
                                record(r, 1);
                                version.insert(r, 1);
                            }
                        }
                        t += 1;
                    }
                    (grouping(end).concat(), version)
                })
            })
            .collect();
        let mut frames = Vec::new();
        let waiting = std::time::Instant::now();
        while g.gvt() < end {
            assert!(waiting.elapsed().as_secs() < 60, "GVT stuck at {}", g.gvt());
            frames.extend(g.drain_committed());
            std::thread::yield_now();
        }
        let logs: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        frames.extend(g.drain_committed());
        g.validate().unwrap();
        assert_eq!(
            frames.iter().map(|f| f.0).collect::<Vec<_>>(),
            (0..end).collect::<Vec<_>>()
        );
        let mut final_version = vec![BTreeMap::new(); 6];
        for (mine, v) in &logs {
            for &b in mine {
                final_version[b as usize] = v.clone();
            }
        }
        for (t, states) in &frames {
            let want: Vec<BodyState> = (0..6u32)
                .map(|b| state(b, *t, final_version[b as usize][t]))
                .collect();
            assert_eq!(states, &want, "{backend:?}: frame {t}");
        }
    }
}
