//! Ingest: a source in, its lineage and version recorded, its work enqueued.

use super::*;

impl Engine {
    /// Store a source and enqueue its processing. Bad input is refused with a typed
    /// error and writes nothing; identical bytes to the lineage's latest version are a no-op.
    pub async fn ingest(&self, req: IngestRequest) -> Result<IngestReceipt> {
        self.ingest_with(req, None).await
    }

    /// [`Engine::ingest`], recording a note revision with the version.
    pub(super) async fn ingest_with(
        &self,
        mut req: IngestRequest,
        mut note: Option<NewNote>,
    ) -> Result<IngestReceipt> {
        validate_namespace(&req.namespace)?;
        validate_lineage(&req.source_kind, &req.source_ref)?;
        if req.bytes.iter().all(|b| b.is_ascii_whitespace()) {
            return Err(Error::new(
                ErrorCode::EmptyInput,
                "the input is empty: nothing to remember",
            ));
        }
        if req.bytes.len() as u64 > self.config.max_source_bytes {
            return Err(Error::new(
                ErrorCode::TooLarge,
                format!(
                    "the input is {} bytes, over the maximum source size of {} bytes (raise max_source_bytes in the configuration)",
                    req.bytes.len(),
                    self.config.max_source_bytes
                ),
            ));
        }
        // Convert once now to refuse bad input before anything is written and to read
        // the metadata the source declares; the prepare stage converts again. Routing,
        // conversion and hashing are CPU work over up to max_source_bytes: they run
        // on the blocking pool so a large source never stalls the async runtime.
        let (bytes, format, converted, sha256) = {
            let bytes = std::mem::take(&mut req.bytes);
            let (kind, file_name, source_time) = (req.kind, req.file_name.clone(), req.source_time);
            blocking(move || {
                let format = route(kind, file_name.as_deref(), &bytes);
                let converted = match format {
                    Some(f) => Some(text::convert(f, &bytes, source_time)?),
                    None => None,
                };
                let sha256 = sha256_hex(&bytes);
                Ok((bytes, format, converted, sha256))
            })
            .await?
        };
        let now = self.clock.now();
        let declared = converted
            .as_ref()
            .map(|c| c.metadata.clone())
            .unwrap_or_default();
        let source_modified_at = match format {
            Some(SourceFormat::Conversation) => declared
                .created_at
                .or(req.source_time)
                .or(req.file_modified_at)
                .unwrap_or(now),
            _ => req.source_time.or(req.file_modified_at).unwrap_or(now),
        };
        let metadata = DocumentMetadata {
            file_name: req.file_name.clone().map(Field::connector),
            title: declared
                .title
                .clone()
                .map(Field::source)
                .or_else(|| req.title.clone().map(Field::connector)),
            authors: (!declared.authors.is_empty())
                .then(|| Field::source(declared.authors.clone())),
            created_at: declared.created_at.map(Field::source),
            modified_at: req
                .source_time
                .or(req.file_modified_at)
                .map(Field::connector),
            language: declared.language.clone().map(Field::source),
            thread_ref: req.thread_ref.clone().map(Field::connector),
        };
        let namespace = self.store.ensure_namespace(&req.namespace, now).await?;
        let version_id = VersionId::new();
        let mut work = NewWork::now(
            namespace.id,
            Stage::Prepare,
            version_id.uuid(),
            version_id,
            self.component_version(Stage::Prepare),
            now,
        );
        if format.is_none() {
            work.defer_reason = Some(DeferReason::NoRoute);
        }
        let mime = match format {
            Some(f) => f.mime().to_string(),
            None => guess_mime(req.file_name.as_deref()),
        };
        let outcome = self
            .store
            .create_version(NewVersion {
                namespace_id: namespace.id,
                document_id: DocumentId::new(),
                version_id,
                source_kind: req.source_kind.clone(),
                source_ref: req.source_ref.clone(),
                mode: req.mode,
                content: ContentObject {
                    sha256,
                    mime,
                    bytes,
                },
                format,
                source_modified_at,
                origin: req.origin,
                metadata,
                work,
                expected_latest: req.expected_latest,
                admission: req.admission,
                distinct: req.distinct,
                note: note.take(),
                principal: req.principal.clone(),
                now,
            })
            .await?;
        let (document_id, version_id, created, new_lineage) = match outcome {
            VersionOutcome::Created {
                document_id,
                version_id,
                new_lineage,
            } => (document_id, version_id, true, new_lineage),
            VersionOutcome::Unchanged {
                document_id,
                version_id,
            } => (document_id, version_id, false, false),
        };
        tracing::info!(namespace = %req.namespace, %document_id, %version_id, created, "ingested");
        Ok(IngestReceipt {
            namespace: req.namespace,
            document_id,
            version_id,
            outcome: if created { "created" } else { "unchanged" }.to_string(),
            new_lineage,
            format,
            parked: format.is_none(),
            source_kind: req.source_kind,
            source_ref: req.source_ref,
        })
    }
}
