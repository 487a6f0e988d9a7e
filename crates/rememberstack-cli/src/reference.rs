//! The CLI reference page of the documentation site
//! (`website/src/reference/cli.md`), rendered from the clap definitions, so the
//! page cannot drift from the binary. `the_cli_reference_page_is_the_rendering`
//! fails when the committed page differs; `UPDATE_DOCS=1` rewrites it.

use clap::{Arg, Command};

const PAGE: &str = "website/src/reference/cli.md";

fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// How an option is written: `--name <VALUE>`, `-k, --k <N>`, `<PATH>`.
fn spelling(arg: &Arg) -> String {
    let value = arg
        .get_value_names()
        .map(|names| {
            names
                .iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| format!("<{}>", arg.get_id().as_str().to_uppercase()));
    if arg.is_positional() {
        return value;
    }
    let takes_value = arg.get_action().takes_values();
    let mut names = Vec::new();
    if let Some(short) = arg.get_short() {
        names.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        names.push(format!("--{long}"));
    }
    let names = names.join(", ");
    if takes_value {
        format!("{names} {value}")
    } else {
        names
    }
}

fn describe(arg: &Arg) -> String {
    let mut text = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| escape(&h.to_string()))
        .unwrap_or_default();
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if !defaults.is_empty() && arg.get_action().takes_values() {
        text.push_str(&format!(" Default: `{}`.", defaults.join(",")));
    }
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !values.is_empty() && !arg.get_action().takes_values() {
        // A flag has no values to list.
    } else if !values.is_empty() {
        text.push_str(&format!(" One of {}.", values.join(", ")));
    }
    if arg.is_required_set() {
        text.push_str(" Required.");
    }
    text.trim().to_string()
}

fn command(out: &mut String, cmd: &Command, path: &str) {
    let visible: Vec<&Command> = cmd
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .collect();
    out.push_str(&format!("\n## `{path}`\n\n"));
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        out.push_str(&format!("{about}\n\n"));
    }
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_global_set())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    if !args.is_empty() {
        out.push_str("| argument | meaning |\n|---|---|\n");
        for arg in args {
            out.push_str(&format!(
                "| `{}` | {} |\n",
                escape(&spelling(arg)),
                describe(arg)
            ));
        }
    }
    if !visible.is_empty() {
        out.push_str("\n| command | what it does |\n|---|---|\n");
        for sub in &visible {
            let about = sub
                .get_about()
                .map(|a| escape(&a.to_string()))
                .unwrap_or_default();
            out.push_str(&format!(
                "| [`{} {}`](#{}) | {} |\n",
                path,
                sub.get_name(),
                anchor(&format!("{path} {}", sub.get_name())),
                about
            ));
        }
    }
    for sub in visible {
        command(out, sub, &format!("{path} {}", sub.get_name()));
    }
}

/// mdBook's heading id for a heading `` `remember notes add` ``.
fn anchor(path: &str) -> String {
    path.replace(' ', "-")
}

pub(crate) fn render(root: &Command) -> String {
    let mut out = String::from(
        "<!-- Generated from the CLI's clap definitions by `cargo test -p rememberstack-cli \
         --bin remember reference`; do not edit. Regenerate with UPDATE_DOCS=1. -->\n\n\
         # CLI reference\n\n\
         Every command of `remember`, as `remember --help` gives it. The global options \
         apply to every command:\n\n| option | meaning |\n|---|---|\n",
    );
    for arg in root.get_arguments().filter(|a| a.is_global_set()) {
        out.push_str(&format!(
            "| `{}` | {} |\n",
            escape(&spelling(arg)),
            describe(arg)
        ));
    }
    let top: Vec<&Command> = root
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .collect();
    out.push_str("\n| command | what it does |\n|---|---|\n");
    for sub in &top {
        let about = sub
            .get_about()
            .map(|a| escape(&a.to_string()))
            .unwrap_or_default();
        out.push_str(&format!(
            "| [`remember {}`](#{}) | {} |\n",
            sub.get_name(),
            anchor(&format!("remember {}", sub.get_name())),
            about
        ));
    }
    for sub in top {
        command(&mut out, sub, &format!("remember {}", sub.get_name()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_cli_reference_page_is_the_rendering() {
        let mut root = crate::args::Cli::command();
        root.build();
        let rendered = render(&root);
        assert!(rendered.contains("## `remember call`") && rendered.contains("`--input <JSON>`"));
        rememberstack_conformance::check_generated_page(
            PAGE,
            &rendered,
            "cargo test -p rememberstack-cli --bin remember reference",
        );
    }
}
