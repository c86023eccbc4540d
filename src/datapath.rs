//! Live datapath thread (placeholder).
