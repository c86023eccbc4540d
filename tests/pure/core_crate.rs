//! The layers are crates, so cargo refuses an upward import: a crate cannot
//! use one it does not depend on. These tests keep the manifests from
//! growing what the architecture keeps out: each layer's crate depends
//! only on the layers below it; only the live crate depends on the OS
//! bindings (nix, libc) and tokio (the application only in its tests);
//! and the core on no JSON (serde_json, whose maps the tc front end builds
//! from the typed dumps).

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

/// The layers, lowest first, each with its manifest.
const LAYERS: &[(&str, &str)] = &[
    ("bloatbox-core", "crates/core/Cargo.toml"),
    ("bloatbox-lang", "crates/lang/Cargo.toml"),
    ("bloatbox-sim", "crates/sim/Cargo.toml"),
    ("bloatbox-live", "crates/live/Cargo.toml"),
    ("bloatbox-tui", "crates/tui/Cargo.toml"),
    ("bloatbox", "Cargo.toml"),
];

/// The `[dependencies]` of the manifest at `path` (from the repository).
fn dependencies(path: &str) -> toml::Table {
    let path = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("a manifest");
    let manifest: toml::Table = text.parse().expect("a TOML manifest");
    manifest["dependencies"]
        .as_table()
        .expect("a [dependencies] table")
        .clone()
}

#[test]
fn each_layer_depends_only_on_layers_below_it() {
    for (i, (name, path)) in LAYERS.iter().enumerate() {
        let deps = dependencies(path);
        for (above, _) in &LAYERS[i..] {
            assert!(
                !deps.contains_key(*above),
                "{path}: {name} depends on {above}, which is not below it"
            );
        }
        // The simulator and the live driver are side by side: neither
        // depends on the other.
        if *name == "bloatbox-live" {
            assert!(!deps.contains_key("bloatbox-sim"), "{path}");
        }
    }
}

#[test]
fn only_the_live_crate_depends_on_os_bindings_or_tokio() {
    for (name, path) in LAYERS {
        let deps = dependencies(path);
        for os in ["nix", "libc", "tokio"] {
            assert_eq!(
                deps.contains_key(os),
                *name == "bloatbox-live",
                "{path}: {name} and {os}"
            );
        }
    }
}
