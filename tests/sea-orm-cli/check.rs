//! The check both adopting crates (`tests/crates/sea-orm-cli-{compact,dense}`)
//! run on their sources: each file is sea-orm-cli's, in `generated`, with no
//! change but the attribute. A protected entity's file is wrapped in
//! `#[hierlock::protected(..)] pub mod x { .. }` (its lines indented) and
//! included from `lib.rs` in place of `pub mod x;`; every other file is the
//! generated one.

use std::fs;
use std::path::Path;

/// Panics, naming the file, unless `ours` is `generated` with the wrappers
/// of `protected` (in this order of file names).
pub fn sources_are_the_generated_ones(ours: &Path, generated: &Path, protected: &[&str]) {
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
        let original = fs::read_to_string(generated.join(file)).expect("a generated file");
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
        assert_eq!(mine, original, "{file}: more than the attribute changed");
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
