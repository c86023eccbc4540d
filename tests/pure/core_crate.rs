//! The core crate (`crates/core`, `bloatbox-core`) cannot import the layers
//! above it: they are another crate, which it does not depend on. This test
//! keeps its manifest from growing what the architecture keeps out of the
//! core: the crate above, OS bindings (nix, libc) and JSON (serde_json,
//! whose maps the tc front end builds from the typed dumps).

#[test]
fn the_core_depends_on_nothing_above_it_nor_on_os_or_json_crates() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/crates/core/Cargo.toml");
    let text = std::fs::read_to_string(path).expect("the core's manifest");
    let manifest: toml::Table = text.parse().expect("a TOML manifest");
    let deps = manifest["dependencies"]
        .as_table()
        .expect("a [dependencies] table");
    for name in ["bloatbox", "nix", "libc", "serde_json"] {
        assert!(
            !deps.contains_key(name),
            "{path} names {name} in [dependencies]; the core stays free of it"
        );
    }
    // rand's default features (std, getrandom) would bring libc in.
    let rand = deps["rand"].as_table().expect("rand with its features");
    assert_eq!(
        rand.get("default-features"),
        Some(&toml::Value::Boolean(false))
    );
}
