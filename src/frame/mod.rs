//! frame: see DESIGN.md.
