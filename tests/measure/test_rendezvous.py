"""The nodes' handshake before a run across nodes (issue 28): a shared token, the same
settings on every node, the store on the address given, bounded waits that say what they
waited for. Real ``dpscale measure`` agents on this machine (gloo, localhost), as in
test_across_nodes.py; the handshake itself also in-process, host and node in two threads.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from dpscale.measure.agent import _store_on
from dpscale.measure.handshake import RendezvousRefusedError, handshake, listen
from dpscale.measure.nodes import ClusterShape

QUICK = ("--no-collectives", "--backend", "gloo", "--model-params", "100k")
QUICK += ("--steps", "3", "--warmup-steps", "1", "--json", "--no-store")
ENDS_S = 600.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _agent(
    root: Path, port: int, rank: int, token: str | None, *extra: str
) -> subprocess.Popen[str]:
    tmp = root / f"tmp-{rank}-{token}-{len(list(root.iterdir()))}"
    tmp.mkdir()
    command = [sys.executable, "-m", "dpscale", "measure", "--nnodes", "2"]
    command += ["--node-rank", str(rank), "--rdzv-endpoint", f"127.0.0.1:{port}"]
    command += [*QUICK, *extra]
    env = dict(os.environ, TMPDIR=str(tmp), XDG_STATE_HOME=str(root / "state"))
    env.pop("DPSCALE_RDZV_TOKEN", None)
    if token is not None:
        env["DPSCALE_RDZV_TOKEN"] = token
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _finish(processes: Sequence[subprocess.Popen[str]]) -> list[tuple[int, str, str]]:
    ended = []
    try:
        for process in processes:
            out, err = process.communicate(timeout=ENDS_S)
            ended.append((process.returncode, out, err))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    return ended


@pytest.mark.distributed
def test_a_third_agent_with_a_wrong_token_is_refused_and_the_right_two_complete(
    tmp_path: Path,
) -> None:
    port = _free_port()
    lead = _agent(tmp_path, port, 0, "right horse battery")
    intruder = _agent(tmp_path, port, 1, "wrong")
    [(code, out, err)] = _finish([intruder])
    assert (code, out) == (2, "")
    [line] = err.strip().splitlines()
    assert line.startswith("dpscale: error: node 0 refused the agent from 127.0.0.1:")
    assert line.endswith(" wrong rendezvous token; no rank started")
    assert not list(tmp_path.glob("tmp-1-wrong-*/*"))  # no rank, no run folder
    other = _agent(tmp_path, port, 1, "right horse battery")
    (lead_code, lead_out, lead_err), (other_code, other_out, _) = _finish([lead, other])
    assert lead_code == 0, lead_err
    assert other_code == 0
    assert json.loads(lead_out)["partial"] is False
    assert [row["devices"] for row in json.loads(lead_out)["results"]] == [1, 2]
    assert json.loads(other_out)["lead"] is False
    # node 0 said, on its own stderr, that it turned an agent away
    assert "wrong rendezvous token" in lead_err
    # the token never appears in anything a node printed
    assert "right horse battery" not in lead_out + lead_err + other_out


@pytest.mark.distributed
def test_a_node_with_other_settings_is_refused_before_any_rank_starts(tmp_path: Path) -> None:
    port = _free_port()
    lead = _agent(tmp_path, port, 0, "t", "--micro-batch", "32", "--precision", "fp32")
    other = _agent(tmp_path, port, 1, "t", "--micro-batch", "1", "--precision", "bf16")
    (lead_code, lead_out, lead_err), (other_code, other_out, other_err) = _finish([lead, other])
    host = socket.gethostname()
    line = (
        f"dpscale: error: node 1 ({host}, pid {other.pid}) has --micro-batch 1 but node 0 has "
        "32; start every node with the same settings; no rank started"
    )
    assert (lead_code, lead_out, lead_err.strip()) == (2, "", line)
    assert (other_code, other_out, other_err.strip()) == (2, "", line)
    # no rank started: no run folder was ever made on either node
    assert not list(tmp_path.glob("tmp-*/dpscale-measure-*"))


@pytest.mark.distributed
def test_a_bad_endpoint_ends_saying_what_it_waited_for_and_how_long(tmp_path: Path) -> None:
    port = _free_port()
    lonely = _agent(tmp_path, port, 1, None, "--rdzv-timeout", "2s")
    [(code, out, err)] = _finish([lonely])
    assert (code, out) == (2, "")
    assert err.strip() == (
        f"dpscale: error: waited 2 s for node 0's rendezvous on --rdzv-endpoint "
        f"127.0.0.1:{port} (Connection refused); is node 0 started there, with the same "
        "endpoint? see --rdzv-timeout; no rank started"
    )
    alone = _agent(tmp_path, port, 0, None, "--rdzv-timeout", "2s")
    [(code, out, err)] = _finish([alone])
    assert (code, out) == (2, "")
    assert err.strip() == (
        f"dpscale: error: node 0 waited 2 s on 127.0.0.1:{port} for 1 other node(s) of "
        "--nnodes 2; 0 joined (none); see --rdzv-timeout; no rank started"
    )


def test_node_0_cannot_listen_on_an_address_of_another_machine() -> None:
    shape = ClusterShape(nnodes=2, node_rank=0, rdzv_endpoint="192.0.2.1:29500")
    with pytest.raises(RendezvousRefusedError) as caught:
        handshake(shape, {}, "", wait_s=1)
    assert str(caught.value) == (
        "node 0 cannot listen on --rdzv-endpoint 192.0.2.1:29500: Cannot assign requested "
        "address; the endpoint must name an address of node 0"
    )


def _pair(
    host_token: str, node_token: str, node_settings: dict[str, Any] | None = None
) -> tuple[Any, Any]:
    """Node 0's and node 1's handshake in two threads; what each returned or raised."""
    port = _free_port()
    settings = {"nnodes": 2, "micro_batch": 32}
    results: dict[str, Any] = {}

    def run(name: str, rank: int, token: str, mine: dict[str, Any]) -> None:
        shape = ClusterShape(nnodes=2, node_rank=rank, rdzv_endpoint=f"127.0.0.1:{port}")
        try:
            results[name] = handshake(shape, mine, token, wait_s=20)
        except RendezvousRefusedError as err:
            results[name] = err

    host = threading.Thread(target=run, args=("host", 0, host_token, settings))
    host.start()
    run("node", 1, node_token, node_settings or settings)
    if isinstance(results["node"], RendezvousRefusedError) and host.is_alive():
        # a refused token leaves node 0 waiting for the right node: it gets one
        run("late", 1, host_token, settings)
    host.join()
    return results["host"], results["node"]


def test_the_right_token_admits_and_the_host_keeps_the_socket_for_torchrun() -> None:
    host, node = _pair("s3cret", "s3cret")
    try:
        assert node is None
        assert isinstance(host, socket.socket)
        assert host.getsockname()[0] == "127.0.0.1"
    finally:
        host.close()


def test_a_wrong_token_is_refused_in_one_line() -> None:
    host, node = _pair("s3cret", "guess")
    host.close()
    assert isinstance(node, RendezvousRefusedError)
    assert "node 0 refused the agent from 127.0.0.1:" in str(node)
    assert str(node).endswith(" wrong rendezvous token")


def test_settings_that_differ_name_the_setting_on_both_sides() -> None:
    host, node = _pair("k", "k", {"nnodes": 2, "micro_batch": 1})
    assert isinstance(host, RendezvousRefusedError)
    assert str(host) == str(node)
    assert "has --micro-batch 1 but node 0 has 32" in str(host)


def test_torchruns_store_serves_on_the_address_given_not_every_interface() -> None:
    """127.0.0.2 is this machine too (all of 127/8 is loopback): a store bound to every
    interface would answer there; one on the handshake's socket does not."""
    import torch.distributed as dist

    port = _free_port()
    shape = ClusterShape(nnodes=2, node_rank=0, rdzv_endpoint=f"127.0.0.1:{port}")
    listener = listen(shape, must=True)
    assert listener is not None
    make = _store_on(listener.fileno())
    server = make("127.0.0.1", port, 2, True, timedelta(seconds=10), wait_for_workers=False)
    client = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=10))
    client.set("k", "v")
    assert server.get("k") == b"v"
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.2", port), timeout=5).close()
    # told to host a second time (another agent on this machine): it refuses, and torchrun's
    # elastic rendezvous then joins as a client
    with pytest.raises(RuntimeError, match="held by this run's host node"):
        make("127.0.0.1", port, is_master=True)
    listener.close()


@pytest.mark.parametrize(
    "sent",
    [b"[" * 50_000 + b"\n", b"not json\n", b"x" * 70_000, b'{"body": {"node_rank": 1}}\n', b""],
    ids=["deep", "text", "long", "no-mac", "silent-close"],
)
def test_node_0_drops_what_is_no_handshake_and_still_admits_the_right_node(sent: bytes) -> None:
    port = _free_port()
    shape = ClusterShape(nnodes=2, node_rank=0, rdzv_endpoint=f"127.0.0.1:{port}")
    notes: list[str] = []
    found: dict[str, Any] = {}

    def host() -> None:
        try:
            found["host"] = handshake(shape, {"nnodes": 2}, "k", wait_s=30, note=notes.append)
        except RendezvousRefusedError as err:  # pragma: no cover - the failure shown below
            found["host"] = err

    thread = threading.Thread(target=host)
    thread.start()
    intruder = None
    while intruder is None:  # until node 0 listens (its thread may not have bound yet)
        try:
            intruder = socket.create_connection(("127.0.0.1", port), timeout=30)
        except ConnectionRefusedError:
            thread.join(timeout=0.01)
            assert thread.is_alive(), found
    assert b"dpscale-rdzv/1" in intruder.recv(4096)
    if sent:
        with contextlib.suppress(OSError):
            intruder.sendall(sent)
    intruder.close()
    node = ClusterShape(nnodes=2, node_rank=1, rdzv_endpoint=f"127.0.0.1:{port}")
    assert handshake(node, {"nnodes": 2}, "k", wait_s=30) is None
    thread.join()
    assert isinstance(found["host"], socket.socket)
    found["host"].close()
    assert len(notes) == 1
    assert notes[0].startswith("node 0 ")
    assert "127.0.0.1:" in notes[0]
