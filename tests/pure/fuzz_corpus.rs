//! The fuzz targets on stable: every seed of `fuzz/corpus/TARGET/` (and the
//! inputs that once broke a target, kept there) through the target's body
//! in `bloatbox::fuzzing`, which panics when an invariant breaks. This is
//! the smoke run of every target that `cargo test` (and so CI) does; the
//! coverage-guided runs are `scripts/fuzz.sh TARGET SECONDS` (nightly).

use std::path::Path;

#[test]
fn every_seed_of_every_target_keeps_its_invariants() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for (name, body) in bloatbox::fuzzing::TARGETS {
        let dir = root.join(name);
        let mut seeds: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        seeds.sort();
        assert!(!seeds.is_empty(), "{name}: no seeds in {}", dir.display());
        for seed in &seeds {
            let data = std::fs::read(seed).unwrap();
            if let Err(e) = std::panic::catch_unwind(|| body(&data)) {
                std::panic::resume_unwind(Box::new(format!(
                    "{name} on {}: {}",
                    seed.display(),
                    e.downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| e.downcast_ref::<&str>().copied())
                        .unwrap_or("panic")
                )));
            }
        }
        println!("{name}: {} seeds", seeds.len());
    }
}

/// `scripts/fuzz.sh` on a machine without cargo-fuzz installs it, says so,
/// and then runs the target: here `cargo` and `rustup` are stand-ins on the
/// PATH that log what they are asked (cargo-fuzz "exists" once installed).
#[test]
fn fuzz_script_installs_cargo_fuzz_where_it_is_missing() {
    use std::os::unix::fs::PermissionsExt;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::fs::read_dir(root.join("fuzz/corpus"))
        .unwrap()
        .next()
        .expect("a fuzz target")
        .unwrap()
        .file_name();
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("log");
    let stand_in = |name: &str, body: &str| {
        let path = bin.path().join(name);
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\necho \"{name} $*\" >> {}\n{body}\n",
                log.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    stand_in("rustup", "echo nightly-x86_64-unknown-linux-gnu");
    let installed = bin.path().join("installed");
    stand_in(
        "cargo",
        &format!(
            "case \"$*\" in\n  '+nightly fuzz --version') [ -e {0} ];;\n  \
             'install cargo-fuzz --locked') touch {0};;\n  *) exit 0;;\nesac",
            installed.display()
        ),
    );
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    let out = std::process::Command::new(root.join("scripts/fuzz.sh"))
        .arg(&target)
        .arg("1")
        .env("PATH", path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("cargo-fuzz is missing: installing it"),
        "{stderr}"
    );
    let log = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = log.lines().collect();
    let install = calls
        .iter()
        .position(|c| *c == "cargo install cargo-fuzz --locked");
    let run = calls
        .iter()
        .position(|c| c.starts_with("cargo +nightly fuzz run "));
    assert!(
        install.is_some() && run.is_some() && install < run,
        "install, then run: {log}"
    );
}
