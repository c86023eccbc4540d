//! Linux capabilities, which belong to each thread rather than to the
//! process: what each thread of the daemon keeps once the link is up, and
//! how set-up hands capabilities to its `ip` children when bloatbox runs
//! with file capabilities (`setcap`) instead of as root.
//!
//! - The datapath thread and the control-socket threads call `drop_all` as
//!   they start: no capability in any set, no_new_privs, and (when the
//!   thread may, i.e. it holds CAP_SETPCAP) an empty bounding set. What they
//!   do from then on (read and write the TAPs' open descriptors, serve the
//!   already bound socket) needs none.
//! - The main thread of `bloatbox up`, once the link is up, calls
//!   `keep_only(&TEARDOWN)`: ending what runs in the namespaces and `ip
//!   netns del` at exit is all it still does.
//! - A process that is not root loses its capabilities when it executes a
//!   program without file capabilities, such as `ip`, unless they are
//!   ambient. `pass_to_children` raises `CHILDREN` as ambient capabilities
//!   (from the permitted set the file capabilities gave) before set-up.
//!   Root needs nothing: its children get the bounding set anyway.

use std::io;

use caps::{CapSet, Capability, CapsHashSet};

/// What set-up's `ip` children need: creating and deleting namespaces
/// (mounts: CAP_SYS_ADMIN; files in the root-owned /run/netns:
/// CAP_DAC_OVERRIDE), moving and configuring links (CAP_NET_ADMIN).
pub const CHILDREN: [Capability; 3] = [
    Capability::CAP_NET_ADMIN,
    Capability::CAP_SYS_ADMIN,
    Capability::CAP_DAC_OVERRIDE,
];

/// What the main thread keeps after set-up for the tear-down at exit:
/// `CHILDREN` for `ip netns del`, and for ending what still runs in the
/// namespaces first (`netns::kill_netns_processes`), CAP_SYS_PTRACE (`ip
/// netns pids` reads other processes' /proc/PID/ns/net, which a process
/// holding fewer capabilities than its target may not) and CAP_KILL (for
/// processes of another user). Without root, those of them the file
/// capabilities did not grant are simply not held.
pub const TEARDOWN: [Capability; 5] = [
    CHILDREN[0],
    CHILDREN[1],
    CHILDREN[2],
    Capability::CAP_SYS_PTRACE,
    Capability::CAP_KILL,
];

/// Of `CHILDREN`, what bloatbox itself needs only to open /dev/net/tun
/// where that is root's (mode 0600): without root, `lower_children_only`
/// takes it out of the effective set once the TAPs are open, so that the
/// daemon's own file operations (the control socket) are checked against
/// its user.
pub const CHILDREN_ONLY: [Capability; 1] = [Capability::CAP_DAC_OVERRIDE];

/// A capability operation that failed, naming it.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct PrivilegeError {
    what: String,
    #[source]
    source: io::Error,
}

fn fail(what: impl Into<String>) -> impl FnOnce(caps::errors::CapsError) -> PrivilegeError {
    let what = what.into();
    move |e| PrivilegeError {
        what,
        source: io::Error::other(e.to_string()),
    }
}

/// Shrinks the bounding set to `keep` if this thread may (CAP_SETPCAP in
/// its effective set); otherwise leaves it, which no_new_privs or an empty
/// permitted set makes harmless. Must run before the effective set loses
/// CAP_SETPCAP.
fn shrink_bounding(keep: &[Capability]) -> Result<(), PrivilegeError> {
    if !caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP).unwrap_or(false) {
        return Ok(());
    }
    let bounding = caps::read(None, CapSet::Bounding).map_err(fail("reading the bounding set"))?;
    for cap in bounding.into_iter().filter(|c| !keep.contains(c)) {
        caps::drop(None, CapSet::Bounding, cap)
            .map_err(fail(format!("dropping {cap} from the bounding set")))?;
    }
    Ok(())
}

/// Leaves the calling thread without any capability: no_new_privs set,
/// bounding set emptied where allowed, ambient, inheritable, permitted and
/// effective sets cleared. Other threads keep theirs.
pub fn drop_all() -> Result<(), PrivilegeError> {
    nix::sys::prctl::set_no_new_privs().map_err(|e| PrivilegeError {
        what: "setting no_new_privs".into(),
        source: e.into(),
    })?;
    shrink_bounding(&[])?;
    caps::clear(None, CapSet::Ambient).map_err(fail("clearing the ambient set"))?;
    caps::clear(None, CapSet::Inheritable).map_err(fail("clearing the inheritable set"))?;
    // Clearing the permitted set clears the effective set with it.
    caps::clear(None, CapSet::Permitted).map_err(fail("clearing the permitted set"))?;
    Ok(())
}

/// `drop_all` for a helper thread (capture writer, metrics) that serves
/// nothing a privilege could be abused through: a failure is logged, not
/// fatal, since the thread's work needs no capability either way.
pub fn drop_all_in_helper(thread: &str) {
    if let Err(e) = drop_all() {
        tracing::warn!("the {thread} thread keeps its capabilities: {e}");
    }
}

/// Keeps only `keep` (those of it the thread has) in the calling thread's
/// permitted set, and in its effective set those of them already there;
/// the bounding set shrinks to `keep` where allowed, and the inheritable
/// and ambient sets keep only what they already held of `keep`, so
/// children still get what set-up gave them.
pub fn keep_only(keep: &[Capability]) -> Result<(), PrivilegeError> {
    shrink_bounding(keep)?;
    let permitted =
        caps::read(None, CapSet::Permitted).map_err(fail("reading the permitted set"))?;
    let inheritable =
        caps::read(None, CapSet::Inheritable).map_err(fail("reading the inheritable set"))?;
    let effective =
        caps::read(None, CapSet::Effective).map_err(fail("reading the effective set"))?;
    let kept: CapsHashSet = keep
        .iter()
        .copied()
        .filter(|c| permitted.contains(c))
        .collect();
    let inherit: CapsHashSet = kept.intersection(&inheritable).copied().collect();
    let active: CapsHashSet = kept.intersection(&effective).copied().collect();
    caps::set(None, CapSet::Inheritable, &inherit).map_err(fail("setting the inheritable set"))?;
    // Effective first: it must stay within the permitted set at each step.
    caps::set(None, CapSet::Effective, &active).map_err(fail("setting the effective set"))?;
    caps::set(None, CapSet::Permitted, &kept).map_err(fail("setting the permitted set"))?;
    // Lowering permitted and inheritable lowered the ambient set with them.
    Ok(())
}

/// Without root: raises those of `wanted` that the thread has permitted as
/// inheritable and ambient, so that the programs it runs (`ip`) get them;
/// returns the ones missing from the permitted set. As root it does nothing: root's
/// children get the bounding set.
pub fn pass_to_children(wanted: &[Capability]) -> Result<Vec<Capability>, PrivilegeError> {
    if nix::unistd::geteuid().is_root() {
        return Ok(Vec::new());
    }
    let permitted =
        caps::read(None, CapSet::Permitted).map_err(fail("reading the permitted set"))?;
    let (have, missing): (Vec<Capability>, Vec<Capability>) =
        wanted.iter().partition(|c| permitted.contains(c));
    let mut inheritable =
        caps::read(None, CapSet::Inheritable).map_err(fail("reading the inheritable set"))?;
    inheritable.extend(have.iter().copied());
    caps::set(None, CapSet::Inheritable, &inheritable)
        .map_err(fail("setting the inheritable set"))?;
    for cap in have {
        caps::raise(None, CapSet::Ambient, cap)
            .map_err(fail(format!("raising {cap} as an ambient capability")))?;
    }
    Ok(missing)
}

/// Without root: lowers `CHILDREN_ONLY` from the calling thread's
/// effective set; it stays permitted, inheritable and ambient for the `ip`
/// children. As root it does nothing.
pub fn lower_children_only() -> Result<(), PrivilegeError> {
    if nix::unistd::geteuid().is_root() {
        return Ok(());
    }
    for cap in CHILDREN_ONLY {
        caps::drop(None, CapSet::Effective, cap)
            .map_err(fail(format!("lowering {cap} from the effective set")))?;
    }
    Ok(())
}

/// The effective capability mask of one thread of this process (`CapEff`
/// in /proc/self/task/TID/status).
pub fn thread_effective(tid: i32) -> io::Result<u64> {
    let path = format!("/proc/self/task/{tid}/status");
    let status = std::fs::read_to_string(&path)?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .ok_or_else(|| io::Error::other(format!("{path} has no CapEff line")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current_tid() -> i32 {
        nix::unistd::gettid().as_raw()
    }

    /// Runs `f` on a fresh thread, so that dropping capabilities there
    /// leaves the test runner's threads alone.
    fn on_a_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(f).join().unwrap()
    }

    #[test]
    fn drop_all_leaves_the_thread_with_nothing_and_others_untouched() {
        let before = thread_effective(current_tid()).unwrap();
        let (eff, permitted, nnp) = on_a_thread(|| {
            drop_all().unwrap();
            (
                thread_effective(current_tid()).unwrap(),
                caps::read(None, CapSet::Permitted).unwrap(),
                nix::sys::prctl::get_no_new_privs().unwrap(),
            )
        });
        assert_eq!(eff, 0);
        assert!(permitted.is_empty(), "{permitted:?}");
        assert!(nnp);
        assert_eq!(thread_effective(current_tid()).unwrap(), before);
    }

    #[test]
    fn keep_only_keeps_what_it_is_asked_for_and_nothing_more() {
        let permitted = caps::read(None, CapSet::Permitted).unwrap();
        let kept = on_a_thread(|| {
            keep_only(&[Capability::CAP_NET_ADMIN]).unwrap();
            caps::read(None, CapSet::Effective).unwrap()
        });
        let expected: CapsHashSet = permitted
            .into_iter()
            .filter(|c| *c == Capability::CAP_NET_ADMIN)
            .collect();
        assert_eq!(kept, expected);
    }

    #[test]
    fn root_passes_nothing_and_a_user_is_told_what_is_missing() {
        let missing = on_a_thread(|| pass_to_children(&CHILDREN).unwrap());
        if nix::unistd::geteuid().is_root() {
            assert!(missing.is_empty());
        } else {
            let permitted = caps::read(None, CapSet::Permitted).unwrap();
            for cap in CHILDREN {
                assert_eq!(missing.contains(&cap), !permitted.contains(&cap));
            }
        }
    }

    #[test]
    fn thread_effective_reads_this_threads_mask() {
        let mask = thread_effective(current_tid()).unwrap();
        let eff = caps::read(None, CapSet::Effective).unwrap();
        let expected = eff.iter().fold(0u64, |m, c| m | c.bitmask());
        assert_eq!(mask, expected);
        assert!(thread_effective(-1).is_err());
    }
}
