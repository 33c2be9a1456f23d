//! Loom models of Timewarp's concurrent protocols: the STM, and the engine's guarded
//! structures.
//!
//! The models live in `tests/*.rs` and run the real `timewarp-stm` code, whose
//! [`primitive`](timewarp_stm::primitive) module switches to loom's atomics, thread-locals and
//! yields under `--cfg loom`; the `engine_*` models (feature `engine`, on by default) run the
//! real `timewarp` crate's sync seam, TVHT and GVT buffer, whose `primitive` module switches
//! the same way, under both backends (Koenig et al., seed 000, Sections 3 and 4, Algorithm 1
//! and Lemma 1), and its warp entities' step/resolve/rollback protocol on them (Section 5). Loom explores the interleavings of the model's threads (bounded
//! by `LOOM_MAX_PREEMPTIONS`) and every model asserts a serialisability or opacity property
//! *inside* the transactions as well as after them. Each model has a negative control: the same
//! model against a deliberately broken STM (`--cfg timewarp_stm_broken="..."`), which loom must
//! catch; `run-models.sh` runs both and checks that every control fails for the right reason:
//! run alone, its model is the one that fails, with the message of the assertion the control
//! names (every assertion of the models has a message of its own).
//!
//! | model (tests/) | property | control |
//! |---|---|---|
//! | `write_skew` | only serialisable outcomes of the classic write-skew pair | `no_commit_validation` |
//! | `transfer_audit` | transfers conserve the total; a concurrent read-only audit sees it exactly | `no_read_validation` (audit), `no_commit_validation` (concurrent transfers) |
//! | `readonly_vs_writer` | a read-only (and a read-write) transaction never sees half of a commit (boxed `TVar` path; snapshot extension) | `no_read_validation` (read-only), `no_extension_validation` (read-write) |
//! | `irrevocable` | an irrevocable transaction is never invalidated by a normal commit: consistent reads, no lost update | `no_irrevocable_wait` |
//! | `engine_sections` | three lock sections over overlapping keys given in cycle-closing orders never deadlock; crossed sections are atomic under both backends | `unsorted_locks` (three sections), `unguarded_sections` (crossed) |
//! | `engine_tvht` | under each backend, a contact is reported exactly once; a delete returns exactly the contacts it invalidates | `unguarded_tvht`; `sleep_ignores_marks` (sleep record against a write) |
//! | `engine_tvht_spans` | under each backend, a span record's contact with another span or with entries is reported exactly once, to the second writer, at its tick; a cut racing a write loses or doubles no contact | `unguarded_tvht`; `span_last_tick_unmet` (span against span, against entries), `span_cut_spares_its_tick` (cut against write), `span_ignores_marks` (span against entries), `span_anchor_unheld` (span against span: an anchor's holds) |
//! | `engine_gvt` | under each backend, with records and rollbacks racing, each tick commits once, in order, never with a body missing, never changed after; a span and records tick by tick leave no complete tick uncommitted | `gvt_commit_min_outside`, `gvt_unrecord_trusts_word`, `gvt_commit_no_retry` |
//! | `engine_rollback` | two and three warp entities (the real `Entity` state machine, TVHT and GVT buffer, under each backend) colliding over a few ticks: no deadlock, every event and antievent acked once, committed frames equal to the sequential reference bit for bit | `record_before_ack` |
//! | `engine_announcements` | the hand-off of group changes announced by turns to the one worker that makes them: every announcement below the GVT made exactly once, none lost when the maker's lock was taken | `no_announcement_recheck` |
//! | `engine_groups` | the warp engine's island graph under a fission, a fusion and a rollback racing for one group, under each backend: its invariants hold and every execution is linearisable (results and final graph equal to one serial order's) | `unguarded_groups` |
//!
//! The engine's controls are `--cfg timewarp_broken` builds with `TIMEWARP_BROKEN=<variant>`
//! (see `timewarp::sync`); the engine models state their own preemption bounds.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p timewarp-loom-tests --release`
//! (add `--no-default-features` for the STM's models alone).

/// Runs a loom model and prints how many executions loom explored and how long it took.
/// The preemption bound is `LOOM_MAX_PREEMPTIONS` (none if unset).
#[cfg(loom)]
pub fn model<F>(name: &str, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    run(name, None, f)
}

/// Like [`model`], with the preemption bound the model file states (it wins over
/// `LOOM_MAX_PREEMPTIONS`, so a model explores the same space whoever runs it; to explore
/// deeper by hand, `TIMEWARP_LOOM_PREEMPTIONS=<n>` overrides it).
#[cfg(loom)]
pub fn model_bounded<F>(name: &str, preemptions: usize, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    run(name, Some(preemptions), f)
}

/// Which of a model's legal outcomes its executions reached: a model records each
/// execution's outcome (an index into `names`), and after exploring it checks that every one
/// was reached, so a model whose interleavings collapse to fewer cases than it claims fails.
#[cfg(loom)]
pub struct Outcomes {
    names: &'static [&'static str],
    seen: Vec<std::sync::atomic::AtomicUsize>,
}

#[cfg(loom)]
impl Outcomes {
    /// Outcomes named `names`, none reached yet.
    pub fn new(names: &'static [&'static str]) -> std::sync::Arc<Outcomes> {
        std::sync::Arc::new(Outcomes {
            names,
            seen: names
                .iter()
                .map(|_| std::sync::atomic::AtomicUsize::new(0))
                .collect(),
        })
    }

    /// One execution reached outcome `i`.
    pub fn saw(&self, i: usize) {
        self.seen[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Prints how often each outcome was reached; panics if one never was.
    pub fn check_all_reached(&self, model: &str) {
        let counts: Vec<usize> = self
            .seen
            .iter()
            .map(|c| c.load(std::sync::atomic::Ordering::Relaxed))
            .collect();
        let report: Vec<String> = self
            .names
            .iter()
            .zip(&counts)
            .map(|(n, c)| format!("{n}: {c}"))
            .collect();
        println!("   {model} outcomes: {}", report.join(", "));
        assert!(
            counts.iter().all(|&c| c > 0),
            "loom model {model} never reached some legal outcome: {}",
            report.join(", ")
        );
    }
}

#[cfg(loom)]
fn run<F>(name: &str, preemptions: Option<usize>, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let start = std::time::Instant::now();
    let mut builder = loom::model::Builder::new();
    // Retry loops make long paths; loom's default of 1000 branches is too few for three
    // threads. LOOM_MAX_BRANCHES, when set, still wins.
    if std::env::var_os("LOOM_MAX_BRANCHES").is_none() {
        builder.max_branches = 20_000;
    }
    if let Some(p) = preemptions {
        builder.preemption_bound = Some(match std::env::var("TIMEWARP_LOOM_PREEMPTIONS") {
            Ok(v) => v
                .parse()
                .expect("TIMEWARP_LOOM_PREEMPTIONS must be a number"),
            Err(_) => p,
        });
    }
    let bound = builder
        .preemption_bound
        .map_or_else(|| "unbounded".to_string(), |b| b.to_string());
    builder.check(move || {
        c.fetch_add(1, Ordering::Relaxed);
        f();
    });
    println!(
        "loom model {name}: {} executions in {:.2} s (preemption bound {bound})",
        count.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
}
