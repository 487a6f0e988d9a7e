//! The blockizer: splits a representation into paragraph-grain [`Block`]s.
//!
//! Conversations (a representation with turns) give one block per turn.
//! Everything else is segmented with pulldown-cmark into one block per
//! top-level element (each top-level list item on its own). Blocks are tight
//! (no trailing whitespace), ordered, disjoint and together cover every
//! non-whitespace byte of the Markdown.

use super::{Block, BlockKind, Representation, TurnMeta};
use crate::hash::sha256_parts;
use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag};

/// Version of the blockizer's behaviour; bump it when block boundaries or hashes change.
pub const BLOCKIZER_VERSION: &str = "blockizer-v1";

/// The Markdown extensions the engine parses with (tables, strikethrough,
/// task lists, footnotes). Shared by every parse in `text` so all agree.
pub(crate) fn markdown_options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES
}

/// The snake_case name of a block kind (as serialized), used in block hashes.
pub fn kind_name(kind: BlockKind) -> &'static str {
    match kind {
        BlockKind::Paragraph => "paragraph",
        BlockKind::Heading => "heading",
        BlockKind::ListItem => "list_item",
        BlockKind::Table => "table",
        BlockKind::Code => "code",
        BlockKind::Quote => "quote",
        BlockKind::Turn => "turn",
        BlockKind::Other => "other",
    }
}

/// The hash of a block: sha256 over its kind name, its level (empty when
/// none) and its text with every whitespace run collapsed to one space.
pub fn block_hash(kind: BlockKind, level: Option<u8>, text: &str) -> String {
    let level = level.map(|l| l.to_string()).unwrap_or_default();
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    sha256_parts([kind_name(kind), level.as_str(), collapsed.as_str()])
}

fn heading_level_u8(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// Largest char boundary `<= i` (clamped to the text).
fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Narrow `[start, end)` to exclude leading (if `lead`) and trailing whitespace.
/// Returns `None` when nothing but whitespace remains.
fn tighten(s: &str, start: usize, end: usize, lead: bool) -> Option<(usize, usize)> {
    let start = floor_boundary(s, start);
    let end = floor_boundary(s, end);
    if start >= end {
        return None;
    }
    let slice = s.get(start..end)?;
    let trimmed_end = slice.trim_end();
    let new_end = start + trimmed_end.len();
    let new_start = if lead {
        new_end - trimmed_end.trim_start().len()
    } else {
        start
    };
    (new_start < new_end).then_some((new_start, new_end))
}

/// One raw span found by the parser, before coverage repair.
struct Span {
    kind: BlockKind,
    level: Option<u8>,
    start: usize,
    end: usize,
}

fn markdown_spans(md: &str) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    let mut depth = 0usize;
    let mut top_is_list = false;
    for (event, range) in Parser::new_ext(md, markdown_options()).into_offset_iter() {
        match event {
            Event::Start(tag) => {
                if depth == 0 {
                    let kind_level = match &tag {
                        Tag::List(_) => None,
                        Tag::Paragraph => Some((BlockKind::Paragraph, None)),
                        Tag::Heading { level, .. } => {
                            Some((BlockKind::Heading, Some(heading_level_u8(*level))))
                        }
                        Tag::Table(_) => Some((BlockKind::Table, None)),
                        Tag::CodeBlock(_) => Some((BlockKind::Code, None)),
                        Tag::BlockQuote(_) => Some((BlockKind::Quote, None)),
                        _ => Some((BlockKind::Other, None)),
                    };
                    top_is_list = kind_level.is_none();
                    if let Some((kind, level)) = kind_level {
                        spans.push(Span {
                            kind,
                            level,
                            start: range.start,
                            end: range.end,
                        });
                    }
                } else if depth == 1 && top_is_list && matches!(tag, Tag::Item) {
                    spans.push(Span {
                        kind: BlockKind::ListItem,
                        level: None,
                        start: range.start,
                        end: range.end,
                    });
                }
                depth += 1;
            }
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    top_is_list = false;
                }
            }
            _ => {
                if depth == 0 {
                    spans.push(Span {
                        kind: BlockKind::Other,
                        level: None,
                        start: range.start,
                        end: range.end,
                    });
                }
            }
        }
    }
    spans
}

/// Make parser spans tight, ordered and disjoint, then fill every gap that
/// holds non-whitespace with an `Other` span.
fn repair(md: &str, mut raw: Vec<Span>) -> Vec<Span> {
    raw.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    let mut tight: Vec<Span> = Vec::with_capacity(raw.len());
    for span in raw {
        let prev_end = tight.last().map_or(0, |p| p.end);
        // Drop spans contained in the previous one; cut overlapping ones.
        let (start, lead) = if span.start < prev_end {
            (prev_end, true)
        } else {
            (span.start, false)
        };
        if let Some((start, end)) = tighten(md, start, span.end, lead) {
            tight.push(Span { start, end, ..span });
        }
    }
    let mut out: Vec<Span> = Vec::with_capacity(tight.len());
    let mut cursor = 0usize;
    for span in tight {
        if let Some((s, e)) = tighten(md, cursor, span.start, true) {
            out.push(Span {
                kind: BlockKind::Other,
                level: None,
                start: s,
                end: e,
            });
        }
        cursor = span.end;
        out.push(span);
    }
    if let Some((s, e)) = tighten(md, cursor, md.len(), true) {
        out.push(Span {
            kind: BlockKind::Other,
            level: None,
            start: s,
            end: e,
        });
    }
    out
}

/// Split a representation into blocks.
///
/// With turns: exactly one [`BlockKind::Turn`] block per turn, spanning the
/// turn. Otherwise one block per top-level Markdown element: paragraph,
/// heading (with level), each top-level list item (nested lists stay in their
/// item), table, code block, block quote; anything else (HTML blocks, rules,
/// footnote definitions, text the parser skips such as link reference
/// definitions) becomes [`BlockKind::Other`].
///
/// Guarantees: blocks are ordered, disjoint, non-empty, on char boundaries,
/// without trailing whitespace, and every non-whitespace byte of the Markdown
/// lies in a block. `ordinal` is the index; `hash` is [`block_hash`].
pub fn blockize(rep: &Representation) -> Vec<Block> {
    let md = rep.markdown.as_str();
    if !rep.turns.is_empty() {
        return rep
            .turns
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let start = floor_boundary(md, t.start);
                let end = floor_boundary(md, t.end).max(start);
                let text = md.get(start..end).unwrap_or("");
                Block {
                    ordinal: i as u32,
                    kind: BlockKind::Turn,
                    level: None,
                    start,
                    end,
                    hash: block_hash(BlockKind::Turn, None, text),
                    turn: Some(TurnMeta {
                        speaker: t.speaker.clone(),
                        event_id: t.event_id.clone(),
                        timestamp: t.timestamp,
                    }),
                }
            })
            .collect();
    }
    repair(md, markdown_spans(md))
        .into_iter()
        .enumerate()
        .map(|(i, s)| Block {
            ordinal: i as u32,
            kind: s.kind,
            level: s.level,
            start: s.start,
            end: s.end,
            hash: block_hash(s.kind, s.level, md.get(s.start..s.end).unwrap_or("")),
            turn: None,
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::text::TurnSpan;
    use proptest::prelude::*;

    fn rep(md: &str) -> Representation {
        Representation {
            markdown: md.to_string(),
            turns: Vec::new(),
        }
    }

    fn kinds(md: &str) -> Vec<(BlockKind, Option<u8>, String)> {
        blockize(&rep(md))
            .into_iter()
            .map(|b| (b.kind, b.level, md[b.start..b.end].to_string()))
            .collect()
    }

    /// Assert the coverage guarantee of [`blockize`] on `md`.
    pub(crate) fn assert_coverage(md: &str, blocks: &[Block]) {
        let mut prev_end = 0usize;
        for (i, b) in blocks.iter().enumerate() {
            assert_eq!(b.ordinal as usize, i);
            assert!(b.start < b.end, "empty block {b:?}");
            assert!(b.start >= prev_end, "overlap at block {i}: {blocks:?}");
            assert!(b.end <= md.len());
            assert!(md.is_char_boundary(b.start) && md.is_char_boundary(b.end));
            let text = &md[b.start..b.end];
            assert_eq!(text.trim_end(), text, "block {i} not tight");
            let gap = &md[prev_end..b.start];
            assert!(gap.trim().is_empty(), "uncovered {gap:?} in {md:?}");
            prev_end = b.end;
        }
        assert!(md[prev_end..].trim().is_empty(), "uncovered tail in {md:?}");
    }

    #[test]
    fn segments_top_level_elements() {
        let md = "# Title\n\nIntro paragraph\nsecond line.\n\n- one\n- two\n  - nested\n\n1. first\n\n2. second\n\n```rust\nfn main() {}\n\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> quoted\n> more\n\n---\n\n<div>html</div>\n\n## Sub\n";
        let got = kinds(md);
        let want = vec![
            (BlockKind::Heading, Some(1), "# Title".to_string()),
            (
                BlockKind::Paragraph,
                None,
                "Intro paragraph\nsecond line.".to_string(),
            ),
            (BlockKind::ListItem, None, "- one".to_string()),
            (BlockKind::ListItem, None, "- two\n  - nested".to_string()),
            (BlockKind::ListItem, None, "1. first".to_string()),
            (BlockKind::ListItem, None, "2. second".to_string()),
            (
                BlockKind::Code,
                None,
                "```rust\nfn main() {}\n\n```".to_string(),
            ),
            (
                BlockKind::Table,
                None,
                "| a | b |\n|---|---|\n| 1 | 2 |".to_string(),
            ),
            (BlockKind::Quote, None, "> quoted\n> more".to_string()),
            (BlockKind::Other, None, "---".to_string()),
            (BlockKind::Other, None, "<div>html</div>".to_string()),
            (BlockKind::Heading, Some(2), "## Sub".to_string()),
        ];
        assert_eq!(got, want);
        assert_coverage(md, &blockize(&rep(md)));
    }

    #[test]
    fn link_reference_definitions_are_covered() {
        let md = "Text with [a link][x].\n\n[x]: https://example.com \"T\"\n\nAfter.\n";
        let got = kinds(md);
        assert_eq!(
            got,
            vec![
                (BlockKind::Paragraph, None, "Text with [a link][x].".into()),
                (
                    BlockKind::Other,
                    None,
                    "[x]: https://example.com \"T\"".into()
                ),
                (BlockKind::Paragraph, None, "After.".into()),
            ]
        );
    }

    #[test]
    fn setext_heading_and_multibyte() {
        let md = "Überschrift 🎉\n=====\n\nTexte accentué — ünïcödé 東京.";
        let got = kinds(md);
        assert_eq!(got[0].0, BlockKind::Heading);
        assert_eq!(got[0].1, Some(1));
        assert_eq!(got[0].2, "Überschrift 🎉\n=====");
        assert_eq!(got[1].2, "Texte accentué — ünïcödé 東京.");
    }

    #[test]
    fn empty_and_whitespace_give_no_blocks() {
        assert!(blockize(&rep("")).is_empty());
        assert!(blockize(&rep(" \n\n\t\n")).is_empty());
    }

    #[test]
    fn hash_ignores_whitespace_layout_but_not_kind() {
        let a = block_hash(BlockKind::Paragraph, None, "a  b\nc");
        assert_eq!(a, block_hash(BlockKind::Paragraph, None, "a b c"));
        assert_ne!(a, block_hash(BlockKind::Quote, None, "a b c"));
        assert_ne!(
            block_hash(BlockKind::Heading, Some(1), "x"),
            block_hash(BlockKind::Heading, Some(2), "x")
        );
        let blocks = blockize(&rep("para one\n\npara  one"));
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].hash, blocks[1].hash);
    }

    #[test]
    fn turns_give_one_block_each() {
        let md = "Ann: hi\n\nBob: hello 🎉";
        let r = Representation {
            markdown: md.into(),
            turns: vec![
                TurnSpan {
                    start: 0,
                    end: 7,
                    speaker: "Ann".into(),
                    event_id: Some("e1".into()),
                    timestamp: None,
                },
                TurnSpan {
                    start: 9,
                    end: md.len(),
                    speaker: "Bob".into(),
                    event_id: None,
                    timestamp: None,
                },
            ],
        };
        let blocks = blockize(&r);
        assert_eq!(blocks.len(), 2);
        assert!(blocks.iter().all(|b| b.kind == BlockKind::Turn));
        assert_eq!(&md[blocks[1].start..blocks[1].end], "Bob: hello 🎉");
        assert_eq!(
            blocks[0].turn.as_ref().and_then(|t| t.event_id.as_deref()),
            Some("e1")
        );
        assert_eq!(
            blocks[1].turn.as_ref().map(|t| t.speaker.as_str()),
            Some("Bob")
        );
        assert_coverage(md, &blocks);
    }

    /// A generator of Markdown-ish documents mixing every block construct,
    /// multibyte text and emoji.
    pub(crate) fn markdown_doc() -> impl Strategy<Value = String> {
        let word = prop_oneof![
            "[a-z]{1,8}",
            Just("éàü".to_string()),
            Just("東京".to_string()),
            Just("🎉".to_string()),
            Just("Ωμέγα".to_string()),
            Just("*em*".to_string()),
            Just("`code`".to_string()),
            Just("[link](http://x.y)".to_string()),
            Just("end.".to_string()),
            Just("what?".to_string()),
        ];
        let line = prop::collection::vec(word, 1..8).prop_map(|w| w.join(" "));
        let element = prop_oneof![
            (1usize..7, line.clone()).prop_map(|(n, l)| format!("{} {l}", "#".repeat(n))),
            prop::collection::vec(line.clone(), 1..4).prop_map(|ls| ls.join("\n")),
            prop::collection::vec((line.clone(), any::<bool>()), 1..5).prop_map(|items| {
                items
                    .into_iter()
                    .map(|(l, nested)| {
                        if nested {
                            format!("- {l}\n  - {l}")
                        } else {
                            format!("- {l}")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            }),
            prop::collection::vec(line.clone(), 1..4)
                .prop_map(|ls| format!("1. {}", ls.join("\n2. "))),
            prop::collection::vec(line.clone(), 0..4)
                .prop_map(|ls| format!("```\n{}\n```", ls.join("\n\n"))),
            (line.clone(), line.clone())
                .prop_map(|(a, b)| format!("| {a} | x |\n|---|---|\n| {b} | 🎉 |")),
            line.clone().prop_map(|l| format!("> {l}\n> {l}")),
            Just("---".to_string()),
            Just("<div>\nraw html é\n</div>".to_string()),
            Just("[ref]: http://example.com".to_string()),
            Just("Setext\n---".to_string()),
            line.clone().prop_map(|l| format!("    indented {l}")),
            "[ -~éü🎉#>|*_`\\-\n\t]{0,30}",
        ];
        let sep = prop_oneof![
            Just("\n\n"),
            Just("\n"),
            Just("\r\n\r\n"),
            Just("\n\n\n"),
            Just(" \n\n")
        ];
        prop::collection::vec((element, sep), 0..14).prop_map(|parts| {
            let mut s = String::new();
            for (e, sep) in parts {
                s.push_str(&e);
                s.push_str(sep);
            }
            s
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn blocks_cover_generated_markdown(md in markdown_doc()) {
            let blocks = blockize(&rep(&md));
            assert_coverage(&md, &blocks);
            prop_assert_eq!(blockize(&rep(&md)), blocks);
        }

        #[test]
        fn blocks_cover_arbitrary_text(md in "\\PC{0,200}") {
            assert_coverage(&md, &blockize(&rep(&md)));
        }
    }
}
