"""Tests of BloatboxLink against a stub of Mininet's Link (Mininet is not
needed): the commands it issues to make the link's namespace and two veth
pairs, start bloatbox and clean up, in order. Run: python3 -m unittest
discover examples/mininet (tests/pure/mininet_link.rs runs it; the real
Mininet: tests/root/mininet.rs)."""

import glob
import os
import sys
import tempfile
import types
import unittest


class StubLink:
    """What BloatboxLink relies on of mininet.link.Link (Mininet 2.3):
    __init__ names the interfaces NODE-ethN and calls makeIntfPair with
    deleteIntfs=False; stop() calls delete()."""

    def __init__(self, node1, node2, port1=None, port2=None, intfName1=None,
                 intfName2=None, addr1=None, addr2=None, **params):
        intfName1 = intfName1 or '%s-eth0' % node1.name
        intfName2 = intfName2 or '%s-eth0' % node2.name
        self.params = params
        self.makeIntfPair(intfName1, intfName2, addr1, addr2, node1, node2,
                          deleteIntfs=False)
        self.deleted = False

    def stop(self):
        self.delete()

    def delete(self):
        self.deleted = True


class StubCleanup:
    """mininet.clean.Cleanup: the callbacks `mn -c` runs."""
    callbacks = []

    @classmethod
    def addCleanupCallback(cls, callback):
        cls.callbacks.append(callback)


mininet = types.ModuleType('mininet')
mininet.link = types.ModuleType('mininet.link')
mininet.link.Link = StubLink
mininet.clean = types.ModuleType('mininet.clean')
mininet.clean.Cleanup = StubCleanup
for module in (mininet, mininet.link, mininet.clean):
    sys.modules.setdefault(module.__name__, module)

import bloatbox_link  # noqa: E402  (after the stub)


class Node:
    def __init__(self, name, pid):
        self.name, self.pid = name, pid


class Done:
    def __init__(self, returncode=0, stderr=''):
        self.returncode, self.stderr = returncode, stderr


class FakeProcess:
    def __init__(self, exits=None):
        self.returncode = exits
        self.stderr = None
        self.signals = []

    def poll(self):
        return self.returncode

    def terminate(self):
        self.signals.append('TERM')

    def wait(self, timeout=None):
        return 0

    def kill(self):
        self.signals.append('KILL')


class Recorder:
    """Stands in for BloatboxLink.run/popen: records each command."""

    def __init__(self, stats_ok=True, exits=None):
        self.commands = []
        self.stats_ok = stats_ok
        self.process = FakeProcess(exits)
        self.says = ''

    def run(self, cmd, check=True):
        self.commands.append(cmd)
        if cmd[1:2] == ['stats']:
            return Done(0 if self.stats_ok else 1)
        return Done()

    def popen(self, cmd, log):
        log.write(self.says)
        self.commands.append(['POPEN'] + cmd)
        return self.process


class BloatboxLinkTest(unittest.TestCase):
    def link(self, recorder, **kwargs):
        cls = type('Recorded', (bloatbox_link.BloatboxLink,), {
            'run': staticmethod(recorder.run),
            'popen': staticmethod(recorder.popen),
            'READY_TIMEOUT': 0.2,
        })
        return cls(Node('h1', 101), Node('h2', 202), **kwargs)

    def test_add_link_makes_a_namespace_and_two_veth_pairs_and_wires_them(self):
        rec = Recorder()
        link = self.link(rec, rate='10mbit', delay='20ms', qdisc='fq_codel')
        ns = link.name
        self.assertEqual(rec.commands[:6], [
            ['ip', 'netns', 'add', ns],
            ['ip', 'netns', 'exec', ns, 'sysctl', '-qw', 'net.ipv6.conf.default.disable_ipv6=1'],
            ['ip', 'link', 'add', 'name', 'h1-eth0', 'netns', '101',
             'type', 'veth', 'peer', 'name', 'left', 'netns', ns],
            ['ip', '-n', ns, 'link', 'set', 'left', 'up'],
            ['ip', 'link', 'add', 'name', 'h2-eth0', 'netns', '202',
             'type', 'veth', 'peer', 'name', 'right', 'netns', ns],
            ['ip', '-n', ns, 'link', 'set', 'right', 'up'],
        ])
        self.assertEqual(rec.commands[6], [
            'POPEN', 'bloatbox', 'up', '--headless', '--wire', ns + ':left', ns + ':right',
            '--set', 'daemon.control_socket=' + link.socket,
            '--set', 'link.rate=10mbit', '--set', 'link.delay=20ms',
            '--set', 'link.qdisc=fq_codel',
        ])
        self.assertEqual(rec.commands[7], ['bloatbox', 'stats', '--socket', link.socket])
        self.assertEqual(link.socket, '/run/bloatbox/%s.sock' % ns)
        self.assertTrue(bloatbox_link.NAME.match(ns), ns)
        self.assertIn(bloatbox_link.remove_leftovers, StubCleanup.callbacks)
        link.stop()

    def test_stop_ends_bloatbox_then_deletes_the_namespace_and_log(self):
        rec = Recorder()
        link = self.link(rec, rate='10mbit')
        ns, log = link.name, link.log
        self.assertTrue(os.path.exists(log))
        del rec.commands[:]
        link.stop()
        self.assertEqual(rec.process.signals, ['TERM'])
        self.assertEqual(rec.commands, [['ip', 'netns', 'del', ns]])
        self.assertFalse(os.path.exists(log))
        self.assertTrue(link.deleted)
        link.stop()
        self.assertEqual(rec.process.signals, ['TERM'], 'stopped once')
        self.assertEqual(rec.commands, [['ip', 'netns', 'del', ns]], 'deleted once')

    def test_addresses_config_and_more_settings_pass_through(self):
        rec = Recorder()
        link = self.link(rec, addr1='02:00:00:00:00:01', config='/etc/bb.toml',
                         sets=['link.ring=64'])
        self.assertEqual(rec.commands[2][4:7], ['h1-eth0', 'address', '02:00:00:00:00:01'])
        popen = next(c for c in rec.commands if c[0] == 'POPEN')
        self.assertEqual(popen[7:], ['-c', '/etc/bb.toml', '--set',
                                     'daemon.control_socket=' + link.socket,
                                     '--set', 'link.ring=64'])
        link.stop()

    def test_a_refused_wire_raises_with_its_log_and_removes_what_it_made(self):
        rec = Recorder(exits=1)
        rec.says = 'interface "left" is down\n'
        with self.assertRaises(bloatbox_link.BloatboxError) as refused:
            self.link(rec, rate='10mbit')
        self.assertIn('exited 1: interface "left" is down', str(refused.exception))
        ns = rec.commands[0][-1]
        self.assertEqual(rec.commands[-1], ['ip', 'netns', 'del', ns])
        self.assertEqual(glob.glob(os.path.join(tempfile.gettempdir(), ns + '-*')), [])

    def test_two_links_get_names_and_sockets_of_their_own(self):
        a, b = self.link(Recorder()), self.link(Recorder())
        self.assertNotEqual(a.name, b.name)
        self.assertNotEqual(a.socket, b.socket)
        self.assertNotEqual(a.log, b.log)
        a.stop()
        b.stop()


if __name__ == '__main__':
    unittest.main()
