//! The `timewarp` binary: the command line of DESIGN.md; see `cli.rs`.

mod cli;

/// mimalloc, not the system allocator. The warp engine allocates and frees across threads all
/// the time (the STM copies every bucket a section names, and crossbeam-epoch frees the old
/// values on whichever thread collects them): glibc's malloc then spends its time on the lock
/// of the arena a block came from. Measured (2026-11-23, 2-core machine, `timewarp run bouncing
/// --bodies 2000 --seconds 2 --engine warp`): glibc 33.0-38.7 s wall at 2 threads and 25.3-28.2
/// at 64, 23% of the samples in glibc's arena lock; mimalloc 17.8 s and 16.9 s. Its one
/// setting (it keeps freed pages instead of giving them back) is `timewarp::allocator`'s.
#[global_allocator]
static ALLOCATOR: timewarp::allocator::Allocator = timewarp::allocator::Allocator;

fn main() -> std::process::ExitCode {
    timewarp::allocator::configure();
    cli::main()
}
