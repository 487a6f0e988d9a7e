//! Entities (E3): untyped real-world referents (D95, D96). This module holds the
//! pure pieces of resolution: name normalization, trigram and phonetic keys, and
//! the D103 candidate ordering.

pub mod normalize;
