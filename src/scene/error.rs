//! Scene errors: one value that says exactly what is wrong with a scene and where.
//!
//! A bad scene must never panic or load silently wrong (DESIGN.md, "Scene file"); it must give
//! one line a user can act on: the file, the entry (`body 3`, `grid 1`, `world`, `defaults`),
//! its line in the file when known, the field and the offending value, e.g.
//! `scene.toml: body 3 (line 17): radius must be positive, got -1`.
//! Body indices are scene-order indices counted from 0, the same numbering the CSV output uses;
//! grid indices count `[[grid]]` entries from 0.

use std::fmt;
use std::path::PathBuf;

/// Which part of a scene an error is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// The `[world]` table.
    World,
    /// The `[defaults]` table.
    Defaults,
    /// A `[[body]]` entry; `index` is its body index in scene order.
    Body { index: usize, line: Option<usize> },
    /// A `[[grid]]` entry; `index` counts `[[grid]]` entries from 0.
    Grid { index: usize, line: Option<usize> },
    /// The scene as a whole (e.g. no dynamic bodies, a built-in's size).
    Scene,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, index, line) = match self {
            Location::World => return f.write_str("world"),
            Location::Defaults => return f.write_str("defaults"),
            Location::Scene => return f.write_str("scene"),
            Location::Body { index, line } => ("body", index, line),
            Location::Grid { index, line } => ("grid", index, line),
        };
        write!(f, "{what} {index}")?;
        if let Some(line) = line {
            write!(f, " (line {line})")?;
        }
        Ok(())
    }
}

/// Why a scene could not be loaded, built or generated. Its `Display` is one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SceneError {
    /// The file could not be read.
    Read { path: PathBuf, message: String },
    /// The file is not valid TOML or does not fit the schema (unknown key, wrong type, missing
    /// required key). `line` and `column` count from 1.
    Parse {
        path: Option<PathBuf>,
        line: usize,
        column: usize,
        message: String,
    },
    /// A value is out of range, a field is missing or does not apply, and so on.
    Invalid {
        path: Option<PathBuf>,
        at: Location,
        message: String,
    },
    /// `builtin` was asked for a scene it does not know.
    UnknownBuiltin { name: String },
}

impl SceneError {
    pub(crate) fn invalid(at: Location, message: impl Into<String>) -> Self {
        SceneError::Invalid {
            path: None,
            at,
            message: message.into(),
        }
    }

    /// The same error, attributed to the file `path`.
    pub fn in_file(self, file: impl Into<PathBuf>) -> Self {
        match self {
            SceneError::Parse {
                line,
                column,
                message,
                ..
            } => SceneError::Parse {
                path: Some(file.into()),
                line,
                column,
                message,
            },
            SceneError::Invalid { at, message, .. } => SceneError::Invalid {
                path: Some(file.into()),
                at,
                message,
            },
            other => other,
        }
    }
}

impl fmt::Display for SceneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SceneError::Read { path, message } => {
                write!(f, "cannot read scene file {}: {message}", path.display())
            }
            SceneError::Parse {
                path,
                line,
                column,
                message,
            } => {
                if let Some(path) = path {
                    write!(f, "{}:", path.display())?;
                }
                write!(f, "{line}:{column}: {message}")
            }
            SceneError::Invalid { path, at, message } => {
                if let Some(path) = path {
                    write!(f, "{}: ", path.display())?;
                }
                write!(f, "{at}: {message}")
            }
            SceneError::UnknownBuiltin { name } => {
                write!(f, "unknown scene '{name}' (built-in scenes: ")?;
                for (i, b) in super::builtin::BUILTINS.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(b.name)?;
                }
                f.write_str("; a scene file must end in .toml)")
            }
        }
    }
}

impl std::error::Error for SceneError {}
