//! Errors of the island graph: bad input is reported, never a panic.

use std::fmt;

use super::graph::{ContactId, IslandId};

/// What was wrong with a request to the island graph. The graph is unchanged when a call
/// returns an error.
#[derive(Clone, Debug, PartialEq)]
pub enum IslandError {
    /// A body id is not below the number of bodies.
    BodyOutOfRange { body: usize, bodies: usize },
    /// A contact between a body and itself.
    SelfContact { body: usize },
    /// A contact between two static bodies: it belongs to no island.
    StaticPair { a: usize, b: usize },
    /// The contact id is not a live contact of this graph.
    UnknownContact(ContactId),
    /// The island id is not a live island of this graph.
    UnknownIsland(IslandId),
    /// A slice argument has the wrong length.
    BadLength {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    /// A non-finite or negative number where a finite one is needed.
    NonFinite { what: &'static str, index: usize },
    /// An invalid sleep configuration.
    BadConfig(String),
    /// A touch-change bit names a contact pair that does not exist.
    PairOutOfRange { pair: usize, pairs: usize },
    /// A pair began touching although it already touches, ended although it does not touch, or
    /// both began and ended in one step.
    InconsistentChange { pair: usize, why: &'static str },
    /// Too many bodies or contacts for 32-bit ids.
    TooMany(&'static str),
}

impl fmt::Display for IslandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IslandError::BodyOutOfRange { body, bodies } => {
                write!(
                    f,
                    "body {body} out of range (the graph has {bodies} bodies)"
                )
            }
            IslandError::SelfContact { body } => write!(f, "contact of body {body} with itself"),
            IslandError::StaticPair { a, b } => {
                write!(f, "contact between two static bodies {a} and {b}")
            }
            IslandError::UnknownContact(c) => write!(f, "contact {} is not live", c.0),
            IslandError::UnknownIsland(i) => write!(f, "island {} is not live", i.0),
            IslandError::BadLength {
                what,
                expected,
                got,
            } => write!(f, "{what}: expected length {expected}, got {got}"),
            IslandError::NonFinite { what, index } => {
                write!(f, "{what} at index {index} is not finite")
            }
            IslandError::BadConfig(why) => write!(f, "bad sleep configuration: {why}"),
            IslandError::PairOutOfRange { pair, pairs } => {
                write!(
                    f,
                    "touch change for pair {pair}, but there are {pairs} pairs"
                )
            }
            IslandError::InconsistentChange { pair, why } => write!(f, "pair {pair}: {why}"),
            IslandError::TooMany(what) => write!(f, "too many {what} for 32-bit ids"),
        }
    }
}

impl std::error::Error for IslandError {}
