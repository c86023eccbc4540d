//! How each direction's datapath thread is scheduled: pinned to the CPU
//! `daemon.cpus` names for it (if any), timer slack of 1 ns, and
//! SCHED_FIFO when asked for (never together with busy polling, which would
//! then starve the core's other processes), with a warning when spinning
//! under the kernel's real-time throttling (`kernel.sched_rt_runtime_us`,
//! see `Documentation/scheduler/sched-rt-group.rst`) would stop the thread
//! for part of every period. With `daemon.pm_qos_us` it also holds a PM QoS
//! CPU latency request while the thread runs, as cyclictest and tuned's
//! latency-performance profile do (`/dev/cpu_dma_latency`,
//! kernel/power/qos.c: `cpu_latency_qos_open` adds the request, the write
//! sets it, `cpu_latency_qos_release` drops it when the descriptor
//! closes, so nothing outlives the thread): the cpuidle governor then
//! picks only idle states that wake within it, and with 0 an idle CPU
//! polls instead of halting (on a virtual machine a halted vCPU costs a
//! VM exit and the host's wake-up to reach again).

use std::fs::File;
use std::io::{self, Write};

use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;

use crate::dir::Dir;

use super::config::DatapathConfig;

/// The PM QoS CPU latency device (include/linux/miscdevice.h's
/// `cpu_dma_latency`, kernel/power/qos.c).
const PM_QOS_DEVICE: &str = "/dev/cpu_dma_latency";

/// Sets up the scheduling of the calling thread, which carries `dir`, as
/// `cfg` asks; what cannot be done is logged, and the thread runs on
/// without it. Returns the PM QoS request the thread holds for as long as
/// it keeps the descriptor (`daemon.pm_qos_us`), if any.
pub(super) fn set_up(cfg: &DatapathConfig, dir: Dir) -> Option<File> {
    let first = dir == Dir::LeftToRight;
    let pm_qos = cfg.pm_qos_us.and_then(|us| match hold_pm_qos(us) {
        Ok(f) => Some(f),
        Err(e) => {
            if first {
                tracing::warn!("could not hold a PM QoS request of {us} µs ({PM_QOS_DEVICE}, daemon.pm_qos_us): {e}");
            }
            None
        }
    });
    schedule(cfg, dir);
    pm_qos
}

/// Adds a PM QoS CPU latency request of `us` µs, held until the returned
/// descriptor closes: the device takes the value as a native-endian s32
/// (`cpu_latency_qos_write`).
fn hold_pm_qos(us: u32) -> io::Result<File> {
    let mut f = File::options().write(true).open(PM_QOS_DEVICE)?;
    let value = i32::try_from(us).unwrap_or(i32::MAX);
    f.write_all(&value.to_ne_bytes())?;
    Ok(f)
}

/// Pinning, timer slack and SCHED_FIFO of the calling thread.
fn schedule(cfg: &DatapathConfig, dir: Dir) {
    if let Some(cpu) = cfg.cpus[dir.index()] {
        if let Err(e) = pin_to(cpu) {
            tracing::warn!(
                "could not pin the {} datapath thread to CPU {cpu} (daemon.cpus): {e}",
                dir.arrow()
            );
        }
    }
    if let Err(e) = nix::sys::prctl::set_timerslack(1) {
        tracing::warn!("could not set timer slack to 1 ns: {e}");
    }
    // Both directions' threads meet the same kernel and settings: what
    // they would both say is said by the left→right one only.
    let first = dir == Dir::LeftToRight;
    match (cfg.realtime_priority, cfg.busy_poll_us) {
        (Some(prio), 0) => match set_fifo_priority(prio) {
            Ok(()) => {
                if let Some(warning) = rt_throttle_warning(cfg.spin_us, rt_budget_us()) {
                    if first {
                        tracing::warn!("{warning}");
                    }
                }
            }
            Err(e) => tracing::warn!(
                "could not switch the {} datapath thread to SCHED_FIFO {prio}: {e}",
                dir.arrow()
            ),
        },
        (Some(prio), us) if first => tracing::warn!(
            "the datapath stays at normal priority, not SCHED_FIFO {prio}: with \
             daemon.busy_poll_us = {us} it polls without sleeping, and under SCHED_FIFO no \
             ordinary process (the traffic's own included) would run on its core for {us} µs \
             after each frame"
        ),
        _ => {}
    }
}

/// The kernel's real-time budget, `(sched_rt_runtime_us,
/// sched_rt_period_us)`, or None if it cannot be read.
fn rt_budget_us() -> Option<(i64, i64)> {
    let read = |name: &str| -> Option<i64> {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some((read("sched_rt_runtime_us")?, read("sched_rt_period_us")?))
}

/// What to tell a user whose datapath spins (`spin_us`) under SCHED_FIFO
/// while the kernel limits real-time threads to `runtime` µs of every
/// `period` (`budget_us`): wherever departures are closer than the spin
/// margin the thread never sleeps, and the kernel then stops it for the
/// rest of each period (50 ms a second by default). None if it does not
/// spin, or the budget is unlimited (-1) or unknown.
fn rt_throttle_warning(spin_us: u32, budget_us: Option<(i64, i64)>) -> Option<String> {
    let (runtime, period) = budget_us?;
    if spin_us == 0 || runtime < 0 || runtime >= period {
        return None;
    }
    Some(format!(
        "the datapath spins (daemon.spin_us = {spin_us}) under SCHED_FIFO, and the kernel lets \
         real-time threads run only {runtime} µs of every {period} µs \
         (kernel.sched_rt_runtime_us): where departures are closer than {spin_us} µs the thread \
         never sleeps and will be stopped for {} ms every {} ms. On a machine dedicated to \
         bloatbox, `sysctl kernel.sched_rt_runtime_us=-1` lifts the limit (bloatbox does not \
         change it)",
        (period - runtime) / 1000,
        period / 1000
    ))
}

/// Lets the calling thread run on CPU `cpu` only.
fn pin_to(cpu: usize) -> nix::Result<()> {
    let mut set = CpuSet::new();
    set.set(cpu)?;
    // Pid 0: the calling thread.
    sched_setaffinity(Pid::from_raw(0), &set)
}

/// Puts the calling thread under SCHED_FIFO at `prio`.
#[allow(unsafe_code)]
fn set_fifo_priority(prio: u8) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: i32::from(prio),
    };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spinning_realtime_datapath_is_warned_of_the_kernels_throttling() {
        let default_budget = Some((950_000, 1_000_000));
        let w = rt_throttle_warning(50, default_budget).expect("a warning");
        assert!(w.contains("daemon.spin_us = 50"), "{w}");
        assert!(w.contains("stopped for 50 ms every 1000 ms"), "{w}");
        assert!(w.contains("sysctl kernel.sched_rt_runtime_us=-1"), "{w}");
        // Not spinning, no limit, a limit as long as the period, unknown.
        assert_eq!(rt_throttle_warning(0, default_budget), None);
        assert_eq!(rt_throttle_warning(50, Some((-1, 1_000_000))), None);
        assert_eq!(rt_throttle_warning(50, Some((1_000_000, 1_000_000))), None);
        assert_eq!(rt_throttle_warning(50, None), None);
    }
}
