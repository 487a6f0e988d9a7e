//! Relevance: a probability-like score in [0, 1] on every ranked result, so that
//! an agent can tell "nothing I remember is about that" from "here is a weak best
//! guess".
//!
//! Fused scores are relative (a weighted sum scaled by the best lexical hit, or a
//! rank fusion): the best result of an unrelated question can score as high as the
//! best of a related one. Relevance is absolute instead: a logistic curve over the
//! result's semantic cosine with the question,
//! `1 / (1 + e^-(intercept + slope · cosine))`, one per embedding model. A curve is
//! fitted so that the best result's relevance is the probability that the memory
//! holds something about the question: on one LoCoMo conversation (conv-26), each
//! question's best cosine in its own conversation is a positive, and the best cosine
//! of the same question asked of another conversation (other people, other events)
//! a negative, the two classes weighted equally. The other nine conversations check
//! the fit (the documentation site's relevance page and the changelog give the
//! figures; `rememberstack-bench locomo --dump-results` writes the data).
//!
//! A result that only the lexical channel found has no cosine in the semantic
//! list; the list's lowest cosine stands in for it (the result ranked below every
//! listed one, so its cosine is at most that).
//!
//! An operation whose first page's results all score below the floor
//! (`[engine.relevance] floor`, default 0.5: more likely than not) answers with the
//! typed negative `no_relevant_memory` and its best relevance; the results are
//! still listed for the agent to inspect. A result whose text holds every content
//! word of the question (up to an ending: `work` / `worked`) keeps the answer from
//! being weak whatever its cosine: a name or rare word the model cannot place is
//! still a match.

use crate::embed::EmbedderIdentity;
use serde::{Deserialize, Serialize};

/// A logistic calibration of cosine similarity into relevance.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// The logistic intercept.
    pub intercept: f64,
    /// The logistic slope over the cosine.
    pub slope: f64,
}

impl Calibration {
    /// The relevance of a result with this cosine similarity to the question.
    pub fn relevance(&self, cosine: f64) -> f64 {
        let z = self.intercept + self.slope * cosine;
        let p = 1.0 / (1.0 + (-z).exp());
        // Rounded so that envelopes stay stable across platforms' last bits.
        (p * 10_000.0).round() / 10_000.0
    }

    /// Whether the curve is usable: finite, and rising with the cosine.
    pub fn validate(&self) -> Result<(), String> {
        if !self.intercept.is_finite() || !self.slope.is_finite() || self.slope <= 0.0 {
            return Err(format!(
                "[engine.relevance] calibration needs a finite intercept and a positive \
                 finite slope, not intercept = {}, slope = {}",
                self.intercept, self.slope
            ));
        }
        Ok(())
    }
}

/// The fitted curves, by embedding model (provider, model).
const FITTED: [(&str, &str, Calibration); 2] = [
    (
        "local",
        "all-MiniLM-L6-v2",
        Calibration {
            intercept: -30.18,
            slope: 56.81,
        },
    ),
    (
        "hashing",
        "",
        Calibration {
            intercept: -21.05,
            slope: 52.93,
        },
    ),
];

/// The curve for an embedder: the one fitted on its model; a model without a
/// fitted curve gets the default model's (`calibrated: false` in `status`).
pub fn calibration_for(embedder: &EmbedderIdentity) -> (Calibration, bool) {
    for (provider, model, c) in FITTED {
        if embedder.provider == provider && (model.is_empty() || embedder.model == model) {
            return (c, true);
        }
    }
    (FITTED[0].2, false)
}

/// `[engine.relevance]`: the floor below which an answer is `no_relevant_memory`,
/// and an optional curve for a model without a fitted one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RelevanceConfig {
    /// Answers whose best result scores below this are `no_relevant_memory`.
    pub floor: f64,
    /// A curve to use instead of the fitted one.
    pub calibration: Option<Calibration>,
}

/// The default floor.
pub const DEFAULT_FLOOR: f64 = 0.5;

impl Default for RelevanceConfig {
    fn default() -> Self {
        RelevanceConfig {
            floor: DEFAULT_FLOOR,
            calibration: None,
        }
    }
}

impl RelevanceConfig {
    /// Whether the settings are usable (checked at open).
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.floor) {
            return Err(format!(
                "[engine.relevance] floor must be between 0 and 1, not {}",
                self.floor
            ));
        }
        match &self.calibration {
            Some(c) => c.validate(),
            None => Ok(()),
        }
    }

    /// The curve in force for `embedder`, and whether it was fitted for it (or
    /// configured).
    pub fn curve(&self, embedder: &EmbedderIdentity) -> (Calibration, bool) {
        match self.calibration {
            Some(c) => (c, true),
            None => calibration_for(embedder),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(provider: &str, model: &str) -> EmbedderIdentity {
        EmbedderIdentity {
            provider: provider.into(),
            model: model.into(),
            dimension: 8,
            version: "1".into(),
        }
    }

    #[test]
    fn relevance_rises_with_the_cosine_within_zero_and_one() {
        let (c, fitted) = calibration_for(&id("local", "all-MiniLM-L6-v2"));
        assert!(fitted);
        let mut last = -1.0;
        for i in -10..=10 {
            let r = c.relevance(f64::from(i) / 10.0);
            assert!((0.0..=1.0).contains(&r), "{r}");
            assert!(r >= last, "{r} < {last}");
            last = r;
        }
        assert!(c.relevance(1.0) > c.relevance(0.0));
    }

    #[test]
    fn an_unknown_model_borrows_the_default_curve_and_says_so() {
        let (c, fitted) = calibration_for(&id("openai-compatible", "text-embedding-3-small"));
        assert!(!fitted);
        assert_eq!(c, FITTED[0].2);
        assert!(calibration_for(&id("hashing", "fnv")).1);
    }

    #[test]
    fn settings_out_of_range_are_refused() {
        let bad_floor = RelevanceConfig {
            floor: 1.5,
            calibration: None,
        };
        assert!(bad_floor.validate().unwrap_err().contains("floor"));
        let falling = RelevanceConfig {
            floor: 0.3,
            calibration: Some(Calibration {
                intercept: 0.0,
                slope: -1.0,
            }),
        };
        assert!(falling.validate().unwrap_err().contains("slope"));
        let nan = Calibration {
            intercept: f64::NAN,
            slope: 1.0,
        };
        assert!(nan.validate().is_err());
        assert!(RelevanceConfig::default().validate().is_ok());
    }
}
