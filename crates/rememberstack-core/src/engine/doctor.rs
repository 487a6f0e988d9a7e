//! `doctor`: the store and every configured provider checked with one cheap call
//! each.

use super::*;

impl Engine {
    /// Check the store and every configured provider with one cheap call each.
    pub async fn doctor(&self) -> DoctorReport {
        let mut checks = Vec::new();
        let started = std::time::Instant::now();
        let store = self.store.namespaces().await;
        checks.push(ProviderCheck {
            name: "store".into(),
            identity: self.store.kind().into(),
            ok: store.is_ok(),
            millis: started.elapsed().as_millis() as u64,
            error: store.err().map(|e| e.to_string()),
        });
        // Forgets that could not finish (their namespaces are closed) and a file
        // rewrite a forget left pending.
        let started = std::time::Instant::now();
        let problems = match (
            self.store.pending_forgets().await,
            self.store.file_rewrite_pending().await,
            self.store.manifest_root_warning().await,
        ) {
            (Ok(pending), Ok(rewrite), Ok(hosts)) => {
                let mut lines: Vec<String> = pending.iter().map(|p| p.describe()).collect();
                if let Some(reason) = rewrite {
                    lines.push(format!(
                        "the database file rewrite after a forget is pending ({reason}); every \
                         row is erased and freed pages are zeroed; it is retried when the store \
                         next opens or forgets"
                    ));
                }
                lines.extend(hosts);
                lines
            }
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => vec![e.to_string()],
        };
        checks.push(ProviderCheck {
            name: "forgets".into(),
            identity: self.store.kind().into(),
            ok: problems.is_empty(),
            millis: started.elapsed().as_millis() as u64,
            error: (!problems.is_empty()).then(|| problems.join("\n")),
        });
        let started = std::time::Instant::now();
        let embedded = self
            .embedder
            .embed(&["doctor".to_string()], EmbedPurpose::Query)
            .await;
        let error = match &embedded {
            Ok(v) if v.len() == 1 && v[0].len() == self.embedder.identity().dimension => None,
            Ok(_) => Some("the embedder returned a vector of the wrong shape".to_string()),
            Err(e) => Some(e.to_string()),
        }
        // A semantic model that could not be had is a problem to fix, even though
        // the hashing embedder standing in works.
        .or_else(|| {
            self.embedder_fallback()
                .map(|why| format!("{why} (the hashing embedder stands in: lexical, not semantic)"))
        });
        checks.push(ProviderCheck {
            name: "embedder".into(),
            identity: self.embedder.identity().generation(),
            ok: error.is_none(),
            millis: started.elapsed().as_millis() as u64,
            error,
        });
        // Every configured chat seat, each distinct model once (offline seats have
        // none).
        let mut seats: Vec<(&str, &Arc<dyn crate::chat::ChatModel>)> = Vec::new();
        if let Some(m) = &self.extractor {
            seats.extend([("selection", &m.selection), ("claimify", &m.claimify)]);
        }
        let f = &self.fact_models;
        for (seat, model) in [
            ("normalize", &f.normalizer),
            ("resolve", &f.resolver),
            ("adjudicate", &f.adjudicator),
        ] {
            if let Some(model) = model {
                seats.push((seat, model));
            }
        }
        {
            let mut seen: Vec<String> = Vec::new();
            for (seat, model) in seats {
                if seen.contains(&model.model().to_string()) {
                    continue;
                }
                seen.push(model.model().to_string());
                let request = crate::chat::ChatRequest::new(
                    "doctor",
                    "You check connectivity. Answer with JSON only.",
                    "Reply with {\"ok\": true}.",
                    "doctor",
                    serde_json::json!({
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["ok"],
                        "properties": {"ok": {"type": "boolean"}}
                    }),
                );
                let started = std::time::Instant::now();
                let answer = model.complete_json(&request).await;
                checks.push(ProviderCheck {
                    name: format!("chat:{seat}"),
                    identity: model.model().to_string(),
                    ok: answer.is_ok(),
                    millis: started.elapsed().as_millis() as u64,
                    error: answer.err().map(|e| e.to_string()),
                });
            }
        }
        DoctorReport {
            ok: checks.iter().all(|c| c.ok),
            offline_extractor: self.extractor.is_none(),
            checks,
        }
    }
}
