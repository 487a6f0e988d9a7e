//! conformance (being written)
