//! `docs/migrating.md` shows this example's code in `rust,ignore` blocks
//! (they need its crates): each block must still be in one of the example's
//! files, line for line and in order. Comments and blank lines are not
//! compared, except that a block may show code the files keep in a comment
//! (the dense field `tag.rs` replaced).

use std::fs;
use std::path::{Path, PathBuf};

/// The example's source files.
fn sources(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["entity/src", "migration/src", "migration/tests"] {
        let dir = root.join(dir);
        for entry in fs::read_dir(&dir).expect("example directory") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files
}

/// The lines compared: trimmed, without blank lines and doc comments, and
/// with a plain comment's text as if it were code.
fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("///") && !l.starts_with("//!"))
        .map(|l| l.strip_prefix("//").map_or(l, str::trim).to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Whether `block` is a subsequence of `file`.
fn contains_in_order(file: &[String], block: &[String]) -> bool {
    let mut file = file.iter();
    block.iter().all(|line| file.any(|l| l == line))
}

#[test]
fn the_guides_code_is_the_examples() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let guide = fs::read_to_string(root.join("../../docs/migrating.md")).expect("the guide");
    let files: Vec<(PathBuf, Vec<String>)> = sources(&root)
        .into_iter()
        .map(|p| {
            let text = fs::read_to_string(&p).expect("source");
            (p, lines(&text))
        })
        .collect();
    let blocks: Vec<&str> = guide
        .split("```rust,ignore\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap_or_default())
        .collect();
    assert!(
        blocks.len() >= 6,
        "the guide's Rust blocks: {}",
        blocks.len()
    );
    for block in &blocks {
        let block_lines = lines(block);
        assert!(
            files
                .iter()
                .any(|(_, f)| contains_in_order(f, &block_lines)),
            "this block of docs/migrating.md is in no file of examples/migrating:\n{block}"
        );
    }
    // The check itself: the plain entity's block with one line changed is
    // in no file.
    let note = blocks
        .iter()
        .find(|b| b.contains("belongs_to = \"super::account::Entity\""))
        .expect("the guide shows note.rs");
    let before = lines(&note.replace("belongs_to = ", "has_one = "));
    assert!(!files.iter().any(|(_, f)| contains_in_order(f, &before)));
}
