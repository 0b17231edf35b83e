"""The two-node rehearsal on one machine: ``torchrun --nnodes 2`` with one node in each of two
network namespaces (``netns.TwoNodes``), ``paravt train`` in server mode against a server on the
host side of their bridge, the launch as docs/train/MULTI_GPU.md ("Multi-node") writes it.

What must hold (issue: "A training run that outlives its servers and spans machines", item 5):

- the two nodes form one gloo group over the network and train every step; each node sends its
  own generate requests from its own address; rank 0's folder push reaches the server;
- a node whose ``output_dir`` is a folder of its own (a node-local disk at the same path: a bind
  mount in that node alone) stops every rank at start with one line naming the folder — the
  folder push needs a folder that rank 0 writes and the server reads, and the run folder the
  ranks share; it does not go over the network;
- a node whose host name resolves to a loopback address (``/etc/hosts``, as in many containers)
  without ``GLOO_SOCKET_IFNAME`` gets one line naming that variable, not gloo's C++ error.

The server is the stand-in of ``standin_vllm`` (vLLM's server protocol over real HTTP, replies
that depend on the prompt): what crosses the network is what a real vLLM server would see.
Marker ``ranks``: two processes with a core each; CI runs them after the suite.
"""

from __future__ import annotations

import json
import socket

import pytest
from netns import train_on_two_nodes
from standin_vllm import StandInServer

pytestmark = pytest.mark.ranks


@pytest.fixture
def server(two_nodes, tiny_qwen3_dir):
    """The stand-in server bound to the host's address on the bridge (not loopback: a node
    reaches only what its network holds)."""
    httpd = StandInServer.for_model(tiny_qwen3_dir, host=two_nodes.host).start()
    yield httpd
    httpd.stop()


def _paravt_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("paravt:")]


def test_two_nodes_train_every_step_against_one_server_over_the_network(
    two_nodes, server, tiny_qwen3_dir, shared_videos, tmp_path
):
    from paravt.train.metrics import read_jsonl

    run_dir = tmp_path / "run"
    done = train_on_two_nodes(
        two_nodes,
        server.url,
        run_dir,
        tiny_qwen3_dir,
        shared_videos,
        "trainer.vllm_check_weights=false",
    )
    for r, (rc, err) in enumerate(done):
        assert rc == 0, f"node {r}:\n{err[-4000:]}"
    losses = [row for row in read_jsonl(run_dir / "metrics.jsonl") if "loss" in row]
    assert [row["step"] for row in losses] == [1, 2]
    # each node sent its own requests, from its own address, to the host's
    assert set(server.clients) == set(two_nodes.address), server.clients
    for rank in (0, 1):
        assert read_jsonl(run_dir / "episodes" / f"rank{rank}.jsonl")
    # rank 0's folder push of each step's weights reached the server, from the shared run folder
    pushed = run_dir / "vllm-weights"
    assert server.reloads == [str(pushed / "step-0"), str(pushed / "step-1")]
    config = json.loads((run_dir / "config.json").read_text())
    assert config["command"]["trainer"]["vllm_server_base_url"] == [server.url]
    print({a: server.clients.count(a) for a in two_nodes.address}, "requests by node address")


def test_a_node_with_a_run_folder_of_its_own_stops_every_rank_with_one_line(
    two_nodes, server, tiny_qwen3_dir, shared_videos, tmp_path
):
    run_dir, own = tmp_path / "run", tmp_path / "node1-local-disk"
    run_dir.mkdir()
    own.mkdir()
    done = train_on_two_nodes(
        two_nodes, server.url, run_dir, tiny_qwen3_dir, shared_videos, own=own
    )
    for r, (rc, err) in enumerate(done):
        assert rc != 0, f"node {r} went on"
        lines = _paravt_lines(err)
        assert len(lines) == 1, err[-3000:]
        assert f"output_dir={run_dir} is not one folder for every rank" in lines[0]
    assert server.reloads == [] and server.clients == []  # stopped before any rollout


def test_a_loopback_host_name_without_gloo_socket_ifname_is_one_line(
    two_nodes, server, tiny_qwen3_dir, shared_videos, tmp_path
):
    if not socket.gethostbyname(socket.gethostname()).startswith("127."):
        pytest.skip("this host's name resolves to a routable address: gloo finds it unaided")
    done = train_on_two_nodes(
        two_nodes, server.url, tmp_path / "run", tiny_qwen3_dir, shared_videos, ifname=False
    )
    for rc, err in done:  # every rank refuses before the group forms: none hangs in gloo
        assert rc != 0
        lines = _paravt_lines(err)
        assert len(lines) == 1, err[-3000:]
        assert "GLOO_SOCKET_IFNAME" in lines[0] and "resolves to 127." in lines[0], lines[0]
    assert server.clients == []
