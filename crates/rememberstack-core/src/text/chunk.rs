//! The chunker: packs whole blocks into retrieval-sized chunks.
//!
//! Chunks never cross a section and partition each section's blocks.
//! Packing is greedy within a token budget and restarts at *anchor* blocks,
//! chosen by a deterministic function of the block hash. Because a chunk's
//! boundaries depend only on the blocks since the last anchor, an edit only
//! changes the chunks between the previous anchor and the next one, and an
//! append changes at most the last chunk: earlier chunks stay byte-identical
//! and their embeddings can be reused.

use super::lexical::estimate_tokens;
use super::{Block, BlockKind, Section};
use crate::hash::{sha256_hex, sha256_parts};
use serde::{Deserialize, Serialize};

/// Version of the chunker's behaviour; bump it when chunk boundaries or hashes change.
pub const CHUNKER_VERSION: &str = "chunker-v1";

/// Chunking parameters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChunkParams {
    /// The maximum [`estimate_tokens`] of a chunk (an oversized atomic block
    /// or unsplittable word is the only exception).
    pub token_budget: usize,
    /// On average one block in `anchor_period` is an anchor where packing
    /// restarts (0 disables anchors, 1 makes every block an anchor).
    pub anchor_period: u32,
}

impl Default for ChunkParams {
    fn default() -> Self {
        ChunkParams {
            token_budget: 256,
            anchor_period: 6,
        }
    }
}

impl ChunkParams {
    /// The component version recorded with chunks made with these parameters,
    /// e.g. `chunker-v1;budget=256;anchor=6`.
    pub fn component_version(&self) -> String {
        format!(
            "{CHUNKER_VERSION};budget={};anchor={}",
            self.token_budget, self.anchor_period
        )
    }
}

/// One planned chunk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkPlan {
    /// Position in document order, from 0.
    pub ordinal: u32,
    /// The section holding the chunk.
    pub section_ordinal: u32,
    /// First block ordinal (inclusive).
    pub block_start: u32,
    /// One past the last block ordinal.
    pub block_end: u32,
    /// Byte offset of the first byte in the Markdown.
    pub start: usize,
    /// Byte offset one past the last byte.
    pub end: usize,
    /// Unicode scalar offset of `start`.
    pub char_start: usize,
    /// Unicode scalar offset of `end`.
    pub char_end: usize,
    /// Exactly `markdown[start..end]`.
    pub text: String,
    /// sha256 over the ordered block hashes (or, for a part of a split block,
    /// over the block hash, `"part"`, the part index and the part text's sha256).
    pub content_hash: String,
    /// [`estimate_tokens`] of `text`.
    pub token_estimate: u32,
}

/// Whether a block with this hash is an anchor for `anchor_period`: the first
/// 8 hex digits of the hash, as a `u32`, are divisible by the period.
/// (The chunker never treats a section's first block, or a block right after
/// a heading, as an anchor.)
pub fn is_anchor_hash(hash: &str, anchor_period: u32) -> bool {
    if anchor_period == 0 {
        return false;
    }
    hash.get(..8)
        .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .is_some_and(|v| v % anchor_period == 0)
}

/// Largest char boundary `<= i` (clamped to the text).
fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A valid `(start, end)` span of `s` close to the requested one.
fn valid_span(s: &str, start: usize, end: usize) -> (usize, usize) {
    let start = floor_boundary(s, start);
    let end = floor_boundary(s, end).max(start);
    (start, end)
}

/// Sentence spans of `text` (relative, trimmed): a sentence ends after `.`,
/// `!` or `?` followed by whitespace.
fn sentence_spans(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut iter = text.char_indices().peekable();
    while let Some((pos, c)) = iter.next() {
        if start.is_none() {
            if c.is_whitespace() {
                continue;
            }
            start = Some(pos);
        }
        let next_is_space = iter.peek().is_some_and(|(_, n)| n.is_whitespace());
        if matches!(c, '.' | '!' | '?')
            && next_is_space
            && let Some(s) = start.take()
        {
            out.push((s, pos + c.len_utf8()));
        }
    }
    if let Some(s) = start {
        let end = text.trim_end().len();
        if end > s {
            out.push((s, end));
        }
    }
    out
}

/// Spans of the whitespace-separated words of `text[start..end]` (absolute in `text`).
fn word_spans(text: &str, start: usize, end: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let Some(slice) = text.get(start..end) else {
        return out;
    };
    let mut word_start: Option<usize> = None;
    for (pos, c) in slice.char_indices() {
        if c.is_whitespace() {
            if let Some(ws) = word_start.take() {
                out.push((start + ws, start + pos));
            }
        } else if word_start.is_none() {
            word_start = Some(pos);
        }
    }
    if let Some(ws) = word_start {
        out.push((start + ws, end));
    }
    out
}

/// `estimate_tokens(text[a..c])`, given `est = estimate_tokens(text[a..b])`
/// for `a <= b <= c`, without rescanning `a..b` unless an alphanumeric run
/// straddles `b` (the only case where the estimate is not additive).
fn extend_estimate(text: &str, a: usize, b: usize, c: usize, est: usize) -> usize {
    let before = text.get(..b).and_then(|t| t.chars().next_back());
    let after = text.get(b..).and_then(|t| t.chars().next());
    if before.is_some_and(char::is_alphanumeric) && after.is_some_and(char::is_alphanumeric) {
        estimate_tokens(text.get(a..c).unwrap_or(""))
    } else {
        est + estimate_tokens(text.get(b..c).unwrap_or(""))
    }
}

/// Greedily pack consecutive, ordered spans of `text` into groups whose
/// covering slice stays within `budget` tokens; a span over budget forms its
/// own group.
fn pack_spans(text: &str, spans: &[(usize, usize)], budget: usize, out: &mut Vec<(usize, usize)>) {
    // The open group: (start, end, estimate of text[start..end]).
    let mut current: Option<(usize, usize, usize)> = None;
    for &(s, e) in spans {
        current = match current {
            None => Some((s, e, estimate_tokens(text.get(s..e).unwrap_or("")))),
            Some((cs, ce, est)) => {
                let joined = extend_estimate(text, cs, ce, e, est);
                if joined <= budget {
                    Some((cs, e, joined))
                } else {
                    out.push((cs, ce));
                    Some((s, e, estimate_tokens(text.get(s..e).unwrap_or(""))))
                }
            }
        };
    }
    out.extend(current.map(|(s, e, _)| (s, e)));
}

/// Split an oversized block's text into parts within `budget` (relative spans):
/// at sentence boundaries, an oversized sentence at whitespace, an oversized
/// word kept whole.
fn split_parts(text: &str, budget: usize) -> Vec<(usize, usize)> {
    let mut parts = Vec::new();
    let mut pending: Vec<(usize, usize)> = Vec::new();
    for (s, e) in sentence_spans(text) {
        if estimate_tokens(text.get(s..e).unwrap_or("")) > budget {
            pack_spans(text, &pending, budget, &mut parts);
            pending.clear();
            pack_spans(text, &word_spans(text, s, e), budget, &mut parts);
        } else {
            pending.push((s, e));
        }
    }
    pack_spans(text, &pending, budget, &mut parts);
    parts
}

/// Running conversion from byte offsets to Unicode scalar offsets.
struct CharCounter<'a> {
    text: &'a str,
    byte: usize,
    chars: usize,
}

impl CharCounter<'_> {
    fn at(&mut self, byte: usize) -> usize {
        if byte < self.byte {
            self.byte = 0;
            self.chars = 0;
        }
        self.chars += self
            .text
            .get(self.byte..byte)
            .map_or(0, |s| s.chars().count());
        self.byte = byte;
        self.chars
    }
}

struct Emitter<'a> {
    markdown: &'a str,
    chars: CharCounter<'a>,
    out: Vec<ChunkPlan>,
}

impl Emitter<'_> {
    fn push(
        &mut self,
        section: u32,
        blocks: (u32, u32),
        span: (usize, usize),
        content_hash: String,
    ) {
        let (start, end) = valid_span(self.markdown, span.0, span.1);
        let text = self.markdown.get(start..end).unwrap_or("").to_string();
        let char_start = self.chars.at(start);
        let char_end = self.chars.at(end);
        self.out.push(ChunkPlan {
            ordinal: self.out.len() as u32,
            section_ordinal: section,
            block_start: blocks.0,
            block_end: blocks.1,
            start,
            end,
            char_start,
            char_end,
            token_estimate: u32::try_from(estimate_tokens(&text)).unwrap_or(u32::MAX),
            text,
            content_hash,
        });
    }

    /// Emit the whole blocks `first..=last` as one chunk.
    fn run(&mut self, section: u32, all: &[Block], first: usize, last: usize) {
        let (Some(a), Some(b)) = (all.get(first), all.get(last)) else {
            return;
        };
        let hash = sha256_parts(all[first..=last].iter().map(|b| b.hash.as_bytes()));
        self.push(
            section,
            (first as u32, last as u32 + 1),
            (a.start, b.end),
            hash,
        );
    }
}

/// Plan the chunks of a document.
///
/// A chunk is a run of whole consecutive blocks inside one section; the chunks
/// of a section partition its blocks, ordinals are global in document order.
/// Packing is greedy: blocks are added while the chunk's [`estimate_tokens`]
/// stays within `token_budget`. It restarts at every anchor block
/// ([`is_anchor_hash`]; never a section's first block or a block right after a
/// heading) and at every heading, so a heading always begins a chunk together
/// with what follows it when that fits.
///
/// An oversized atomic block ([`BlockKind::is_atomic`]) is one chunk, whole.
/// An oversized other block is split at sentence boundaries (an oversized
/// sentence at whitespace; a single oversized word stays whole) into part
/// chunks with `block_start = i`, `block_end = i + 1` and disjoint, ordered
/// spans covering the block's non-whitespace text.
pub fn chunk_document(
    markdown: &str,
    blocks: &[Block],
    sections: &[Section],
    params: &ChunkParams,
) -> Vec<ChunkPlan> {
    let budget = params.token_budget.max(1);
    let mut em = Emitter {
        markdown,
        chars: CharCounter {
            text: markdown,
            byte: 0,
            chars: 0,
        },
        out: Vec::new(),
    };
    let block_text = |b: &Block| {
        let (s, e) = valid_span(markdown, b.start, b.end);
        markdown.get(s..e).unwrap_or("")
    };
    for section in sections {
        let sec = section.ordinal;
        let first = section.block_start as usize;
        let end = (section.block_end as usize).min(blocks.len());
        // The open run of whole blocks: (first, last inclusive, its estimate).
        let mut current: Option<(usize, usize, usize)> = None;
        for i in first..end {
            let block = &blocks[i];
            let after_heading = i > first && blocks[i - 1].kind == BlockKind::Heading;
            let restart = i > first
                && (block.kind == BlockKind::Heading
                    || (!after_heading && is_anchor_hash(&block.hash, params.anchor_period)));
            if restart && let Some((f, l, _)) = current.take() {
                em.run(sec, blocks, f, l);
            }
            let text = block_text(block);
            let tokens = estimate_tokens(text);
            if tokens > budget {
                if let Some((f, l, _)) = current.take() {
                    em.run(sec, blocks, f, l);
                }
                let parts = if block.kind.is_atomic() {
                    Vec::new()
                } else {
                    split_parts(text, budget)
                };
                if parts.len() <= 1 {
                    em.run(sec, blocks, i, i);
                } else {
                    let (base, _) = valid_span(markdown, block.start, block.end);
                    for (p, (s, e)) in parts.into_iter().enumerate() {
                        let part_text = text.get(s..e).unwrap_or("");
                        let hash = sha256_parts([
                            block.hash.as_str(),
                            "part",
                            p.to_string().as_str(),
                            sha256_hex(part_text.as_bytes()).as_str(),
                        ]);
                        em.push(sec, (i as u32, i as u32 + 1), (base + s, base + e), hash);
                    }
                }
                continue;
            }
            current = match current {
                None => Some((i, i, tokens)),
                Some((f, l, est)) => {
                    let (s, mid) = valid_span(markdown, blocks[f].start, blocks[l].end);
                    let (_, e) = valid_span(markdown, mid, block.end);
                    let joined = extend_estimate(markdown, s, mid, e, est);
                    if joined <= budget {
                        Some((f, i, joined))
                    } else {
                        em.run(sec, blocks, f, l);
                        Some((i, i, tokens))
                    }
                }
            };
        }
        if let Some((f, l, _)) = current {
            em.run(sec, blocks, f, l);
        }
    }
    em.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::blockize::blockize;
    use crate::text::blockize::tests::markdown_doc;
    use crate::text::convert::convert;
    use crate::text::sections::build_sections;
    use crate::text::{Representation, SourceFormat};
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn plan(md: &str, params: &ChunkParams) -> (Vec<Block>, Vec<Section>, Vec<ChunkPlan>) {
        let blocks = blockize(&Representation {
            markdown: md.to_string(),
            turns: Vec::new(),
        });
        let sections = build_sections(md, &blocks, "Doc");
        let chunks = chunk_document(md, &blocks, &sections, params);
        (blocks, sections, chunks)
    }

    fn params(budget: usize, anchor: u32) -> ChunkParams {
        ChunkParams {
            token_budget: budget,
            anchor_period: anchor,
        }
    }

    /// Assert the structural guarantees of [`chunk_document`].
    fn assert_chunks(
        md: &str,
        blocks: &[Block],
        sections: &[Section],
        chunks: &[ChunkPlan],
        p: &ChunkParams,
    ) {
        let mut next_chunk = 0usize;
        let mut prev_end = 0usize;
        for s in sections {
            // Chunks of this section, in order.
            let mine: Vec<&ChunkPlan> = chunks
                .iter()
                .filter(|c| c.section_ordinal == s.ordinal)
                .collect();
            let mut covered = s.block_start;
            let mut open_part: Option<u32> = None;
            for c in &mine {
                assert_eq!(c.ordinal as usize, next_chunk, "ordinals in document order");
                next_chunk += 1;
                assert!(c.start >= prev_end, "chunks overlap: {c:?}");
                prev_end = c.end;
                assert!(c.start < c.end);
                assert_eq!(c.text, md[c.start..c.end]);
                assert_eq!(c.char_start, md[..c.start].chars().count());
                assert_eq!(c.char_end, md[..c.end].chars().count());
                assert_eq!(c.token_estimate as usize, estimate_tokens(&c.text));
                assert!(c.block_start < c.block_end);
                assert!(c.block_start >= s.block_start && c.block_end <= s.block_end);
                let first = &blocks[c.block_start as usize];
                let last = &blocks[c.block_end as usize - 1];
                let is_part = c.start != first.start || c.end != last.end;
                if is_part {
                    assert_eq!(c.block_end, c.block_start + 1, "parts are within one block");
                    assert!(c.start >= first.start && c.end <= first.end);
                    if open_part != Some(c.block_start) {
                        assert_eq!(c.block_start, covered, "gap before split block");
                        open_part = Some(c.block_start);
                    }
                    covered = c.block_end;
                    assert!(
                        c.token_estimate as usize <= p.token_budget
                            || !c.text.contains(char::is_whitespace)
                    );
                } else {
                    open_part = None;
                    assert_eq!(c.block_start, covered, "gap or overlap in section {s:?}");
                    covered = c.block_end;
                    let atomic = c.block_end == c.block_start + 1;
                    assert!(
                        c.token_estimate as usize <= p.token_budget || atomic,
                        "over budget: {c:?}"
                    );
                }
            }
            assert_eq!(covered, s.block_end, "section {s:?} not covered");
        }
        assert_eq!(next_chunk, chunks.len(), "every chunk belongs to a section");
    }

    #[test]
    fn component_version_and_defaults() {
        assert_eq!(
            ChunkParams::default().component_version(),
            "chunker-v1;budget=256;anchor=6"
        );
        assert!(!is_anchor_hash("00000000", 0));
        assert!(is_anchor_hash("00000006ffff", 6));
        assert!(!is_anchor_hash("00000007ffff", 6));
        assert!(!is_anchor_hash("zz", 6));
        assert!(!is_anchor_hash("+0000006", 6));
    }

    #[test]
    fn packs_within_sections_and_keeps_headings_with_content() {
        let md =
            "Intro one.\n\nIntro two.\n\n# A\n\nalpha beta.\n\ngamma delta.\n\n## B\n\nepsilon.\n";
        let p = params(1000, 0);
        let (blocks, sections, chunks) = plan(md, &p);
        assert_chunks(md, &blocks, &sections, &chunks, &p);
        let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "Intro one.\n\nIntro two.",
                "# A\n\nalpha beta.\n\ngamma delta.",
                "## B\n\nepsilon."
            ]
        );
        assert_eq!(chunks[1].section_ordinal, 1);
        assert_eq!((chunks[1].block_start, chunks[1].block_end), (2, 5));
        assert_eq!(
            chunks[1].content_hash,
            sha256_parts(blocks[2..5].iter().map(|b| b.hash.as_bytes()))
        );
    }

    #[test]
    fn budget_splits_runs_greedily() {
        // Each paragraph is 2 tokens ("wordN" + "."), so budget 5 holds two.
        let md = (0..7)
            .map(|i| format!("w{i}."))
            .collect::<Vec<_>>()
            .join("\n\n");
        let p = params(5, 0);
        let (blocks, sections, chunks) = plan(&md, &p);
        assert_chunks(&md, &blocks, &sections, &chunks, &p);
        let runs: Vec<(u32, u32)> = chunks
            .iter()
            .map(|c| (c.block_start, c.block_end))
            .collect();
        assert_eq!(runs, vec![(0, 2), (2, 4), (4, 6), (6, 7)]);
    }

    #[test]
    fn oversized_atomic_block_is_whole() {
        let rows: String = (0..60).map(|i| format!("| r{i} | v{i} |\n")).collect();
        let md = format!("Before.\n\n| a | b |\n|---|---|\n{rows}\nAfter.");
        let p = params(20, 0);
        let (blocks, sections, chunks) = plan(&md, &p);
        assert_chunks(&md, &blocks, &sections, &chunks, &p);
        let table = chunks
            .iter()
            .find(|c| blocks[c.block_start as usize].kind == BlockKind::Table)
            .expect("table chunk");
        assert!(table.token_estimate > 20);
        assert_eq!(table.block_end, table.block_start + 1);
        let b = &blocks[table.block_start as usize];
        assert_eq!((table.start, table.end), (b.start, b.end));
    }

    #[test]
    fn oversized_paragraph_splits_at_sentences() {
        let sentences: Vec<String> = (0..30)
            .map(|i| format!("Sentence número {i} dit bonjour 🎉 à tous!"))
            .collect();
        let giant_sentence = (0..80)
            .map(|i| format!("mot{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        let md = format!(
            "# T\n\n{}\n{giant_sentence}. Tail sentence.\n\n{}",
            sentences.join(" "),
            "x".repeat(500)
        );
        let p = params(24, 0);
        let (blocks, sections, chunks) = plan(&md, &p);
        assert_chunks(&md, &blocks, &sections, &chunks, &p);
        let para = 1u32;
        let parts: Vec<&ChunkPlan> = chunks.iter().filter(|c| c.block_start == para).collect();
        assert!(parts.len() > 5, "{parts:?}");
        let b = &blocks[para as usize];
        assert_eq!(parts[0].start, b.start);
        assert_eq!(parts[parts.len() - 1].end, b.end);
        for w in parts.windows(2) {
            assert!(w[0].end <= w[1].start);
            assert!(md[w[0].end..w[1].start].trim().is_empty());
        }
        // Sentence boundaries are respected where sentences fit.
        assert!(parts[0].text.ends_with('!'));
        // The giant sentence is split at whitespace.
        assert!(parts.iter().any(|c| c.text.starts_with("mot")));
        // Parts have distinct hashes.
        let hashes: BTreeSet<&str> = parts.iter().map(|c| c.content_hash.as_str()).collect();
        assert_eq!(hashes.len(), parts.len());
        // The single giant word is kept whole.
        let last = chunks.last().expect("chunks");
        assert_eq!(last.text, "x".repeat(500));
        // The heading is alone only because its follower does not fit.
        assert_eq!(chunks[0].text, "# T");
    }

    #[test]
    fn anchors_limit_the_effect_of_an_edit() {
        let paras: Vec<String> = (0..120)
            .map(|i| format!("Paragraph {i} about topic {} with some words.", i * 7 % 13))
            .collect();
        let old_md = paras.join("\n\n");
        let mut edited = paras.clone();
        edited[60] =
            "An entirely rewritten paragraph, much longer than before, with many more words in it."
                .into();
        let new_md = edited.join("\n\n");
        let p = params(40, 4);
        let (old_blocks, _, old_chunks) = plan(&old_md, &p);
        let (_, _, new_chunks) = plan(&new_md, &p);
        // Segment bounds around the edited block.
        let anchor = |i: usize| i > 0 && is_anchor_hash(&old_blocks[i].hash, p.anchor_period);
        let seg_start = (0..=60).rev().find(|&i| anchor(i)).unwrap_or(0) as u32;
        let seg_end = (61..old_blocks.len())
            .find(|&i| anchor(i))
            .unwrap_or(old_blocks.len()) as u32;
        assert!(
            seg_end < old_blocks.len() as u32,
            "test needs an anchor after the edit"
        );
        let new_set: BTreeSet<(&str, &str)> = new_chunks
            .iter()
            .map(|c| (c.content_hash.as_str(), c.text.as_str()))
            .collect();
        let mut reused = 0;
        for c in &old_chunks {
            let outside = c.block_end <= seg_start || c.block_start >= seg_end;
            let kept = new_set.contains(&(c.content_hash.as_str(), c.text.as_str()));
            if outside {
                assert!(kept, "chunk outside the edited segment changed: {c:?}");
                reused += 1;
            }
        }
        assert!(
            reused * 10 >= old_chunks.len() * 7,
            "{reused} of {}",
            old_chunks.len()
        );
    }

    #[test]
    fn empty_inputs() {
        assert!(chunk_document("", &[], &[], &ChunkParams::default()).is_empty());
        let (_, _, chunks) = plan("one", &params(0, 1));
        assert_eq!(chunks.len(), 1);
    }

    #[test]
    fn sentence_and_word_spans() {
        let t = "Hi there. How are you?  Fine!Yes… ok";
        let spans: Vec<&str> = sentence_spans(t).iter().map(|&(s, e)| &t[s..e]).collect();
        assert_eq!(spans, vec!["Hi there.", "How are you?", "Fine!Yes… ok"]);
        let w: Vec<&str> = word_spans(t, 0, 9).iter().map(|&(s, e)| &t[s..e]).collect();
        assert_eq!(w, vec!["Hi", "there."]);
    }

    fn conversation_bytes(turns: &[(usize, String)]) -> Vec<u8> {
        let speakers = ["Ann", "Bob", "Zoë", "李"];
        let messages: Vec<serde_json::Value> = turns
            .iter()
            .enumerate()
            .map(|(i, (s, t))| {
                serde_json::json!({
                    "event_id": i,
                    "speaker": speakers[s % speakers.len()],
                    "text": t,
                })
            })
            .collect();
        serde_json::to_vec(&serde_json::json!({ "messages": messages })).unwrap_or_default()
    }

    fn conversation_chunks(bytes: &[u8], p: &ChunkParams) -> (Vec<Block>, Vec<ChunkPlan>) {
        let converted = convert(SourceFormat::Conversation, bytes, None).expect("converts");
        let rep = converted.representation;
        let blocks = blockize(&rep);
        let sections = build_sections(&rep.markdown, &blocks, "chat");
        assert_eq!(sections.len(), 1);
        let chunks = chunk_document(&rep.markdown, &blocks, &sections, p);
        assert_chunks(&rep.markdown, &blocks, &sections, &chunks, p);
        (blocks, chunks)
    }

    fn turn_text() -> impl Strategy<Value = String> {
        let word = prop_oneof![
            "[a-z]{1,9}",
            Just("café".to_string()),
            Just("東京".to_string()),
            Just("🎉".to_string()),
            Just("done.".to_string()),
            Just("really?".to_string()),
        ];
        prop::collection::vec(word, 1..60).prop_map(|w| w.join(" "))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn chunks_partition_sections(
            md in markdown_doc(),
            budget in 1usize..80,
            anchor in 0u32..8,
        ) {
            let p = params(budget, anchor);
            let (blocks, sections, chunks) = plan(&md, &p);
            assert_chunks(&md, &blocks, &sections, &chunks, &p);
        }

        #[test]
        fn extend_estimate_is_exact(text in "[ a-zé🎉.,\n]{0,60}", cuts in prop::collection::vec(0usize..61, 3)) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| floor_boundary(&text, c)).collect();
            cuts.sort_unstable();
            let (a, b, c) = (cuts[0], cuts[1], cuts[2]);
            let est = estimate_tokens(&text[a..b]);
            prop_assert_eq!(extend_estimate(&text, a, b, c, est), estimate_tokens(&text[a..c]));
        }

        #[test]
        fn chunking_is_deterministic(md in markdown_doc(), budget in 1usize..80) {
            let p = params(budget, 3);
            let (blocks, sections, chunks) = plan(&md, &p);
            prop_assert_eq!(&chunk_document(&md, &blocks, &sections, &p), &chunks);
            prop_assert_eq!(plan(&md, &p).2, chunks);
        }

        #[test]
        fn appending_turns_only_changes_the_end(
            turns in prop::collection::vec((0usize..4, turn_text()), 20..=60),
            extra in prop::collection::vec((0usize..4, turn_text()), 1..=10),
            budget in 16usize..120,
            anchor in 2u32..8,
        ) {
            let p = params(budget, anchor);
            let (old_blocks, old) = conversation_chunks(&conversation_bytes(&turns), &p);
            let mut all = turns.clone();
            all.extend(extra);
            let (_, new) = conversation_chunks(&conversation_bytes(&all), &p);

            let new_set: BTreeSet<(&str, &str, usize)> = new
                .iter()
                .map(|c| (c.content_hash.as_str(), c.text.as_str(), c.start))
                .collect();
            let reused: Vec<bool> = old
                .iter()
                .map(|c| new_set.contains(&(c.content_hash.as_str(), c.text.as_str(), c.start)))
                .collect();
            // Non-reused old chunks form a suffix…
            let first_changed = reused.iter().position(|r| !r).unwrap_or(reused.len());
            prop_assert!(reused[first_changed..].iter().all(|r| !r), "{:?}", reused);
            // …that starts at or after the last anchor before the append point…
            let last_anchor = (1..old_blocks.len())
                .rev()
                .find(|&i| is_anchor_hash(&old_blocks[i].hash, p.anchor_period))
                .unwrap_or(0) as u32;
            for c in &old[first_changed..] {
                prop_assert!(c.block_start >= last_anchor, "{:?} before anchor {}", c, last_anchor);
            }
            // …and greedy packing means at most the last old chunk changes.
            let changed = reused.len() - first_changed;
            prop_assert!(changed <= 1, "{} old chunks changed", changed);
            let ratio = (old.len() - changed) as f64 / old.len() as f64;
            prop_assert!(ratio >= (old.len() as f64 - 1.0) / old.len() as f64);
        }
    }
}
