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
