"""Tests of BloatboxLink against a stub of Mininet's Link (Mininet is not
needed): the commands it issues to make the two veth pairs, start bloatbox
and clean up, in order. Run: python3 -m unittest discover examples/mininet
(tests/pure/mininet.rs runs it)."""

import sys
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


mininet = types.ModuleType('mininet')
mininet.link = types.ModuleType('mininet.link')
mininet.link.Link = StubLink
sys.modules.setdefault('mininet', mininet)
sys.modules.setdefault('mininet.link', mininet.link)

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

    def run(self, cmd, check=True):
        self.commands.append(cmd)
        if cmd[1:2] == ['stats']:
            return Done(0 if self.stats_ok else 1)
        return Done()

    def popen(self, cmd):
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

    def test_add_link_makes_two_veth_pairs_and_wires_their_root_ends(self):
        rec = Recorder()
        link = self.link(rec, rate='10mbit', delay='20ms', qdisc='fq_codel')
        l, r = link.hub
        self.assertTrue(l.endswith('l') and r.endswith('r') and len(l) <= 15)
        self.assertEqual(rec.commands[:6], [
            ['ip', 'link', 'add', 'name', 'h1-eth0', 'type', 'veth', 'peer', 'name', l],
            ['ip', 'link', 'set', 'h1-eth0', 'netns', '101'],
            ['ip', 'link', 'set', l, 'up'],
            ['ip', 'link', 'add', 'name', 'h2-eth0', 'type', 'veth', 'peer', 'name', r],
            ['ip', 'link', 'set', 'h2-eth0', 'netns', '202'],
            ['ip', 'link', 'set', r, 'up'],
        ])
        self.assertEqual(rec.commands[6], [
            'POPEN', 'bloatbox', 'up', '--headless', '--wire', l, r,
            '--set', 'daemon.control_socket=' + link.socket,
            '--set', 'link.rate=10mbit', '--set', 'link.delay=20ms',
            '--set', 'link.qdisc=fq_codel',
        ])
        self.assertEqual(rec.commands[7], ['bloatbox', 'stats', '--socket', link.socket])
        self.assertEqual(link.socket, '/run/bloatbox/%s.sock' % link.name)

    def test_stop_ends_bloatbox_then_deletes_the_root_ends(self):
        rec = Recorder()
        link = self.link(rec, rate='10mbit')
        del rec.commands[:]
        link.stop()
        self.assertEqual(rec.process.signals, ['TERM'])
        self.assertEqual(rec.commands, [['ip', 'link', 'del', h] for h in link.hub])
        self.assertTrue(link.deleted)
        link.stop()
        self.assertEqual(rec.process.signals, ['TERM'], 'stopped once')

    def test_addresses_config_and_more_settings_pass_through(self):
        rec = Recorder()
        link = self.link(rec, addr1='02:00:00:00:00:01', config='/etc/bb.toml',
                         sets=['link.ring=64'])
        self.assertEqual(rec.commands[0][4:7], ['h1-eth0', 'address', '02:00:00:00:00:01'])
        popen = next(c for c in rec.commands if c[0] == 'POPEN')
        self.assertEqual(popen[7:], ['-c', '/etc/bb.toml', '--set',
                                     'daemon.control_socket=' + link.socket,
                                     '--set', 'link.ring=64'])

    def test_a_refused_wire_raises_and_removes_what_it_made(self):
        rec = Recorder(exits=1)
        with self.assertRaises(bloatbox_link.BloatboxError):
            self.link(rec, rate='10mbit')
        self.assertEqual(rec.commands[-2:], [['ip', 'link', 'del', h] for h in
                                              (rec.commands[0][-1], rec.commands[3][-1])])

    def test_two_links_get_names_and_sockets_of_their_own(self):
        a, b = self.link(Recorder()), self.link(Recorder())
        self.assertNotEqual(a.hub, b.hub)
        self.assertNotEqual(a.socket, b.socket)


if __name__ == '__main__':
    unittest.main()
