"""A Mininet link emulated by bloatbox: ``BloatboxLink``.

    from bloatbox_link import BloatboxLink
    net.addLink(h1, h2, cls=BloatboxLink, rate='10mbit', delay='20ms', qdisc='fq_codel')

Instead of one veth pair between the two hosts, the link makes two: each
host's interface (``h1-eth0``, as Mininet names it) has its veth peer in
the root namespace (``bbm<N>l``, ``bbm<N>r``, no addresses), and
``bloatbox up --wire bbm<N>l bbm<N>r`` joins those two, so every frame
between the hosts crosses bloatbox's emulated link: rate, delay (each
way), qdisc, ring, BQL. Mininet hosts live in unnamed namespaces, which
is why the wire's ends are in the root namespace rather than inside the
hosts.

Keyword arguments: ``rate``, ``delay`` and ``qdisc`` become ``--set
link.rate=...``, ``link.delay=...`` and ``link.qdisc=...``; ``sets`` is a
list of more ``KEY=VALUE`` overrides; ``config`` a bloatbox configuration
file; ``bloatbox`` the binary (default: ``bloatbox`` on the PATH). Each link
gets its own control socket, ``/run/bloatbox/bbm<N>.sock`` (the
``socket`` attribute): ``bloatbox stats --socket PATH``, ``bloatbox tc
--socket PATH qdisc show``. ``delete()`` (through ``stop()``, which Mininet
calls at ``net.stop()``) ends bloatbox and deletes the two root-side interfaces; the hosts' ends go
with them.

Needs root, as Mininet does. See docs/labs.md.
"""

import itertools
import os
import subprocess
import time

from mininet.link import Link

_numbers = itertools.count()


class BloatboxError(Exception):
    """bloatbox could not wire the link (its message says why)."""


class BloatboxLink(Link):
    """A Mininet link whose frames cross a bloatbox emulated link."""

    #: How long ``bloatbox up --wire`` may take to answer on its socket, s.
    READY_TIMEOUT = 10.0

    def __init__(self, node1, node2, rate=None, delay=None, qdisc=None,
                 sets=(), config=None, bloatbox='bloatbox', **params):
        self.name = 'bbm%d_%d' % (os.getpid() % 10000, next(_numbers))
        self.hub = (self.name + 'l', self.name + 'r')
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
        Link.__init__(self, node1, node2, **params)
        try:
            self.process = self.start()
        except BaseException:
            for hub in self.hub:
                self.run(['ip', 'link', 'del', hub], check=False)
            raise

    # Mininet's Link.__init__ calls this to make the hosts' interfaces.
    def makeIntfPair(self, intfname1, intfname2, addr1=None, addr2=None,
                     node1=None, node2=None, deleteIntfs=True):
        """Two veth pairs, host end into its host, peer in the root namespace."""
        for intf, addr, node, hub in ((intfname1, addr1, node1, self.hub[0]),
                                      (intfname2, addr2, node2, self.hub[1])):
            if deleteIntfs:
                self.run(['ip', 'link', 'del', hub], check=False)
            cmd = ['ip', 'link', 'add', 'name', intf]
            if addr:
                cmd += ['address', addr]
            cmd += ['type', 'veth', 'peer', 'name', hub]
            self.run(cmd)
            self.run(['ip', 'link', 'set', intf, 'netns', str(node.pid)])
            self.run(['ip', 'link', 'set', hub, 'up'])

    def command(self):
        """The ``bloatbox up --wire`` command line of this link."""
        cmd = [self.bloatbox, 'up', '--headless', '--wire', self.hub[0], self.hub[1]]
        if self.config:
            cmd += ['-c', self.config]
        for assignment in ['daemon.control_socket=' + self.socket] + self.settings:
            cmd += ['--set', assignment]
        return cmd

    def start(self):
        """Starts bloatbox and waits until it answers on its socket."""
        process = self.popen(self.command())
        deadline = time.monotonic() + self.READY_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                err = process.stderr.read() if process.stderr else ''
                raise BloatboxError('bloatbox up --wire %s %s exited %s: %s'
                                    % (self.hub[0], self.hub[1], process.returncode, err))
            stats = self.run([self.bloatbox, 'stats', '--socket', self.socket], check=False)
            if stats.returncode == 0:
                return process
            time.sleep(0.05)
        process.terminate()
        raise BloatboxError('bloatbox did not answer on %s' % self.socket)

    def stop_bloatbox(self):
        """Ends bloatbox (SIGTERM; it leaves the interfaces as found) and
        deletes the root-side interfaces this link made; idempotent."""
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
            for hub in self.hub:
                self.run(['ip', 'link', 'del', hub], check=False)

    # Mininet's Link.stop calls delete.
    def delete(self):
        self.stop_bloatbox()
        Link.delete(self)

    # The two ways commands are run, apart so that a test can record them.
    @staticmethod
    def run(cmd, check=True):
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True)
        if check and out.returncode != 0:
            raise BloatboxError('%s: %s' % (' '.join(cmd), out.stderr.strip()))
        return out

    @staticmethod
    def popen(cmd):
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, universal_newlines=True)
