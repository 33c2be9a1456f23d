//! A file that appears whole or not at all: the one way outputs reach their names.
//!
//! [`AtomicFile::create`] opens a fresh temporary file beside the target (`.NAME.PID-N.tmp`, in
//! the same directory, so that the rename stays within one file system), and nothing else:
//! the target is untouched, and an unwritable directory is reported before any work is done.
//! The writer streams into the temporary; [`AtomicFile::commit`] flushes it, syncs it and
//! renames it onto the target. Rename within one directory is atomic on POSIX file systems, so
//! a reader sees the old file or the complete new one, never a partial one. An `AtomicFile`
//! dropped without a successful commit (an error, a panic, an early return) deletes its
//! temporary; an abrupt kill can leave the hidden temporary, never a partial target. Every
//! error names the target's path.
//!
//! Used by the CSV and glTF sinks and by `timewarp view`'s page (checkpoints have their own,
//! with a format header, in `checkpoint.rs`).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// `e` with the target's path in front of its message.
pub(crate) fn context(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// A temporary file beside its target, renamed onto it by [`AtomicFile::commit`].
pub struct AtomicFile {
    path: PathBuf,
    temp: PathBuf,
    out: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Creates the temporary beside `path`; the target itself is not touched.
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let (_, temp) = super::temp_beside(path).map_err(|e| context(path, e))?;
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| context(path, e))?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            temp,
            out: Some(BufWriter::with_capacity(1 << 16, file)),
        })
    }

    /// The target.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The writer into the temporary (an error once committed). Errors of writes through it
    /// do not name the path; [`AtomicFile::write_all`] does.
    pub fn writer(&mut self) -> io::Result<&mut BufWriter<File>> {
        self.out
            .as_mut()
            .ok_or_else(|| context(&self.path, io::Error::other("already finished")))
    }

    /// Writes `bytes` to the temporary; an error names the target.
    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let path = self.path.clone();
        self.writer()?
            .write_all(bytes)
            .map_err(|e| context(&path, e))
    }

    /// Flushes, syncs and renames the temporary onto the target.
    pub fn commit(&mut self) -> io::Result<()> {
        let out = self
            .out
            .take()
            .ok_or_else(|| context(&self.path, io::Error::other("already finished")))?;
        let file = out
            .into_inner()
            .map_err(|e| context(&self.path, e.into_error()))?;
        file.sync_all().map_err(|e| context(&self.path, e))?;
        drop(file);
        fs::rename(&self.temp, &self.path).map_err(|e| context(&self.path, e))
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        // Not committed (or committing failed before the rename): the partial file goes away.
        // After a successful rename the temporary name no longer exists and this is a no-op.
        drop(self.out.take());
        let _ = fs::remove_file(&self.temp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn commits_whole_or_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("page.html");
        fs::write(&path, "old").unwrap();
        {
            let mut f = AtomicFile::create(&path).unwrap();
            f.write_all(b"half").unwrap();
            assert_eq!(
                names(dir.path()).len(),
                2,
                "the temporary sits beside the target"
            );
        }
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(names(dir.path()), vec!["page.html".to_string()]);
        let mut f = AtomicFile::create(&path).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert!(f.commit().is_err(), "a second commit is refused");
        drop(f);
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(names(dir.path()), vec!["page.html".to_string()]);
    }

    #[test]
    fn errors_name_the_target() {
        let e = AtomicFile::create(Path::new("/nonexistent-dir/x.glb"))
            .err()
            .unwrap();
        assert!(e.to_string().starts_with("/nonexistent-dir/x.glb: "), "{e}");
    }
}
