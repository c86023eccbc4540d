#!/usr/bin/env python3
"""The tc battery: a few hundred tc commands against the running kernel and
against bloatbox, compared per command (stdout, stderr, exit code).

usage:
  sudo scripts/tc-battery.py            # run both sides, print a summary and the differences
  sudo scripts/tc-battery.py --write    # also write the kernel's side as test data
  sudo scripts/tc-battery.py --all      # print every difference (default: the first 40)
  sudo scripts/tc-battery.py --dump=F   # also keep both sides' raw results in F (JSON)

The commands are crates/lang/src/tc/testdata/battery.tc: sessions (`== NAME`), each
run on a fresh device, every command followed by the shows of SHOWS below.
Each side runs it on its own device:

  kernel:   a TAP in a network namespace of its own (`ip tuntap`, no
            carrier, so no frame ever moves the counters), txqueuelen 1000,
            MTU 1500: what bloatbox's emulated devices model (a single-queue
            TAP whose default root is pfifo_fast 0:). A veth would not do:
            it is IFF_NO_QUEUE (its default root is noqueue) and has one TX
            queue per CPU;
  bloatbox: `bloatbox up --headless` with its two namespaces, IPv6 off in
            both once it is up (no router solicitations or MLD reports
            through the tree), every command through `bloatbox tc`, the
            daemon's control socket, as a user types it.

A session starts with `tc qdisc del dev DEV root` and a probe of the
automatic handle counter (`tc qdisc replace dev DEV root pfifo`, its handle,
`tc qdisc del dev DEV root`), none of it compared. The kernel's counter
(`qdisc_alloc_handle` in net/sched/sch_api.c) is one for the whole machine,
so each side's automatic handles (majors 8000 to ffff) are written relative
to that probe: the session's first automatic handle reads 8001:, as on a
freshly booted kernel and in a fresh bloatbox tree. The kernel's TAP is
written as `left`.

A session that names a qdisc kind bloatbox has and the running kernel lacks
(probed by adding it as the root of a scratch TAP) is skipped on both sides.
A difference is either exact (stdout, stderr and exit code agree), or
"same plus a hint" (bloatbox's stderr is the kernel's, verbatim, if any,
followed by lines of its own: the rule of docs/tc-ethtool.md for hints),
or different.

--write stores the kernel's results in crates/lang/src/tc/testdata/battery-kernel.jsonl
(one JSON object per command: the command, stdout, stderr, exit code, or
`"repeat": true` for a show that printed what it printed last in its
session; `{"session": NAME}` starts a session; the first line says which
kernel, iproute2, shows and skipped sessions), which the test
`tc::battery_tests` replays through bloatbox's tc front end without root.

Needs root, iproute2 (ip, tc) and cargo (or BLOATBOX=path of a built
binary). Everything it creates is named tcb<pid>* and removed on exit.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST = os.path.join(ROOT, "crates/lang/src/tc/testdata/battery.tc")
KERNEL_DATA = os.path.join(ROOT, "crates/lang/src/tc/testdata/battery-kernel.jsonl")

# What follows every command: each object's show, with -s, -d and -j. No
# `-j class show`: iproute2 6.1 prints classes as text under -j
# (tc_class_list opens no JSON writer there), so it would only repeat
# `class show`.
SHOWS = [
    "tc qdisc show dev left",
    "tc -s qdisc show dev left",
    "tc -s -j qdisc show dev left",
    "tc class show dev left",
    "tc -s -d class show dev left",
    "tc filter show dev left",
    "tc -j filter show dev left",
]

# The kinds bloatbox builds (tc::kinds::BUILTIN); a session naming one the
# kernel lacks is skipped.
KINDS = ["pfifo_fast", "pfifo", "bfifo", "pfifo_head_drop", "sfq", "codel",
         "fq_codel", "tbf", "htb", "mq", "qfq"]
# Its classifiers and actions (tc::filter), probed on an HTB root.
FILTERS = {"u32": "u32 match u32 0 0 flowid 1:1", "matchall": "matchall flowid 1:1",
           "flow": "flow hash keys dst divisor 16",
           "skbedit": "u32 match u32 0 0 flowid 1:1 action skbedit priority 1"}

PID = os.getpid()
NS_K = f"tcb{PID}k"
TAP_K = f"tcb{PID}k"
NS_L, NS_R = f"tcb{PID}l", f"tcb{PID}r"
TAP_L, TAP_R = f"tcb{PID}l", f"tcb{PID}r"
SCRATCH = f"tcb{PID}s"


def sh(*args, check=True):
    """Runs a command, returns (rc, stdout, stderr) as text."""
    p = subprocess.run(args, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return p.returncode, p.stdout, p.stderr


def parse_list(path):
    """[(session name, [command line, ...]), ...] of the battery file."""
    sessions = []
    for raw in open(path, encoding="utf-8"):
        line = raw.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("== "):
            sessions.append((line[3:].strip(), []))
        elif sessions:
            sessions[-1][1].append(line.strip())
        else:
            raise SystemExit(f"{path}: a command before the first `== session`: {line}")
    return sessions


def kinds_named(cmds):
    """The bloatbox kinds a session's commands name."""
    words = {w for c in cmds for w in c.split()}
    return [k for k in list(KINDS) + list(FILTERS) if k in words]


def relative_handles(text, base):
    """Automatic handles (majors 8000..ffff, as tc prints them: `8001:`,
    `"8001:`, `8001:a`) rewritten relative to the session's probe `base`, so
    that the first one after it reads 8001:."""
    def sub(m):
        major = int(m.group(2), 16)
        if major == 0xFFFF:  # ffff: is never automatic (TC_H_ROOT's major)
            return m.group(0)
        rel = (major - base - 1) % 0x7FFF + 0x8001
        return f"{m.group(1)}{rel:x}:"
    return re.sub(r"(^|[^0-9a-fA-F:])([89a-fA-F][0-9a-fA-F]{3}):", sub, text)


class Kernel:
    """tc against a TAP in a namespace of its own."""

    name = "kernel"

    def __init__(self):
        sh("ip", "netns", "add", NS_K)
        sh("ip", "-n", NS_K, "link", "set", "lo", "up")
        for tap in (TAP_K, SCRATCH):
            sh("ip", "-n", NS_K, "tuntap", "add", "dev", tap, "mode", "tap")
            sh("ip", "-n", NS_K, "link", "set", tap, "txqueuelen", "1000", "mtu", "1500", "up")

    def tc(self, line, dev=TAP_K):
        words = line.split()[1:]
        words = [dev if w == "left" else w for w in words]
        rc, out, err = sh("tc", "-n", NS_K, *words, check=False)
        return rc, out.replace(TAP_K, "left"), err.replace(TAP_K, "left")

    def has_kind(self, kind):
        rc, _, err = self.tc(f"tc qdisc replace dev left root handle 1: {kind}", dev=SCRATCH)
        self.tc("tc qdisc del dev left root", dev=SCRATCH)
        return rc == 0 or "kind is unknown" not in err

    def has_filter(self, name):
        self.tc("tc qdisc replace dev left root handle 1: htb", dev=SCRATCH)
        rc, _, _ = self.tc(f"tc filter add dev left parent 1: protocol all prio 1 {FILTERS[name]}",
                           dev=SCRATCH)
        self.tc("tc qdisc del dev left root", dev=SCRATCH)
        return rc == 0

    def close(self):
        sh("ip", "netns", "del", NS_K, check=False)


class Bloatbox:
    """`bloatbox tc` against a daemon in namespaces of its own."""

    name = "bloatbox"

    def __init__(self, binary, tmp):
        self.bin = binary
        self.cfg = os.path.join(tmp, "battery.toml")
        sock = os.path.join(tmp, "battery.sock")
        with open(self.cfg, "w", encoding="utf-8") as f:
            f.write(f"""[left]
namespace = "{NS_L}"
tap = "{TAP_L}"
ipv4 = "10.94.0.1/24"
ipv6 = "fd00:94::1/64"

[right]
namespace = "{NS_R}"
tap = "{TAP_R}"
ipv4 = "10.94.0.2/24"
ipv6 = "fd00:94::2/64"

[link]
rate = "10gbit"
delay = "0ms"
txqueuelen = 1000

[daemon]
control_socket = "{sock}"
""")
        self.log = open(os.path.join(tmp, "daemon.log"), "w", encoding="utf-8")
        self.daemon = subprocess.Popen([binary, "up", "--headless", "-c", self.cfg],
                                       stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.daemon.poll() is not None:
                raise SystemExit(f"bloatbox up exited ({self.daemon.returncode}): "
                                 + open(self.log.name, encoding="utf-8").read())
            if os.path.exists(sock) and sh(binary, "tc", "-c", self.cfg, "qdisc", "show",
                                           "dev", "left", check=False)[0] == 0:
                break
            time.sleep(0.05)
        else:
            raise SystemExit("bloatbox's control socket did not answer within 30 s")
        for ns in (NS_L, NS_R):
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
               "net.ipv6.conf.default.disable_ipv6=1")

    def tc(self, line):
        return sh(self.bin, "tc", "-c", self.cfg, *line.split()[1:], check=False)

    def close(self):
        if self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGINT)
            try:
                self.daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
        for ns in (NS_L, NS_R):
            sh("ip", "netns", "del", ns, check=False)


def probe_base(side):
    """Resets the device and returns the automatic handle counter's major."""
    side.tc("tc qdisc del dev left root")
    rc, out, err = side.tc("tc qdisc replace dev left root pfifo")
    _, shown, _ = side.tc("tc qdisc show dev left")
    side.tc("tc qdisc del dev left root")
    m = re.match(r"qdisc pfifo ([0-9a-f]+): root", shown)
    if rc != 0 or not m:
        raise SystemExit(f"{side.name}: the handle probe failed: {rc} {out}{err}{shown}")
    return int(m.group(1), 16)


def run_side(side, sessions):
    """[(session, [entry, ...]), ...]: each entry a dict of cmd, stdout,
    stderr, rc."""
    results = []
    for name, cmds in sessions:
        base = probe_base(side)
        entries = []
        for cmd in cmds:
            for line in [cmd] + SHOWS:
                rc, out, err = side.tc(line)
                entries.append({"cmd": line, "stdout": relative_handles(out, base),
                                "stderr": relative_handles(err, base), "rc": rc})
        results.append((name, entries))
    return results


def verdict(k, b):
    """'same', 'hint' (bloatbox = the kernel's stderr then lines of its
    own) or 'differ'."""
    if k == b:
        return "same"
    if (k["stdout"], k["rc"]) == (b["stdout"], b["rc"]) \
            and (k["stderr"] == "" or k["stderr"].endswith("\n")) \
            and b["stderr"].startswith(k["stderr"]):
        return "hint"
    return "differ"


def show_entry(tag, e):
    lines = [f"    {tag} exit {e['rc']}"]
    for stream in ("stdout", "stderr"):
        for line in e[stream].splitlines(keepends=True):
            lines.append(f"    {tag} {stream[3:]}| {line.rstrip(chr(10))!s}"
                         + ("" if line.endswith("\n") else "  [no newline]"))
    return "\n".join(lines)


def main():
    if os.geteuid() != 0:
        raise SystemExit("tc-battery.py needs root")
    write = "--write" in sys.argv
    limit = None if "--all" in sys.argv else 40
    sessions = parse_list(LIST)
    binary = os.environ.get("BLOATBOX")
    if not binary:
        subprocess.run(["cargo", "build", "-q"], cwd=ROOT, check=True)
        binary = os.path.join(ROOT, "target/debug/bloatbox")
    tmp = tempfile.mkdtemp(prefix=f"tcb{PID}")
    sides = []

    def stop(*_):
        raise SystemExit("interrupted")

    signal.signal(signal.SIGTERM, stop)
    try:
        kernel = Kernel()
        sides.append(kernel)
        lacks = [k for k in KINDS if not kernel.has_kind(k)]
        lacks += [f for f in FILTERS if not kernel.has_filter(f)]
        runnable = [(n, c) for n, c in sessions if not set(kinds_named(c)) & set(lacks)]
        skipped = [(n, c) for n, c in sessions if set(kinds_named(c)) & set(lacks)]
        bloat = Bloatbox(binary, tmp)
        sides.append(bloat)
        k_res = run_side(kernel, runnable)
        b_res = run_side(bloat, runnable)
    finally:
        for side in reversed(sides):
            side.close()
        shutil.rmtree(tmp, ignore_errors=True)

    counts = {"same": 0, "hint": 0, "differ": 0}
    cmd_counts = {"same": 0, "hint": 0, "differ": 0}
    diffs = []
    for (name, ks), (_, bs) in zip(k_res, b_res):
        # A command counts as identical when it and all its shows are.
        for i in range(0, len(ks), len(SHOWS) + 1):
            group = [verdict(k, b) for k, b in zip(ks[i:i + len(SHOWS) + 1], bs[i:i + len(SHOWS) + 1])]
            worst = "differ" if "differ" in group else "hint" if "hint" in group else "same"
            cmd_counts[worst] += 1
        for k, b in zip(ks, bs):
            v = verdict(k, b)
            counts[v] += 1
            if v == "differ":
                diffs.append((name, k, b))

    _, tcv, _ = sh("tc", "-V", check=False)
    n_cmds = sum(len(c) for _, c in runnable)
    print(f"kernel {os.uname().release}, {tcv.strip()}; kinds, classifiers and actions the kernel lacks: {' '.join(lacks) or 'none'}")
    print(f"sessions: {len(sessions)} ({len(skipped)} skipped: "
          f"{', '.join(n for n, _ in skipped) or 'none'})")
    print(f"commands: {n_cmds + sum(len(c) for _, c in skipped)} "
          f"({sum(len(c) for _, c in skipped)} skipped), each followed by {len(SHOWS)} shows")
    print(f"commands run: {n_cmds}: identical with their shows {cmd_counts['same']}, "
          f"identical plus a hint {cmd_counts['hint']}, differing {cmd_counts['differ']}")
    print(f"lines run (commands and shows): {sum(counts.values())}: identical {counts['same']}, "
          f"plus a hint {counts['hint']}, differing {counts['differ']}")
    # A difference repeated by the shows of following commands is printed once.
    seen = set()
    printed = 0
    for name, k, b in diffs:
        key = (k["cmd"], json.dumps(k), json.dumps(b))
        if key in seen:
            continue
        seen.add(key)
        if limit is not None and printed >= limit:
            continue
        printed += 1
        print(f"\n[{name}] {k['cmd']}")
        print(show_entry("kernel  ", k))
        print(show_entry("bloatbox", b))
    if limit is not None and len(seen) > limit:
        print(f"\n... {len(seen) - limit} more distinct differences (--all prints them)")

    dump = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--dump=")), None)
    if dump:
        with open(dump, "w", encoding="utf-8") as f:
            json.dump({"kernel": k_res, "bloatbox": b_res}, f)

    if write:
        with open(KERNEL_DATA, "w", encoding="utf-8") as f:
            meta = {"kernel": os.uname().release, "iproute2": tcv.strip(),
                    "date": time.strftime("%Y-%m-%d", time.gmtime()),
                    "shows": SHOWS, "skipped": [n for n, _ in skipped]}
            f.write(json.dumps(meta) + "\n")
            for name, entries in k_res:
                f.write(json.dumps({"session": name}) + "\n")
                last = {}
                for e in entries:
                    # A show that prints what it printed last time in this
                    # session is written as a repeat.
                    if e["cmd"] in SHOWS and last.get(e["cmd"]) == e:
                        f.write(json.dumps({"cmd": e["cmd"], "repeat": True}) + "\n")
                        continue
                    last[e["cmd"]] = e
                    f.write(json.dumps(e) + "\n")
        print(f"\nwrote {os.path.relpath(KERNEL_DATA, ROOT)}")


if __name__ == "__main__":
    main()
