//! geometry: see DESIGN.md.
