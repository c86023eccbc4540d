//! The documents checked against the code, so that they cannot drift:
//!
//! - docs/configuration.md's key tables list exactly the keys the
//!   configuration accepts. The accepted keys come from the configuration's
//!   own serde types: a table with an unknown key is refused with serde's
//!   "expected one of ..." list, which the derive generates from the struct.
//! - Each documented default (a backticked TOML value in the `default`
//!   column) equals `Config::default()` (= configs/default.toml) serialized.
//! - Each documented integer range `A..=B` is what validation accepts: A
//!   and B load, A − 1 and B + 1 are refused.
//! - The structured qdisc table's keys per kind, likewise.
//! - No document or source file cites notes that a clone of the repository
//!   does not have.
//! - README's and docs/'s command and configuration blocks do what they
//!   say as written: every ```toml block loads as a configuration, every
//!   `bloatbox ...` command line (shell blocks and inline code) parses with
//!   the command line's clap definitions (src/main.rs, compiled in as
//!   `bloatbox_main`), every repository path they name exists; a block
//!   meant only to illustrate is marked `<!-- illustrative -->` on the line
//!   before its fence. Every option of the command line has a description.
//! - testing.md lists what `.ci/run` installs; privileges.md names the
//!   capabilities the main thread keeps (`privilege::TEARDOWN`).

use bloatbox::config::{Config, DEFAULT_TOML};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One row of a documented key table.
#[derive(Debug)]
struct Row {
    key: String,
    range: String,
    default: String,
}

/// The rows of every Markdown table of `doc` whose header's first cell is
/// `first_header` (e.g. `key`), split into cells.
fn tables(doc: &str, first_header: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut inside = false;
    for line in doc.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            inside = false;
            continue;
        }
        let cells: Vec<String> = line
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect();
        if cells.iter().all(|c| c.chars().all(|ch| "-: ".contains(ch))) {
            continue; // the separator line
        }
        if !inside {
            inside = cells.first().is_some_and(|c| c == first_header);
            continue; // the header
        }
        rows.push(cells);
    }
    rows
}

/// The first backticked text of a cell, if any.
fn backticked(cell: &str) -> Option<&str> {
    let rest = cell.split_once('`')?.1;
    rest.split_once('`').map(|(inner, _)| inner)
}

fn key_rows(doc: &str) -> Vec<Row> {
    tables(doc, "key")
        .into_iter()
        .map(|cells| {
            let cell = |i: usize| cells.get(i).cloned().unwrap_or_default();
            Row {
                key: backticked(&cell(0))
                    .unwrap_or_else(|| panic!("a key row without a `key`: {cells:?}"))
                    .to_string(),
                range: cell(2),
                default: cell(3),
            }
        })
        .collect()
}

/// The fields serde accepts in the table at `path` ("" = the top level),
/// read from the refusal of an unknown key there.
fn accepted_fields(path: &str) -> BTreeSet<String> {
    let text = if path.is_empty() {
        "zz_not_a_key = 1\n".to_string()
    } else {
        format!("[{path}]\nzz_not_a_key = 1\n")
    };
    fields_from_refusal(&text)
}

fn fields_from_refusal(text: &str) -> BTreeSet<String> {
    fields_if_refused(text).unwrap_or_else(|| panic!("an unknown key must be refused: {text}"))
}

/// The fields listed by the refusal of `text`, or None if it is accepted.
fn fields_if_refused(text: &str) -> Option<BTreeSet<String>> {
    let err = Config::from_str(text, "probe.toml").err()?.to_string();
    if err.contains("there are no fields") {
        return Some(BTreeSet::new());
    }
    let list = err
        .split("expected one of ")
        .nth(1)
        .or_else(|| err.split("expected `").nth(1).map(|_| ""))
        .unwrap_or_else(|| panic!("no list of fields in: {err}"));
    let list = if list.is_empty() {
        // serde says "expected `x`" when a table has one field
        &err[err.find("expected `").unwrap() + "expected ".len()..]
    } else {
        list
    };
    let list = list.split(';').next().unwrap_or(list);
    Some(
        list.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect(),
    )
}

/// Every key the configuration accepts, as dotted paths (the direction
/// tables `link.left_to_right`/`link.right_to_left` take the keys of
/// `[link]`, so they are documented once as `link.*`).
fn accepted_keys() -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for table in accepted_fields("") {
        let fields = accepted_fields(&table);
        assert!(!fields.is_empty(), "no fields found for [{table}]");
        for f in fields {
            keys.insert(format!("{table}.{f}"));
        }
    }
    let l2r = accepted_fields("link.left_to_right");
    let link = accepted_fields("link");
    assert_eq!(l2r, link, "a direction table takes the keys of [link]");
    keys
}

fn config_doc() -> String {
    read("docs/configuration.md")
}

#[test]
fn the_configuration_reference_lists_exactly_the_accepted_keys() {
    let doc = config_doc();
    let rows = key_rows(&doc);
    let mut documented = BTreeSet::new();
    for row in &rows {
        assert!(
            documented.insert(row.key.clone()),
            "docs/configuration.md lists `{}` twice",
            row.key
        );
    }
    let accepted = accepted_keys();
    let missing: Vec<_> = accepted.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&accepted).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "docs/configuration.md's key tables drifted from the configuration:\n  \
         accepted but not documented: {missing:?}\n  documented but not accepted: {unknown:?}"
    );
}

/// The value at a dotted path of the default configuration, serialized.
fn default_value<'a>(root: &'a toml::Value, key: &str) -> Option<&'a toml::Value> {
    key.split('.').try_fold(root, |v, part| v.get(part))
}

#[test]
fn documented_defaults_are_the_default_configuration() {
    let default = toml::Value::try_from(Config::default()).expect("the default serializes");
    let embedded: toml::Value = toml::from_str(DEFAULT_TOML).expect("the embedded default parses");
    let mut checked = 0;
    for row in key_rows(&config_doc()) {
        if row.default.starts_with("none") {
            continue; // unset by default (what that means follows in words)
        }
        let Some(written) = backticked(&row.default) else {
            continue; // words
        };
        let actual = default_value(&default, &row.key)
            .or_else(|| default_value(&embedded, &row.key))
            .unwrap_or_else(|| {
                panic!(
                    "docs/configuration.md gives `{}` the default `{written}`, but the default configuration has no value there",
                    row.key
                )
            });
        let parsed: toml::Value = toml::from_str::<toml::Table>(&format!("v = {written}"))
            .unwrap_or_else(|e| panic!("`{}`'s default `{written}` is not TOML: {e}", row.key))
            .remove("v")
            .unwrap();
        assert_eq!(
            &parsed, actual,
            "docs/configuration.md: default of `{}`",
            row.key
        );
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} defaults checked");
}

/// Loads a configuration setting `key` (a dotted path) to `value`.
fn load_with(key: &str, value: i64) -> Result<Config, String> {
    let (table, field) = key.rsplit_once('.').expect("a dotted key");
    let mut text = format!("[{table}]\n{field} = {value}\n");
    // Frames coalescing with usecs 0 never interrupts; give it a timer.
    if let Some(kind) = field.strip_suffix("_frames") {
        text.push_str(&format!("{kind}_usecs = 1\n"));
    }
    Config::from_str(&text, "probe.toml").map_err(|e| e.to_string())
}

#[test]
fn documented_integer_ranges_are_what_validation_accepts() {
    let mut checked = 0;
    for row in key_rows(&config_doc()) {
        let Some(range) = backticked(&row.range) else {
            continue;
        };
        let Some((lo, hi)) = range.split_once("..=") else {
            continue;
        };
        let (Ok(lo), Ok(hi)) = (lo.parse::<i64>(), hi.parse::<i64>()) else {
            continue;
        };
        for ok in [lo, hi] {
            load_with(&row.key, ok).unwrap_or_else(|e| {
                panic!(
                    "docs/configuration.md: `{}` in `{range}`, but {ok} is refused: {e}",
                    row.key
                )
            });
        }
        for bad in [lo - 1, hi + 1] {
            if bad < 0 {
                continue;
            }
            assert!(
                load_with(&row.key, bad).is_err(),
                "docs/configuration.md: `{}` in `{range}`, but {bad} is accepted",
                row.key
            );
        }
        checked += 1;
    }
    assert!(checked >= 12, "only {checked} ranges checked");
}

#[test]
fn the_structured_qdisc_keys_are_documented_per_kind() {
    let doc = config_doc();
    let mut documented: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for cells in tables(&doc, "kind") {
        let kind = backticked(&cells[0]).expect("a `kind`").to_string();
        let keys = cells
            .get(1)
            .map(|c| {
                c.split('`')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_string)
                    .collect::<BTreeSet<_>>()
            })
            .unwrap_or_default();
        documented.insert(kind, keys);
    }
    // The documents cover the built-in kinds; a program's own registered
    // kinds (tests/pure/custom_kind.rs registers one in this process) are
    // its to document.
    let kinds: BTreeSet<String> = fields_from_variant_refusal()
        .into_iter()
        .filter(|k| bloatbox::qdisc::kinds::lookup(bloatbox::qdisc::kinds::BUILTIN, k).is_some())
        .collect();
    assert_eq!(
        documented.keys().cloned().collect::<BTreeSet<_>>(),
        kinds,
        "docs/configuration.md: the kinds of the structured qdisc table"
    );
    for (kind, keys) in &documented {
        // Every kind's table refuses a key it does not take, and lists the
        // keys it takes (none for pfifo_fast).
        let mut accepted = fields_if_refused(&format!(
            "[link.qdisc]\nkind = \"{kind}\"\nzz_not_a_key = 1\n"
        ))
        .unwrap_or_else(|| panic!("the `{kind}` table takes an unknown key"));
        accepted.insert("kind".into());
        // HTB's classes are `[[link.qdisc.class]]` tables, documented apart.
        let mut keys = keys.clone();
        keys.insert("kind".into());
        assert_eq!(
            &keys, &accepted,
            "docs/configuration.md: keys of the structured `{kind}` table"
        );
    }
    let class = fields_from_refusal(
        "[link.qdisc]\nkind = \"htb\"\n[[link.qdisc.class]]\nzz_not_a_key = 1\n",
    );
    let documented_class: BTreeSet<String> = tables(&doc, "class key")
        .iter()
        .filter_map(|c| backticked(&c[0]).map(str::to_string))
        .collect();
    assert_eq!(
        documented_class, class,
        "docs/configuration.md: keys of [[link.qdisc.class]]"
    );
}

/// The kinds the structured qdisc table accepts, from the refusal of an
/// unknown one.
fn fields_from_variant_refusal() -> BTreeSet<String> {
    let err = Config::from_str("[link.qdisc]\nkind = \"zz_not_a_kind\"\n", "probe.toml")
        .expect_err("an unknown kind must be refused")
        .to_string();
    let list = err
        .split("expected one of ")
        .nth(1)
        .unwrap_or_else(|| panic!("no list of kinds in: {err}"));
    let list = list.split(';').next().unwrap_or(list);
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Files a clone of the repository has, which documents and comments may
/// cite; notes kept elsewhere may not be.
#[test]
fn nothing_cites_notes_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Spelled in pieces so that this file does not cite them itself.
    let forbidden: Vec<String> = [
        ["shared", "/"],
        ["LINUX", "-TC"],
        ["VECTORS", ".md"],
        ["DESIGN", ".md"],
        ["design", " card"],
    ]
    .iter()
    .map(|p| p.concat())
    .collect();
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | ".git" | "proptest-regressions") {
                    stack.push(path);
                }
                continue;
            }
            let ext = path.extension().map(|e| e.to_string_lossy().to_string());
            if !matches!(ext.as_deref(), Some("rs" | "md" | "toml" | "sh" | "py")) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            for (n, line) in text.lines().enumerate() {
                if forbidden.iter().any(|f| line.contains(f.as_str())) {
                    found.push(format!("{}:{}: {line}", path.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "citations of notes a clone lacks:\n{}",
        found.join("\n")
    );
}

/// Relative links between the documents point at files that exist.
#[test]
fn links_between_the_documents_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs: Vec<String> = [
        "README.md",
        "BENCHMARKS.md",
        "RELIABILITY.md",
        "CHANGELOG.md",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "md") {
            docs.push(format!("docs/{}", p.file_name().unwrap().to_string_lossy()));
        }
    }
    let mut broken = Vec::new();
    for doc in &docs {
        let text = read(doc);
        let base = Path::new(doc).parent().unwrap_or(Path::new(""));
        for part in text.split("](").skip(1) {
            let target = part.split(')').next().unwrap_or("");
            let target = target.split('#').next().unwrap_or("");
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            if !root.join(base).join(target).exists() {
                broken.push(format!("{doc}: {target}"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links: {broken:?}");
}

#[test]
fn the_readme_and_benchmarks_stay_short() {
    for (doc, max) in [("README.md", 250), ("BENCHMARKS.md", 200)] {
        let lines = read(doc).lines().count();
        assert!(lines <= max, "{doc} has {lines} lines, at most {max}");
    }
}

/// The documents whose commands, configuration blocks and paths are
/// checked: the README and every page of docs/.
fn user_documents() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec!["README.md".to_string()];
    let mut pages: Vec<String> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| format!("docs/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

/// What marks a fenced block as deliberately illustrative (not run as
/// written): this comment on the line before its opening fence.
const ILLUSTRATIVE: &str = "<!-- illustrative -->";

/// A fenced code block of a document.
#[derive(Debug)]
struct Block {
    /// Where: `docs/x.md:LINE` of the opening fence.
    at: String,
    /// The info string's first word (`toml`, `sh`, empty).
    lang: String,
    text: String,
    illustrative: bool,
}

fn fenced_blocks(doc: &str) -> Vec<Block> {
    let text = read(doc);
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let end = (i + 1..lines.len())
            .find(|&j| lines[j].trim_start().starts_with("```"))
            .unwrap_or_else(|| panic!("{doc}:{}: a fence that is never closed", i + 1));
        blocks.push(Block {
            at: format!("{doc}:{}", i + 1),
            lang: info.split_whitespace().next().unwrap_or("").to_string(),
            text: lines[i + 1..end].join("\n"),
            illustrative: i > 0 && lines[i - 1].trim() == ILLUSTRATIVE,
        });
        i = end + 1;
    }
    blocks
}

/// `text` loaded as a configuration file kept in `configs/`, whose
/// relative paths (`trace = "traces/12-6mbit.up"`) reach the shipped
/// traces: from a temporary folder holding it and a link to
/// `configs/traces`.
fn load_beside_configs(text: &str) -> Result<Config, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/traces");
    std::os::unix::fs::symlink(traces, dir.path().join("traces")).map_err(|e| e.to_string())?;
    let file = dir.path().join("block.toml");
    std::fs::write(&file, text).map_err(|e| e.to_string())?;
    Config::load(&file).map_err(|e| e.to_string())
}

/// Every ```toml block of the documents loads as a configuration (the
/// whole file or a fragment of one: every key is optional), unless it is
/// marked illustrative.
#[test]
fn every_toml_block_of_the_documents_loads_as_a_configuration() {
    let mut failed = Vec::new();
    let mut checked = 0;
    for doc in user_documents() {
        for b in fenced_blocks(&doc) {
            if b.lang != "toml" || b.illustrative {
                continue;
            }
            checked += 1;
            if let Err(e) = load_beside_configs(&b.text) {
                failed.push(format!("{}: {e}", b.at));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "configuration blocks that do not load (fix the block or the code, or mark it \
         `{ILLUSTRATIVE}`):\n{}",
        failed.join("\n")
    );
    assert!(checked >= 2, "only {checked} toml blocks checked");
}

/// Whether a shell word separates commands or redirects.
fn shell_operator(w: &str) -> bool {
    matches!(w, "&&" | "||" | ";" | "|" | "&")
        || w.starts_with('>')
        || w.starts_with('<')
        || w.starts_with("2>")
        || w.starts_with("&>")
}

/// The `bloatbox` commands a shell line runs, each as its arguments after
/// the program name: a command (first on the line or after an operator,
/// past `sudo` and `VAR=value` words) that is `bloatbox`,
/// `PATH/bloatbox` or `cargo run [--release] --`, up to the next operator
/// or redirection.
fn bloatbox_commands(line: &str) -> Vec<Vec<String>> {
    let Some(words) = shlex::split(line) else {
        return Vec::new();
    };
    let words: Vec<String> = words
        .into_iter()
        .take_while(|w| !w.starts_with('#'))
        .collect();
    let mut commands = Vec::new();
    let mut rest = words.as_slice();
    while !rest.is_empty() {
        let end = rest
            .iter()
            .position(|w| shell_operator(w))
            .unwrap_or(rest.len());
        let mut command = &rest[..end];
        while let Some((first, tail)) = command.split_first() {
            if first == "sudo" || (first.contains('=') && !first.starts_with('-')) {
                command = tail;
            } else {
                break;
            }
        }
        let args = match command {
            [program, args @ ..] if program == "bloatbox" || program.ends_with("/bloatbox") => {
                Some(args)
            }
            [cargo, run, tail @ ..] if cargo == "cargo" && run == "run" => {
                tail.iter().position(|w| w == "--").map(|i| &tail[i + 1..])
            }
            _ => None,
        };
        commands.extend(args.map(<[String]>::to_vec));
        rest = rest.get(end + 1..).unwrap_or_default();
    }
    commands
}

/// The shell lines of a block, continuation lines (`\`) joined.
fn shell_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        match line.trim_end().strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(line);
                lines.push(std::mem::take(&mut current));
            }
        }
    }
    lines
}

/// The inline code spans of a document's prose (outside fenced blocks),
/// a span broken over lines joined with a space.
fn inline_spans(doc: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut fenced = false;
    for line in read(doc).lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            prose.push('\n');
            continue;
        }
        if !fenced {
            prose.push_str(line);
            prose.push(' ');
        }
    }
    prose
        .split('\n')
        .flat_map(|chunk| {
            chunk
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every `bloatbox ...` command line of the documents, in their shell
/// blocks and their inline code, parses with the command line's clap
/// definitions (src/main.rs): a renamed subcommand or option fails here.
#[test]
fn every_bloatbox_command_of_the_documents_parses() {
    use clap::Parser;
    let mut failed = Vec::new();
    let mut checked = 0;
    for doc in user_documents() {
        // (where, the line, whether it is inline: prose may name a command
        // without every argument it requires, never with a wrong one)
        let mut commands: Vec<(String, String, bool)> = Vec::new();
        for b in fenced_blocks(&doc) {
            if !matches!(b.lang.as_str(), "sh" | "bash" | "console") || b.illustrative {
                continue;
            }
            for line in shell_lines(&b.text) {
                commands.push((b.at.clone(), line, false));
            }
        }
        for span in inline_spans(&doc) {
            let words = span.trim_start_matches("sudo ");
            if words.starts_with("bloatbox ") {
                commands.push((doc.clone(), span, true));
            }
        }
        for (at, line, inline) in commands {
            for args in bloatbox_commands(&line) {
                checked += 1;
                let argv = std::iter::once("bloatbox".to_string()).chain(args);
                if let Err(e) = crate::bloatbox_main::Cli::try_parse_from(argv) {
                    if inline && e.kind() == clap::error::ErrorKind::MissingRequiredArgument {
                        continue;
                    }
                    let first = e.to_string();
                    let first = first.lines().next().unwrap_or_default().to_string();
                    failed.push(format!("{at}: `{line}`: {first}"));
                }
            }
        }
    }
    assert!(
        failed.is_empty(),
        "documented commands the command line refuses:\n{}",
        failed.join("\n")
    );
    assert!(checked >= 50, "only {checked} commands checked");
}

/// Every option and argument of every subcommand says what it is in
/// `--help`.
#[test]
fn every_option_of_the_command_line_has_a_description() {
    use clap::CommandFactory;
    let cli = crate::bloatbox_main::Cli::command();
    let mut bare = Vec::new();
    for sub in cli.get_subcommands() {
        for arg in sub.get_arguments() {
            if arg.is_hide_set() || arg.get_id() == "help" {
                continue;
            }
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                bare.push(format!("{} {}", sub.get_name(), arg.get_id()));
            }
        }
    }
    assert!(bare.is_empty(), "options without a description: {bare:?}");
}

/// The top-level folders of the repository whose files the documents name
/// by path.
const REPO_DIRS: [&str; 12] = [
    "configs/",
    "docs/",
    "tests/",
    "src/",
    "crates/",
    "scripts/",
    "netns/",
    "examples/",
    "bench/",
    "benches/",
    "fuzz/",
    ".ci/",
];

/// The repository paths a text names: words starting with one of
/// `REPO_DIRS` (not inside another path or a URL), trailing punctuation
/// left out. Globs (`seed_*.rs`) and placeholders in capitals (`NAME`)
/// are left out too.
fn named_paths(text: &str) -> Vec<String> {
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_./-*".contains(c);
    let mut paths = Vec::new();
    for (i, _) in text.char_indices() {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| is_path_char(c) || c == ':') {
            continue;
        }
        let rest = &text[i..];
        if !REPO_DIRS.iter().any(|d| rest.starts_with(d)) {
            continue;
        }
        let end = rest.find(|c: char| !is_path_char(c)).unwrap_or(rest.len());
        let path = rest[..end].trim_end_matches(['.', '-']);
        let placeholder = path
            .split(['/', '.', '_', '-'])
            .any(|part| part.len() >= 3 && part.chars().all(|c| c.is_ascii_uppercase()));
        if !path.contains('*') && !placeholder {
            paths.push(path.to_string());
        }
    }
    paths
}

/// What the documents name that is made by running something, not kept
/// in the repository: scripts/fuzz.sh's working folder.
const MADE_BY_RUNNING: [&str; 1] = ["fuzz/work"];

/// Every file or folder of the repository the documents name exists
/// (from the repository's root, or from the document's folder), but for
/// `MADE_BY_RUNNING`.
#[test]
fn every_path_the_documents_name_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = BTreeSet::new();
    let mut checked = 0;
    for doc in user_documents() {
        let base = root.join(Path::new(&doc).parent().unwrap_or(Path::new("")));
        for path in named_paths(&read(&doc)) {
            if MADE_BY_RUNNING.iter().any(|m| path.starts_with(m)) {
                continue;
            }
            checked += 1;
            if !root.join(&path).exists() && !base.join(&path).exists() {
                missing.insert(format!("{doc}: {path}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths the documents name that do not exist:\n{}",
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
    assert!(checked >= 50, "only {checked} paths checked");
}

/// docs/testing.md lists every package `.ci/run` installs (its `tool:package`
/// pairs).
#[test]
fn the_testing_page_lists_what_ci_installs() {
    let ci = read(".ci/run");
    let packages: BTreeSet<&str> = ci
        .split_whitespace()
        .filter_map(|w| w.split_once(':'))
        .filter(|(tool, pkg)| {
            !tool.is_empty()
                && !pkg.is_empty()
                && pkg.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
        .map(|(_, pkg)| pkg)
        .collect();
    assert!(
        packages.len() >= 5,
        "no tool:package list in .ci/run: {packages:?}"
    );
    let testing = read("docs/testing.md");
    let unlisted: Vec<_> = packages
        .iter()
        .filter(|p| !testing.contains(&format!("`{p}`")))
        .collect();
    assert!(
        unlisted.is_empty(),
        "docs/testing.md does not list these packages .ci/run installs: {unlisted:?}"
    );
}

/// docs/privileges.md's row of the main thread names exactly the
/// capabilities it keeps for the tear-down (`privilege::TEARDOWN`), and
/// the CapEff mask they make.
#[test]
fn the_privileges_page_names_what_the_main_thread_keeps() {
    let doc = read("docs/privileges.md");
    let row = tables(&doc, "thread")
        .into_iter()
        .find(|cells| cells.first().is_some_and(|c| c == "main"))
        .expect("a `main` row in docs/privileges.md");
    let documented: BTreeSet<String> = row[1]
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| w.starts_with("CAP_"))
        .map(str::to_string)
        .collect();
    let kept: BTreeSet<String> = bloatbox::privilege::TEARDOWN
        .iter()
        .map(|c| c.to_string())
        .collect();
    assert_eq!(
        documented, kept,
        "docs/privileges.md: the main thread's row"
    );
    let mask: u64 = bloatbox::privilege::TEARDOWN
        .iter()
        .map(|c| 1u64 << c.index())
        .sum();
    assert!(
        row[1].contains(&format!("CapEff `{mask:#x}`")),
        "docs/privileges.md: CapEff {mask:#x}: {}",
        row[1]
    );
}
