//! The `bloatbox` command line without a running daemon: exit codes and the
//! messages that tell people what to do. No namespaces are created here.

use std::process::{Command, Output};

use crate::common::{package_of, run_bin as run, tool_exists, BIN};
use std::fs::Permissions;
use std::os::unix::fs::PermissionsExt;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A configuration whose names no other test or daemon uses.
fn private_config(dir: &std::path::Path) -> std::path::PathBuf {
    let pid = std::process::id();
    let path = dir.join("c.toml");
    let text = format!(
        "[left]\nnamespace = \"bbc-{pid}-l\"\ntap = \"bc{}l\"\n\n\
         [right]\nnamespace = \"bbc-{pid}-r\"\ntap = \"bc{}r\"\n\n\
         [daemon]\ncontrol_socket = \"{}\"\n",
        pid % 100_000,
        pid % 100_000,
        dir.join("ctl.sock").display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn check_prints_the_report_or_the_error_with_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let good = private_config(dir.path());
    let out = run(&["check", good.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains(&format!("bbc-{}-l", std::process::id())),
        "{report}"
    );

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[link]\nrate = \"fast\"\n").unwrap();
    let out = run(&["check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("link.rate") && err.contains("fast"), "{err}");

    let out = run(&["check", dir.path().join("missing.toml").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));

    // Valid but doomed: tc's warning reaches the user.
    let warned = dir.path().join("warned.toml");
    std::fs::write(
        &warned,
        "[link]\ntc = [\"tc qdisc add dev left root tbf rate 1mbit burst 100 latency 5ms\"]\n",
    )
    .unwrap();
    let out = run(&["check", warned.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("burst 100 is lower than device mtu (1514)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn stats_and_exec_without_a_daemon_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = private_config(dir.path());
    let cfg = cfg.to_str().unwrap();
    let out = run(&["stats", "-c", cfg]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is `bloatbox up` running"),
        "{}",
        stderr(&out)
    );
    let out = run(&["exec", "left", "-c", cfg, "--", "true"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("bloatbox up"), "{}", stderr(&out));
    // exec needs a command after `--`.
    let out = run(&["exec", "left", "-c", cfg]);
    assert!(!out.status.success());
}

#[test]
fn exec_reads_bloatbox_config_as_tc_set_and_stats_do() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("from-env.toml");
    for args in [&["exec", "left", "--", "true"][..], &["stats"][..]] {
        let out = crate::common::bloatbox()
            .env("BLOATBOX_CONFIG", &missing)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains("from-env.toml"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn check_on_a_simulator_scenario_says_to_use_sim() {
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/scenarios/bloat_pfifo_fast.toml"
    );
    let out = run(&["check", scenario]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("unknown field `seed`")
            && err.contains("is a simulator scenario")
            && err.contains(&format!("`bloatbox sim {scenario}`")),
        "{err}"
    );
    // A configuration with a bad key is not taken for one.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "seed = 1\n[link]\nrate = \"fast\"\n").unwrap();
    let err = stderr(&run(&["check", bad.to_str().unwrap()]));
    assert!(err.contains("seed") && !err.contains("scenario"), "{err}");
}

#[test]
fn checking_the_shipped_htb_configuration_warns_of_nothing() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/htb-sfq-100mbit.toml");
    let out = run(&["check", file]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("WARN"), "{}", stderr(&out));
}

#[test]
fn test_takes_set_as_up_and_run_do() {
    // Applied to each configuration before anything runs: a bad value is
    // refused naming the key, a good one gets past the overrides.
    let out = run(&[
        "test",
        "--set",
        "link.rate=fast",
        "--duration",
        "1s",
        "--warmup",
        "0s",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--set link.rate=fast") && err.contains("link.rate"),
        "{err}"
    );
}

#[test]
fn up_without_privileges_refuses_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = private_config(dir.path());
    let cfg = cfg.to_str().unwrap();
    let out = if nix::unistd::geteuid().is_root() {
        // Drop to nobody without capabilities, running a copy of the binary
        // and the configuration from a directory nobody may enter (the
        // checkout may be under a private home).
        assert!(
            tool_exists("setpriv"),
            "this test cannot run here: running as root and `setpriv` is missing: \
             apt-get install {}",
            package_of("setpriv")
        );
        let open = tempfile::tempdir().unwrap();
        std::fs::set_permissions(open.path(), Permissions::from_mode(0o755)).unwrap();
        let bin = open.path().join("bloatbox");
        std::fs::copy(BIN, &bin).unwrap();
        let config = open.path().join("c.toml");
        std::fs::copy(cfg, &config).unwrap();
        std::fs::set_permissions(&config, Permissions::from_mode(0o644)).unwrap();
        let out = Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
            ])
            .arg(&bin)
            .args(["up", "-c"])
            .arg(&config)
            .output()
            .unwrap();
        assert!(
            !stderr(&out).starts_with("setpriv:"),
            "setpriv could not run the binary: {}",
            stderr(&out)
        );
        out
    } else {
        run(&["up", "-c", cfg])
    };
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("bloatbox up needs root or CAP_NET_ADMIN"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn up_takes_set_overrides_and_refuses_a_bad_one_before_anything_runs() {
    let out = run(&["up", "--headless", "--set", "link.rate=fast"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(e.contains("--set: link.rate = fast: invalid rate"), "{e}");
}

#[test]
fn sim_reports_a_bad_scenario_with_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "this is not a scenario\n").unwrap();
    let out = run(&["sim", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("bad.toml"), "{}", stderr(&out));
}

/// A duration flag reads a bare number as the configuration and `set` do:
/// µs, as tc reads it, with a warning naming the flag.
#[test]
fn a_duration_without_a_unit_is_microseconds_with_a_warning() {
    let out = run(&["test", "--duration", "10"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(
            "warning: --duration 10: time \"10\" has no unit: tc reads it as 10us; did you mean \"10ms\" or \"10s\"?"
        ),
        "{err}"
    );
    if nix::unistd::geteuid().is_root() {
        // Refused before anything runs: the default warm-up is longer.
        assert!(
            err.contains("--warmup 2s must be shorter than --duration 10µs"),
            "{err}"
        );
    }
}
