//! Which guard protects the shared structures: the STM or ordered locks.
//!
//! The variants exist only for the backends compiled in (`stm` and `locks` Cargo features), so
//! a build with one feature cannot even name the other backend: asking for it by name
//! ([`Backend::from_str`](std::str::FromStr::from_str), e.g. `--backend locks` on an STM-only
//! build) is a clear [`BackendError::NotCompiled`] naming the feature to enable.

use std::fmt;
use std::str::FromStr;

#[cfg(not(any(feature = "stm", feature = "locks")))]
compile_error!(
    "timewarp needs at least one guard backend: enable the `stm` or the `locks` feature"
);

/// The guard of the shared structures (see `DESIGN.md`, "The guard").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// Each critical section is one `timewarp-stm` transaction, retried on conflict.
    #[cfg(feature = "stm")]
    Stm,
    /// Each critical section locks its keys' mutexes in ascending order (Koenig's Algorithm 1).
    #[cfg(feature = "locks")]
    Locks,
}

impl Backend {
    /// Every backend compiled into this build, STM first.
    pub const COMPILED: &'static [Backend] = &[
        #[cfg(feature = "stm")]
        Backend::Stm,
        #[cfg(feature = "locks")]
        Backend::Locks,
    ];

    /// The name used on the command line: `"stm"` or `"locks"`.
    pub fn name(self) -> &'static str {
        match self {
            #[cfg(feature = "stm")]
            Backend::Stm => "stm",
            #[cfg(feature = "locks")]
            Backend::Locks => "locks",
        }
    }
}

impl Default for Backend {
    /// The STM when compiled in, else the locks.
    fn default() -> Self {
        Backend::COMPILED[0]
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a backend name was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendError {
    /// A known backend that this build does not carry.
    NotCompiled {
        /// `"stm"` or `"locks"` (also the Cargo feature that carries it).
        name: &'static str,
    },
    /// Not a backend name at all.
    Unknown(String),
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::NotCompiled { name } => write!(
                f,
                "backend `{name}` is not compiled into this build (rebuild with `--features {name}`)"
            ),
            BackendError::Unknown(s) => {
                write!(f, "unknown backend `{s}` (expected `stm` or `locks`)")
            }
        }
    }
}

impl std::error::Error for BackendError {}

impl FromStr for Backend {
    type Err = BackendError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "stm" => {
                #[cfg(feature = "stm")]
                return Ok(Backend::Stm);
                #[cfg(not(feature = "stm"))]
                return Err(BackendError::NotCompiled { name: "stm" });
            }
            "locks" => {
                #[cfg(feature = "locks")]
                return Ok(Backend::Locks);
                #[cfg(not(feature = "locks"))]
                return Err(BackendError::NotCompiled { name: "locks" });
            }
            other => Err(BackendError::Unknown(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_missing_backends_are_named() {
        for &b in Backend::COMPILED {
            assert_eq!(b.name().parse::<Backend>(), Ok(b));
            assert_eq!(b.to_string(), b.name());
        }
        assert_eq!(Backend::default(), Backend::COMPILED[0]);
        let e = "mutex".parse::<Backend>().unwrap_err();
        assert_eq!(e, BackendError::Unknown("mutex".into()));
        assert!(e.to_string().contains("`mutex`"));
        #[cfg(not(feature = "locks"))]
        {
            let e = "locks".parse::<Backend>().unwrap_err();
            assert_eq!(e, BackendError::NotCompiled { name: "locks" });
            assert!(e.to_string().contains("--features locks"));
        }
        #[cfg(not(feature = "stm"))]
        {
            let e = "stm".parse::<Backend>().unwrap_err();
            assert_eq!(e, BackendError::NotCompiled { name: "stm" });
        }
        #[cfg(all(feature = "stm", feature = "locks"))]
        assert_eq!(Backend::COMPILED, &[Backend::Stm, Backend::Locks]);
    }
}
