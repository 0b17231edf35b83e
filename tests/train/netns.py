"""Two network namespaces on one machine, as two nodes of a launch: each has a network of its own
(its own loopback, one interface ``pv0`` with its own address), and both reach each other and
the host over a bridge, as two machines on one switch reach each other and a server.

Why: a launch that spans machines has failure modes one host never shows (an address that only
works on the host it names, a rendezvous over a real interface, a server reached from elsewhere);
the two-node rehearsal (``test_two_nodes.py``) runs ``torchrun --nnodes 2`` with one node in each
namespace and the server on the host side of the bridge. The file system stays shared, as on a
cluster with a network file system; a node with a folder of its own is made by a bind mount in
that node's own mount namespace (``ip netns exec`` gives each command one).

Needs root and ``ip`` (iproute2), as CI has; ``TwoNodes.open`` raises ``NodesUnavailable`` with
the reason otherwise, and the tests skip with it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

#: the interface name each node sees (names are per namespace, so both nodes share it)
IFACE = "pv0"


class NodesUnavailable(RuntimeError):
    """This machine cannot make the namespaces (not root, no iproute2, no CAP_NET_ADMIN)."""


def _ip(*argv: str) -> None:
    done = subprocess.run(["ip", *argv], capture_output=True, text=True)
    if done.returncode != 0:
        raise NodesUnavailable(f"ip {' '.join(argv)}: {done.stderr.strip()}")


#: pairs opened by this process (each gets names of its own)
_opened = 0


def _free_subnet() -> int:
    """A third octet under 10.213 that no interface of this host holds (a killed run's bridge
    left behind would otherwise route the same addresses elsewhere)."""
    held = subprocess.run(["ip", "-br", "addr"], capture_output=True, text=True).stdout
    for octet in range(1, 255):
        if f"10.213.{octet}." not in held:
            return octet
    raise NodesUnavailable("every 10.213.N.0/24 subnet is taken on this host")


@dataclass
class TwoNodes:
    """``with TwoNodes.open() as nodes``: ``nodes.host`` the host's address on the bridge (bind a
    server there), ``nodes.address[r]`` node r's, ``nodes.enter(r)`` the argv prefix that runs a
    command inside node r."""

    tag: str
    host: str
    address: tuple[str, str]

    @classmethod
    def open(cls) -> TwoNodes:
        if os.geteuid() != 0 or shutil.which("ip") is None:
            raise NodesUnavailable("the two-node rehearsal needs root and iproute2 (`ip`)")
        global _opened
        _opened += 1
        tag = f"pv{os.getpid() % 100000}x{_opened}"  # one per pair: teardown may lag
        subnet = f"10.213.{_free_subnet()}"
        nodes = cls(tag, f"{subnet}.1", (f"{subnet}.2", f"{subnet}.3"))
        try:
            _ip("link", "add", f"{tag}br", "type", "bridge")
            _ip("addr", "add", f"{nodes.host}/24", "dev", f"{tag}br")
            _ip("link", "set", f"{tag}br", "up")
            for r in (0, 1):
                ns, outer = f"{tag}n{r}", f"{tag}h{r}"
                _ip("netns", "add", ns)
                _ip("link", "add", outer, "type", "veth", "peer", "name", IFACE, "netns", ns)
                _ip("link", "set", outer, "master", f"{tag}br", "up")
                _ip("-n", ns, "addr", "add", f"{nodes.address[r]}/24", "dev", IFACE)
                _ip("-n", ns, "link", "set", IFACE, "up")
                _ip("-n", ns, "link", "set", "lo", "up")
        except NodesUnavailable:
            nodes.close()
            raise
        return nodes

    def enter(self, node: int) -> list[str]:
        return ["ip", "netns", "exec", f"{self.tag}n{node}"]

    def stop(self) -> None:
        """Kill what still runs in either node: a launcher and the ranks it left behind (a rank
        whose launcher died runs on, orphaned, and keeps the launcher's pipes open)."""
        for r in (0, 1):
            pids = subprocess.run(
                ["ip", "netns", "pids", f"{self.tag}n{r}"], capture_output=True, text=True
            )
            for pid in pids.stdout.split():
                if int(pid) != os.getpid():
                    subprocess.run(["kill", "-9", pid], capture_output=True)

    def close(self) -> None:
        """Stop what still runs in the namespaces, then remove them (their veth ends go with
        them) and the bridge; quiet about what was never made."""
        self.stop()
        for r in (0, 1):
            subprocess.run(["ip", "link", "del", f"{self.tag}h{r}"], capture_output=True)
            subprocess.run(["ip", "netns", "del", f"{self.tag}n{r}"], capture_output=True)
        subprocess.run(["ip", "link", "del", f"{self.tag}br"], capture_output=True)

    def __enter__(self) -> TwoNodes:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
