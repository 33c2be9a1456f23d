//! The warp engine's rollback protocol under concurrency (seed 000, Section 5: step, resolve
//! and rollback, Figure 5 and Algorithms 2-7, whose Lemmas 2-4 argue on paper, for pairs of
//! entities, that it cannot deadlock), running the real `timewarp::warp::entity::Entity` state
//! machine on the real TVHT and GVT buffer, under each backend of the sync seam.
//!
//! A scene of a few spheres without gravity that collide within the first ticks; every tick
//! is a frame. One loom thread per entity (the model's main thread is entity 0) runs the
//! entity's turns (`Entity::run`, as the engine's workers do) until the end tick is committed
//! and no message is left:
//!
//! * the mailboxes are FIFO queues, one per entity, behind one loom mutex (a send is one
//!   atomic push, as with the engine's lock-free queues; a turn takes its mailbox's messages
//!   at its start, and what arrives during the turn waits for the next turn);
//! * after a turn the thread runs the next one at once after `Turn::Ready`; otherwise it
//!   waits until it has mail or, after `Turn::WaitGvt(at)`, until the GVT has reached `at` (the
//!   engine's scheduler does the same with its flags and its parked heap; so the model also
//!   checks that the tick an entity waits for is one the GVT can reach). A waiting entity
//!   blocks on a loom `Condvar`, signalled by every send to it and, at the end of a turn that
//!   moved the GVT, for all. (It does not poll with `loom::thread::yield_now`: loom runs the
//!   threads that have yielded least first, so two idle entities yielding to each other
//!   starve the one that has mail until loom's branch limit; measured with three entities at
//!   bound 1);
//! * it stops when the GVT has passed the end tick and no message sent is still unhandled
//!   (sent and not yet taken by a turn that has ended), so the last acks are drained too.
//!
//! The TVHT is not pruned (the engine's output thread does that) and the frames are drained
//! after the threads end.
//!
//! Checked in every interleaving explored:
//!
//! * **no deadlock**: a protocol stall (every entity waiting for the others, nothing in
//!   flight) leaves every thread blocked on its condition variable, which loom reports as a
//!   deadlock, as it does a thread blocked on a lock for ever (tried: a model that drops
//!   the event acks is reported as `deadlock; threads = [...]`);
//! * the **committed frames equal the sequential reference** (`warp::reference`) bit for bit,
//!   every tick `0..=end` committed, once, in order (`COMMITTED FRAME DIFFERS FROM THE
//!   REFERENCE`). This is checked first, so that a broken protocol is reported by the wrong
//!   frame it let through rather than by the error it runs into later;
//! * no turn failed (e.g. a rollback refused by the GVT buffer: a committed tick);
//! * **every event and antievent acknowledged**: each event (antievent) sent was answered by
//!   exactly one ack of its instance from its receiver and no ack answers nothing, every
//!   mailbox is drained, every entity ends at the end tick with no unacked message
//!   (`Entity::unacked`); the TVHT's and the GVT buffer's `validate` hold;
//! * the executions reach every listed outcome, by how many entities sent antievents (each
//!   antievent comes from a rollback deleting a contact that had been reported, Algorithm 7),
//!   so the antievent path is explored, not only the event path.
//!
//! Configurations (the reference moves every body, checked):
//!
//! * `two`: two spheres meet head on at tick 1, restitution 0.5, so that a body that ran
//!   ahead without the kick still approaches the other at tick 2: that speculative contact is
//!   reported, then taken back by an antievent. Ticks 0..=3, windows 2 and 4 (4 lets every
//!   entity run to the end tick at once).
//! * `three`: a chain, the middle sphere at rest between two approaching ones of different
//!   speeds, which hit it at ticks 1 and 2. Ticks 0..=3, window 3.
//!
//! Negative control: `TIMEWARP_BROKEN=record_before_ack` makes the entity record ticks without
//! waiting for the acks of the messages it sent at them (no resolve phase). Loom breaks it
//! without preempting anyone (bound 0 suffices): entity 0 runs ahead to tick 2 and records it without the
//! kick it does not know about yet; entity 1 detects the contact at tick 1, sends the event
//! and, not waiting for its ack, records ticks 1 and 2, so tick 2 commits with body 0's
//! speculative state (`COMMITTED FRAME DIFFERS FROM THE REFERENCE`; entity 0's rollback is
//! then refused by the GVT buffer, which is checked after the frames). The correct entity
//! cannot record tick 1 before entity 0 has acked, that is, rolled back. Every configuration
//! below, under both backends, fails with that message under this control.
//!
//! Preemption bounds (the constants below; `TIMEWARP_LOOM_PREEMPTIONS` overrides them): the
//! state space grows fast with the bound, and the STM's sections are many more atomic steps
//! than the locks', so the bounds below keep the whole file at 30-90 s in release on the
//! 2-core development machine (shared: times vary with its load), most of it spent on three
//! entities under the STM:
//!
//! | model | entities, window | bound | executions | time |
//! |---|---|---|---|---|
//! | `rollback_two_entities_locks` | 2, 2 | 3 | 41,262 | 5-12 s |
//! | `rollback_two_entities_stm` | 2, 2 | 1 | 661 | 0.4 s |
//! | `rollback_two_entities_window_four_locks` | 2, 4 | 2 | 3,195 | 1.1 s |
//! | `rollback_two_entities_window_four_stm` | 2, 4 | 1 | 797 | 0.8 s |
//! | `rollback_three_entities_locks` | 3, 3 | 1 | 5,769 | 2.7 s |
//! | `rollback_three_entities_stm` | 3, 3 | 1 | 46,861 | 25-70 s |
//!
//! None of them is exhaustive. One bound more costs: two entities under the STM, 97,078
//! executions in 103 s; three under locks, more than 400 s (stopped); two under locks at
//! bound 4, 496,086 executions in 328 s. The three-entity models are therefore at bound 1.
#![cfg(all(loom, feature = "engine"))]

use glam::{Quat, Vec3};
use loom::sync::{Condvar, Mutex};
use loom::thread;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use timewarp::dynamics::BodyState;
use timewarp::scene::{BodyDesc, Scene, Shape, World};
use timewarp::sync::Backend;
use timewarp::warp::entity::{Entity, Env, Scratch, Turn};
use timewarp::warp::lead::Lead;
use timewarp::warp::message::{Instance, Msg};
use timewarp::warp::reference::reference_frames;
use timewarp::warp::rules::Rules;
use timewarp::warp::{BodyId, GvtBuffer, GvtConfig, Tick, Tvht, TvhtConfig};
use timewarp_loom_tests::Outcomes;

/// LOOM_MAX_PREEMPTIONS of the two-entity models, window 2 and window 4.
const TWO_LOCKS_PREEMPTIONS: usize = 3;
const TWO_STM_PREEMPTIONS: usize = 1;
const TWO_WINDOW_FOUR_LOCKS_PREEMPTIONS: usize = 2;
const TWO_WINDOW_FOUR_STM_PREEMPTIONS: usize = 1;
/// LOOM_MAX_PREEMPTIONS of the three-entity models.
const THREE_LOCKS_PREEMPTIONS: usize = 1;
const THREE_STM_PREEMPTIONS: usize = 1;

/// One configuration of the model.
struct Config {
    bodies: Vec<BodyDesc>,
    /// The last tick simulated (and committed).
    end: Tick,
    window: u64,
    /// The outcomes the executions must all reach: by how many entities sent antievents,
    /// outcome `i` being `min_senders + i` of them (fewer counted as `min_senders`, more as
    /// the last).
    outcomes: &'static [&'static str],
    min_senders: usize,
}

/// A sphere of radius 0.5 and mass 1 on the x axis, moving along it.
fn ball(x: f32, vx: f32) -> BodyDesc {
    BodyDesc {
        shape: Shape::Sphere { radius: 0.5 },
        // The whole scene lies in one TVHT cell (see `tvht`).
        position: Vec3::new(2.0 + x, 2.0, 2.0),
        rotation: Quat::IDENTITY,
        velocity: Vec3::new(vx, 0.0, 0.0),
        angular_velocity: Vec3::ZERO,
        mass: 1.0,
        restitution: 0.5,
        friction: 0.0,
        rolling_resistance: 0.0,
        is_static: false,
    }
}

/// Two spheres meeting head on at tick 1.
fn two(window: u64) -> Config {
    Config {
        bodies: vec![ball(-0.55, 1.0), ball(0.55, -1.0)],
        end: 3,
        window,
        outcomes: &["no antievent", "antievents"],
        min_senders: 0,
    }
}

/// A chain: body 0 hits body 1 (at rest) at tick 1, body 2 hits body 1 at tick 2.
fn three() -> Config {
    Config {
        bodies: vec![ball(-1.06, 1.0), ball(0.0, 0.0), ball(1.12, -0.5)],
        end: 3,
        window: 3,
        outcomes: &[
            "antievents from at most one entity",
            "antievents from two entities",
            "antievents from all three",
        ],
        min_senders: 1,
    }
}

fn scene(c: &Config) -> Scene {
    Scene {
        world: World {
            gravity: Vec3::ZERO,
            ticks_per_second: 10,
            frame_ticks: 1,
            window: c.window as u32,
            seconds: 1.0,
        },
        bodies: c.bodies.clone(),
    }
}

/// A small TVHT whose cell (4 m) holds the whole scene, one tick per slice: a write or delete
/// of a tick is a section over one bucket, and the entities' entries at a tick always share it
/// (sections over several buckets are `engine_tvht`'s subject).
fn tvht(backend: Backend) -> Tvht {
    let config = TvhtConfig {
        buckets: 16,
        cell_size: 4.0,
        max_cells_per_body: 8,
        span_ticks: 1,
        grid_offset: 0.0,
        sleep_records: false,
    };
    Tvht::new(backend, config).expect("valid TVHT configuration")
}

fn bits(s: &BodyState) -> [u32; 13] {
    s.to_array().map(f32::to_bits)
}

/// The mailboxes, and what the model checks about the messages.
struct Post {
    boxes: Vec<VecDeque<(BodyId, Msg)>>,
    /// Messages sent and not yet handled by a turn that has ended.
    unhandled: usize,
    /// Every message sent: (from, to, message).
    log: Vec<(BodyId, BodyId, Msg)>,
    /// Errors of turns; the first one stops every entity.
    errors: Vec<String>,
}

struct Shared {
    rules: Arc<Rules>,
    tvht: Tvht,
    gvt: GvtBuffer,
    end: Tick,
    post: Mutex<Post>,
    /// Per entity: signalled when it may have something to do (mail, a GVT advance, the end).
    wake: Vec<Condvar>,
}

/// Runs entity `id`'s turns until the end tick is committed and every message is handled
/// (or a turn failed), then hands the entity back.
fn drive(sh: &Shared, id: BodyId, mut entity: Entity) -> Entity {
    // The window itself, fixed: the adaptive lead (`timewarp::warp::lead`) is a matter of
    // speed, and the model explores the protocol, not the engine's tuning.
    let lead = Lead::fixed(sh.gvt.window());
    let env = Env {
        rules: &sh.rules,
        tvht: &sh.tvht,
        gvt: &sh.gvt,
        end: sh.end,
        islands: None,
        lead: &lead,
        // Tick by tick: this model's table keeps no span records (their protocol is modelled
        // by the TVHT's span models).
        max_span: 0,
    };
    let me = id as usize;
    // How the last turn ended (None: no turn yet).
    let mut last: Option<Turn> = None;
    // The GVT when the last turn started and the messages it took.
    let mut turn: Option<(Tick, usize)> = None;
    // This thread's turn buffers, as a worker's.
    let mut scratch = Scratch::default();
    loop {
        let mut p = sh.post.lock().unwrap();
        // The GVT only moves in a turn (a record), so the entity whose turn moved it reads a
        // new value here (under the lock, so that whoever then waits for it sees it).
        let mut gvt = sh.gvt.gvt();
        if let Some((before, taken)) = turn.take() {
            p.unhandled -= taken;
            if gvt != before || (gvt > sh.end && p.unhandled == 0) || !p.errors.is_empty() {
                sh.wake.iter().for_each(Condvar::notify_all);
            }
        }
        loop {
            if !p.errors.is_empty() || (gvt > sh.end && p.unhandled == 0) {
                // A turn failed, or everything is committed and nothing is in flight.
                return entity;
            }
            let run = !p.boxes[me].is_empty()
                || (gvt <= sh.end
                    && match last {
                        None | Some(Turn::Ready) => true,
                        Some(Turn::WaitGvt(at)) => gvt >= at,
                        // (An undo is reported as an error below: no contact groups here.)
                        Some(Turn::WaitMessages | Turn::Undo(_)) => false,
                    });
            if run {
                break;
            }
            p = sh.wake[me].wait(p).unwrap();
            gvt = sh.gvt.gvt();
        }
        let mut mail = std::mem::take(&mut p.boxes[me]);
        drop(p);
        turn = Some((gvt, mail.len()));
        let result = entity.run(
            &env,
            &mut scratch,
            &mut || mail.pop_front(),
            &mut |to, m| {
                let mut p = sh.post.lock().unwrap();
                p.boxes[to as usize].push_back((to, m));
                p.unhandled += 1;
                p.log.push((id, to, m));
                sh.wake[to as usize].notify_all();
            },
        );
        match result {
            Ok(Turn::Undo(k)) => sh.post.lock().unwrap().errors.push(format!(
                "entity {id}: asked for an undo at tick {k}, but no group change is made here"
            )),
            Ok(t) => {
                assert!(mail.is_empty(), "a turn left messages unread");
                last = Some(t);
            }
            // Messages left unread are dropped: every entity stops now.
            Err(e) => sh
                .post
                .lock()
                .unwrap()
                .errors
                .push(format!("entity {id}: {e}")),
        }
    }
}

/// Whether every event and antievent in `log` was answered by exactly one ack of its
/// instance from its receiver, and every ack answers one.
fn check_acks(log: &[(BodyId, BodyId, Msg)]) {
    // (kind, from, to, instance) -> messages minus acks.
    let mut open: BTreeMap<(u8, BodyId, BodyId, Instance), i64> = BTreeMap::new();
    for &(from, to, m) in log {
        let (key, d) = match m {
            Msg::Event(c) => ((0, from, to, Instance::of(&c)), 1),
            Msg::EventAck(i) => ((0, to, from, i), -1),
            Msg::Antievent(i) => ((1, from, to, i), 1),
            Msg::AntieventAck(i) => ((1, to, from, i), -1),
        };
        *open.entry(key).or_default() += d;
    }
    for ((kind, from, to, inst), n) in open {
        let what = ["EVENT", "ANTIEVENT"][kind as usize];
        assert!(
            n == 0,
            "{what} NOT ACKNOWLEDGED EXACTLY ONCE: {from} -> {to} {inst:?}: {} more sent than \
             acked",
            n
        );
    }
}

fn model(name: &str, config: Config, backend: Backend, preemptions: usize) {
    let scene = scene(&config);
    let rules = Arc::new(Rules::new(&scene).expect("valid scene"));
    let n = rules.bodies();
    let (end, window) = (config.end, config.window);
    let want: Vec<Vec<[u32; 13]>> = reference_frames(&rules, 1, end)
        .iter()
        .map(|f| f.iter().map(bits).collect())
        .collect();
    // The reference itself must have the collisions the model is about.
    let moved = |b: usize| want[0][b] != want[end as usize][b];
    assert!((0..n).all(moved), "every body must be hit");
    let (min_senders, seen_len) = (config.min_senders, config.outcomes.len());
    let outcomes = Outcomes::new(config.outcomes);
    let seen = outcomes.clone();
    timewarp_loom_tests::model_bounded(name, preemptions, move || {
        let gvt_config = GvtConfig {
            bodies: n,
            start_tick: 0,
            frame_ticks: 1,
            window,
            slack: 1,
            chunk: 64,
            copiers: 1,
            positions: timewarp::warp::MAX_POSITIONS,
            flight: timewarp::dynamics::FreeFlight {
                gravity: glam::Vec3::ZERO,
                dt: 0.0,
            },
        };
        let sh = Arc::new(Shared {
            rules: rules.clone(),
            tvht: tvht(backend),
            gvt: GvtBuffer::new(backend, gvt_config).expect("valid GVT configuration"),
            end,
            post: Mutex::new(Post {
                boxes: vec![VecDeque::new(); n],
                unhandled: 0,
                log: Vec::new(),
                errors: Vec::new(),
            }),
            wake: (0..n).map(|_| Condvar::new()).collect(),
        });
        let handles: Vec<_> = (1..n)
            .map(|i| {
                let sh = sh.clone();
                let e = Entity::new(i as BodyId, rules.initial[i]);
                thread::spawn(move || drive(&sh, i as BodyId, e))
            })
            .collect();
        let mut entities = vec![drive(&sh, 0, Entity::new(0, rules.initial[0]))];
        entities.extend(handles.into_iter().map(|h| h.join().unwrap()));

        // 1. What was committed is the reference, bit for bit (checked first: a broken
        //    protocol is reported by the wrong frame it let through).
        let frames = sh.gvt.drain_committed();
        for (k, (t, states)) in frames.iter().enumerate() {
            assert!(
                *t == k as Tick && states.len() == n,
                "COMMITTED FRAMES OUT OF ORDER: frame {k} is tick {t} with {} bodies",
                states.len()
            );
            if let Some(b) = (0..n).find(|&b| bits(&states[b]) != want[k][b]) {
                panic!(
                    "COMMITTED FRAME DIFFERS FROM THE REFERENCE at tick {t}, body {b}: {:?}, \
                     expected {:?}",
                    states[b],
                    reference_frames(&rules, 1, end)[k][b]
                );
            }
        }
        let p = sh.post.lock().unwrap();
        // 2. No turn failed, and the run reached its end.
        assert!(p.errors.is_empty(), "ENTITY TURN FAILED: {:?}", p.errors);
        assert!(
            frames.len() as Tick == end + 1 && sh.gvt.gvt() == end + 1,
            "THE RUN DID NOT COMMIT ITS END: {} frames, GVT {}",
            frames.len(),
            sh.gvt.gvt()
        );
        // 3. Every message was handled and every event and antievent acknowledged.
        assert!(
            p.unhandled == 0 && p.boxes.iter().all(VecDeque::is_empty),
            "MESSAGES LEFT IN THE MAILBOXES: {:?}",
            p.boxes
        );
        check_acks(&p.log);
        for (i, e) in entities.iter().enumerate() {
            assert!(
                e.unacked() == 0 && e.lvt() == end,
                "ENTITY {i} ENDED WITH {} UNACKED MESSAGES AT LVT {}",
                e.unacked(),
                e.lvt()
            );
        }
        if let Err(e) = sh.tvht.validate_at_rest() {
            panic!("THE RUN LEFT THE TVHT INVARIANT BROKEN: {e}");
        }
        if let Err(e) = sh.gvt.validate() {
            panic!("THE RUN LEFT THE GVT INVARIANT BROKEN: {e}");
        }
        let senders = entities.iter().filter(|e| e.stats.antievents > 0).count();
        seen.saw(senders.clamp(min_senders, min_senders + seen_len - 1) - min_senders);
    });
    outcomes.check_all_reached(name);
}

#[test]
fn rollback_two_entities_locks() {
    model(
        "rollback_two_entities_locks",
        two(2),
        Backend::Locks,
        TWO_LOCKS_PREEMPTIONS,
    );
}

#[test]
fn rollback_two_entities_stm() {
    model(
        "rollback_two_entities_stm",
        two(2),
        Backend::Stm,
        TWO_STM_PREEMPTIONS,
    );
}

#[test]
fn rollback_two_entities_window_four_locks() {
    model(
        "rollback_two_entities_window_four_locks",
        two(4),
        Backend::Locks,
        TWO_WINDOW_FOUR_LOCKS_PREEMPTIONS,
    );
}

#[test]
fn rollback_two_entities_window_four_stm() {
    model(
        "rollback_two_entities_window_four_stm",
        two(4),
        Backend::Stm,
        TWO_WINDOW_FOUR_STM_PREEMPTIONS,
    );
}

#[test]
fn rollback_three_entities_locks() {
    model(
        "rollback_three_entities_locks",
        three(),
        Backend::Locks,
        THREE_LOCKS_PREEMPTIONS,
    );
}

#[test]
fn rollback_three_entities_stm() {
    model(
        "rollback_three_entities_stm",
        three(),
        Backend::Stm,
        THREE_STM_PREEMPTIONS,
    );
}
