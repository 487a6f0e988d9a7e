//! `examples/quickstart.rs`, the Rust quick start the documentation shows, run as a
//! test: it passes when the program runs to the end.

include!("../../../examples/quickstart.rs");
