//! Why a transaction attempt ended without committing.
//!
//! Transactional reads and writes return `Result<_, StmError>`, so a conflict found deep in
//! user code travels out of the transaction closure with `?`; [`atomically`](crate::atomically)
//! then rolls the attempt back and runs it again. User code should propagate these errors and
//! never act on them: once an attempt has failed, every later read or write of the same attempt
//! fails too, and its commit is refused, so swallowing the error cannot make a doomed attempt
//! commit.

use std::fmt;

/// The cause of an aborted attempt (also the key of the abort counters in [`Stats`](crate::Stats)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AbortCause {
    /// A read found the variable locked by a committer, or written after this transaction
    /// started (its version is newer than the read version), or changed while it was read.
    ReadConflict,
    /// At commit, a variable of the write set stayed locked by another committer for longer
    /// than the bounded spin.
    LockBusy,
    /// At commit, a variable of the read set had been written since the transaction started.
    CommitValidation,
    /// At commit, an irrevocable transaction was running, so this one may not write back.
    Irrevocable,
    /// A transaction started as read-only wrote after having read; it is re-run as read-write.
    ReadOnlyUpgrade,
    /// The transaction closure asked for it with [`Transaction::retry`](crate::Transaction::retry).
    Explicit,
}

impl AbortCause {
    /// Every cause, in the order of the counters.
    pub const ALL: [AbortCause; 6] = [
        AbortCause::ReadConflict,
        AbortCause::LockBusy,
        AbortCause::CommitValidation,
        AbortCause::Irrevocable,
        AbortCause::ReadOnlyUpgrade,
        AbortCause::Explicit,
    ];

    /// Whether this cause is a conflict with another transaction (and so counts towards the
    /// irrevocability threshold and triggers back-off).
    pub fn is_conflict(self) -> bool {
        matches!(
            self,
            AbortCause::ReadConflict | AbortCause::LockBusy | AbortCause::CommitValidation
        )
    }

    fn describe(self) -> &'static str {
        match self {
            AbortCause::ReadConflict => {
                "read conflict (variable locked or newer than the snapshot)"
            }
            AbortCause::LockBusy => "write lock busy at commit",
            AbortCause::CommitValidation => "read set invalidated before commit",
            AbortCause::Irrevocable => "an irrevocable transaction was running at commit",
            AbortCause::ReadOnlyUpgrade => "read-only transaction wrote; re-running as read-write",
            AbortCause::Explicit => "retry requested by the transaction",
        }
    }
}

/// The error of a transactional operation: this attempt is doomed and must be retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StmError {
    cause: AbortCause,
}

impl StmError {
    pub(crate) fn new(cause: AbortCause) -> Self {
        StmError { cause }
    }

    /// Why the attempt failed.
    pub fn cause(&self) -> AbortCause {
        self.cause
    }
}

impl fmt::Display for StmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "transaction aborted: {}", self.cause.describe())
    }
}

impl std::error::Error for StmError {}
