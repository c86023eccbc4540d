//! Packet buffer pool (placeholder).
