//! The progress bar: frames committed out of frames planned, on stderr.
//!
//! Drawn only when stderr is a terminal and the user did not ask for `--quiet`, so pipes, logs
//! and tests see nothing of it. Drawing is rate-limited by indicatif, so ticking every frame is
//! cheap.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar that may be switched off.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar for `frames` frames, shown when `wanted` and stderr is a terminal.
    pub fn new(frames: u64, wanted: bool) -> Self {
        if !wanted || !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(Some(frames), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            "{elapsed_precise} [{wide_bar}] frame {pos}/{len} ({eta} left)",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress { bar: Some(bar) }
    }

    /// A bar that never draws.
    pub fn hidden() -> Self {
        Progress { bar: None }
    }

    pub fn is_visible(&self) -> bool {
        self.bar.is_some()
    }

    /// Frames done so far.
    pub fn set(&self, frames: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(frames);
        }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_or_piped_means_no_bar() {
        assert!(!Progress::new(10, false).is_visible());
        assert!(!Progress::hidden().is_visible());
        // Under `cargo test` stderr is captured or piped, never a terminal for CI.
        if !std::io::stderr().is_terminal() {
            assert!(!Progress::new(10, true).is_visible());
        }
    }
}
