//! What every surface — the CLI, the HTTP API, the MCP tools and the language
//! bindings (through [`crate::calls`]) — gives an argument the caller leaves out.
//! One table, so the same call without the argument is the same call whichever
//! surface it arrives by.

/// Search results per page (`search`).
pub const SEARCH_K: usize = 10;
/// Chunks on each side of a chunk (`adjacent_chunks`).
pub const ADJACENT_WINDOW: usize = 1;
/// Entities in one listing (`entities`).
pub const ENTITIES_PAGE: u32 = 100;
/// Facts in one listing page (`facts`; more with its cursor).
pub const FACTS_PAGE: u32 = 100;
/// Feedback records in one listing (`list_feedback`).
pub const FEEDBACK_PAGE: u32 = 100;
/// Note revisions in one listing page (`list_notes`; more with its cursor).
pub const NOTES_PAGE: u32 = 50;
