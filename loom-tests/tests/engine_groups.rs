//! The warp engine's island graph under concurrent fusion, fission and rollback (seed 001,
//! Mirtich, Section 4.4: contact groups fuse, split, and are undone by rollbacks; DESIGN.md,
//! "Contact groups are islands"), running the real `timewarp::warp::GroupGraph` under each
//! backend of the sync seam.
//!
//! Three bodies. Before the threads start, bodies 1 and 2 fuse at tick 1 into group `{1, 2}`,
//! whose contact then breaks (it is flagged may-split). Then three threads race, each one
//! operation, and each pair of them conflicts:
//!
//! * S: `{1, 2}` splits at tick 3;
//! * F: `{0}` and `{1, 2}` fuse at tick 2 (into `{0, 1, 2}`);
//! * R: `{0}` rolls back to tick 1 (an event reached it): if F happened, the fusion is undone,
//!   its child deleted and `{1, 2}` revived at tick 2.
//!
//! After every interleaving, the graph's `validate` must hold (no body in two live groups,
//! parents and children agree, histories match the records) and the execution must be
//! *linearisable*: the results of S, F and R and the whole final graph must equal those of one
//! of the six serial orders, replayed on a fresh graph (once, in a loom run of one thread, before
//! the model: replaying them in every execution made paths too long for loom). The serial orders give four distinct
//! outcomes (S wins; F wins; F, then R undoes it and S is refused; F, undone by R, then S),
//! and the model checks that loom reaches all four.
//!
//! Negative control: `TIMEWARP_BROKEN=unguarded_groups` runs every operation on copies read in
//! one section and written back in another; loom must find the interleaving where S and F both
//! see `{1, 2}` live and both end it, so that a body is in two live groups (`ISLAND GRAPH
//! INVARIANT BROKEN`).
//!
//! Preemption bounds: the lock model at bound 5 (73,234 executions, 13 s; not exhaustive), the
//! STM model at bound 1 (1,055 executions, 0.3 s; at bound 2 its retry loops make paths longer
//! than loom's branch limit and the run did not end within 6 minutes).
#![cfg(all(loom, feature = "engine"))]

use loom::thread;
use std::sync::Arc;
use timewarp::sync::Backend;
use timewarp::warp::{GroupGraph, GroupId};
use timewarp_loom_tests::Outcomes;

/// LOOM_MAX_PREEMPTIONS of the lock-backend model.
const LOCKS_PREEMPTIONS: usize = 5;
/// LOOM_MAX_PREEMPTIONS of the STM-backend model.
const STM_PREEMPTIONS: usize = 1;

fn g(birth: u64, rep: u32) -> GroupId {
    GroupId { birth, rep }
}

/// The three bodies, with `{1, 2}` fused at tick 1 and flagged may-split.
fn setup(backend: Backend) -> GroupGraph {
    let graph = GroupGraph::new(backend, 3, 0);
    let pair = graph
        .fuse(g(0, 1), g(0, 2), 1, (1, 2))
        .expect("setup fusion");
    assert_eq!(pair, g(1, 1));
    assert_eq!(graph.set_contacts(pair, &[]), Ok(true));
    graph
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Split,
    Fuse,
    Rollback,
}

/// Runs one operation; its result as text (all that linearisability compares).
fn apply(graph: &GroupGraph, op: Op) -> String {
    match op {
        Op::Split => format!("{:?}", graph.split(g(1, 1), 3)),
        Op::Fuse => format!("{:?}", graph.fuse(g(0, 0), g(1, 1), 2, (0, 1))),
        Op::Rollback => format!("{:?}", graph.rollback(g(0, 0), 1)),
    }
}

const ORDERS: [[Op; 3]; 6] = [
    [Op::Split, Op::Fuse, Op::Rollback],
    [Op::Split, Op::Rollback, Op::Fuse],
    [Op::Fuse, Op::Split, Op::Rollback],
    [Op::Fuse, Op::Rollback, Op::Split],
    [Op::Rollback, Op::Split, Op::Fuse],
    [Op::Rollback, Op::Fuse, Op::Split],
];

/// The results and final graph of every serial order, replayed on fresh graphs in a loom run of
/// one thread (the graph's primitives exist only inside a loom model).
fn serial_outcomes(backend: Backend) -> Vec<([String; 3], String)> {
    let table = Arc::new(std::sync::Mutex::new(Vec::new()));
    let out = table.clone();
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 1_000_000;
    builder.check(move || {
        let mut all = Vec::new();
        for order in &ORDERS {
            let serial = setup(backend);
            let mut results: [String; 3] = Default::default();
            for &op in order.iter() {
                results[op as usize] = apply(&serial, op);
            }
            serial
                .validate()
                .expect("a serial order keeps the graph valid");
            all.push((results, serial.dump()));
        }
        *out.lock().unwrap() = all;
    });
    let all = table.lock().unwrap().clone();
    assert_eq!(all.len(), ORDERS.len());
    all
}

fn model(name: &str, backend: Backend, preemptions: usize) {
    let outcomes = Outcomes::new(&[
        "split wins",
        "fusion wins",
        "fusion undone, split refused",
        "fusion undone, then split",
    ]);
    let seen = outcomes.clone();
    let serial = serial_outcomes(backend);
    timewarp_loom_tests::model_bounded(name, preemptions, move || {
        let graph = Arc::new(setup(backend));
        let spawn = |op: Op| {
            let graph = graph.clone();
            thread::spawn(move || apply(&graph, op))
        };
        let (s, f, r) = (spawn(Op::Split), spawn(Op::Fuse), spawn(Op::Rollback));
        let got = [s.join().unwrap(), f.join().unwrap(), r.join().unwrap()];
        if let Err(e) = graph.validate() {
            panic!(
                "ISLAND GRAPH INVARIANT BROKEN: {e}\nresults {got:?}\n{}",
                graph.dump()
            );
        }
        let dump = graph.dump();
        let Some(i) = serial.iter().position(|(r, d)| *r == got && *d == dump) else {
            panic!(
                "ISLAND GRAPH NOT LINEARISABLE: no serial order gives results {got:?} and\n{dump}"
            );
        };
        let fused = got[Op::Fuse as usize].starts_with("Ok");
        let split = got[Op::Split as usize].starts_with("Ok");
        let outcome = match (fused, split) {
            (false, true) => 0,
            (true, false) if matches!(ORDERS[i], [Op::Rollback, Op::Fuse, Op::Split]) => 1,
            (true, false) => 2,
            (true, true) => 3,
            (false, false) => panic!("ISLAND GRAPH REFUSED BOTH S AND F: {got:?}"),
        };
        seen.saw(outcome);
    });
    outcomes.check_all_reached(name);
}

#[test]
fn groups_fuse_split_rollback_locks() {
    model(
        "groups_fuse_split_rollback_locks",
        Backend::Locks,
        LOCKS_PREEMPTIONS,
    );
}

#[test]
fn groups_fuse_split_rollback_stm() {
    model(
        "groups_fuse_split_rollback_stm",
        Backend::Stm,
        STM_PREEMPTIONS,
    );
}
