"""A Mininet link emulated by bloatbox: ``BloatboxLink``.

    from bloatbox_link import BloatboxLink
    net.addLink(h1, h2, cls=BloatboxLink, rate='10mbit', delay='20ms', qdisc='fq_codel')

Instead of one veth pair between the two hosts, the link makes a network
namespace of its own (``bbm<N>``, as ``ip netns add`` names it) and two
veth pairs: each host's interface (``h1-eth0``, as Mininet names it) has
its peer in that namespace (``left``, ``right``), and ``bloatbox up --wire
bbm<N>:left bbm<N>:right`` joins those two, so every frame between the
hosts crosses bloatbox's emulated link: rate, delay (each way), qdisc,
ring, BQL. The link's namespace holds nothing else: no address, IPv6 off,
so no kernel answers or sends a frame on the link around bloatbox (the
root namespace would: its IPv6 link-local addresses, its ARP replies).
Mininet's hosts live in unnamed namespaces, which is why the wire's ends
are not inside the hosts.

Keyword arguments: ``rate``, ``delay`` and ``qdisc`` become ``--set
link.rate=...``, ``link.delay=...`` and ``link.qdisc=...``; ``sets`` is a
list of more ``KEY=VALUE`` overrides; ``config`` a bloatbox configuration
file; ``bloatbox`` the binary (default: ``bloatbox`` on the PATH). Each link
gets its own control socket, ``/run/bloatbox/bbm<N>.sock`` (the
``socket`` attribute): ``bloatbox stats --socket PATH``, ``bloatbox tc
--socket PATH qdisc show``. bloatbox runs in a session of its own (a
Ctrl-C at Mininet's CLI does not end it) and logs to the file ``log``.
``delete()`` (through ``stop()``, which Mininet calls at ``net.stop()``)
ends bloatbox, deletes the namespace (the veth pairs go with it) and the
log. What a killed script left behind, ``sudo mn -c --custom
bloatbox_link.py`` removes (``remove_leftovers()``; the name
is not ``cleanup``: mn makes every name of a --custom file one of its own).

Needs root, as Mininet does. See docs/labs.md.
"""

import itertools
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from mininet.clean import Cleanup
from mininet.link import Link

_numbers = itertools.count()

#: The names this module gives its links' namespaces.
NAME = re.compile(r'^bbm\d+_\d+$')


class BloatboxError(Exception):
    """bloatbox could not wire the link (its message says why)."""


class BloatboxLink(Link):
    """A Mininet link whose frames cross a bloatbox emulated link."""

    #: How long ``bloatbox up --wire`` may take to answer on its socket, s.
    READY_TIMEOUT = 10.0
    #: The wire's two ends, inside the link's namespace.
    ENDS = ('left', 'right')

    def __init__(self, node1, node2, rate=None, delay=None, qdisc=None,
                 sets=(), config=None, bloatbox='bloatbox', **params):
        self.name = 'bbm%d_%d' % (os.getpid(), next(_numbers))
        self.netns = None  # the namespace, once made
        self.socket = '/run/bloatbox/%s.sock' % self.name
        self.bloatbox = bloatbox
        self.settings = []
        for key, value in (('link.rate', rate), ('link.delay', delay),
                           ('link.qdisc', qdisc)):
            if value is not None:
                self.settings.append('%s=%s' % (key, value))
        self.settings.extend(sets)
        self.config = config
        self.process = None
        self.log = None
        try:
            Link.__init__(self, node1, node2, **params)
            self.process = self.start()
        except BaseException:
            self.stop_bloatbox()
            raise

    # Mininet's Link.__init__ calls this to make the hosts' interfaces.
    def makeIntfPair(self, intfname1, intfname2, addr1=None, addr2=None,
                     node1=None, node2=None, deleteIntfs=True):
        """The link's namespace and two veth pairs, each with one end in
        its host (or in this namespace when no host is given: Mininet then
        moves it) and the other in the link's namespace. ``deleteIntfs``
        does not apply: nothing of the same name can be in a new namespace."""
        self.run(['ip', 'netns', 'add', self.name])
        self.netns = self.name
        # New interfaces take 'default'; a kernel without IPv6 has no such key.
        self.run(['ip', 'netns', 'exec', self.netns, 'sysctl', '-qw',
                  'net.ipv6.conf.default.disable_ipv6=1'], check=False)
        for intf, addr, node, end in ((intfname1, addr1, node1, self.ENDS[0]),
                                      (intfname2, addr2, node2, self.ENDS[1])):
            cmd = ['ip', 'link', 'add', 'name', intf]
            if addr:
                cmd += ['address', addr]
            if node is not None:
                cmd += ['netns', str(node.pid)]
            self.run(cmd + ['type', 'veth', 'peer', 'name', end, 'netns', self.netns])
            self.run(['ip', '-n', self.netns, 'link', 'set', end, 'up'])

    def command(self):
        """The ``bloatbox up --wire`` command line of this link."""
        cmd = [self.bloatbox, 'up', '--headless', '--wire',
               '%s:%s' % (self.name, self.ENDS[0]), '%s:%s' % (self.name, self.ENDS[1])]
        if self.config:
            cmd += ['-c', self.config]
        for assignment in ['daemon.control_socket=' + self.socket] + self.settings:
            cmd += ['--set', assignment]
        return cmd

    def start(self):
        """Starts bloatbox and waits until it answers on its socket."""
        fd, self.log = tempfile.mkstemp(prefix=self.name + '-', suffix='.log')
        with os.fdopen(fd, 'w') as log:
            process = self.popen(self.command(), log)
        deadline = time.monotonic() + self.READY_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise BloatboxError('%s exited %s: %s' % (' '.join(self.command()),
                                                          process.returncode, self.said()))
            stats = self.run([self.bloatbox, 'stats', '--socket', self.socket], check=False)
            if stats.returncode == 0:
                return process
            time.sleep(0.05)
        process.terminate()
        process.wait()
        raise BloatboxError('bloatbox did not answer on %s: %s' % (self.socket, self.said()))

    def said(self):
        """What bloatbox wrote to its log (stderr), stripped."""
        try:
            with open(self.log) as log:
                return log.read().strip()
        except (OSError, TypeError):
            return ''

    def stop_bloatbox(self):
        """Ends bloatbox (SIGTERM), deletes the link's namespace (and the
        veth pairs with it) and the log; idempotent. A bloatbox that had
        ended by itself (an interface lost) has its log shown first."""
        if self.process is not None:
            if self.process.poll() not in (None, 0):
                sys.stderr.write('*** bloatbox of %s exited %s: %s\n'
                                 % (self.name, self.process.returncode, self.said()))
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
        if self.netns is not None:
            self.run(['ip', 'netns', 'del', self.netns], check=False)
            self.netns = None
        if self.log is not None:
            self.remove(self.log)
            self.log = None

    # Mininet's Link.stop calls delete.
    def delete(self):
        self.stop_bloatbox()
        Link.delete(self)

    # How commands are run and files removed, apart so that a test can record them.
    @staticmethod
    def run(cmd, check=True):
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True)
        if check and out.returncode != 0:
            raise BloatboxError('%s: %s' % (' '.join(cmd), out.stderr.strip()))
        return out

    @staticmethod
    def popen(cmd, log):
        # A session of its own: the terminal's Ctrl-C is for Mininet's CLI.
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)

    @staticmethod
    def remove(path):
        try:
            os.remove(path)
        except OSError:
            pass


def wired():
    """(pid, namespace) of each running ``bloatbox up --wire`` of a
    ``BloatboxLink`` (its first end names the link's namespace)."""
    found = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                words = f.read().decode(errors='replace').split('\0')
        except OSError:
            continue
        if 'up' in words and '--wire' in words[:-1]:
            netns = words[words.index('--wire') + 1].split(':')[0]
            if NAME.match(netns):
                found.append((int(pid), netns))
    return found


def remove_leftovers():
    """Removes what BloatboxLinks of killed scripts left behind: ends their
    bloatbox processes, deletes their namespaces, sockets and logs. Like
    ``mn -c``, it takes every run's, not only this script's."""
    for pid, _ in wired():
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + 5
    while wired() and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid, _ in wired():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    names = BloatboxLink.run(['ip', 'netns', 'list'], check=False).stdout.split()
    for netns in filter(NAME.match, names):
        BloatboxLink.run(['ip', 'netns', 'del', netns], check=False)
    for folder, suffix in (('/run/bloatbox', '.sock'), (tempfile.gettempdir(), '.log')):
        for entry in os.listdir(folder) if os.path.isdir(folder) else ():
            if entry.endswith(suffix) and NAME.match(entry[:-len(suffix)].split('-')[0]):
                BloatboxLink.remove(os.path.join(folder, entry))


# `mn -c` runs it when this file is loaded (`mn -c --custom bloatbox_link.py`),
# and so does a script that calls mininet.clean.cleanup().
Cleanup.addCleanupCallback(remove_leftovers)
