//! Namespaces (placeholder).
