//! The `remember` command-line interface.

mod args;

use args::*;
use clap::Parser;
use rememberstack::{
    Config, DeclaredKind, DocumentId, Error, ErrorCode, IngestOptions, Memory, SearchRequest,
    SectionRole, SourceFormat, Stage, VersioningMode,
};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

const SAMPLE_DOC: &str = include_str!("../samples/field-notes.md");
const SAMPLE_CONVERSATION: &str = include_str!("../samples/standup.json");

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let json_mode = cli.json;
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if json_mode {
                let body = json!({"code": e.code().as_str(), "message": e.to_string()});
                println!("{body}");
            } else {
                eprintln!("error [{}]: {e}", e.code().as_str());
            }
            ExitCode::FAILURE
        }
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("REMEMBERSTACK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

async fn open(cli: &Cli) -> Result<Memory, Error> {
    let config = Config::load(cli.config.as_deref())?;
    let path = match &cli.db {
        Some(p) => p.clone(),
        None => rememberstack::default_db_path()?,
    };
    Memory::builder()
        .path(path)
        .config(config)
        .namespace(cli.namespace.clone())
        .open()
        .await
}

fn print_json(value: &impl serde::Serialize) -> Result<(), Error> {
    let s = serde_json::to_string_pretty(value).map_err(|e| Error::internal(e.to_string()))?;
    let mut out = std::io::stdout().lock();
    // A closed pipe (e.g. `| head`) is not an error worth a non-zero exit.
    let _ = writeln!(out, "{s}");
    Ok(())
}

async fn run(cli: Cli) -> Result<(), Error> {
    match &cli.command {
        Command::Quickstart => quickstart(cli.json).await,
        Command::Doctor => {
            let memory = open(&cli).await?;
            let report = memory.doctor().await;
            if cli.json {
                print_json(&report)?;
                if !report.ok {
                    // The report already says what failed; exit non-zero without a second document.
                    std::process::exit(1);
                }
            } else {
                for c in &report.checks {
                    println!(
                        "{} {:<16} {:<40} {} ms{}",
                        if c.ok { "ok  " } else { "FAIL" },
                        c.name,
                        c.identity,
                        c.millis,
                        c.error
                            .as_deref()
                            .map(|e| format!("  {e}"))
                            .unwrap_or_default()
                    );
                }
                if report.offline_extractor {
                    println!("claim extraction: offline extractor (no chat model configured)");
                }
            }
            if report.ok {
                Ok(())
            } else {
                Err(Error::new(
                    ErrorCode::Provider,
                    "a provider check failed (see above)",
                ))
            }
        }
        Command::Ingest(a) => ingest(&cli, a).await,
        Command::Process => {
            let memory = open(&cli).await?;
            let report = memory.process_until_idle().await?;
            if cli.json {
                print_json(&report)
            } else {
                println!(
                    "processed: {} completed, {} retried, {} dead-lettered, {} parked",
                    report.completed, report.retried, report.dead_lettered, report.parked
                );
                Ok(())
            }
        }
        Command::Search(a) => {
            let memory = open(&cli).await?;
            let roles = match &a.roles {
                Some(list) => Some(
                    list.iter()
                        .map(|r| {
                            SectionRole::parse(r.trim()).ok_or_else(|| {
                                Error::invalid_input(format!(
                                    "unknown role `{r}`: use body, references, nav, boilerplate or legal"
                                ))
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                None => None,
            };
            let request = SearchRequest {
                namespace: cli.namespace.clone(),
                query: a.query.clone(),
                k: a.k,
                roles,
                cursor: a.cursor.clone(),
                include_retired: a.include_retired,
            };
            if a.target == TargetArg::Claims {
                let envelope = memory.search_claims_with(request).await?;
                return if cli.json {
                    print_json(&envelope)
                } else {
                    print_claim_results(&envelope);
                    Ok(())
                };
            }
            let envelope = memory.search_with(request).await?;
            if cli.json {
                print_json(&envelope)
            } else {
                print_results(&envelope);
                Ok(())
            }
        }
        Command::Documents { command } => {
            let memory = open(&cli).await?;
            match command {
                DocumentsCommand::List => {
                    let docs = memory.documents().await?;
                    if cli.json {
                        print_json(&json!({ "documents": docs }))
                    } else {
                        if docs.is_empty() {
                            println!("no documents in namespace `{}`", cli.namespace);
                        }
                        for d in docs {
                            println!(
                                "{}  {:<10}  {}  ({}:{})",
                                d.doc_id, d.status, d.title, d.source_kind, d.source_ref
                            );
                        }
                        Ok(())
                    }
                }
                DocumentsCommand::Show { doc_id } => {
                    let id: DocumentId = doc_id.parse()?;
                    let detail = memory.document(id).await?;
                    if cli.json {
                        print_json(&detail)
                    } else {
                        let s = &detail.summary;
                        println!("{}  {}", s.doc_id, s.title);
                        println!(
                            "  lineage: {}:{} ({})",
                            s.source_kind,
                            s.source_ref,
                            s.mode.as_str()
                        );
                        println!("  status:  {}", s.status);
                        for v in &detail.versions {
                            println!(
                                "  version {} {}  {}  {} bytes  testimony={}{}",
                                v.ordinal,
                                v.version_id,
                                v.format.map(|f| f.as_str()).unwrap_or("no route"),
                                v.size,
                                v.testimony,
                                if v.is_current { "  (current)" } else { "" }
                            );
                        }
                        println!("  sections ({} chunks):", detail.chunk_count);
                        for sec in &detail.sections {
                            let title = if sec.section.path.is_empty() {
                                sec.section.title.clone()
                            } else {
                                sec.section.path.join(" › ")
                            };
                            println!(
                                "    [{}] {} — {} chunks",
                                sec.section.role.as_str(),
                                title,
                                sec.chunk_count
                            );
                        }
                        Ok(())
                    }
                }
            }
        }
        Command::Claims { command } => {
            let memory = open(&cli).await?;
            match command {
                ClaimsCommand::List {
                    doc,
                    include_retired,
                } => {
                    let doc: Option<DocumentId> = doc.as_deref().map(str::parse).transpose()?;
                    let claims = memory.claims(doc, *include_retired).await?;
                    if cli.json {
                        print_json(&json!({ "claims": claims }))
                    } else {
                        if claims.is_empty() {
                            println!("no claims");
                        }
                        for c in &claims {
                            let events: Vec<&str> = c
                                .occurrences
                                .last()
                                .map(|o| o.event_ids.iter().map(String::as_str).collect())
                                .unwrap_or_default();
                            println!(
                                "{}  {}{}{}",
                                c.claim_id,
                                c.text,
                                if c.is_current { "" } else { "  (retired)" },
                                if events.is_empty() {
                                    String::new()
                                } else {
                                    format!("  [{}]", events.join(", "))
                                }
                            );
                        }
                        Ok(())
                    }
                }
                ClaimsCommand::Decisions { doc } => {
                    let doc: DocumentId = doc.parse()?;
                    let decisions = memory.claim_decisions(doc).await?;
                    if cli.json {
                        print_json(&json!({ "decisions": decisions }))
                    } else {
                        for d in &decisions {
                            println!(
                                "{:<18} {:<5} {:<22} {}",
                                d.row.kind,
                                d.row.passage.as_deref().unwrap_or("-"),
                                d.row.reason.as_deref().unwrap_or("-"),
                                d.row
                                    .detail
                                    .get("text")
                                    .and_then(|t| t.as_str())
                                    .unwrap_or("")
                            );
                        }
                        Ok(())
                    }
                }
            }
        }
        Command::Status => {
            let memory = open(&cli).await?;
            let status = memory.status().await?;
            if cli.json {
                print_json(&status)
            } else {
                println!(
                    "store: {}  namespace: {}  documents: {}",
                    status.store, status.namespace, status.documents
                );
                println!(
                    "embedder: {}  semantic ready: {} ({} of {} chunks missing vectors)",
                    status.embedder,
                    status.semantic.ready,
                    status.semantic.missing_vectors,
                    status.semantic.chunks
                );
                for (stage, counts) in &status.ledger {
                    let line: Vec<String> = counts
                        .iter()
                        .filter(|(_, n)| **n > 0)
                        .map(|(s, n)| format!("{s}={n}"))
                        .collect();
                    println!(
                        "  {stage:<11} {}",
                        if line.is_empty() {
                            "-".into()
                        } else {
                            line.join(" ")
                        }
                    );
                }
                if status.parked_no_route > 0 {
                    println!(
                        "parked without a conversion route: {}",
                        status.parked_no_route
                    );
                }
                for d in &status.dead_letters {
                    println!(
                        "dead letter {} {} {}:{} after {}/{} attempts: {}",
                        d.work_id,
                        d.stage.as_str(),
                        d.target_kind.as_str(),
                        d.target_id,
                        d.attempts,
                        d.max_attempts,
                        d.last_error.as_deref().unwrap_or("")
                    );
                }
                Ok(())
            }
        }
        Command::Retry(a) => {
            let memory = open(&cli).await?;
            let stage = a.stage.as_deref().map(Stage::parse).transpose()?;
            let n = memory.retry(stage, a.dead_letters).await?;
            if cli.json {
                print_json(&json!({ "released": n }))
            } else {
                println!("released {n} work item(s); run `remember process` to run them");
                Ok(())
            }
        }
    }
}

/// Expand directories into the files below them (sorted, hidden entries skipped).
fn expand_paths(paths: &[std::path::PathBuf]) -> Result<Vec<std::path::PathBuf>, Error> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) -> Result<(), Error> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| {
                Error::new(
                    ErrorCode::NotFound,
                    format!("cannot read {}: {e}", dir.display()),
                )
            })?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                !p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'))
            })
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out)?;
            } else if p.is_file() {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

async fn ingest(cli: &Cli, a: &IngestArgs) -> Result<(), Error> {
    let paths = expand_paths(&a.paths)?;
    if paths.is_empty() {
        return Err(Error::new(ErrorCode::EmptyInput, "no files to ingest"));
    }
    if a.source_ref.is_some() && paths.len() != 1 {
        return Err(Error::invalid_input(
            "--source-ref names one lineage: give exactly one PATH with it",
        ));
    }
    let source_time = match &a.source_time {
        Some(s) => Some(rememberstack_core_time(s)?),
        None => None,
    };
    let kind = match a.kind {
        KindArg::Auto => DeclaredKind::Auto,
        KindArg::Markdown => DeclaredKind::Format(SourceFormat::Markdown),
        KindArg::Text => DeclaredKind::Format(SourceFormat::Text),
        KindArg::Html => DeclaredKind::Format(SourceFormat::Html),
        KindArg::Json => DeclaredKind::Format(SourceFormat::Json),
        KindArg::Ndjson => DeclaredKind::Format(SourceFormat::Ndjson),
        KindArg::Conversation => DeclaredKind::Format(SourceFormat::Conversation),
    };
    let mode = a.mode.map(|m| match m {
        ModeArg::Snapshot => VersioningMode::Snapshot,
        ModeArg::Living => VersioningMode::Living,
    });
    let memory = open(cli).await?;
    let mut receipts = Vec::new();
    for path in &paths {
        let options = IngestOptions {
            source_ref: a.source_ref.clone(),
            kind,
            source_time,
            mode,
            ..Default::default()
        };
        let receipt = memory
            .ingest_file(path, options)
            .await
            .map_err(|e| match e {
                Error::Domain { code, message } => {
                    Error::new(code, format!("{}: {message}", path.display()))
                }
                other => other,
            })?;
        if !cli.json {
            println!(
                "{} {} version {} ({}{})",
                receipt.outcome,
                receipt.document_id,
                receipt.version_id,
                path.display(),
                if receipt.parked {
                    ", parked: no conversion route"
                } else {
                    ""
                }
            );
        }
        receipts.push(receipt);
    }
    let report = if a.wait {
        Some(memory.process_until_idle().await?)
    } else {
        None
    };
    if cli.json {
        print_json(&json!({ "ingested": receipts, "processed": report }))
    } else {
        if let Some(r) = report {
            println!(
                "processed: {} completed, {} retried, {} dead-lettered, {} parked",
                r.completed, r.retried, r.dead_lettered, r.parked
            );
        }
        Ok(())
    }
}

fn rememberstack_core_time(s: &str) -> Result<rememberstack::Timestamp, Error> {
    chrono::DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|_| {
            Error::invalid_input(format!(
                "--source-time `{s}` is not RFC 3339 (e.g. 2024-06-03T09:30:00Z)"
            ))
        })
}

fn print_results(envelope: &rememberstack::Envelope<rememberstack::ChunkResult>) {
    if envelope.results.is_empty() {
        println!("no results in namespace `{}`", envelope.namespace);
    }
    for (i, r) in envelope.results.iter().enumerate() {
        let path: String = r
            .section_path
            .iter()
            .filter(|p| **p != r.document_title)
            .map(|p| format!(" › {p}"))
            .collect();
        println!(
            "{}. {}{}  [fused {:.4}]",
            i + 1,
            r.document_title,
            path,
            r.scores.fused
        );
        if !r.event_ids.is_empty() {
            println!("   messages: {}", r.event_ids.join(", "));
        }
        for line in r.text.lines().filter(|l| !l.trim().is_empty()).take(6) {
            println!("   {line}");
        }
    }
    let f = &envelope.freshness;
    if !f.pending_work.is_empty() || !f.semantic.ready {
        println!(
            "(pending work: {:?}; semantic ready: {})",
            f.pending_work, f.semantic.ready
        );
    }
    if let Some(c) = &envelope.truncation.continuation {
        println!("(more results: --cursor {c})");
    }
}

fn print_claim_results(envelope: &rememberstack::Envelope<rememberstack::ClaimResult>) {
    if envelope.results.is_empty() {
        println!("no claims in namespace `{}`", envelope.namespace);
    }
    for (i, r) in envelope.results.iter().enumerate() {
        println!(
            "{}. {}  [fused {:.4}]{}",
            i + 1,
            r.text,
            r.scores.fused,
            if r.is_current { "" } else { "  (retired)" }
        );
        let when = match (&r.validity.from, &r.validity.until) {
            (Some(f), Some(u)) => format!(
                "; valid {} .. {}",
                f.format("%Y-%m-%d"),
                u.format("%Y-%m-%d")
            ),
            (Some(f), None) => format!("; valid from {}", f.format("%Y-%m-%d")),
            _ => String::new(),
        };
        println!(
            "   {} (said {}{}){}",
            r.document_title,
            r.asserted_at.format("%Y-%m-%d"),
            when,
            if r.event_ids.is_empty() {
                String::new()
            } else {
                format!(" messages: {}", r.event_ids.join(", "))
            }
        );
    }
    if let Some(c) = &envelope.truncation.continuation {
        println!("(more results: --cursor {c})");
    }
}

async fn quickstart(json_mode: bool) -> Result<(), Error> {
    let dir = tempfile::tempdir().map_err(|e| Error::store(format!("temporary directory: {e}")))?;
    let memory = Memory::builder()
        .path(dir.path().join("memory.db"))
        .config(Config::default())
        .open()
        .await?;
    let doc = memory
        .ingest_text(SAMPLE_DOC, IngestOptions::new("samples/field-notes.md"))
        .await?;
    let conversation: rememberstack::Conversation = serde_json::from_str(SAMPLE_CONVERSATION)
        .map_err(|e| Error::new(ErrorCode::Internal, format!("bundled sample: {e}")))?;
    let conv = memory
        .ingest_conversation(&conversation, IngestOptions::new("samples/standup"))
        .await?;
    let report = memory.process_until_idle().await?;
    let queries = [
        "who leads the platform team?",
        "why did the nightly backup fail?",
        "espresso machine",
    ];
    let mut envelopes = Vec::new();
    for q in queries {
        envelopes.push((q, memory.search(q, 2).await?));
    }
    let claim_query = "who raised the bucket quota?";
    let claims = memory.search_claims(claim_query, 2).await?;
    if json_mode {
        return print_json(&json!({
            "ingested": [doc, conv],
            "processed": report,
            "searches": envelopes.iter().map(|(q, e)| json!({"query": q, "envelope": e})).collect::<Vec<_>>(),
            "claim_search": {"query": claim_query, "envelope": claims},
        }));
    }
    println!(
        "RememberStack quickstart — a temporary store at {}",
        dir.path().display()
    );
    println!(
        "ingested a document and a conversation; processed {} work items",
        report.completed
    );
    println!(
        "embedder: {}\n",
        memory.engine().embedder_identity().generation()
    );
    for (q, e) in &envelopes {
        println!("search: {q}");
        print_results(e);
        println!();
    }
    println!("claim search: {claim_query}");
    print_claim_results(&claims);
    println!();
    println!("Next: `remember ingest <files> --wait` then `remember search \"<question>\"`.");
    Ok(())
}
