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
import sys
from dataclasses import dataclass

from gloo_ranks import SERVER_RANKS_WAITS

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


def train_on_two_nodes(
    nodes: TwoNodes, base_url, run_dir, model, videos, *extra, ifname=True, own=None
) -> list[tuple[int, str]]:
    """``paravt train`` cpu-smoke in server mode against ``base_url``, 2 steps, under both nodes'
    ``torchrun`` (one rank each, node 0 holding the rendezvous on its own address at torchrun's
    default port); each node's return code and stderr. ``extra``: more ``--set`` overrides;
    ``ifname``: give gloo the nodes' interface (``GLOO_SOCKET_IFNAME``); ``own``: node 1's
    node-local folder, bind-mounted over ``run_dir`` in node 1 alone."""
    sets = (
        f"output_dir={run_dir}", "data.path=builtin:smoke", f"data.video_root={videos}",
        f"model={model}", "trainer.use_vllm=true", "trainer.vllm_mode=server",
        f"trainer.vllm_server_base_url={base_url}",
        "trainer.vllm_importance_sampling_mode=token_truncate", "trainer.max_steps=2",
        "trainer.save_steps=100", *SERVER_RANKS_WAITS, *extra,
    )  # fmt: skip
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    env.pop("GLOO_SOCKET_IFNAME", None)
    procs = []
    for r in (0, 1):
        node_env = dict(env, GLOO_SOCKET_IFNAME=IFACE) if ifname else env
        cmd = [
            sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
            "--nproc_per_node", "1", "--node_rank", str(r), "--master_addr", nodes.address[0],
            "--master_port", "29500", "-m", "paravt.cli.main", "train", "--config", "cpu-smoke",
            *(a for s in sets for a in ("--set", s)),
        ]  # fmt: skip
        if own is not None and r == 1:
            cmd = ["sh", "-c", f'mount --bind "{own}" "{run_dir}" && exec "$@"', "sh", *cmd]
        procs.append(
            subprocess.Popen(
                nodes.enter(r) + cmd,
                env=node_env,
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )  # fmt: skip
        )
    done = []
    for p in procs:
        try:
            _, err = p.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            nodes.stop()  # torchrun and the ranks it left (they hold its pipes open)
            _, err = p.communicate()
        done.append((p.returncode, err))
    return done
