//! Every TOML block the documentation site shows is a configuration this build
//! reads: the keys exist (`deny_unknown_fields`), the values have their types, and
//! the sections validate as `Config::from_toml_str` validates a file.

use rememberstack::Config;
use std::path::Path;

fn pages(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            pages(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// The ```toml blocks of a Markdown page, with the line each starts on.
fn toml_blocks(text: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        match &mut current {
            None if line.trim_start().starts_with("```toml") => {
                current = Some((i + 1, String::new()))
            }
            Some(_) if line.trim_start().starts_with("```") => blocks.extend(current.take()),
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    blocks
}

#[test]
fn every_toml_block_on_the_site_is_a_configuration_this_build_reads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../website/src");
    let mut files = Vec::new();
    pages(&root, &mut files);
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, block) in toml_blocks(&text) {
            checked += 1;
            if let Err(e) = Config::from_toml_str(&block) {
                failures.push(format!("{}:{line}: {e}", file.display()));
            }
        }
    }
    assert!(checked >= 5, "only {checked} TOML blocks found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `website/src/reference/configuration.md`: every key of the configuration file
/// with the value it takes when left out, rendered from `Config::default()` (so the
/// page lists exactly the keys this build reads). `UPDATE_DOCS=1` rewrites it.
#[test]
fn the_configuration_reference_is_the_default_configuration() {
    let defaults = toml::to_string(&Config::default()).expect("the defaults serialize");
    // What it renders reads back as the same configuration.
    assert_eq!(Config::from_toml_str(&defaults).unwrap(), Config::default());
    let page = format!(
        "<!-- Generated from Config::default() by `cargo test -p rememberstack --test \
         docs_config`; do not edit. Regenerate with UPDATE_DOCS=1. -->\n\n\
         # Configuration keys\n\n\
         Every key of the TOML configuration file (`--config FILE`, \
         `REMEMBERSTACK_CONFIG`) with the value it takes when left out. A file names \
         only what it changes; an unknown key is refused. What each key means, the \
         providers' own keys (`[embedder] provider = \"openai\"`, `[chat] provider = \
         \"openai\"`) and the `REMEMBERSTACK_*` environment variables are in \
         [Configuration and providers](../guides/configuration.md).\n\n\
         ```toml\n{defaults}```\n"
    );
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../website/src/reference/configuration.md");
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &page).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == page,
        "website/src/reference/configuration.md is not the rendering of Config::default(): \
         run `UPDATE_DOCS=1 cargo test -p rememberstack --test docs_config`"
    );
}
