//! Command-line arguments (clap). Command logic lives in `main.rs`.

use clap::{Args, Parser, Subcommand, ValueEnum};
use rememberstack::defaults;
use std::path::PathBuf;

/// RememberStack: a memory engine for AI agents.
#[derive(Debug, Parser)]
#[command(name = "remember", version, about, long_about = None)]
pub struct Cli {
    /// The database file, or a PostgreSQL URL (postgres://user@host:port/db) (default:
    /// $REMEMBERSTACK_DB, else memory.db under the user's data directory).
    #[arg(long, global = true, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
    /// The namespace to read and write (default: `default`). `keys create` takes it
    /// once per namespace the key reaches.
    #[arg(long = "namespace", global = true, value_name = "NS")]
    pub namespaces: Vec<String>,
    /// A TOML configuration file (default: $REMEMBERSTACK_CONFIG).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The hard-forget manifest root (default: $REMEMBERSTACK_MANIFEST_ROOT, the
    /// configuration's `[store] manifest_root`, else `<db>.manifests`).
    #[arg(long, global = true, value_name = "DIR")]
    pub manifest_root: Option<PathBuf>,
    /// Print JSON on stdout (errors too, as {"code", "message"}).
    #[arg(long, global = true)]
    pub json: bool,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Store sources (files) and enqueue their processing.
    Ingest(IngestArgs),
    /// Drain the work ledger: run every pending stage until idle.
    Process,
    /// Run the work ledger continuously until SIGINT or SIGTERM; then finish the
    /// batches in flight (nothing leased is left behind) and exit.
    Worker {
        /// Workers in this process, each claiming its own batches.
        #[arg(long, default_value_t = 2, value_name = "N")]
        concurrency: usize,
        /// How often an idle worker looks for new work, in milliseconds.
        #[arg(long, default_value_t = 500, value_name = "MS")]
        poll_ms: u64,
    },
    /// Serve the HTTP API (`/v1`), `/health`, `/ready`, `/metrics` and
    /// `/openapi.json` over one engine, with an in-process worker pool; SIGINT or
    /// SIGTERM stops accepting, finishes the requests and batches in flight, and exits.
    Serve(ServeArgs),
    /// Serve MCP over stdio (engine mode: this process, this store; JSON-RPC only on
    /// stdout, logs on stderr), with ledger workers in the background.
    Mcp {
        /// Serve only the read tools (readOnlyHint).
        #[arg(long)]
        read_only: bool,
        /// Ledger workers in this process (0: leave processing to others).
        #[arg(long, default_value_t = 1, value_name = "N")]
        workers: usize,
    },
    /// Run any call of the operation table by name with its JSON input, as the
    /// bindings and MCP take it, and print its JSON result (`remember call --list`
    /// names every call). Every call is reachable this way, with or without a
    /// command of its own.
    Call {
        /// The call's name (`search`, `facts_context`, `list_notes`, ...).
        #[arg(required_unless_present = "list")]
        method: Option<String>,
        /// Its input: a JSON object, or `-` to read it from stdin (default `{}`).
        #[arg(long, value_name = "JSON")]
        input: Option<String>,
        /// List the calls' names instead.
        #[arg(long, conflicts_with_all = ["method", "input"])]
        list: bool,
    },
    /// Apply the store's migrations (opening a store also applies them) and say
    /// which store and schema version it is.
    Migrate,
    /// Local embedding models: list the cache, download a model, import a copy.
    Models {
        /// What to do.
        #[command(subcommand)]
        command: ModelsCommand,
    },
    /// Hybrid (semantic + lexical) chunk search.
    Search(SearchArgs),
    /// Explicit memory writes: remember, promote, archive, revoke, forget and list notes.
    Notes {
        /// What to do.
        #[command(subcommand)]
        command: NotesCommand,
    },
    /// Append messages to a conversation.
    Conversations {
        /// What to do.
        #[command(subcommand)]
        command: ConversationsCommand,
    },
    /// Hard-forget a document lineage (or a note): erasure, not deletion. The bytes
    /// and everything derived from them are removed and the store files compacted;
    /// the same bytes are refused from then on (`forgotten_content`).
    Forget {
        /// The document (or note) id.
        doc_id: String,
    },
    /// List and inspect documents.
    Documents {
        /// What to do.
        #[command(subcommand)]
        command: DocumentsCommand,
    },
    /// List claims and read the extraction ledger.
    Claims {
        /// What to do.
        #[command(subcommand)]
        command: ClaimsCommand,
    },
    /// List, show, merge and unmerge entities.
    Entities {
        /// What to do.
        #[command(subcommand)]
        command: EntitiesCommand,
    },
    /// List facts (relations and observations).
    Facts {
        /// What to do.
        #[command(subcommand)]
        command: FactsCommand,
    },
    /// Everything behind one fact: evidence claims with spans and source text,
    /// adjudication transcripts, the resolution decisions of its entities.
    Trace {
        /// The fact id.
        fact_id: String,
    },
    /// The namespace's predicate registry, with `other:` values counted for review.
    Predicates,
    /// The assured read operations: list them, or run one with a JSON input.
    Operations {
        /// What to do.
        #[command(subcommand)]
        command: OperationsCommand,
    },
    /// A fact, claim or chunk with the claims behind it and their source chunks.
    Hydrate {
        /// Records as `fact:<id>`, `claim:<id>` or `chunk:<id>` (1–50).
        #[arg(required = true)]
        records: Vec<String>,
    },
    /// The chunks around a search hit, in document order.
    Adjacent {
        /// The chunk id (from a search result).
        chunk_id: String,
        /// Chunks on each side (1 or 2).
        #[arg(long, default_value_t = defaults::ADJACENT_WINDOW)]
        window: usize,
    },
    /// Relations reachable from entities, hop by hop (at most 3).
    Neighborhood {
        /// A start entity id; repeatable.
        #[arg(long = "entity", value_name = "ENTITY_ID", required = true)]
        entities: Vec<String>,
        /// Hops (1–3).
        #[arg(long, default_value_t = 1)]
        depth: usize,
        /// Only these predicates, at every hop; repeatable.
        #[arg(long = "predicate", value_name = "NAME")]
        predicates: Vec<String>,
        /// Relations holding at this instant (RFC 3339).
        #[arg(long, value_name = "RFC3339", conflicts_with = "history")]
        at: Option<String>,
        /// Every relation, closed and superseded ones included.
        #[arg(long)]
        history: bool,
    },
    /// Resolve or inspect a recall receipt.
    Receipts {
        /// What to do.
        #[command(subcommand)]
        command: ReceiptsCommand,
    },
    /// Rate an item a recall receipt selected; list and prune feedback.
    Feedback {
        /// What to do.
        #[command(subcommand)]
        command: FeedbackCommand,
    },
    /// Write a canonical JSON memory pack: facts, their evidence claims with spans,
    /// source documents, entities, omissions and a digest.
    Export {
        /// Only facts about this entity (id); repeatable.
        #[arg(long = "entity", value_name = "ENTITY_ID")]
        entities: Vec<String>,
        /// Only facts supported by this document (id); repeatable.
        #[arg(long = "document", value_name = "DOC_ID")]
        documents: Vec<String>,
        /// Closed and superseded facts too.
        #[arg(long)]
        history: bool,
        /// At most this many facts.
        #[arg(long, default_value_t = 10_000)]
        limit: u32,
        /// Write the pack here instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<std::path::PathBuf>,
    },
    /// Ask a question: resolve the named entities, run combined_context and print an
    /// answer sheet (facts with windows and evidence, then claims with sources).
    Ask(AskArgs),
    /// Ledger counts by stage and status, dead letters with their errors.
    Status,
    /// Replay dead letters (and make failed items waiting for a backoff due now).
    Retry(RetryArgs),
    /// API keys for `remember serve`: create (the secret is shown once), list, revoke.
    /// Keys are deployment-wide: every process on the same database shares them.
    Keys {
        /// What to do.
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Run a self-contained demo on a bundled sample in a temporary store.
    Quickstart,
    /// Check the store and the configured providers with one cheap call each.
    Doctor,
}

/// `remember ingest`.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Files to ingest; a directory ingests every file below it (hidden entries skipped);
    /// `-` reads one source from standard input (with --source-ref; `--kind conversation`
    /// for a conversation JSON).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The format (default: detect from the file name).
    #[arg(long, value_enum, default_value_t = KindArg::Auto)]
    pub kind: KindArg,
    /// The lineage reference (only with one PATH; default: the canonical absolute path).
    #[arg(long, value_name = "REF")]
    pub source_ref: Option<String>,
    /// When the source said what it says (RFC 3339; default: the file's modification time).
    #[arg(long, value_name = "RFC3339")]
    pub source_time: Option<String>,
    /// Versioning mode of a new lineage.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Process the ledger before returning.
    #[arg(long)]
    pub wait: bool,
}

/// Declared kinds.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum KindArg {
    /// Detect.
    Auto,
    /// Markdown.
    Markdown,
    /// Plain text.
    Text,
    /// HTML.
    Html,
    /// JSON.
    Json,
    /// Newline-delimited JSON.
    Ndjson,
    /// A conversation transcript.
    Conversation,
}

/// Versioning modes.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// Every version stays testimony.
    Snapshot,
    /// The current version is the source's standing statement.
    Living,
}

/// `remember search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for (plain words; never query syntax).
    pub query: String,
    /// Results per page.
    #[arg(long, default_value_t = defaults::SEARCH_K)]
    pub k: usize,
    /// Section roles to include, comma-separated (default: body).
    #[arg(long, value_delimiter = ',', value_name = "ROLE,...")]
    pub roles: Option<Vec<String>>,
    /// A continuation cursor from a previous page.
    #[arg(long)]
    pub cursor: Option<String>,
    /// What to search: source chunks, extracted claims, adjudicated facts, entities
    /// (by name: T0–T3, ranked, never a silent guess) or documents (names and content).
    #[arg(long, value_enum, default_value_t = TargetArg::Chunks)]
    pub target: TargetArg,
    /// Claims: include claims that are no longer current testimony (audit); facts:
    /// include facts that no longer hold (closed, superseded).
    #[arg(long)]
    pub include_retired: bool,
    /// Only records from this document lineage (repeatable).
    #[arg(long = "document", value_name = "DOC_ID")]
    pub documents: Vec<String>,
    /// Rank chunks by an exact vector scan even where the store has an approximate
    /// index (PostgreSQL's HNSW, the embedded store's index of a large table).
    #[arg(long)]
    pub exact: bool,
    /// Document filters (D134), applied before the top-k cut.
    #[command(flatten)]
    pub filter: DocumentFilterArgs,
}

/// Filters on document metadata (D134).
#[derive(Debug, Args, Clone, Default)]
pub struct DocumentFilterArgs {
    /// The file name contains this.
    #[arg(long)]
    pub file_name: Option<String>,
    /// The title contains this.
    #[arg(long)]
    pub title: Option<String>,
    /// An author contains this.
    #[arg(long)]
    pub author: Option<String>,
    /// Source time at or after (RFC 3339).
    #[arg(long, value_name = "RFC3339")]
    pub from: Option<String>,
    /// Source time before (RFC 3339).
    #[arg(long, value_name = "RFC3339")]
    pub to: Option<String>,
}

/// Search targets.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum TargetArg {
    /// Source chunks (passages).
    Chunks,
    /// Extracted claims.
    Claims,
    /// Adjudicated facts (relations and observations).
    Facts,
    /// Entities by name (at most 20 results).
    Entities,
    /// Documents by name and content.
    Documents,
}

/// `remember models …`.
#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// The models in the cache, and where the cache is.
    List,
    /// Download a model into the cache ahead of first use (default:
    /// all-MiniLM-L6-v2), replacing an older copy.
    Pull {
        /// The model name (`remember models list` shows the known ones).
        name: Option<String>,
    },
    /// Copy a model directory (config.json, tokenizer.json, model.safetensors) into
    /// the cache: the way to give a machine without internet its model.
    Import {
        /// The directory holding the model files.
        dir: PathBuf,
        /// The name to install it under (default: all-MiniLM-L6-v2, the model the
        /// default configuration loads).
        #[arg(long)]
        name: Option<String>,
    },
}

/// `remember operations …`.
#[derive(Debug, Subcommand)]
pub enum OperationsCommand {
    /// The operation registry: names, descriptions, input schemas, grains, versions.
    List,
    /// Run one operation with its JSON input; prints the envelope (or ContextBundle/v2).
    Run {
        /// The operation name.
        name: String,
        /// The input as JSON (e.g. '{"query": "where does Alice work"}').
        #[arg(long, value_name = "JSON")]
        input: String,
    },
}

/// `remember receipts …`.
#[derive(Debug, Subcommand)]
pub enum ReceiptsCommand {
    /// Re-check every selected record and print the current texts, or the refusal.
    Resolve {
        /// The receipt id.
        id: String,
    },
    /// Print the receipt: ids, versions, digests, scores and counts (no text).
    Inspect {
        /// The receipt id.
        id: String,
    },
}

/// `remember feedback …`.
#[derive(Debug, Subcommand)]
pub enum FeedbackCommand {
    /// Rate one selected item of a receipt.
    Add {
        /// The receipt id.
        receipt_id: String,
        /// The item, `kind:id` (e.g. `claim:<id>`), as the receipt lists it.
        item_ref: String,
        /// `useful`, `not_useful` or `wrong`.
        rating: String,
        /// A comment.
        #[arg(long)]
        comment: Option<String>,
    },
    /// List feedback (optionally one receipt's), oldest first.
    List {
        /// Only this receipt's feedback.
        #[arg(long, value_name = "RECEIPT_ID")]
        receipt: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = defaults::FEEDBACK_PAGE)]
        limit: u32,
    },
    /// Delete feedback older than the configured retention.
    Prune,
}

/// `remember ask`.
#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question.
    pub question: String,
    /// An entity the question is about (a name or an id); repeatable.
    #[arg(long = "entity", value_name = "NAME_OR_ID")]
    pub entities: Vec<String>,
    /// Facts as of this instant (RFC 3339) instead of now.
    #[arg(long, value_name = "RFC3339", conflicts_with = "history")]
    pub at: Option<String>,
    /// Every fact, closed and superseded ones included.
    #[arg(long)]
    pub history: bool,
}

/// `remember entities …`.
#[derive(Debug, Subcommand)]
pub enum EntitiesCommand {
    /// List entities, oldest first.
    List {
        /// Include entities merged into others.
        #[arg(long)]
        include_merged: bool,
        /// At most this many.
        #[arg(long, default_value_t = defaults::ENTITIES_PAGE)]
        limit: u32,
    },
    /// Show one entity (by id or exact name): aliases, profile, facts, mentions, merges.
    Show {
        /// An entity id or name.
        name_or_id: String,
    },
    /// Merge entity A into entity B (a reversible redirect).
    Merge {
        /// The entity merged away (id).
        a: String,
        /// The entity it is merged into (id).
        b: String,
    },
    /// Undo a merge: the exact prior membership comes back.
    Unmerge {
        /// The merge id printed by `merge`.
        merge_id: String,
    },
    /// Merges the namespace's names propose: list, accept or reject them.
    Proposals {
        #[command(subcommand)]
        command: ProposalsCommand,
    },
}

/// `remember entities proposals …`.
#[derive(Debug, Subcommand)]
pub enum ProposalsCommand {
    /// List the proposed merges: each one-word name that abbreviates exactly one
    /// longer name, with its rule and reason (`automatic` ones the idle pipeline
    /// merges by itself).
    List,
    /// Accept a proposal: merge FROM into INTO (reversible with `unmerge`).
    Accept {
        /// The short form's entity id.
        from: String,
        /// The longer name's entity id.
        into: String,
    },
    /// Reject a proposal: the two stay apart and are never proposed again.
    Reject {
        /// The short form's entity id.
        from: String,
        /// The longer name's entity id.
        into: String,
    },
}

/// `remember facts …`.
#[derive(Debug, Subcommand)]
pub enum FactsCommand {
    /// List facts: current ones by default.
    List {
        /// Only facts of this entity (id).
        #[arg(long, value_name = "ENTITY_ID")]
        entity: Option<String>,
        /// Facts whose world-time window holds at this instant (RFC 3339).
        #[arg(long, value_name = "RFC3339", conflicts_with = "history")]
        at: Option<String>,
        /// Every fact, closed and superseded ones included.
        #[arg(long)]
        history: bool,
        /// At most this many a page (1 to 1,000).
        #[arg(long, default_value_t = defaults::FACTS_PAGE)]
        limit: u32,
        /// Continue a listing: the cursor its previous page printed.
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Correct a fact: invalidate it and remember the corrected statement as a
    /// system note that the pipeline processes (run `process` afterwards, or `--wait`).
    Correct {
        /// The fact id.
        fact_id: String,
        /// The corrected statement.
        #[arg(long)]
        statement: String,
        /// Why (recorded).
        #[arg(long)]
        reason: String,
        /// Replay key: the same id and input return the first result.
        #[arg(long)]
        request_id: Option<String>,
        /// Process the ledger until idle afterwards.
        #[arg(long)]
        wait: bool,
    },
    /// End a fact's belief now, with a reason (shown by `trace`).
    Invalidate {
        /// The fact id.
        fact_id: String,
        /// Why (recorded).
        #[arg(long)]
        reason: String,
        /// Replay key: the same id and input return the first result.
        #[arg(long)]
        request_id: Option<String>,
    },
}

/// `remember claims …`.
#[derive(Debug, Subcommand)]
pub enum ClaimsCommand {
    /// List claims, newest first.
    List {
        /// Only this document's claims.
        #[arg(long, value_name = "DOC_ID")]
        doc: Option<String>,
        /// Include claims that are no longer current testimony.
        #[arg(long)]
        include_retired: bool,
    },
    /// The extraction ledger of one document (keeps, drops, rejections, omissions, reuse).
    Decisions {
        /// The document.
        #[arg(long, value_name = "DOC_ID")]
        doc: String,
    },
    /// Retract a claim: it stops being current testimony for good; facts it alone
    /// supported close (`retracted_claim`).
    Retract {
        /// The claim id.
        claim_id: String,
        /// Why (recorded).
        #[arg(long)]
        reason: String,
        /// Replay key: the same id and input return the first result.
        #[arg(long)]
        request_id: Option<String>,
    },
}

/// `remember notes …`.
#[derive(Debug, Subcommand)]
pub enum NotesCommand {
    /// Remember a note revision (idempotent by request id).
    Add {
        /// The note's source key (its lineage).
        #[arg(long)]
        key: String,
        /// The revision label.
        #[arg(long)]
        revision: String,
        /// The idempotency key.
        #[arg(long)]
        request_id: String,
        /// The text (`-` reads stdin).
        text: String,
        /// Metadata as a JSON object.
        #[arg(long, value_name = "JSON")]
        metadata: Option<String>,
    },
    /// Promote a candidate revision (compare-and-set on its lifecycle version).
    Promote {
        /// The revision's version id.
        version_id: String,
        /// The lifecycle version you read.
        #[arg(long)]
        expected_version: u32,
    },
    /// Archive the promoted revision (compare-and-set on its lifecycle version).
    Archive {
        /// The revision's version id.
        version_id: String,
        /// The lifecycle version you read.
        #[arg(long)]
        expected_version: u32,
    },
    /// Revoke a candidate or promoted revision (compare-and-set on its lifecycle
    /// version): its text, chunks, claims only it carried, vectors and index rows are
    /// removed; a tombstone stays and the revision can never be remembered again.
    Revoke {
        /// The revision's version id.
        version_id: String,
        /// The lifecycle version you read.
        #[arg(long)]
        expected_version: u32,
    },
    /// Hard-forget a note: every revision, as `remember forget` does.
    Forget {
        /// The note id (its lineage).
        note_id: String,
    },
    /// List revisions' metadata (never text).
    List {
        /// Continue after a previous page.
        #[arg(long)]
        cursor: Option<String>,
        /// Page size (1 to 500).
        #[arg(long, default_value_t = defaults::NOTES_PAGE)]
        limit: u32,
    },
    /// Set the state new notes start in: `promoted` (default) or `candidate`.
    Policy {
        /// `promoted` or `candidate`.
        start_as: String,
    },
}

/// `remember keys …`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key granting its scopes on its namespaces (`--namespace NS`, once per
    /// namespace). Prints the secret once: it is never shown again, only its hash is
    /// stored.
    Create {
        /// A scope: read, ingest, write (implies ingest) or admin (implies every
        /// scope). Repeatable.
        #[arg(long = "scope", value_name = "SCOPE")]
        scopes: Vec<String>,
        /// A label for people (at most 200 printable characters).
        #[arg(long)]
        name: Option<String>,
    },
    /// List keys (never secrets): id, name, prefix, namespaces, scopes, created, revoked.
    List,
    /// Revoke a key: it authenticates nothing from now on.
    Revoke {
        /// The key id (`key_…`, from `keys list`).
        id: String,
    },
}

/// `remember conversations …`.
#[derive(Debug, Subcommand)]
pub enum ConversationsCommand {
    /// Append messages (each with an `event_id`) to a conversation lineage, creating
    /// it on first use. FILE is JSON: `{"messages": [...]}` or an array of messages
    /// (`event_id`, `speaker`, `text`, optional `timestamp`); `-` reads stdin.
    Append {
        /// The conversation's reference (its lineage key).
        #[arg(long = "ref", value_name = "CONVERSATION_REF")]
        conversation_ref: String,
        /// The messages file (`-` for stdin).
        file: String,
        /// Source time for messages without a timestamp of their own (RFC 3339).
        #[arg(long, value_name = "RFC3339")]
        source_time: Option<String>,
        /// Process the ledger until idle afterwards.
        #[arg(long)]
        wait: bool,
    },
    /// Show a conversation's messages, in order, exactly as ingested and appended.
    Show {
        /// The conversation's reference (its lineage key).
        #[arg(long = "ref", value_name = "CONVERSATION_REF")]
        conversation_ref: String,
    },
}

/// `remember documents …`.
#[derive(Debug, Subcommand)]
pub enum DocumentsCommand {
    /// List document lineages.
    List,
    /// Show one document: versions, sections, chunk count.
    Show {
        /// The document id.
        doc_id: String,
    },
    /// Delete a document lineage: its claims stop being current testimony and facts
    /// it alone supported close (`retracted_source_removal`). Not erasure.
    Delete {
        /// The document id.
        doc_id: String,
    },
    /// Find documents by name and content, with metadata filters.
    Search {
        /// Words to match on names and content (optional with filters).
        #[arg(default_value = "")]
        query: String,
        /// Metadata filters.
        #[command(flatten)]
        filter: DocumentFilterArgs,
        /// Results.
        #[arg(long, default_value_t = 10)]
        k: usize,
    },
}

/// `remember retry`.
#[derive(Debug, Args)]
pub struct RetryArgs {
    /// Only this stage (e0.prepare, e1.chunk, e1.embed).
    #[arg(long)]
    pub stage: Option<String>,
    /// Only replay dead letters (leave failed items on their backoff).
    #[arg(long)]
    pub dead_letters: bool,
}

/// `remember serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on. Without API keys only a loopback address is allowed.
    #[arg(long, default_value = "127.0.0.1:8420", value_name = "ADDR")]
    pub listen: std::net::SocketAddr,
    /// In-process ledger workers (0 leaves the ledger to `remember worker`).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub workers: usize,
    /// The largest request body accepted, in MiB.
    #[arg(long, default_value_t = 16, value_name = "MIB")]
    pub body_limit_mib: usize,
    /// The longest a request may run, in seconds.
    #[arg(long, default_value_t = 120, value_name = "SECS")]
    pub request_timeout: u64,
    /// Sustained requests per second per key.
    #[arg(long, default_value_t = 200.0, value_name = "N")]
    pub rate: f64,
    /// Requests per key in flight at once.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub in_flight: usize,
    /// A host name a keyless server also answers (`name` for any port,
    /// `name:port` for one); loopback names always. Repeatable.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// A browser origin (`https://app.example.com`) allowed to call with CORS;
    /// without one CORS is off. Repeatable.
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    pub cors_origins: Vec<String>,
    /// MCP sessions one key (or the keyless server) may hold open at once.
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub mcp_sessions: usize,
    /// Seconds after which an idle MCP session is closed.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    pub mcp_session_idle: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(argv: &[&str]) -> Command {
        Cli::try_parse_from(std::iter::once("remember").chain(argv.iter().copied()))
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
            .command
    }

    /// An argument left out takes the value every other surface gives it
    /// (`rememberstack::defaults`): each listing and primitive without it.
    #[test]
    fn omitted_arguments_take_the_defaults_every_surface_shares() {
        let cases: Vec<(&[&str], u64, u64)> = vec![
            (
                &["entities", "list"],
                match parse(&["entities", "list"]) {
                    Command::Entities {
                        command: EntitiesCommand::List { limit, .. },
                    } => limit.into(),
                    other => panic!("{other:?}"),
                },
                defaults::ENTITIES_PAGE.into(),
            ),
            (
                &["facts", "list"],
                match parse(&["facts", "list"]) {
                    Command::Facts {
                        command: FactsCommand::List { limit, .. },
                    } => limit.into(),
                    other => panic!("{other:?}"),
                },
                defaults::FACTS_PAGE.into(),
            ),
            (
                &["feedback", "list"],
                match parse(&["feedback", "list"]) {
                    Command::Feedback {
                        command: FeedbackCommand::List { limit, .. },
                    } => limit.into(),
                    other => panic!("{other:?}"),
                },
                defaults::FEEDBACK_PAGE.into(),
            ),
            (
                &["notes", "list"],
                match parse(&["notes", "list"]) {
                    Command::Notes {
                        command: NotesCommand::List { limit, .. },
                    } => limit.into(),
                    other => panic!("{other:?}"),
                },
                defaults::NOTES_PAGE.into(),
            ),
            (
                &["adjacent", "c"],
                match parse(&["adjacent", "c"]) {
                    Command::Adjacent { window, .. } => window as u64,
                    other => panic!("{other:?}"),
                },
                defaults::ADJACENT_WINDOW as u64,
            ),
            (
                &["search", "q"],
                match parse(&["search", "q"]) {
                    Command::Search(a) => a.k as u64,
                    other => panic!("{other:?}"),
                },
                defaults::SEARCH_K as u64,
            ),
        ];
        for (argv, parsed, shared) in cases {
            assert_eq!(parsed, shared, "remember {}", argv.join(" "));
        }
    }

    /// Every CLI command the operation table names exists, and every command
    /// that reads or writes memory is some call's command.
    #[test]
    fn the_operation_tables_commands_are_the_clis() {
        use clap::CommandFactory;
        let root = Cli::command();
        let find = |path: &str| {
            let mut cmd = &root;
            for word in path.split(' ') {
                cmd = cmd
                    .find_subcommand(word)
                    .unwrap_or_else(|| panic!("the table names `remember {path}`: no `{word}`"));
            }
            cmd.get_subcommands().count() == 0
        };
        let mut named = std::collections::BTreeSet::new();
        for op in rememberstack::ops::OPERATIONS {
            if let Some(path) = op.cli {
                assert!(find(path), "`remember {path}` ({}) is not a leaf", op.name);
                named.insert(path.to_string());
            }
        }
        // The commands no call stands behind: the process's own (serving, the
        // pipeline's workers, migrations, models, keys, setup) and the ones
        // composed of several calls.
        let own = [
            "worker",
            "serve",
            "mcp",
            "migrate",
            "models",
            "keys",
            "quickstart",
            "call",
            "ask",
            "retry",
            "feedback prune",
            "help",
        ];
        fn leaves(cmd: &clap::Command, prefix: &str, out: &mut Vec<String>) {
            for sub in cmd.get_subcommands() {
                let path = if prefix.is_empty() {
                    sub.get_name().to_string()
                } else {
                    format!("{prefix} {}", sub.get_name())
                };
                if sub.get_subcommands().count() == 0 {
                    out.push(path);
                } else {
                    leaves(sub, &path, out);
                }
            }
        }
        let mut all = Vec::new();
        leaves(&root, "", &mut all);
        let unnamed: Vec<&String> = all
            .iter()
            .filter(|p| !named.contains(*p))
            .filter(|p| {
                !own.iter()
                    .any(|o| *p == o || p.starts_with(&format!("{o} ")))
            })
            .collect();
        assert!(unnamed.is_empty(), "commands no call names: {unnamed:?}");
    }
}
