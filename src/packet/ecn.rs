//! ECN marking (placeholder).
