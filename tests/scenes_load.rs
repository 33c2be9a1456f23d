//! The scene files in `scenes/` are the built-in scenes: each is exactly the export of its
//! built-in, and loads back bit-identical to it. Exports at other sizes round-trip too.

use std::path::Path;

use timewarp::scene::{Scene, builtin, builtin_names, builtin_toml, from_toml_str, load};

/// Equal as values and bit for bit (Debug prints floats in shortest round-trip form, so equal
/// Debug text means equal bits; `==` alone would take -0.0 for 0.0).
fn assert_identical(a: &Scene, b: &Scene, what: &str) {
    assert_eq!(a, b, "{what}");
    assert_eq!(format!("{a:?}"), format!("{b:?}"), "{what}: bits differ");
}

#[test]
fn every_scene_file_is_its_builtin() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    for b in builtin_names() {
        let path = dir.join(format!("{}.toml", b.name));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            text == builtin_toml(b.name, None).unwrap(),
            "{} differs from the built-in; regenerate it with \
             `cargo run -- scenes --export {} > scenes/{}.toml`",
            path.display(),
            b.name,
            b.name
        );
        let loaded = load(&path).unwrap();
        assert_identical(&loaded, &builtin(b.name, None).unwrap(), b.name);
    }
}

#[test]
fn the_scene_folder_holds_exactly_the_builtins() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    files.sort();
    let mut want: Vec<String> = builtin_names()
        .iter()
        .map(|b| format!("{}.toml", b.name))
        .collect();
    want.sort();
    assert_eq!(files, want);
}

#[test]
fn exports_at_any_size_load_back_identically() {
    for b in builtin_names() {
        for n in [1, 2, 7, 55, 101, 333] {
            let text = builtin_toml(b.name, Some(n)).unwrap();
            let loaded = from_toml_str(&text).unwrap();
            assert_identical(
                &loaded,
                &builtin(b.name, Some(n)).unwrap(),
                &format!("{} n={n}", b.name),
            );
        }
    }
}
