//! Loom models; see the tests/ folder.
