//! islands: see DESIGN.md.
