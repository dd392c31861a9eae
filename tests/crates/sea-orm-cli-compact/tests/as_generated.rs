//! This crate's sources are sea-orm-cli's output (`tests/sea-orm-cli/compact`)
//! with no change but the one docs/migrating.md asks for: each protected
//! entity's file wrapped in `#[hierlock::protected(..)] pub mod x { .. }`
//! (its lines indented) and included from `lib.rs` in place of `pub mod x;`.

use std::fs;
use std::path::Path;

#[test]
fn sources_are_the_generated_ones_with_the_attribute_alone() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let generated = here.join("../../sea-orm-cli/compact/src");
    let mut wrapped = Vec::new();
    let mut files: Vec<_> = fs::read_dir(&generated)
        .expect("the generated sources")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .into_string()
                .expect("a name")
        })
        .collect();
    files.sort();
    for file in files.iter().filter(|f| *f != "lib.rs") {
        let original = fs::read_to_string(generated.join(file)).expect("a generated file");
        let ours = fs::read_to_string(here.join("src").join(file)).expect("this crate's file");
        let Some(rest) = ours.strip_prefix("#[hierlock::protected(") else {
            assert_eq!(ours, original, "{file} differs from sea-orm-cli's output");
            continue;
        };
        let name = file.trim_end_matches(".rs");
        let (_, body) = rest.split_once('\n').expect("the attribute's line");
        let body = body
            .strip_prefix(&format!("pub mod {name} {{\n"))
            .and_then(|b| b.strip_suffix("}\n"))
            .unwrap_or_else(|| panic!("{file}: `pub mod {name} {{ .. }}` around the items"));
        let unindented: String = body
            .split_inclusive('\n')
            .map(|line| line.strip_prefix("    ").unwrap_or(line))
            .collect();
        assert_eq!(
            unindented, original,
            "{file}: more than the wrapper changed"
        );
        wrapped.push(name.to_owned());
    }
    assert_eq!(
        wrapped,
        ["accounts", "invoices", "line_items", "projects", "users"],
        "the hierarchy's entities are the protected ones"
    );
    let lib = fs::read_to_string(generated.join("lib.rs")).expect("lib.rs");
    let ours = fs::read_to_string(here.join("src/lib.rs")).expect("our lib.rs");
    let mut expected = lib.clone();
    for name in &wrapped {
        expected = expected.replace(
            &format!("pub mod {name};\n"),
            &format!("include!(\"{name}.rs\");\n"),
        );
    }
    assert_ne!(expected, lib);
    assert_eq!(ours, expected, "lib.rs: more than the includes changed");
}
