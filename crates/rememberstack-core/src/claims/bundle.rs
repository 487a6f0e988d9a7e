//! Building the context bundle an extractor reads for one target chunk (D31, D119).
//!
//! The target chunk is cut into labelled sentence passages (`T1`, `T2`, …) the
//! extractor cites; up to `neighbours` chunks on each side in the same section
//! contribute whole-block passages (`N1`, …) as context. Every passage is an
//! exact, tight slice of the version's `document.md`.

use super::{ContextBundle, DocumentHeader, Passage, PassageRole};
use crate::text::{Block, BlockKind};

/// A stored chunk's coordinates (the parts of a chunk row the bundle needs).
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkSpan {
    /// Position in document order.
    pub ordinal: u32,
    /// The section holding the chunk.
    pub section_ordinal: u32,
    /// First block ordinal (inclusive).
    pub block_start: u32,
    /// One past the last block ordinal.
    pub block_end: u32,
    /// Byte offset of the first byte in `document.md`.
    pub start: usize,
    /// Byte offset one past the last byte.
    pub end: usize,
}

/// Characters that end a sentence.
fn is_terminal(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '\u{2026}')
}

/// Characters that may follow the terminal punctuation inside the sentence.
fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | '\u{201D}' | '\u{2019}' | ')' | ']' | '}' | '\u{00BB}'
    )
}

/// Whether `c` may begin a new sentence after terminal punctuation.
fn starts_sentence(c: char) -> bool {
    (c.is_alphabetic() && !c.is_lowercase())
        || c.is_ascii_digit()
        || matches!(
            c,
            '"' | '\''
                | '\u{201C}'
                | '\u{2018}'
                | '('
                | '['
                | '{'
                | '\u{00AB}'
                | '\u{00BF}'
                | '\u{00A1}'
        )
}

/// Abbreviations that do not end a sentence (lowercase, without the final dot).
const ABBREVIATIONS: &[&str] = &[
    "dr", "e.g", "etc", "i.e", "jr", "mr", "mrs", "ms", "prof", "sr", "st", "vs",
];

/// Whether the `.` at byte `dot` ends an abbreviation or an initial.
fn is_abbreviation(text: &str, dot: usize) -> bool {
    let before = &text[..dot];
    let word_start = before
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphabetic() || *c == '.')
        .last()
        .map_or(dot, |(i, _)| i);
    let word = &before[word_start..];
    if word.is_empty() {
        return false;
    }
    let mut chars = word.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        // A single capital: an initial ("J. K. Rowling").
        return c.is_uppercase();
    }
    let lower = word.to_lowercase();
    ABBREVIATIONS.contains(&lower.as_str())
}

fn push_trimmed(text: &str, start: usize, end: usize, out: &mut Vec<(usize, usize)>) {
    let Some(slice) = text.get(start..end) else {
        return;
    };
    let lead = slice.len() - slice.trim_start().len();
    let trimmed = slice.trim();
    if !trimmed.is_empty() {
        out.push((start + lead, start + lead + trimmed.len()));
    }
}

/// Deterministic sentence segmentation: `(start, end)` byte spans of `text`,
/// ordered, non-empty, trimmed of whitespace and on char boundaries.
///
/// A sentence ends after a run of `.` `!` `?` `…` (with any closing quotes or
/// brackets) followed by whitespace and then an uppercase or uncased letter, a
/// digit, an opening quote or an opening bracket — but not after a single `.`
/// ending an abbreviation (`Mr.`, `Mrs.`, `Ms.`, `Dr.`, `St.`, `e.g.`, `i.e.`,
/// `vs.`, `etc.`, `Jr.`, `Sr.`, `Prof.`) or a one-letter initial; decimals
/// such as `3.5` never split (no whitespace follows the dot). A sentence also
/// ends at a newline, unless the next line begins with a lowercase letter (a
/// soft-wrapped line continues the sentence).
pub fn sentences(text: &str) -> Vec<(usize, usize)> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let n = chars.len();
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut k = 0;
    while k < n {
        let (pos, c) = chars[k];
        if start.is_none() {
            if c.is_whitespace() {
                k += 1;
                continue;
            }
            start = Some(pos);
        }
        if c == '\n' {
            let continues = chars[k + 1..]
                .iter()
                .find(|(_, c)| !c.is_whitespace())
                .is_some_and(|(_, c)| c.is_lowercase());
            if !continues && let Some(s) = start.take() {
                push_trimmed(text, s, pos, &mut out);
            }
            k += 1;
            continue;
        }
        if is_terminal(c) {
            let mut j = k + 1;
            while j < n && is_terminal(chars[j].1) {
                j += 1;
            }
            let single_dot = c == '.' && j == k + 1;
            while j < n && is_closer(chars[j].1) {
                j += 1;
            }
            let end = chars.get(j).map_or(text.len(), |(p, _)| *p);
            let followed_by_space = chars.get(j).is_some_and(|(_, c)| c.is_whitespace());
            if followed_by_space {
                let next = chars[j..].iter().find(|(_, c)| !c.is_whitespace());
                if next.is_some_and(|(_, c)| starts_sentence(*c))
                    && !(single_dot && is_abbreviation(text, pos))
                    && let Some(s) = start.take()
                {
                    push_trimmed(text, s, end, &mut out);
                }
            }
            k = j;
            continue;
        }
        k += 1;
    }
    if let Some(s) = start {
        push_trimmed(text, s, text.len(), &mut out);
    }
    out
}

/// Largest char boundary `<= i` (clamped to the text).
fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The tight (whitespace-trimmed) part of `[start, end)` ∩ `[lo, hi)`, if any.
fn tight(doc: &str, start: usize, end: usize, lo: usize, hi: usize) -> Option<(usize, usize)> {
    let s = floor_boundary(doc, start.max(lo));
    let e = floor_boundary(doc, end.min(hi));
    if s >= e {
        return None;
    }
    let mut spans = Vec::with_capacity(1);
    push_trimmed(doc, s, e, &mut spans);
    spans.pop()
}

/// The blocks with ordinals in `[a, b)` (blocks are ordered by ordinal).
fn block_range(blocks: &[Block], a: u32, b: u32) -> &[Block] {
    let lo = blocks.partition_point(|x| x.ordinal < a);
    let hi = blocks.partition_point(|x| x.ordinal < b).max(lo);
    &blocks[lo..hi]
}

/// Skip Markdown line markers (`>`, `-`, `*`, `+`, `1.`, `1)`) at the start
/// of a sentence that begins a line; returns the new start.
fn skip_markers(doc: &str, start: usize, end: usize, block_start: usize) -> usize {
    let line_start = start <= block_start
        || doc[..start]
            .chars()
            .rev()
            .take_while(|c| *c != '\n')
            .all(char::is_whitespace);
    if !line_start {
        return start;
    }
    let Some(slice) = doc.get(start..end) else {
        return start;
    };
    let bytes = slice.as_bytes();
    let mut i = 0;
    // Block-quote markers.
    while i < bytes.len() && bytes[i] == b'>' {
        i += 1;
        while i < bytes.len() && bytes[i] == b' ' {
            i += 1;
        }
    }
    // One list marker.
    let marker_end = match bytes.get(i) {
        Some(b'-' | b'*' | b'+') => Some(i + 1),
        Some(b) if b.is_ascii_digit() => {
            let mut j = i;
            while j < bytes.len() && j - i < 9 && bytes[j].is_ascii_digit() {
                j += 1;
            }
            matches!(bytes.get(j), Some(b'.' | b')')).then_some(j + 1)
        }
        _ => None,
    };
    if let Some(m) = marker_end
        && bytes.get(m).is_some_and(|b| *b == b' ' || *b == b'\t')
    {
        i = m;
    }
    while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
        i += 1;
    }
    start + i
}

fn passage(doc: &str, role: PassageRole, span: (usize, usize), block: &Block) -> Passage {
    Passage {
        label: String::new(),
        role,
        start: span.0,
        end: span.1,
        text: doc[span.0..span.1].to_string(),
        turn: block.turn.clone(),
    }
}

/// The target passages of one block, limited to `[lo, hi)`.
fn target_passages(doc: &str, block: &Block, lo: usize, hi: usize, out: &mut Vec<Passage>) {
    let (bs, be) = (
        floor_boundary(doc, block.start),
        floor_boundary(doc, block.end),
    );
    if let Some(turn) = &block.turn {
        // Skip the `Speaker:` label: it stays in target_text, it is not a passage.
        let label_end = doc
            .get(bs..be)
            .and_then(|t| t.strip_prefix(turn.speaker.as_str()))
            .filter(|rest| !turn.speaker.is_empty() && rest.starts_with(':'))
            .map_or(bs, |_| bs + turn.speaker.len() + 1);
        let s = floor_boundary(doc, label_end.max(lo).max(bs));
        let e = floor_boundary(doc, be.min(hi));
        if s < e {
            for (a, b) in sentences(&doc[s..e]) {
                out.push(passage(doc, PassageRole::Target, (s + a, s + b), block));
            }
        }
        return;
    }
    match block.kind {
        BlockKind::Heading | BlockKind::Code | BlockKind::Table => {
            if let Some(span) = tight(doc, bs, be, lo, hi) {
                out.push(passage(doc, PassageRole::Target, span, block));
            }
        }
        _ => {
            let s = floor_boundary(doc, bs.max(lo));
            let e = floor_boundary(doc, be.min(hi));
            if s >= e {
                return;
            }
            for (a, b) in sentences(&doc[s..e]) {
                let (a, b) = (s + a, s + b);
                let a2 = skip_markers(doc, a, b, bs);
                if let Some(span) = tight(doc, a2, b, a2, b) {
                    out.push(passage(doc, PassageRole::Target, span, block));
                }
            }
        }
    }
}

/// Neighbour passages of one chunk: its blocks, whole (limited to the chunk's
/// range for a part of a split block), tight.
fn neighbour_passages(doc: &str, blocks: &[Block], chunk: &ChunkSpan, out: &mut Vec<Passage>) {
    for block in block_range(blocks, chunk.block_start, chunk.block_end) {
        if let Some(span) = tight(doc, block.start, block.end, chunk.start, chunk.end) {
            out.push(passage(doc, PassageRole::Neighbour, span, block));
        }
    }
}

/// Build the context bundle for `chunks[target]`.
///
/// - Target passages are the sentences ([`sentences`]) of the target chunk,
///   labelled `T1`, `T2`, … in order. For a conversation turn (a block with
///   `turn`), sentences are taken in the turn text after the `Speaker:` label
///   (the label stays in `target_text` but is no passage) and each passage
///   carries the turn's metadata. A heading, code block or table is one
///   passage. In other blocks, Markdown line markers (`>`, `-`, `1.`) at the
///   start of a sentence are left out of its passage.
/// - Neighbour passages are the blocks (whole, tight) of up to `neighbours`
///   chunks before and after the target chunk in the same section, labelled
///   `N1`, … in document order (before, then after).
/// - `is_conversation` is whether any target block is a turn; `target_text` is
///   `document_md[chunk.start..chunk.end]`.
///
/// `blocks` must be ordered by ordinal and `chunks` in document order. An
/// out-of-range `target` gives a bundle with no passages. Never panics.
pub fn build_bundle(
    document_md: &str,
    blocks: &[Block],
    chunks: &[ChunkSpan],
    target: usize,
    header: DocumentHeader,
    section_path: Vec<String>,
    neighbours: usize,
) -> ContextBundle {
    let doc = document_md;
    let mut bundle = ContextBundle {
        header,
        section_path,
        is_conversation: false,
        target: Vec::new(),
        before: Vec::new(),
        after: Vec::new(),
        target_text: String::new(),
    };
    let Some(chunk) = chunks.get(target) else {
        return bundle;
    };
    let cs = floor_boundary(doc, chunk.start);
    let ce = floor_boundary(doc, chunk.end).max(cs);
    bundle.target_text = doc[cs..ce].to_string();
    let target_blocks = block_range(blocks, chunk.block_start, chunk.block_end);
    bundle.is_conversation = target_blocks.iter().any(|b| b.turn.is_some());
    for block in target_blocks {
        target_passages(doc, block, cs, ce, &mut bundle.target);
    }
    for (i, p) in bundle.target.iter_mut().enumerate() {
        p.label = format!("T{}", i + 1);
    }

    let same_section = |c: &&ChunkSpan| c.section_ordinal == chunk.section_ordinal;
    let before: Vec<&ChunkSpan> = chunks[..target]
        .iter()
        .rev()
        .take_while(same_section)
        .take(neighbours)
        .collect();
    for c in before.into_iter().rev() {
        neighbour_passages(doc, blocks, c, &mut bundle.before);
    }
    for c in chunks[target + 1..]
        .iter()
        .take_while(same_section)
        .take(neighbours)
    {
        neighbour_passages(doc, blocks, c, &mut bundle.after);
    }
    for (i, p) in bundle
        .before
        .iter_mut()
        .chain(bundle.after.iter_mut())
        .enumerate()
    {
        p.label = format!("N{}", i + 1);
    }
    bundle
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::text::TurnMeta;
    use crate::time::Timestamp;
    use proptest::prelude::*;

    fn texts(text: &str) -> Vec<&str> {
        sentences(text)
            .into_iter()
            .map(|(a, b)| &text[a..b])
            .collect()
    }

    #[test]
    fn sentence_table() {
        let cases: &[(&str, &[&str])] = &[
            (
                "Hello there. How are you?",
                &["Hello there.", "How are you?"],
            ),
            (
                "Yep! I chose to write about this.",
                &["Yep!", "I chose to write about this."],
            ),
            (
                "Mr. Smith met Dr. Jones at St. Paul's. Then they left.",
                &["Mr. Smith met Dr. Jones at St. Paul's.", "Then they left."],
            ),
            (
                "Fruit, e.g. Apples, i.e. Red ones, vs. Pears etc. are fine.",
                &["Fruit, e.g. Apples, i.e. Red ones, vs. Pears etc. are fine."],
            ),
            (
                "It costs 3.5 dollars. OK.",
                &["It costs 3.5 dollars.", "OK."],
            ),
            (
                "J. K. Rowling wrote it. Wow!",
                &["J. K. Rowling wrote it.", "Wow!"],
            ),
            (
                "He said \"Stop.\" Then he left.",
                &["He said \"Stop.\"", "Then he left."],
            ),
            (
                "Really?! \"Yes\" (she nodded). 2023 was big…  Indeed.",
                &[
                    "Really?!",
                    "\"Yes\" (she nodded).",
                    "2023 was big…",
                    "Indeed.",
                ],
            ),
            (
                "lowercase after. dot stays",
                &["lowercase after. dot stays"],
            ),
            (
                "Line one\nLine two\nand a wrapped end.",
                &["Line one", "Line two\nand a wrapped end."],
            ),
            ("  padded  \n\n  ", &["padded"]),
            (
                "Ünïcødé ok. Ébène next! 東京。 次",
                &["Ünïcødé ok.", "Ébène next!", "東京。 次"],
            ),
            ("Yay! 🎉 I did it", &["Yay! 🎉 I did it"]),
            ("", &[]),
            ("...", &["..."]),
        ];
        for (text, expected) in cases {
            assert_eq!(&texts(text), expected, "{text:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn sentence_spans_are_tight_ordered_and_cover(text in "[a-zA-Z0-9 .!?\n\"'()é🎉…]{0,80}") {
            let spans = sentences(&text);
            let mut last = 0;
            for &(a, b) in &spans {
                prop_assert!(a < b && a >= last);
                prop_assert!(text.is_char_boundary(a) && text.is_char_boundary(b));
                let s = &text[a..b];
                prop_assert_eq!(s, s.trim());
                last = b;
            }
            // Every non-whitespace character lies in a sentence.
            let covered: usize = spans.iter().map(|&(a, b)| text[a..b].chars().filter(|c| !c.is_whitespace()).count()).sum();
            prop_assert_eq!(covered, text.chars().filter(|c| !c.is_whitespace()).count());
        }
    }

    /// A conversation as `document.md` and its turn blocks.
    pub(crate) fn conversation(
        turns: &[(&str, &str)],
        time: Option<Timestamp>,
    ) -> (String, Vec<Block>) {
        let mut md = String::new();
        let mut blocks = Vec::new();
        for (i, (speaker, text)) in turns.iter().enumerate() {
            if i > 0 {
                md.push_str("\n\n");
            }
            let start = md.len();
            md.push_str(speaker);
            md.push_str(": ");
            md.push_str(text);
            blocks.push(Block {
                ordinal: i as u32,
                kind: BlockKind::Turn,
                level: None,
                start,
                end: md.len(),
                hash: format!("h{i}"),
                turn: Some(TurnMeta {
                    speaker: speaker.to_string(),
                    event_id: Some(format!("e{i}")),
                    timestamp: time,
                }),
            });
        }
        (md, blocks)
    }

    /// Chunks of `per` consecutive blocks each, all in section 0.
    pub(crate) fn chunks_of(blocks: &[Block], per: usize) -> Vec<ChunkSpan> {
        blocks
            .chunks(per.max(1))
            .enumerate()
            .map(|(i, group)| ChunkSpan {
                ordinal: i as u32,
                section_ordinal: 0,
                block_start: group[0].ordinal,
                block_end: group[group.len() - 1].ordinal + 1,
                start: group[0].start,
                end: group[group.len() - 1].end,
            })
            .collect()
    }

    pub(crate) fn header(time: Option<Timestamp>) -> DocumentHeader {
        DocumentHeader {
            title: "Chat".into(),
            source_kind: "conversation".into(),
            source_time: time,
            file_name: None,
        }
    }

    fn check_exact(md: &str, b: &ContextBundle) {
        for p in b.target.iter().chain(&b.before).chain(&b.after) {
            assert_eq!(&md[p.start..p.end], p.text, "{}", p.label);
            assert_eq!(p.text, p.text.trim());
        }
    }

    #[test]
    fn conversation_bundle() {
        let (md, blocks) = conversation(
            &[
                ("Caroline", "Hi Mel! How are you?"),
                ("Melanie", "Great. I painted a lake sunrise.\nIt took ages."),
                ("Caroline", "Is that your third one?"),
                ("Melanie", "Yep! I chose it."),
                ("Caroline", "Nice."),
            ],
            None,
        );
        let chunks = chunks_of(&blocks, 2);
        let b = build_bundle(
            &md,
            &blocks,
            &chunks,
            1,
            header(None),
            vec!["Chat".into()],
            1,
        );
        check_exact(&md, &b);
        assert!(b.is_conversation);
        let t: Vec<(&str, &str, &str)> = b
            .target
            .iter()
            .map(|p| {
                (
                    p.label.as_str(),
                    p.text.as_str(),
                    p.turn.as_ref().unwrap().speaker.as_str(),
                )
            })
            .collect();
        assert_eq!(
            t,
            vec![
                ("T1", "Is that your third one?", "Caroline"),
                ("T2", "Yep!", "Melanie"),
                ("T3", "I chose it.", "Melanie"),
            ]
        );
        assert_eq!(
            b.target_text,
            "Caroline: Is that your third one?\n\nMelanie: Yep! I chose it."
        );
        let n: Vec<(&str, &str)> = b
            .before
            .iter()
            .chain(&b.after)
            .map(|p| (p.label.as_str(), p.text.as_str()))
            .collect();
        assert_eq!(
            n,
            vec![
                ("N1", "Caroline: Hi Mel! How are you?"),
                (
                    "N2",
                    "Melanie: Great. I painted a lake sunrise.\nIt took ages."
                ),
                ("N3", "Caroline: Nice."),
            ]
        );
        assert!(
            b.before
                .iter()
                .chain(&b.after)
                .all(|p| p.role == PassageRole::Neighbour && p.turn.is_some())
        );
        // Zero neighbours, first chunk, out of range.
        let b0 = build_bundle(&md, &blocks, &chunks, 0, header(None), vec![], 0);
        assert!(b0.before.is_empty() && b0.after.is_empty());
        assert_eq!(b0.target.len(), 5);
        assert_eq!(b0.target[3].text, "I painted a lake sunrise.");
        assert_eq!(b0.target[4].text, "It took ages.");
        let none = build_bundle(&md, &blocks, &chunks, 9, header(None), vec![], 1);
        assert!(none.target.is_empty() && none.target_text.is_empty());
    }

    fn block(ordinal: u32, kind: BlockKind, md: &str, text: &str) -> Block {
        let start = md.find(text).unwrap();
        Block {
            ordinal,
            kind,
            level: (kind == BlockKind::Heading).then_some(1),
            start,
            end: start + text.len(),
            hash: format!("h{ordinal}"),
            turn: None,
        }
    }

    #[test]
    fn document_bundle_sections_and_markers() {
        let md = "# Intro\n\nWe founded Acme in 2019. It grew.\n\n- First item. Second part.\n- 2. numbered\n\n> Quoted line. More.\n\n## Next\n\nOther section.";
        let blocks = vec![
            block(0, BlockKind::Heading, md, "# Intro"),
            block(
                1,
                BlockKind::Paragraph,
                md,
                "We founded Acme in 2019. It grew.",
            ),
            block(2, BlockKind::ListItem, md, "- First item. Second part."),
            block(3, BlockKind::ListItem, md, "- 2. numbered"),
            block(4, BlockKind::Quote, md, "> Quoted line. More."),
            block(5, BlockKind::Heading, md, "## Next"),
            block(6, BlockKind::Paragraph, md, "Other section."),
        ];
        let span = |o: u32, s: u32, a: usize, b: usize| ChunkSpan {
            ordinal: o,
            section_ordinal: s,
            block_start: a as u32,
            block_end: b as u32,
            start: blocks[a].start,
            end: blocks[b - 1].end,
        };
        let chunks = vec![span(0, 0, 0, 2), span(1, 0, 2, 5), span(2, 1, 5, 7)];
        let b = build_bundle(
            md,
            &blocks,
            &chunks,
            1,
            header(None),
            vec!["Intro".into()],
            2,
        );
        check_exact(md, &b);
        assert!(!b.is_conversation);
        let t: Vec<&str> = b.target.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(
            t,
            vec![
                "First item.",
                "Second part.",
                "2. numbered",
                "Quoted line.",
                "More."
            ]
        );
        let n: Vec<&str> = b.before.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(n, vec!["# Intro", "We founded Acme in 2019. It grew."]);
        assert!(b.after.is_empty(), "the next chunk is in another section");
        let h = build_bundle(md, &blocks, &chunks, 0, header(None), vec![], 0);
        let t: Vec<&str> = h.target.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(t, vec!["# Intro", "We founded Acme in 2019.", "It grew."]);
    }

    #[test]
    fn split_block_parts() {
        let (md, blocks) = conversation(&[("Ann", "One here. Two there. Three everywhere.")], None);
        let mid = md.find("Two").unwrap();
        let chunks = vec![
            ChunkSpan {
                ordinal: 0,
                section_ordinal: 0,
                block_start: 0,
                block_end: 1,
                start: 0,
                end: mid - 1,
            },
            ChunkSpan {
                ordinal: 1,
                section_ordinal: 0,
                block_start: 0,
                block_end: 1,
                start: mid,
                end: md.len(),
            },
        ];
        let b = build_bundle(&md, &blocks, &chunks, 1, header(None), vec![], 1);
        check_exact(&md, &b);
        let t: Vec<&str> = b.target.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(t, vec!["Two there.", "Three everywhere."]);
        assert_eq!(b.before.len(), 1);
        assert_eq!(b.before[0].text, "Ann: One here.");
        // Garbage offsets do not panic.
        let bad = vec![ChunkSpan {
            ordinal: 0,
            section_ordinal: 0,
            block_start: 0,
            block_end: 9,
            start: 3,
            end: 9999,
        }];
        let _ = build_bundle("é🎉x", &blocks, &bad, 0, header(None), vec![], 3);
    }
}
