//! Frame ports (placeholder).
