//! The `remember` command-line interface.

mod args;
#[cfg(test)]
mod reference;

use args::*;
use clap::Parser;
use rememberstack::{
    ApiKey, ClaimId, Config, DeclaredKind, DocumentId, EntityId, Error, ErrorCode, FactId,
    FactQuery, IngestOptions, KeyScope, Memory, MergeId, SearchRequest, SectionRole, SourceFormat,
    Stage, VersioningMode,
};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

const SAMPLE_DOC: &str = include_str!("../samples/field-notes.md");
const SAMPLE_CONVERSATION: &str = include_str!("../samples/standup.json");

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(if matches!(cli.command, Command::Serve(_)) {
        "warn,rememberstack_server=info"
    } else {
        "warn"
    });
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

fn init_tracing(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("REMEMBERSTACK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// SIGINT (Ctrl-C) or, on Unix, SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The one namespace a command reads and writes (`default` unless given). Only
/// `keys create` takes `--namespace` more than once.
fn namespace(cli: &Cli) -> Result<&str, Error> {
    match cli.namespaces.as_slice() {
        [] => Ok(rememberstack::DEFAULT_NAMESPACE),
        [one] => Ok(one),
        many => Err(Error::invalid_input(format!(
            "--namespace was given {} times: only `keys create` takes several",
            many.len()
        ))),
    }
}

async fn open(cli: &Cli) -> Result<Memory, Error> {
    let mut config = Config::load(cli.config.as_deref())?;
    if let Some(root) = &cli.manifest_root {
        config.store.manifest_root = Some(root.clone());
    }
    let path = match &cli.db {
        Some(p) => p.clone(),
        None => rememberstack::default_db_path()?,
    };
    // Keys are deployment-wide: the handle's namespace does not matter to them, and
    // `keys create` uses `--namespace` for the key's namespaces.
    let ns = match cli.command {
        Command::Keys { .. } => rememberstack::DEFAULT_NAMESPACE,
        _ => namespace(cli)?,
    };
    let memory = Memory::builder()
        .path(path)
        .config(config)
        .namespace(ns)
        .open()
        .await?;
    if let Some(why) = memory.embedder_fallback() {
        eprintln!(
            "warning: no semantic embedding model ({why}); the hashing embedder stands in, \
             so search matches words, not meaning"
        );
    }
    Ok(memory)
}

async fn models(cli: &Cli, command: &ModelsCommand) -> Result<(), Error> {
    use rememberstack::models;
    match command {
        ModelsCommand::List => {
            let cache = models::cache_dir()?;
            let cached = models::list()?;
            if cli.json {
                return print_json(&json!({
                    "cache": cache,
                    "default": models::DEFAULT_MODEL,
                    "known": models::KNOWN_MODELS.iter().map(|m| json!({
                        "name": m.name, "repo": m.repo, "dimension": m.dimension,
                    })).collect::<Vec<_>>(),
                    "cached": cached,
                }));
            }
            println!("cache: {}", cache.display());
            if cached.is_empty() {
                println!(
                    "no models cached; `remember models pull` fetches {}",
                    models::DEFAULT_MODEL
                );
            }
            for m in &cached {
                println!(
                    "{:<24} {}{}",
                    m.name,
                    if m.complete { "complete" } else { "INCOMPLETE" },
                    if m.default { " (default)" } else { "" }
                );
            }
            let known: Vec<&str> = models::KNOWN_MODELS.iter().map(|m| m.name).collect();
            println!("pullable: {}", known.join(", "));
            Ok(())
        }
        ModelsCommand::Import { dir, name } => {
            let installed = models::import(dir, name.as_deref())?;
            print_installed(cli, &installed)
        }
        ModelsCommand::Pull { name } => {
            let installed = models::pull(name.as_deref()).await?;
            print_installed(cli, &installed)
        }
    }
}

fn print_installed(cli: &Cli, installed: &std::path::Path) -> Result<(), Error> {
    if cli.json {
        print_json(&json!({"installed": installed}))
    } else {
        println!("installed {}", installed.display());
        Ok(())
    }
}

fn print_forget(cli: &Cli, r: &rememberstack::ForgetReport) -> Result<(), Error> {
    if cli.json {
        return print_json(r);
    }
    println!(
        "forgot {} (manifest {}): {} versions, {} chunks, {} claims, {} facts, {} entities, {} vectors, {} blobs removed; {} receipts rewritten",
        r.doc_id,
        r.manifest_id,
        r.versions,
        r.chunks,
        r.claims,
        r.facts,
        r.entities,
        r.vectors,
        r.blobs,
        r.receipts_rewritten
    );
    let checks = r.verification.len();
    println!("verified: {checks} checks, nothing remains");
    Ok(())
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
        Command::Worker {
            concurrency,
            poll_ms,
        } => {
            let memory = open(&cli).await?;
            let (stop, stopped) = tokio::sync::watch::channel(false);
            tokio::spawn(async move {
                shutdown_signal().await;
                eprintln!("remember worker: stopping after the batches in flight");
                let _ = stop.send(true);
            });
            eprintln!(
                "remember worker: {concurrency} worker(s) running; SIGINT or SIGTERM stops them"
            );
            let report = memory
                .run_workers(
                    *concurrency,
                    std::time::Duration::from_millis((*poll_ms).max(1)),
                    stopped,
                )
                .await?;
            if cli.json {
                print_json(&report)
            } else {
                println!(
                    "worker stopped: {} completed, {} retried, {} dead-lettered, {} parked",
                    report.completed, report.retried, report.dead_lettered, report.parked
                );
                Ok(())
            }
        }
        Command::Serve(args) => {
            let memory = open(&cli).await?;
            let config = rememberstack_server::ServerConfig {
                listen: args.listen,
                workers: args.workers,
                body_limit: args.body_limit_mib.max(1) * 1024 * 1024,
                request_timeout: std::time::Duration::from_secs(args.request_timeout.max(1)),
                limits: rememberstack_server::auth::Limits {
                    rate_per_sec: args.rate.max(0.1),
                    burst: (args.rate * 2.0).max(1.0),
                    in_flight: args.in_flight.max(1),
                },
                perimeter: rememberstack_server::perimeter::PerimeterConfig {
                    allowed_hosts: args.allowed_hosts.clone(),
                    cors_origins: args.cors_origins.clone(),
                },
                mcp_sessions_per_key: args.mcp_sessions.max(1),
                mcp_session_idle: std::time::Duration::from_secs(args.mcp_session_idle.max(1)),
                ..Default::default()
            };
            eprintln!(
                "remember serve: listening on http://{} ({} worker(s)); SIGINT or SIGTERM stops it",
                args.listen, args.workers
            );
            rememberstack_server::serve(memory, config, shutdown_signal()).await?;
            eprintln!("remember serve: stopped");
            Ok(())
        }
        Command::Mcp { read_only, workers } => {
            let memory = open(&cli).await?;
            rememberstack_server::mcp::serve_stdio(memory, *read_only, *workers, shutdown_signal())
                .await
        }
        Command::Models { command } => models(&cli, command).await,
        Command::Call {
            method,
            input,
            list,
        } => {
            if *list {
                for name in rememberstack::calls::methods() {
                    println!("{name}");
                }
                return Ok(());
            }
            let method = method.as_deref().unwrap_or_default();
            // An unknown name is refused before a store is opened (or created).
            if !rememberstack::calls::methods().contains(&method) {
                return Err(Error::invalid_input(format!(
                    "unknown call `{method}` (`remember call --list` names them)"
                )));
            }
            let text = match input.as_deref() {
                None => "{}".to_string(),
                Some("-") => {
                    let mut text = String::new();
                    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                        .map_err(|e| Error::invalid_input(format!("cannot read stdin: {e}")))?;
                    text
                }
                Some(text) => text.to_string(),
            };
            let input: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| Error::invalid_input(format!("{method}: --input is not JSON: {e}")))?;
            if !input.is_object() {
                return Err(Error::invalid_input(format!(
                    "{method}: --input must be a JSON object"
                )));
            }
            let memory = open(&cli).await?;
            let out = rememberstack::calls::call(&memory, method, input).await?;
            let value: serde_json::Value =
                serde_json::from_str(&out).map_err(|e| Error::internal(e.to_string()))?;
            print_json(&value)
        }
        Command::Migrate => {
            let memory = open(&cli).await?;
            let out = serde_json::json!({
                "store": memory.store_kind(),
                "schema_version": memory.schema_version(),
                "migrated": true,
            });
            if cli.json {
                print_json(&out)
            } else {
                println!(
                    "{} store migrated and ready (schema version {})",
                    memory.store_kind(),
                    memory.schema_version().unwrap_or_default()
                );
                Ok(())
            }
        }
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
                for (stage, s) in &report.stages {
                    println!(
                        "  {stage:<16} {:>7} items {:>5} batches {:>9.3} s",
                        s.items,
                        s.batches,
                        s.secs()
                    );
                }
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
                namespace: memory.namespace().to_string(),
                query: a.query.clone(),
                k: a.k,
                roles,
                cursor: a.cursor.clone(),
                include_retired: a.include_retired,
                entities: vec![],
                documents: document_filter(&a.documents, &a.filter)?,
                exact: a.exact,
            };
            if a.target == TargetArg::Documents {
                if !a.documents.is_empty() {
                    return Err(Error::invalid_input(
                        "--document does not apply to --target documents",
                    ));
                }
                return search_documents(&cli, &memory, &a.query, &a.filter, a.k).await;
            }
            if a.target == TargetArg::Entities {
                if request.documents.is_some() {
                    return Err(Error::invalid_input(
                        "document filters do not apply to --target entities",
                    ));
                }
                let envelope = memory.resolve_entity(&a.query, Some(a.k)).await?;
                return if cli.json {
                    print_json(&envelope)
                } else {
                    if envelope.results.is_empty() {
                        println!("no entity matches `{}`", a.query.trim());
                    }
                    for (i, r) in envelope.results.iter().enumerate() {
                        let tiers: Vec<String> =
                            r.matched_by.iter().map(|t| format!("{t:?}")).collect();
                        println!(
                            "{}. {}  {}  (matched by {})",
                            i + 1,
                            r.canonical_name,
                            r.entity_id,
                            tiers.join(", ")
                        );
                    }
                    if let Some(a) = &envelope.ambiguity {
                        println!("ambiguous: {a}");
                    }
                    Ok(())
                };
            }
            if a.target == TargetArg::Facts {
                let envelope = memory.search_facts_with(request).await?;
                return if cli.json {
                    print_json(&envelope)
                } else {
                    if envelope.results.is_empty() {
                        println!("no facts in namespace `{}`", envelope.namespace);
                    }
                    for (i, r) in envelope.results.iter().enumerate() {
                        println!(
                            "{}. [fused {:.4}] {}",
                            i + 1,
                            r.scores.fused,
                            fact_line(&r.fact)
                        );
                    }
                    if let Some(c) = &envelope.truncation.continuation {
                        println!("(more results: --cursor {c})");
                    }
                    Ok(())
                };
            }
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
                            println!("no documents in namespace `{}`", memory.namespace());
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
                DocumentsCommand::Search { query, filter, k } => {
                    search_documents(&cli, &memory, query, filter, *k).await
                }
                DocumentsCommand::Delete { doc_id } => {
                    let id: DocumentId = doc_id.parse()?;
                    let d = memory.delete_document(id).await?;
                    if cli.json {
                        print_json(&d)
                    } else {
                        println!(
                            "deleted {} at {}: {} claims retired, {} relations and {} observations closed",
                            d.doc_id,
                            rememberstack::time::to_rfc3339(&d.deleted_at),
                            d.claims_retired,
                            d.relations_closed,
                            d.observations_closed
                        );
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
                ClaimsCommand::Retract {
                    claim_id,
                    reason,
                    request_id,
                } => {
                    let id: ClaimId = claim_id.parse()?;
                    let r = memory
                        .retract_claim(id, reason, request_id.as_deref())
                        .await?;
                    if cli.json {
                        print_json(&r)
                    } else {
                        println!(
                            "retracted {} ({}): {} facts recounted, {} relations and {} observations closed",
                            r.claim_id,
                            r.reason,
                            r.facts_recounted,
                            r.relations_closed,
                            r.observations_closed
                        );
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
        Command::Entities { command } => entities(&cli, command).await,
        Command::Keys { command } => keys(&cli, command).await,
        Command::Notes { command } => {
            let memory = open(&cli).await?;
            let show = |n: &rememberstack::NoteRecord| {
                println!(
                    "{}  {}@{}  {} v{}  {}",
                    n.version_id,
                    n.source_key,
                    n.source_revision,
                    n.lifecycle.as_str(),
                    n.lifecycle_version,
                    n.digest
                );
            };
            match command {
                NotesCommand::Add {
                    key,
                    revision,
                    request_id,
                    text,
                    metadata,
                } => {
                    let text = if text == "-" {
                        let mut buf = String::new();
                        std::io::Read::read_to_string(&mut std::io::stdin(), &mut buf)
                            .map_err(|e| Error::invalid_input(format!("reading stdin: {e}")))?;
                        buf
                    } else {
                        text.clone()
                    };
                    let metadata = metadata
                        .as_deref()
                        .map(|m| {
                            serde_json::from_str(m).map_err(|e| {
                                Error::invalid_input(format!("--metadata is not JSON: {e}"))
                            })
                        })
                        .transpose()?;
                    let note = memory
                        .remember_note(rememberstack::NoteInput {
                            request_id: request_id.clone(),
                            source_key: key.clone(),
                            source_revision: revision.clone(),
                            text,
                            metadata,
                        })
                        .await?;
                    if cli.json {
                        print_json(&note)
                    } else {
                        show(&note);
                        Ok(())
                    }
                }
                NotesCommand::Promote {
                    version_id,
                    expected_version,
                }
                | NotesCommand::Archive {
                    version_id,
                    expected_version,
                } => {
                    let id: rememberstack::VersionId = version_id.parse()?;
                    let note = if matches!(command, NotesCommand::Promote { .. }) {
                        memory.promote_note(id, *expected_version).await?
                    } else {
                        memory.archive_note(id, *expected_version).await?
                    };
                    if cli.json {
                        print_json(&note)
                    } else {
                        show(&note);
                        Ok(())
                    }
                }
                NotesCommand::Revoke {
                    version_id,
                    expected_version,
                } => {
                    let id: rememberstack::VersionId = version_id.parse()?;
                    let note = memory.revoke_note(id, *expected_version).await?;
                    if cli.json {
                        print_json(&note)
                    } else {
                        show(&note);
                        Ok(())
                    }
                }
                NotesCommand::Forget { note_id } => {
                    let id: DocumentId = note_id.parse()?;
                    let report = memory.forget_note(id).await?;
                    print_forget(&cli, &report)
                }
                NotesCommand::List { cursor, limit } => {
                    let page = memory.list_notes(cursor.as_deref(), *limit).await?;
                    if cli.json {
                        print_json(&page)
                    } else {
                        page.notes.iter().for_each(show);
                        if let Some(c) = &page.cursor {
                            println!("more: --cursor {c}");
                        }
                        Ok(())
                    }
                }
                NotesCommand::Policy { start_as } => {
                    let state = rememberstack::Admission::parse(start_as)?;
                    memory.set_note_policy(state).await?;
                    if cli.json {
                        print_json(&json!({ "start_as": state }))
                    } else {
                        println!("new notes start as {}", state.as_str());
                        Ok(())
                    }
                }
            }
        }
        Command::Feedback { command } => {
            let memory = open(&cli).await?;
            match command {
                FeedbackCommand::Add {
                    receipt_id,
                    item_ref,
                    rating,
                    comment,
                } => {
                    let record = memory
                        .feedback(rememberstack::FeedbackInput {
                            receipt_id: receipt_id.parse()?,
                            item_ref: item_ref.clone(),
                            rating: rating.clone(),
                            comment: comment.clone(),
                        })
                        .await?;
                    if cli.json {
                        print_json(&record)
                    } else {
                        println!("recorded {} on {}", record.rating, record.item_ref);
                        Ok(())
                    }
                }
                FeedbackCommand::List { receipt, limit } => {
                    let receipt = receipt.as_deref().map(str::parse).transpose()?;
                    let list = memory.list_feedback(receipt, *limit).await?;
                    if cli.json {
                        print_json(&json!({ "feedback": list }))
                    } else {
                        for f in &list {
                            println!(
                                "{}  {}  {:<10} {}  {}",
                                rememberstack::time::to_rfc3339(&f.created_at),
                                f.receipt_id,
                                f.rating,
                                f.item_ref,
                                f.comment.as_deref().unwrap_or("")
                            );
                        }
                        Ok(())
                    }
                }
                FeedbackCommand::Prune => {
                    let removed = memory.prune_feedback().await?;
                    if cli.json {
                        print_json(&json!({ "pruned": removed }))
                    } else {
                        println!("pruned {removed} feedback rows");
                        Ok(())
                    }
                }
            }
        }
        Command::Forget { doc_id } => {
            let memory = open(&cli).await?;
            let id: DocumentId = doc_id.parse()?;
            let report = memory.forget_document(id).await?;
            print_forget(&cli, &report)
        }
        Command::Export {
            entities,
            documents,
            history,
            limit,
            out,
        } => {
            let selection = rememberstack::ExportSelection {
                entities: entities
                    .iter()
                    .map(|e| e.parse())
                    .collect::<Result<_, _>>()?,
                documents: documents
                    .iter()
                    .map(|d| d.parse())
                    .collect::<Result<_, _>>()?,
                history: *history,
                limit: *limit,
            };
            let memory = open(&cli).await?;
            let pack = memory.export_pack(&selection).await?;
            match out {
                Some(path) => {
                    let text = serde_json::to_string_pretty(&pack)
                        .map_err(|e| Error::internal(e.to_string()))?;
                    std::fs::write(path, text).map_err(|e| {
                        Error::invalid_input(format!("writing {}: {e}", path.display()))
                    })?;
                    if cli.json {
                        print_json(&json!({
                            "written": path,
                            "digest": pack["digest"],
                            "facts": pack["facts"].as_array().map_or(0, Vec::len),
                        }))
                    } else {
                        println!(
                            "wrote {} ({} facts, digest {})",
                            path.display(),
                            pack["facts"].as_array().map_or(0, Vec::len),
                            pack["digest"].as_str().unwrap_or("")
                        );
                        Ok(())
                    }
                }
                None => print_json(&pack),
            }
        }
        Command::Conversations {
            command: ConversationsCommand::Show { conversation_ref },
        } => {
            let memory = open(&cli).await?;
            let conversation = memory.conversation_messages(conversation_ref).await?;
            if cli.json {
                print_json(&conversation)
            } else {
                for m in &conversation.messages {
                    let id = m.event_id.as_deref().unwrap_or("-");
                    let at = m.timestamp.map(|t| t.to_rfc3339()).unwrap_or_default();
                    println!("[{id}] {at} {}: {}", m.speaker, m.text);
                }
                Ok(())
            }
        }
        Command::Conversations {
            command:
                ConversationsCommand::Append {
                    conversation_ref,
                    file,
                    source_time,
                    wait,
                },
        } => {
            let bytes = if file == "-" {
                let mut buf = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
                    .map_err(|e| Error::invalid_input(format!("reading stdin: {e}")))?;
                buf
            } else {
                std::fs::read(file)
                    .map_err(|e| Error::new(ErrorCode::NotFound, format!("reading {file}: {e}")))?
            };
            let messages = rememberstack::parse_conversation(&bytes)?.messages;
            let memory = open(&cli).await?;
            let receipt = match source_time {
                Some(t) => {
                    let at = rememberstack::time::parse_instant("--source-time", t)?;
                    memory
                        .append_messages_at(conversation_ref, messages, at)
                        .await?
                }
                None => memory.append_messages(conversation_ref, messages).await?,
            };
            let processed = if *wait {
                Some(memory.process_until_idle().await?)
            } else {
                None
            };
            if cli.json {
                print_json(&json!({ "appended": receipt, "processed": processed }))
            } else {
                println!(
                    "{} {} ({}): {} appended, {} already present",
                    receipt.outcome,
                    receipt.document_id,
                    receipt.version_id,
                    receipt.appended,
                    receipt.already_present
                );
                Ok(())
            }
        }
        Command::Facts {
            command:
                FactsCommand::List {
                    entity,
                    at,
                    history,
                    limit,
                    cursor,
                },
        } => {
            let memory = open(&cli).await?;
            let entity: Option<EntityId> = entity.as_deref().map(str::parse).transpose()?;
            let at = at
                .as_deref()
                .map(|t| rememberstack::time::parse_instant("--at", t))
                .transpose()?;
            let page = memory
                .facts_page(
                    &FactQuery {
                        entity,
                        at,
                        history: *history,
                        limit: *limit,
                    },
                    cursor.as_deref(),
                )
                .await?;
            if cli.json {
                print_json(&page)
            } else {
                if page.facts.is_empty() {
                    println!("no facts");
                }
                for f in &page.facts {
                    println!("{}  {}", f.fact_id, fact_line(f));
                }
                if let Some(c) = &page.cursor {
                    println!("(more facts: --cursor {c})");
                }
                Ok(())
            }
        }
        Command::Facts {
            command:
                FactsCommand::Correct {
                    fact_id,
                    statement,
                    reason,
                    request_id,
                    wait,
                },
        } => {
            let memory = open(&cli).await?;
            let id: FactId = fact_id.parse()?;
            let r = memory
                .correct_fact(id, statement, reason, request_id.as_deref())
                .await?;
            if *wait {
                memory.process_until_idle().await?;
            }
            if cli.json {
                print_json(&r)
            } else {
                println!(
                    "corrected {} ({}): remembered as note {}",
                    r.fact_id, r.reason, r.note.version_id
                );
                Ok(())
            }
        }
        Command::Facts {
            command:
                FactsCommand::Invalidate {
                    fact_id,
                    reason,
                    request_id,
                },
        } => {
            let memory = open(&cli).await?;
            let id: FactId = fact_id.parse()?;
            let r = memory
                .invalidate_fact(id, reason, request_id.as_deref())
                .await?;
            if cli.json {
                print_json(&r)
            } else {
                println!(
                    "invalidated {} at {} ({})",
                    r.fact_id,
                    rememberstack::time::to_rfc3339(&r.invalidated_at),
                    r.reason
                );
                Ok(())
            }
        }
        Command::Trace { fact_id } => {
            let memory = open(&cli).await?;
            let id: FactId = fact_id.parse()?;
            let trace = memory.trace(id).await?;
            if cli.json {
                return print_json(&trace);
            }
            println!("{}  {}", trace.fact.fact_id, fact_line(&trace.fact));
            println!("evidence:");
            for e in &trace.evidence {
                let (text, doc, spans) = match &e.claim {
                    Some(c) => (
                        c.text.as_str(),
                        c.document_title.as_str(),
                        c.occurrences
                            .last()
                            .map(|o| {
                                o.spans
                                    .iter()
                                    .map(|s| format!("{}..{}", s.char_start, s.char_end))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            })
                            .unwrap_or_default(),
                    ),
                    None => ("(claim gone)", "", String::new()),
                };
                println!(
                    "  {:<10} {}  {}{}  — {} [{}]",
                    e.evidence.stance.as_str(),
                    e.evidence.claim_id,
                    text,
                    if e.evidence.is_current {
                        ""
                    } else {
                        " (retired)"
                    },
                    doc,
                    spans
                );
            }
            println!("adjudications:");
            for a in &trace.adjudications {
                println!(
                    "  {:<10} {}  {}{}",
                    a.verdict,
                    a.created_at.format("%Y-%m-%d %H:%M:%S"),
                    a.reason,
                    a.model
                        .as_deref()
                        .map(|m| format!("  (model {m})"))
                        .unwrap_or_default()
                );
            }
            println!("entity resolutions:");
            for d in &trace.resolutions {
                println!(
                    "  {:<13} {:<5} {} → {}  {}",
                    d.tier, d.verdict, d.name, d.entity_id, d.rationale
                );
            }
            Ok(())
        }
        Command::Operations { command } => {
            let memory = open(&cli).await?;
            match command {
                OperationsCommand::List => {
                    let ops = memory.operations();
                    if cli.json {
                        print_json(&json!({ "operations": ops }))
                    } else {
                        for op in &ops {
                            println!("{} (v{}, grain {})", op.name, op.version, op.grain);
                            println!("  {}", op.description);
                        }
                        Ok(())
                    }
                }
                OperationsCommand::Run { name, input } => {
                    let input: serde_json::Value = serde_json::from_str(input).map_err(|e| {
                        Error::new(
                            ErrorCode::InvalidParameter,
                            format!("--input is not JSON: {e}"),
                        )
                    })?;
                    let out = memory.run_operation(name, input).await?;
                    print_json(&out)
                }
            }
        }
        Command::Ask(a) => ask(&cli, a).await,
        Command::Hydrate { records } => {
            let memory = open(&cli).await?;
            let refs = records
                .iter()
                .map(|r| r.parse::<rememberstack::RecordRef>())
                .collect::<Result<Vec<_>, _>>()?;
            let env = memory.hydrate(&refs).await?;
            if cli.json {
                return print_json(&env);
            }
            for h in &env.results {
                println!("{}  {}", h.record, h.text);
                for e in &h.evidence {
                    let stance = e.stance.map(|s| format!("{s:?} ")).unwrap_or_default();
                    println!(
                        "  {stance}claim {}: {} [{}]",
                        e.claim.claim_id, e.claim.text, e.claim.document_title
                    );
                }
                for c in &h.sources {
                    println!("  source {} [{}]", c.chunk_id, c.document_title);
                    println!("     {}", c.text.replace('\n', "\n     "));
                }
            }
            if let Some(n) = env.hydration_drops.get("record_gone") {
                println!("({n} record(s) not found)");
            }
            Ok(())
        }
        Command::Adjacent { chunk_id, window } => {
            let memory = open(&cli).await?;
            let env = memory.adjacent_chunks(chunk_id.parse()?, *window).await?;
            if cli.json {
                return print_json(&env);
            }
            for r in &env.results {
                println!("{}  [{}]", r.chunk_id, r.document_title);
                println!("   {}", r.text.replace('\n', "\n   "));
            }
            Ok(())
        }
        Command::Neighborhood {
            entities,
            depth,
            predicates,
            at,
            history,
        } => {
            let memory = open(&cli).await?;
            let entity_ids = entities
                .iter()
                .map(|e| e.parse::<EntityId>())
                .collect::<Result<Vec<_>, _>>()?;
            let temporal_scope = match (at, history) {
                (Some(t), _) => Some(rememberstack::TemporalScope {
                    mode: "at".into(),
                    at: Some(t.clone()),
                    from: None,
                    to: None,
                }),
                (None, true) => Some(rememberstack::TemporalScope {
                    mode: "history".into(),
                    at: None,
                    from: None,
                    to: None,
                }),
                _ => None,
            };
            let env = memory
                .neighborhood(rememberstack::NeighborhoodRequest {
                    entity_ids,
                    depth: Some(*depth),
                    predicates: predicates.clone(),
                    temporal_scope,
                })
                .await?;
            if cli.json {
                return print_json(&env);
            }
            for r in &env.results {
                println!("hop {}  {}", r.depth, fact_line(&r.fact));
            }
            Ok(())
        }
        Command::Receipts { command } => {
            let memory = open(&cli).await?;
            match command {
                ReceiptsCommand::Inspect { id } => {
                    let receipt = memory.inspect_receipt(id.parse()?).await?;
                    print_json(&receipt)
                }
                ReceiptsCommand::Resolve { id } => {
                    let resolution = memory.resolve_receipt(id.parse()?).await?;
                    if cli.json {
                        return print_json(&resolution);
                    }
                    match resolution.reason.as_deref() {
                        Some(reason) => println!(
                            "refused: {reason} ({})",
                            resolution.record.as_deref().unwrap_or("-")
                        ),
                        None => {
                            for r in &resolution.records {
                                println!(
                                    "{:<6} {}  {}{}",
                                    r.kind,
                                    r.id,
                                    r.text.replace('\n', " "),
                                    r.document_title
                                        .as_deref()
                                        .map(|t| format!("  [{t}]"))
                                        .unwrap_or_default()
                                );
                            }
                        }
                    }
                    Ok(())
                }
            }
        }
        Command::Predicates => {
            let memory = open(&cli).await?;
            let rows = memory.predicates().await?;
            if cli.json {
                print_json(&json!({ "predicates": rows }))
            } else {
                for p in &rows {
                    println!(
                        "{:<22} {:<6} {:>5}  {}",
                        p.name, p.status, p.uses, p.description
                    );
                }
                Ok(())
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
                if let Some(pending) = &status.forget_in_progress {
                    println!("forget in progress: {}", pending.describe());
                }
                println!(
                    "embedder: {}  semantic ready: {} ({} of {} chunks missing vectors)",
                    status.embedder,
                    status.semantic.ready,
                    status.semantic.missing_vectors,
                    status.semantic.chunks
                );
                if let Some(why) = &status.embedder_fallback {
                    println!("embedder fallback (lexical, not semantic): {why}");
                }
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
    if a.paths.iter().any(|p| p.as_os_str() == "-") {
        return ingest_stdin(cli, a).await;
    }
    let paths = expand_paths(&a.paths)?;
    if paths.is_empty() {
        return Err(Error::new(ErrorCode::EmptyInput, "no files to ingest"));
    }
    if a.source_ref.is_some() && paths.len() != 1 {
        return Err(Error::invalid_input(
            "--source-ref names one lineage: give exactly one PATH with it",
        ));
    }
    let (kind, source_time, mode) = ingest_settings(a)?;
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

/// The declared kind, source time and mode of `remember ingest`.
fn ingest_settings(
    a: &IngestArgs,
) -> Result<
    (
        DeclaredKind,
        Option<rememberstack::Timestamp>,
        Option<VersioningMode>,
    ),
    Error,
> {
    let source_time = match &a.source_time {
        Some(s) => Some(rememberstack::time::parse_instant("--source-time", s)?),
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
    Ok((kind, source_time, mode))
}

/// `remember ingest - --source-ref REF`: standard input as one text source (or,
/// with `--kind conversation`, one conversation), exactly as the library's
/// `ingest_text` / `ingest_conversation` and HTTP's JSON ingest take it.
async fn ingest_stdin(cli: &Cli, a: &IngestArgs) -> Result<(), Error> {
    if a.paths.len() != 1 {
        return Err(Error::invalid_input(
            "`-` (standard input) is one source: give no other PATH with it",
        ));
    }
    let Some(source_ref) = a.source_ref.clone() else {
        return Err(Error::invalid_input(
            "`-` (standard input) needs --source-ref naming the lineage",
        ));
    };
    let (kind, source_time, mode) = ingest_settings(a)?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
        .map_err(|e| Error::invalid_input(format!("reading standard input: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        Error::new(
            ErrorCode::InvalidUtf8,
            "standard input is not UTF-8 text (ingest binary files by path)",
        )
    })?;
    let options = IngestOptions {
        source_ref: Some(source_ref),
        kind,
        source_time,
        mode,
        ..Default::default()
    };
    let memory = open(cli).await?;
    let receipt = if matches!(kind, DeclaredKind::Format(SourceFormat::Conversation)) {
        let conversation: rememberstack::Conversation =
            serde_json::from_str(&text).map_err(|e| {
                Error::new(
                    ErrorCode::InvalidConversation,
                    format!("standard input is not a conversation ({{\"messages\": [...]}}): {e}"),
                )
            })?;
        memory.ingest_conversation(&conversation, options).await?
    } else {
        memory.ingest_text(text, options).await?
    };
    let report = if a.wait {
        Some(memory.process_until_idle().await?)
    } else {
        None
    };
    if cli.json {
        print_json(&json!({ "ingested": [receipt], "processed": report }))
    } else {
        println!(
            "{} {} version {} (standard input)",
            receipt.outcome, receipt.document_id, receipt.version_id
        );
        if let Some(r) = report {
            println!(
                "processed: {} completed, {} retried, {} dead-lettered, {} parked",
                r.completed, r.retried, r.dead_lettered, r.parked
            );
        }
        Ok(())
    }
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

/// One fact on one line: statement, shape, window and counts.
fn fact_line(f: &rememberstack::FactRecord) -> String {
    let shape = match (&f.predicate, &f.object_name) {
        (Some(p), Some(o)) => format!("{} —{p}→ {o}", f.subject_name),
        _ => format!("about {}", f.subject_name),
    };
    let day = |t: &rememberstack::Timestamp| t.format("%Y-%m-%d").to_string();
    let window = match (&f.window.valid_from, &f.window.valid_until) {
        (None, None) => "time unknown".to_string(),
        (Some(a), None) => format!("from {}", day(a)),
        (None, Some(b)) => format!("until {}", day(b)),
        (Some(a), Some(b)) => format!("{} .. {}", day(a), day(b)),
    };
    let mut flags = String::new();
    if f.superseded_by.is_some() {
        flags.push_str(" superseded");
    }
    if f.contradiction_group.is_some() {
        flags.push_str(" contradicted");
    }
    format!(
        "{}  ({shape}; {window}; evidence {}, contradict {}{flags})",
        f.statement, f.evidence_count, f.contradict_count
    )
}

/// The document scope of `remember search` (`None` when no filter is given).
fn document_filter(
    ids: &[String],
    f: &DocumentFilterArgs,
) -> Result<Option<rememberstack::DocumentFilter>, Error> {
    let document_ids = if ids.is_empty() {
        None
    } else {
        Some(
            ids.iter()
                .map(|s| s.parse::<DocumentId>())
                .collect::<Result<Vec<_>, _>>()?,
        )
    };
    let filter = rememberstack::DocumentFilter {
        document_ids,
        file_name: f.file_name.clone(),
        title: f.title.clone(),
        author: f.author.clone(),
        from: f.from.clone(),
        to: f.to.clone(),
    };
    Ok((!filter.is_empty()).then_some(filter))
}

/// `remember documents search` and `remember search --target documents`.
async fn search_documents(
    cli: &Cli,
    memory: &Memory,
    query: &str,
    f: &DocumentFilterArgs,
    k: usize,
) -> Result<(), Error> {
    let env = memory
        .search_documents(rememberstack::DocumentQuery {
            query: query.to_string(),
            file_name: f.file_name.clone(),
            title: f.title.clone(),
            author: f.author.clone(),
            from: f.from.clone(),
            to: f.to.clone(),
            k: Some(k),
        })
        .await?;
    if cli.json {
        return print_json(&env);
    }
    if env.results.is_empty() {
        println!("no documents match");
    }
    for d in &env.results {
        println!(
            "{}  {}  ({}:{})",
            d.document_id, d.title, d.source_kind, d.source_ref
        );
    }
    Ok(())
}

/// `remember ask`: resolve names, run combined_context, print an answer sheet.
async fn ask(cli: &Cli, a: &AskArgs) -> Result<(), Error> {
    let memory = open(cli).await?;
    let mut ids = Vec::new();
    for name in &a.entities {
        if let Ok(id) = name.parse::<EntityId>() {
            ids.push(id.to_string());
            continue;
        }
        let found = memory.resolve_entity(name, Some(5)).await?;
        let exact: Vec<&rememberstack::EntityResult> = found
            .results
            .iter()
            .filter(|r| r.matched_by.contains(&rememberstack::BlockingTier::T0))
            .collect();
        match exact.as_slice() {
            [one] => ids.push(one.entity_id.to_string()),
            [] => {
                return Err(Error::new(
                    ErrorCode::NotFound,
                    format!(
                        "no entity is named `{name}`{}",
                        if found.results.is_empty() {
                            String::new()
                        } else {
                            format!(
                                "; similar: {}",
                                found
                                    .results
                                    .iter()
                                    .map(|r| format!("{} ({})", r.canonical_name, r.entity_id))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        }
                    ),
                ));
            }
            many => {
                return Err(Error::invalid_input(format!(
                    "`{name}` names {} entities; pass one id with --entity: {}",
                    many.len(),
                    many.iter()
                        .map(|r| format!(
                            "{} ({})",
                            r.entity_id,
                            r.profile.as_deref().unwrap_or(&r.canonical_name)
                        ))
                        .collect::<Vec<_>>()
                        .join("; ")
                )));
            }
        }
    }
    let scope = match (&a.at, a.history) {
        (Some(t), _) => Some(rememberstack::TemporalScope {
            mode: "at".into(),
            at: Some(t.clone()),
            from: None,
            to: None,
        }),
        (None, true) => Some(rememberstack::TemporalScope {
            mode: "history".into(),
            at: None,
            from: None,
            to: None,
        }),
        (None, false) => None,
    };
    let bundle = memory
        .combined_context(rememberstack::CombinedContextInput {
            query: a.question.clone(),
            entity_ids: (!ids.is_empty()).then_some(ids),
            temporal_scope: scope,
        })
        .await?;
    if cli.json {
        return print_json(&bundle);
    }
    println!("Q: {}", a.question);
    println!();
    println!("Facts:");
    if let Some(n) = &bundle.facts.negative {
        println!("  ({}: {})", n.kind, n.message);
    }
    for r in &bundle.facts.results {
        println!("  - {}", fact_line(&r.fact));
        if let Some(c) = &r.contradiction {
            for m in &c.members {
                println!("      contradicted by: {}", fact_line(m));
            }
        }
    }
    println!();
    println!("Evidence:");
    if let Some(n) = &bundle.claims_and_sources.negative {
        println!("  ({}: {})", n.kind, n.message);
    }
    for r in &bundle.claims_and_sources.results {
        match r {
            rememberstack::EvidenceResult::Claim(c) => println!(
                "  - {}  [{}, said {}]",
                c.text,
                c.document_title,
                c.asserted_at.format("%Y-%m-%d")
            ),
            rememberstack::EvidenceResult::Chunk(c) => println!(
                "  - \"{}\"  [{}, {}]",
                c.text
                    .replace('\n', " ")
                    .chars()
                    .take(200)
                    .collect::<String>(),
                c.document_title,
                c.asserted_at.format("%Y-%m-%d")
            ),
        }
    }
    Ok(())
}

/// A merge made: its event as JSON, or one line.
fn print_merge(cli: &Cli, event: &rememberstack::MergeEvent) -> Result<(), Error> {
    if cli.json {
        return print_json(event);
    }
    println!(
        "merged {} into {} (merge id {})",
        event.from, event.into, event.merge_id
    );
    Ok(())
}

async fn entities(cli: &Cli, command: &EntitiesCommand) -> Result<(), Error> {
    let memory = open(cli).await?;
    match command {
        EntitiesCommand::List {
            include_merged,
            limit,
        } => {
            let list = memory.entities(*include_merged, *limit).await?;
            if cli.json {
                return print_json(&json!({ "entities": list }));
            }
            if list.is_empty() {
                println!("no entities in namespace `{}`", memory.namespace());
            }
            for e in &list {
                println!(
                    "{}  {}  ({} mentions{}){}",
                    e.entity_id,
                    e.canonical_name,
                    e.mention_count,
                    if e.aliases.len() > 1 {
                        format!("; aka {}", e.aliases.join(", "))
                    } else {
                        String::new()
                    },
                    e.merged_into
                        .map(|m| format!("  merged into {m}"))
                        .unwrap_or_default()
                );
            }
            Ok(())
        }
        EntitiesCommand::Show { name_or_id } => {
            let detail = memory.entity(name_or_id).await?;
            if cli.json {
                return print_json(&detail);
            }
            let e = &detail.entity;
            if let Some(from) = detail.redirected_from {
                println!("({from} is merged into {}: showing it)", e.entity_id);
            }
            println!("{}  {}", e.entity_id, e.canonical_name);
            println!("  aliases: {}", e.aliases.join(", "));
            if !detail.merged_members.is_empty() {
                let m: Vec<String> = detail
                    .merged_members
                    .iter()
                    .map(|m| m.to_string())
                    .collect();
                println!("  merged members: {}", m.join(", "));
            }
            println!(
                "  profile: {}",
                e.profile_summary.as_deref().unwrap_or("(none yet)")
            );
            println!("  facts:");
            for f in &detail.facts {
                println!("    {}  {}", f.fact_id, fact_line(f));
            }
            println!("  mentions: {}", detail.mentions.len());
            for m in &detail.merges {
                println!(
                    "  merge {}: {} into {}{}",
                    m.merge_id,
                    m.from,
                    m.into,
                    if m.reverted_at.is_some() {
                        " (undone)"
                    } else {
                        ""
                    }
                );
            }
            Ok(())
        }
        EntitiesCommand::Merge { a, b } => {
            let (a, b): (EntityId, EntityId) = (a.parse()?, b.parse()?);
            print_merge(cli, &memory.merge_entities(a, b).await?)
        }
        EntitiesCommand::Unmerge { merge_id } => {
            let id: MergeId = merge_id.parse()?;
            let event = memory.unmerge_entities(id).await?;
            if cli.json {
                print_json(&event)
            } else {
                println!(
                    "unmerged {} from {} (merge {})",
                    event.from, event.into, event.merge_id
                );
                Ok(())
            }
        }
        EntitiesCommand::Proposals { command } => match command {
            ProposalsCommand::List => {
                let list = memory.merge_proposals().await?;
                if cli.json {
                    return print_json(&json!({ "proposals": list }));
                }
                if list.is_empty() {
                    println!("no merges proposed in namespace `{}`", memory.namespace());
                }
                for p in &list {
                    println!(
                        "{} {}  ->  {} {}  [{}{}] {}",
                        p.from,
                        p.from_name,
                        p.into,
                        p.into_name,
                        p.rule,
                        if p.automatic { ", automatic" } else { "" },
                        p.reason
                    );
                }
                Ok(())
            }
            ProposalsCommand::Accept { from, into } => {
                let (from, into): (EntityId, EntityId) = (from.parse()?, into.parse()?);
                print_merge(cli, &memory.accept_merge_proposal(from, into).await?)
            }
            ProposalsCommand::Reject { from, into } => {
                let (from, into): (EntityId, EntityId) = (from.parse()?, into.parse()?);
                let p = memory.reject_merge_proposal(from, into).await?;
                if cli.json {
                    print_json(&p)
                } else {
                    println!("rejected: {} stays apart from {}", p.from_name, p.into_name);
                    Ok(())
                }
            }
        },
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
    let fact_query = "bucket quota";
    let facts = memory.search_facts(fact_query, 3).await?;
    let entities = memory.entities(false, 1000).await?.len();
    if json_mode {
        return print_json(&json!({
            "ingested": [doc, conv],
            "processed": report,
            "searches": envelopes.iter().map(|(q, e)| json!({"query": q, "envelope": e})).collect::<Vec<_>>(),
            "claim_search": {"query": claim_query, "envelope": claims},
            "fact_search": {"query": fact_query, "envelope": facts},
            "entities": entities,
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
    println!("embedder: {}\n", memory.embedder_generation());
    for (q, e) in &envelopes {
        println!("search: {q}");
        print_results(e);
        println!();
    }
    println!("claim search: {claim_query}");
    print_claim_results(&claims);
    println!();
    println!("fact search: {fact_query}  ({entities} entities resolved)");
    if facts.results.is_empty() {
        println!("no facts");
    }
    for (i, r) in facts.results.iter().enumerate() {
        println!("{}. {}", i + 1, fact_line(&r.fact));
    }
    println!();
    println!("Next: `remember ingest <files> --wait` then `remember search \"<question>\"`.");
    Ok(())
}

async fn keys(cli: &Cli, command: &KeysCommand) -> Result<(), Error> {
    match command {
        KeysCommand::Create { scopes, name } => {
            // Refused before the store is opened: bad input touches nothing.
            let scopes = scopes
                .iter()
                .map(|s| KeyScope::parse(s))
                .collect::<Result<Vec<_>, _>>()?;
            let memory = open(cli).await?;
            let (key, secret) = memory
                .create_api_key(cli.namespaces.clone(), scopes, name.clone())
                .await?;
            let warning =
                "This secret is shown once and never again: store it now (only its hash is kept).";
            if cli.json {
                eprintln!("{warning}");
                return print_json(&json!({ "key": key, "secret": secret }));
            }
            println!("created {}", key_line(&key));
            println!("secret: {secret}");
            println!("{warning}");
            Ok(())
        }
        KeysCommand::List => {
            let keys = open(cli).await?.api_keys().await?;
            if cli.json {
                return print_json(&json!({ "keys": keys }));
            }
            if keys.is_empty() {
                println!("no API keys: `remember keys create` makes one");
            }
            for k in &keys {
                println!("{}", key_line(k));
            }
            Ok(())
        }
        KeysCommand::Revoke { id } => {
            let key = open(cli).await?.revoke_api_key(id).await?;
            if cli.json {
                return print_json(&json!({ "key": key }));
            }
            println!("revoked {}", key_line(&key));
            Ok(())
        }
    }
}

/// One key on one line: id, prefix, name, namespaces, scopes, created, revoked.
fn key_line(k: &ApiKey) -> String {
    let scopes: Vec<&str> = k.scopes.iter().map(|s| s.as_str()).collect();
    format!(
        "{}  {}…  {}  namespaces={}  scopes={}  created={}  {}",
        k.id,
        k.prefix,
        k.name
            .as_deref()
            .map(|n| format!("{n:?}"))
            .unwrap_or_else(|| "-".into()),
        k.namespaces.join(","),
        scopes.join(","),
        rememberstack::time::to_rfc3339(&k.created_at),
        match &k.revoked_at {
            Some(t) => format!("revoked={}", rememberstack::time::to_rfc3339(t)),
            None => "active".into(),
        }
    )
}
