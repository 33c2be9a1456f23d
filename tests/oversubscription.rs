//! Bounded oversubscription (issue 8, item 6): the warp engine on `cylinders` with 200 spheres
//! and 32 worker threads — far more than the cores of the machines it runs on — commits the same
//! frames, bit for bit, as with one thread, under each backend this build has (CI builds
//! `--all-features`: both). DESIGN.md, "Determinism is a contract".
//!
//! The run is 1.05 simulated seconds: the spheres start 4.5 m above the cylinders and the first
//! layer meets them at about 0.96 s, so the last frames carry collision events and rollbacks
//! (about 450 events and 170 rollbacks with 32 threads), while the test stays a few seconds per
//! backend. The summary's event and rollback counts are checked to be non-zero, so the test
//! cannot pass on a run that exchanged no messages.

use timewarp::output::Checksum;
use timewarp::run::{Backend, EngineKind, RunOptions, run_scene};
use timewarp::scene::builtin;

fn backends() -> Vec<Backend> {
    let mut b = Vec::new();
    if cfg!(feature = "stm") {
        b.push(Backend::Stm);
    }
    if cfg!(feature = "locks") {
        b.push(Backend::Locks);
    }
    b
}

#[test]
fn cylinders_200_with_32_threads_equal_one_thread_under_every_backend() {
    let scene = builtin("cylinders", Some(200)).unwrap();
    let run = |backend, threads| {
        let options = RunOptions {
            engine: EngineKind::Warp,
            backend,
            threads,
            seconds: Some(1.05),
            label: "cylinders".into(),
            ..RunOptions::default()
        };
        let mut c = Checksum::new(&scene);
        let s = run_scene(&scene, &options, &mut c).unwrap();
        (c.value(), c.frames(), s)
    };
    let backends = backends();
    let (want, frames, one) = run(backends[0], 1);
    assert_eq!(frames, 64, "frames 0..=63");
    assert!(one.events.unwrap() > 0, "collisions happen in the run");
    for &backend in &backends {
        let (sum, n, s) = run(backend, 32);
        assert_eq!(s.threads, 32);
        assert!(
            s.events.unwrap() > 0 && s.rollbacks.unwrap() > 0,
            "{backend:?}: {s:?}"
        );
        assert_eq!(
            (sum, n),
            (want, frames),
            "{backend:?}: 32 threads against 1"
        );
        eprintln!(
            "{backend:?}: 32 threads checksum {sum:016x} = 1 thread; {} events, {} rollbacks",
            s.events.unwrap(),
            s.rollbacks.unwrap()
        );
    }
}
