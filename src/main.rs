//! The `timewarp` binary: the command line of DESIGN.md; see `cli.rs`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
