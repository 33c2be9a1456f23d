//! output: see DESIGN.md.
