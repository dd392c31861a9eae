//! The check both adopting crates (`tests/crates/sea-orm-cli-{compact,dense}`)
//! run on their sources: each file is sea-orm-cli's, in `generated`, with no
//! change but the declared ones. A protected entity's file is wrapped in
//! `#[hierlock::protected(..)] pub mod x { .. }` (its lines indented) and
//! included from `lib.rs` in place of `pub mod x;`; an edited file has the
//! relation fields `edits` names removed and `// hierlock:` blocks added
//! (each a comment, then an item up to its closing `}`).

use std::fs;
use std::path::Path;

/// Panics, naming the file, unless `ours` is `generated` with the wrappers
/// of `protected` (in this order of file names) and `edits`.
pub fn sources_are_the_generated_ones(
    ours: &Path,
    generated: &Path,
    protected: &[&str],
    edits: &[(&str, &[&str])],
) {
    let mut files: Vec<String> = fs::read_dir(generated)
        .expect("the generated sources")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .into_string()
                .expect("a name")
        })
        .collect();
    files.sort();
    let mut wrapped = Vec::new();
    for file in files.iter().filter(|f| *f != "lib.rs") {
        let name = file.trim_end_matches(".rs");
        let mut original = fs::read_to_string(generated.join(file)).expect("a generated file");
        let mut mine = fs::read_to_string(ours.join(file)).expect("this crate's file");
        if let Some(rest) = mine.strip_prefix("#[hierlock::protected(") {
            let (_, body) = rest.split_once('\n').expect("the attribute's line");
            let body = body
                .strip_prefix(&format!("pub mod {name} {{\n"))
                .and_then(|b| b.strip_suffix("}\n"))
                .unwrap_or_else(|| panic!("{file}: `pub mod {name} {{ .. }}` around the items"));
            mine = body
                .split_inclusive('\n')
                .map(|line| line.strip_prefix("    ").unwrap_or(line))
                .collect();
            wrapped.push(name.to_owned());
        }
        if let Some((_, fields)) = edits.iter().find(|(f, _)| *f == name) {
            for field in *fields {
                original = without_field(&original, field)
                    .unwrap_or_else(|| panic!("{file}: no generated field `{field}`"));
            }
            mine = without_added_blocks(&mine);
        }
        assert_eq!(mine, original, "{file}: more than the declared change");
    }
    assert_eq!(wrapped, protected, "the protected entities");
    let lib = fs::read_to_string(generated.join("lib.rs")).expect("lib.rs");
    let mut expected = lib.clone();
    for name in &wrapped {
        expected = expected.replace(
            &format!("pub mod {name};\n"),
            &format!("include!(\"{name}.rs\");\n"),
        );
    }
    let mine = fs::read_to_string(ours.join("lib.rs")).expect("our lib.rs");
    assert_eq!(mine, expected, "lib.rs: more than the includes changed");
}

/// `text` without the relation field `name`: its `#[sea_orm(..)]` lines and
/// its own line.
fn without_field(text: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with(&format!("pub {name}: ")))?;
    // Back over the field's attribute lines, to the field or brace before.
    let mut start = at;
    while start > 0 {
        let before = lines[start - 1].trim_start();
        if before.starts_with("pub ") || before.trim_end().ends_with('{') {
            break;
        }
        start -= 1;
    }
    Some(lines[..start].concat() + &lines[at + 1..].concat())
}

/// `text` without its `// hierlock:` blocks (the comment lines, the item,
/// and the blank line before them).
fn without_added_blocks(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if line.trim().is_empty()
            && lines
                .peek()
                .is_some_and(|next| next.starts_with("// hierlock:"))
        {
            continue;
        }
        if line.starts_with("// hierlock:") {
            for rest in lines.by_ref() {
                if rest.starts_with('}') {
                    break;
                }
            }
            continue;
        }
        out.push_str(line);
    }
    out
}
