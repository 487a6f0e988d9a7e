//! Sections: the heading outline of a document, with a role per section.
//!
//! Sections partition the blocks. A section starts at a heading block and
//! runs to the next heading block of any level; blocks before the first
//! heading form the root section. Each section gets a [`SectionRole`] from
//! its normalized title ([`ROLE_RULES`]), inherited from its ancestors when
//! its own title says nothing.

use super::blockize::markdown_options;
use super::{Block, BlockKind, Section, SectionRole};
use pulldown_cmark::{Event, Parser, TagEnd};

/// Version of the sectioner's behaviour; bump it when sections or roles change.
pub const SECTIONER_VERSION: &str = "sections-v1";

/// Normalized section titles (see [`normalize_title`]) and the role each one
/// gives. Extend this table to teach the sectioner new titles.
pub const ROLE_RULES: &[(&str, SectionRole)] = &[
    ("references", SectionRole::References),
    ("bibliography", SectionRole::References),
    ("citations", SectionRole::References),
    ("works cited", SectionRole::References),
    ("sources", SectionRole::References),
    ("further reading", SectionRole::References),
    ("notes and references", SectionRole::References),
    ("footnotes", SectionRole::References),
    ("table of contents", SectionRole::Nav),
    ("contents", SectionRole::Nav),
    ("navigation", SectionRole::Nav),
    ("menu", SectionRole::Nav),
    ("site map", SectionRole::Nav),
    ("sitemap", SectionRole::Nav),
    ("breadcrumbs", SectionRole::Nav),
    ("skip to content", SectionRole::Nav),
    ("license", SectionRole::Legal),
    ("licence", SectionRole::Legal),
    ("copyright", SectionRole::Legal),
    ("terms", SectionRole::Legal),
    ("terms of use", SectionRole::Legal),
    ("terms of service", SectionRole::Legal),
    ("terms and conditions", SectionRole::Legal),
    ("privacy", SectionRole::Legal),
    ("privacy policy", SectionRole::Legal),
    ("disclaimer", SectionRole::Legal),
    ("legal", SectionRole::Legal),
    ("cookie policy", SectionRole::Legal),
    ("acknowledgements", SectionRole::Boilerplate),
    ("acknowledgments", SectionRole::Boilerplate),
    ("share", SectionRole::Boilerplate),
    ("share this", SectionRole::Boilerplate),
    ("subscribe", SectionRole::Boilerplate),
    ("newsletter", SectionRole::Boilerplate),
    ("related posts", SectionRole::Boilerplate),
    ("related articles", SectionRole::Boilerplate),
    ("comments", SectionRole::Boilerplate),
    ("footer", SectionRole::Boilerplate),
    ("advertisement", SectionRole::Boilerplate),
    ("about the author", SectionRole::Boilerplate),
];

/// The plain text of a piece of Markdown: inline markup stripped (text and
/// code spans kept, HTML dropped), whitespace collapsed, trimmed.
pub fn plain_text(markdown: &str) -> String {
    let mut out = String::new();
    for event in Parser::new_ext(markdown, markdown_options()) {
        match event {
            Event::Text(t) | Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                out.push_str(&t)
            }
            Event::SoftBreak
            | Event::HardBreak
            | Event::End(
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::Item
                | TagEnd::TableCell
                | TagEnd::CodeBlock
                | TagEnd::BlockQuote(_),
            ) => out.push(' '),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `token` is a section number such as `7`, `7.`, `A.1`, `1.2.3)`, `IV.`.
fn is_numbering(token: &str) -> bool {
    let core = token.trim_end_matches(['.', ')', ':']);
    if core.is_empty() {
        return false;
    }
    let punctuated = core.len() != token.len() || core.contains('.');
    let mut has_digit = false;
    for seg in core.split('.') {
        if seg.is_empty() {
            return false;
        }
        if seg.chars().all(|c| c.is_ascii_digit()) {
            has_digit = true;
        } else if seg.chars().count() == 1 && seg.chars().all(|c| c.is_ascii_alphabetic()) {
            // A single letter: appendix numbering.
        } else if seg.len() <= 7 && seg.chars().all(|c| "ivxlc".contains(c)) {
            // A Roman numeral.
        } else {
            return false;
        }
    }
    has_digit || punctuated
}

/// The normalized form of a title used by [`ROLE_RULES`]: lowercased, a
/// leading section number (`7.`, `A.1`, `IV.`) removed, `&` read as `and`,
/// other punctuation and symbols dropped, whitespace collapsed.
pub fn normalize_title(title: &str) -> String {
    let lower = title.trim().to_lowercase();
    let mut tokens: Vec<&str> = lower.split_whitespace().collect();
    if tokens.len() > 1 && tokens.first().is_some_and(|t| is_numbering(t)) {
        tokens.remove(0);
    }
    let mut cleaned = String::new();
    for c in tokens.join(" ").chars() {
        if c == '&' {
            cleaned.push_str(" and ");
        } else if c.is_alphanumeric() {
            cleaned.push(c);
        } else if c.is_whitespace() || c == '-' || c == '_' || c == '/' {
            cleaned.push(' ');
        }
        // Other punctuation (apostrophes, colons, emoji…) is dropped.
    }
    cleaned.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The role a title asks for by itself, if it matches a non-body rule.
pub fn role_for_title(title: &str) -> Option<SectionRole> {
    let norm = normalize_title(title);
    ROLE_RULES
        .iter()
        .find(|(t, _)| *t == norm)
        .map(|(_, r)| *r)
        .filter(|r| *r != SectionRole::Body)
}

/// Build the sections of a document from its blocks.
///
/// Sections are contiguous, disjoint, ordered and cover every block. A heading
/// block starts a section that runs to the next heading block (any level).
/// Blocks before the first heading form a root section (level 0, title
/// `document_title`, empty path, role [`SectionRole::Body`]: a document's own
/// title never excludes its body), present only if there are such blocks.
/// Zero blocks give zero sections.
///
/// A heading section's title is its plain heading text; its path is the
/// titles of its enclosing headings (outline by level) ending with its own;
/// its parent is the nearest preceding section of smaller level (the root
/// encloses top-level headings). Its role comes from [`role_for_title`], else
/// is inherited from its parent.
pub fn build_sections(markdown: &str, blocks: &[Block], document_title: &str) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    // The open outline: (level, title, ordinal) of enclosing heading sections.
    let mut stack: Vec<(u8, String, u32)> = Vec::new();
    let mut root: Option<u32> = None;
    for (i, block) in blocks.iter().enumerate() {
        let i = i as u32;
        let is_heading = block.kind == BlockKind::Heading;
        if !is_heading {
            if let Some(last) = sections.last_mut() {
                last.block_end = i + 1;
            } else {
                root = Some(0);
                sections.push(Section {
                    ordinal: 0,
                    block_start: i,
                    block_end: i + 1,
                    level: 0,
                    title: document_title.to_string(),
                    path: Vec::new(),
                    role: SectionRole::Body,
                    parent: None,
                });
            }
            continue;
        }
        let level = block.level.unwrap_or(1).clamp(1, 6);
        let title = markdown
            .get(block.start..block.end)
            .map(plain_text)
            .unwrap_or_default();
        while stack.last().is_some_and(|(l, _, _)| *l >= level) {
            stack.pop();
        }
        let parent = stack.last().map(|(_, _, o)| *o).or(root);
        let inherited = parent
            .and_then(|p| sections.get(p as usize))
            .map_or(SectionRole::Body, |s| s.role);
        let role = role_for_title(&title).unwrap_or(inherited);
        let mut path: Vec<String> = stack.iter().map(|(_, t, _)| t.clone()).collect();
        path.push(title.clone());
        let ordinal = sections.len() as u32;
        sections.push(Section {
            ordinal,
            block_start: i,
            block_end: i + 1,
            level,
            title: title.clone(),
            path,
            role,
            parent,
        });
        stack.push((level, title, ordinal));
    }
    sections
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Representation;
    use crate::text::blockize::blockize;
    use proptest::prelude::*;

    fn sections_of(md: &str, title: &str) -> (Vec<Block>, Vec<Section>) {
        let blocks = blockize(&Representation {
            markdown: md.to_string(),
            turns: Vec::new(),
        });
        let sections = build_sections(md, &blocks, title);
        (blocks, sections)
    }

    pub(crate) fn assert_partition(blocks: &[Block], sections: &[Section]) {
        if blocks.is_empty() {
            assert!(sections.is_empty());
            return;
        }
        let mut next = 0u32;
        for (i, s) in sections.iter().enumerate() {
            assert_eq!(s.ordinal as usize, i);
            assert_eq!(s.block_start, next, "gap or overlap at section {i}");
            assert!(s.block_end > s.block_start, "empty section {i}");
            next = s.block_end;
            for (j, b) in blocks[s.block_start as usize..s.block_end as usize]
                .iter()
                .enumerate()
            {
                assert_eq!(
                    b.kind == BlockKind::Heading,
                    j == 0 && s.level > 0,
                    "heading placement in section {i}"
                );
            }
            if let Some(p) = s.parent {
                assert!(p < s.ordinal);
                assert!(sections[p as usize].level < s.level);
            }
        }
        assert_eq!(next as usize, blocks.len());
    }

    #[test]
    fn nested_document() {
        let md = "Preface text.\n\n# Guide *to* `Rust`\n\nIntro.\n\n## 1. Install\n\nSteps.\n\n### Linux\n\napt.\n\n## Usage\n\nRun it.\n\n# References\n\n- a\n- b\n\n## Online\n\nlinks\n\n## License\n\nMIT\n";
        let (blocks, s) = sections_of(md, "My Doc");
        assert_partition(&blocks, &s);
        let summary: Vec<_> = s
            .iter()
            .map(|s| {
                (
                    s.level,
                    s.title.as_str(),
                    s.path.join(" > "),
                    s.parent,
                    s.role,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (0, "My Doc", String::new(), None, SectionRole::Body),
                (
                    1,
                    "Guide to Rust",
                    "Guide to Rust".into(),
                    Some(0),
                    SectionRole::Body
                ),
                (
                    2,
                    "1. Install",
                    "Guide to Rust > 1. Install".into(),
                    Some(1),
                    SectionRole::Body
                ),
                (
                    3,
                    "Linux",
                    "Guide to Rust > 1. Install > Linux".into(),
                    Some(2),
                    SectionRole::Body
                ),
                (
                    2,
                    "Usage",
                    "Guide to Rust > Usage".into(),
                    Some(1),
                    SectionRole::Body
                ),
                (
                    1,
                    "References",
                    "References".into(),
                    Some(0),
                    SectionRole::References
                ),
                (
                    2,
                    "Online",
                    "References > Online".into(),
                    Some(5),
                    SectionRole::References
                ),
                (
                    2,
                    "License",
                    "References > License".into(),
                    Some(5),
                    SectionRole::Legal
                ),
            ]
        );
        // Block ranges.
        assert_eq!((s[0].block_start, s[0].block_end), (0, 1));
        assert_eq!((s[5].block_start, s[5].block_end), (9, 12));
    }

    #[test]
    fn no_root_when_document_starts_with_heading_and_level_jumps() {
        let (blocks, s) = sections_of("### Deep\n\ntext\n\n# Top\n\n## Mid\n", "T");
        assert_partition(&blocks, &s);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].parent, None);
        assert_eq!(s[1].parent, None);
        assert_eq!(s[2].parent, Some(1));
        assert_eq!(s[2].path, vec!["Top".to_string(), "Mid".to_string()]);
    }

    #[test]
    fn headingless_document_has_one_root() {
        let (blocks, s) = sections_of("one\n\ntwo\n\n- three", "Notes");
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].title, "Notes");
        assert_eq!((s[0].block_start, s[0].block_end), (0, blocks.len() as u32));
        assert!(build_sections("", &[], "x").is_empty());
    }

    #[test]
    fn role_rules() {
        let cases = [
            ("References", Some(SectionRole::References)),
            ("7. References", Some(SectionRole::References)),
            ("A.1 Bibliography", Some(SectionRole::References)),
            ("IV. Works Cited:", Some(SectionRole::References)),
            ("Notes & References", Some(SectionRole::References)),
            ("Further reading", Some(SectionRole::References)),
            ("Table of Contents", Some(SectionRole::Nav)),
            ("CONTENTS", Some(SectionRole::Nav)),
            ("Site-map", Some(SectionRole::Nav)),
            ("Terms and Conditions", Some(SectionRole::Legal)),
            ("Privacy Policy.", Some(SectionRole::Legal)),
            ("© Copyright", Some(SectionRole::Legal)),
            ("Licence", Some(SectionRole::Legal)),
            ("Acknowledgements", Some(SectionRole::Boilerplate)),
            ("Share this!", Some(SectionRole::Boilerplate)),
            ("About the Author", Some(SectionRole::Boilerplate)),
            ("Introduction", None),
            ("References to the past", None),
            ("2024", None),
            ("A", None),
        ];
        for (title, want) in cases {
            assert_eq!(role_for_title(title), want, "{title}");
        }
        assert_eq!(normalize_title("  1.2.3) Works   Cited "), "works cited");
        assert_eq!(normalize_title("B. Sources"), "sources");
    }

    #[test]
    fn roles_inherit_unless_overridden() {
        let md =
            "# Footer\n\n## Links\n\nx\n\n### Privacy\n\ny\n\n#### Details\n\nz\n\n# Body\n\nw\n";
        let (_, s) = sections_of(md, "T");
        let roles: Vec<_> = s.iter().map(|s| s.role).collect();
        assert_eq!(
            roles,
            vec![
                SectionRole::Boilerplate,
                SectionRole::Boilerplate,
                SectionRole::Legal,
                SectionRole::Legal,
                SectionRole::Body,
            ]
        );
    }

    #[test]
    fn plain_text_strips_inline_markup() {
        assert_eq!(
            plain_text("## **Bold** _it_ `c` [l](http://x) <b>h</b>"),
            "Bold it c l h"
        );
        assert_eq!(plain_text("Setext 🎉\n==="), "Setext 🎉");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn sections_partition_blocks(md in crate::text::blockize::tests::markdown_doc()) {
            let (blocks, sections) = sections_of(&md, "Doc");
            assert_partition(&blocks, &sections);
        }
    }
}
