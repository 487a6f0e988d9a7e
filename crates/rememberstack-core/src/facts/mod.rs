//! Facts (E3): relations and observations. This module holds the predicate registry.

pub mod predicates;
