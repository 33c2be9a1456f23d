//! Loom models of the Timewarp STM's protocol.
//!
//! The models live in `tests/*.rs` and run the real `timewarp-stm` code, whose
//! [`primitive`](timewarp_stm::primitive) module switches to loom's atomics, thread-locals and
//! yields under `--cfg loom`. Loom explores the interleavings of the model's threads (bounded
//! by `LOOM_MAX_PREEMPTIONS`) and every model asserts a serialisability or opacity property
//! *inside* the transactions as well as after them. Each model has a negative control: the same
//! model against a deliberately broken STM (`--cfg timewarp_stm_broken="..."`), which loom must
//! catch; `run-models.sh` runs both and checks that every control fails for the right reason.
//!
//! | model (tests/) | property | control |
//! |---|---|---|
//! | `write_skew` | only serialisable outcomes of the classic write-skew pair | `no_commit_validation` |
//! | `transfer_audit` | transfers conserve the total; a concurrent read-only audit sees it exactly | `no_read_validation` |
//! | `readonly_vs_writer` | a read-only (and a read-write) transaction never sees half of a commit (boxed `TVar` path; snapshot extension) | `no_read_validation`, `no_extension_validation` |
//! | `irrevocable` | an irrevocable transaction is never invalidated by a normal commit: consistent reads, no lost update | `no_irrevocable_wait` |
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p timewarp-loom-tests --release`.

/// Runs a loom model and prints how many executions loom explored and how long it took.
#[cfg(loom)]
pub fn model<F>(name: &str, f: F)
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
    builder.check(move || {
        c.fetch_add(1, Ordering::Relaxed);
        f();
    });
    println!(
        "loom model {name}: {} executions in {:.2} s",
        count.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
}
