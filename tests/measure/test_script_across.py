"""``dpscale measure --script`` across nodes, for real: ``dpscale measure`` processes on this
machine play two or three nodes (gloo, the rendezvous on localhost, a /tmp of their own each),
running the shipped DDP example or a tiny failing script. Every test checks that no process
survives (each node's processes carry a marker in their environment) and that no /tmp is
left behind; the channel's HMAC is checked on real sockets.
"""

from __future__ import annotations

import contextlib
import json
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from dpscale.measure import script as script_module
from dpscale.measure.handshake import Channel, ChannelError, handshake_channels
from dpscale.measure.nodes import ClusterShape
from dpscale.measure.script_across import across_sizes, checked_records
from dpscale.store.runs import get_run, list_runs
from dpscale.validation import InputError

from .conftest import ENDS_S, Node, assert_clean

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "train_ddp.py")
BROKEN = """\
import os
from dpscale.measure import StepTimer
if os.environ["RANK"] == "1":
    raise ValueError("bad batch 7")
if int(os.environ["WORLD_SIZE"]) > 1:
    import torch.distributed as dist
    dist.init_process_group("gloo")  # waits for rank 1, until node 0 is told to stop
timer = StepTimer(samples_per_step=1, warmup=0)
with timer.step():
    pass
"""


def _free_port() -> int:
    """A free port below the ephemeral range, as a cluster's endpoint port is (node 0 binds
    it again for each launch: no outgoing connection of another process may take it)."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for port in random.sample(range(max(1024, low - 8000), low), 200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.fail("no free port below the ephemeral range")


def _start(root: Path, script: str, per_node: int, *args: str, count: int = 2) -> list[Node]:
    """``dpscale measure --script`` as nodes 0 to ``count - 1``; an argument may differ by
    node, given as ``"for node 0|for node 1"``."""
    port = _free_port()
    nodes = []
    for rank in range(count):
        command = [sys.executable, "-m", "dpscale", "measure", "--script", script]
        command += ["--nnodes", str(count), "--nproc-per-node", str(per_node)]
        command += ["--node-rank", str(rank)]
        command += ["--rdzv-endpoint", f"127.0.0.1:{port}", "--backend", "gloo", "--json"]
        command += [arg.split("|")[rank] if "|" in arg else arg for arg in args]
        nodes.append(Node.start(root, rank, command))
    return nodes


def _finish(nodes: Sequence[Node]) -> None:
    try:
        for node in nodes:
            node.finish()
    finally:
        for node in nodes:
            if node.process.poll() is None:
                node.process.kill()
            node.process.wait()


def _one_line(node: Node) -> str:
    lines = node.err.strip().splitlines()
    assert len(lines) == 1, node.err
    return lines[0]


@pytest.mark.distributed
def test_a_rank_that_dies_at_exit_on_another_node_keeps_the_run(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rank 1 (node 1) dies of SIGABRT at exit after its steps. Node 1 keeps its steps and
    says so; node 0's torchrun waits at its exit barrier for node 1's, which never comes
    (300 s), so once its own ranks are gone and node 1 has reported it is stopped: the run
    had ended in "timed no further step for 120 s"."""
    from .test_script import DIES_AT_EXIT

    script = tmp_path / "dies_at_exit.py"
    script.write_text(DIES_AT_EXIT, encoding="utf-8")
    monkeypatch.setenv("DIE_RANK", "1")
    nodes = _start(tmp_path, str(script), 1, "--world-sizes", "2", count=2)
    _finish(nodes)
    lead, other = nodes
    assert (lead.process.returncode, other.process.returncode) == (0, 0), lead.err + other.err
    (row,) = json.loads(lead.out)["results"]
    assert (row["devices"], row["crosses_nodes"], row["steps"]) == (2, True, 3)
    assert row["teardown"].startswith("rank 1 was killed by SIGABRT at exit, after every rank")
    assert_clean(nodes)


@pytest.mark.distributed
def test_three_nodes_store_one_run_at_whole_node_sizes(tmp_path: Path, sqlite_url: str) -> None:
    """World size 1 on node 0 alone, 2 on nodes 0 and 1 (node 2 waits), 3 on all three (the
    endpoint's port bound again for the second launch)."""
    nodes = _start(tmp_path, EXAMPLE, 1, "--", "--steps", "8", "--width", "64", count=3)
    _finish(nodes)
    lead, *others = nodes
    assert lead.process.returncode == 0, lead.err
    payload = json.loads(lead.out)
    config = payload["config"]
    assert (config["strategy"], config["script"]) == ("script", EXAMPLE)
    assert config["script_args"] == ["--steps", "8", "--width", "64"]
    # the whole-node sizes by default: 1, 2, 4, ... nodes up to --nnodes
    assert (config["nnodes"], config["nproc_per_node"], config["world_sizes"]) == (3, 1, [1, 2, 3])
    rows = payload["results"]
    assert [(row["devices"], row["nodes"], row["crosses_nodes"]) for row in rows] == [
        (1, 1, False),
        (2, 2, True),
        (3, 3, True),
    ]
    assert [row["steps"] for row in rows] == [5, 5, 5]  # 8 steps, 3 of them warm-up
    assert [row["samples_per_step"] for row in rows] == [32, 64, 96]
    for row in rows:
        assert row["efficiency"] == pytest.approx(
            row["per_device_throughput"] / rows[0]["per_device_throughput"]
        )
    assert [len(timing["rank_times_s"]) for timing in payload["timings"]] == [1, 2, 3]
    host = socket.gethostname()
    assert payload["environment"]["node_hosts"] == [
        {"node_rank": rank, "host": host, "ranks": [rank]} for rank in range(3)
    ]
    assert [run["run_id"] for run in list_runs()] == [payload["run_id"]]
    assert get_run(payload["run_id"]) == payload
    for rank, other in enumerate(others, start=1):
        assert other.process.returncode == 0, other.err
        note = json.loads(other.out)
        assert (note["lead"], note["run_id"], note["ranks"]) == (False, payload["run_id"], [rank])
        assert note["note"] == (
            f"node {rank} (rank {rank}) took part in run {payload['run_id']}; rank 0 on {host} "
            "gathers, stores and prints it"
        )
    assert_clean(nodes)
    assert not (tmp_path / "state").exists()  # no logs kept without --keep-logs


@pytest.mark.distributed
def test_different_script_arguments_are_refused_on_both_nodes(
    tmp_path: Path, sqlite_url: str
) -> None:
    nodes = _start(tmp_path, EXAMPLE, 1, "--", "--steps", "8|9")
    _finish(nodes)
    for node in nodes:
        assert node.process.returncode == 2
        line = _one_line(node)
        assert line.startswith("dpscale: error: node 1 (")
        assert line.endswith(
            'has the script\'s arguments ["--steps", "9"] but node 0 has ["--steps", "8"]; '
            "start every node with the same settings; no rank started"
        )
    assert list_runs() == []
    assert_clean(nodes)


@pytest.mark.distributed
def test_a_script_failing_on_node_1_gives_its_line_on_both_nodes(
    tmp_path: Path, sqlite_url: str
) -> None:
    script = tmp_path / "broken.py"
    script.write_text(BROKEN, encoding="utf-8")
    nodes = _start(tmp_path, str(script), 1)
    _finish(nodes)
    lines = []
    for node in nodes:
        assert node.process.returncode == 2
        assert node.out == ""
        lines.append(_one_line(node))
    assert lines[0] == lines[1]  # node 0 chose the cause and told node 1
    line = lines[0]
    host = socket.gethostname()
    assert line.startswith(
        f"dpscale: error: the script failed at world size 2 on node 1 ({host}) (rank 1 exited "
        "with status 1); its last lines: "
    )
    assert 'raise ValueError("bad batch 7") | ValueError: bad batch 7; log: ' in line
    log = Path(line.rsplit("; log: ", 1)[1])
    assert log.name == "world-2"
    assert log.is_relative_to(tmp_path / "state")
    assert list(log.rglob("stderr.log"))
    assert list_runs() == []
    assert_clean(nodes)


@pytest.mark.distributed
def test_ctrl_c_on_node_1_stops_both_nodes(tmp_path: Path, sqlite_url: str) -> None:
    nodes = _start(
        tmp_path, EXAMPLE, 1, "--world-sizes", "2", "--", "--steps", "1000000", "--width", "64"
    )
    lead, other = nodes
    try:
        deadline = time.monotonic() + ENDS_S
        # rank 1's StepTimer file: node 1's ranks are timing steps of world size 2
        while not list(other.tmp.glob("*/world-2/steps/steps-rank-1.json")):
            assert time.monotonic() < deadline, "world size 2 never started"
            assert lead.process.poll() is None
            assert other.process.poll() is None
            with contextlib.suppress(subprocess.TimeoutExpired):
                lead.process.wait(timeout=0.05)
        other.process.send_signal(signal.SIGINT)
    finally:
        _finish(nodes)
    assert other.process.returncode == 130
    assert _one_line(other) == "dpscale: interrupted; every rank was stopped; nothing stored"
    assert lead.process.returncode == 2
    line = _one_line(lead)
    assert line.startswith("dpscale: error: node 1 (")
    assert "was interrupted (Ctrl-C or SIGTERM); every rank was stopped; nothing stored" in line
    assert list_runs() == []
    assert_clean(nodes)


def test_a_message_altered_on_the_wire_is_refused() -> None:
    """The channels the handshake keeps: what one node sends the other reads; the same bytes
    sent again (a replay) or altered fail the HMAC check."""
    port = _free_port()
    shapes = [
        ClusterShape(nnodes=2, node_rank=rank, rdzv_endpoint=f"127.0.0.1:{port}") for rank in (0, 1)
    ]
    found: dict[str, Any] = {}

    def node_1() -> None:
        found["node"] = handshake_channels(shapes[1], {"nnodes": 2}, "secret", wait_s=30)

    joining = threading.Thread(target=node_1)
    joining.start()
    listener, (lead,) = handshake_channels(shapes[0], {"nnodes": 2}, "secret", wait_s=30)
    joining.join()
    _, (node,) = found["node"]
    assert listener is not None
    listener.close()
    try:
        lead.send({"op": "launch", "size": 2})
        assert node.receive(5) == {"op": "launch", "size": 2}
        node.send({"op": "done"})
        assert lead.receive(5) == {"op": "done"}
        _raw(node, {"body": {"op": "done"}, "mac": _last_mac(node, {"op": "done"})})
        with pytest.raises(ChannelError, match="failed its HMAC check"):
            lead.receive(5)  # replayed: its sequence number is spent
        node.sent -= 1  # the next number, with another message's body
        _raw(node, {"body": {"op": "failed"}, "mac": _last_mac(node, {"op": "done"})})
        with pytest.raises(ChannelError, match="failed its HMAC check"):
            lead.receive(5)
    finally:
        node.close(drain_s=0)  # one thread: neither end waits for the other
        lead.close(drain_s=0)


def _last_mac(channel: Channel, body: dict[str, Any]) -> str:
    encoded = json.dumps(body, sort_keys=True).encode()
    return channel._mac(channel.lead, channel.sent - 1, encoded)


def _raw(channel: Channel, message: dict[str, Any]) -> None:
    channel.conn.sendall(json.dumps(message, sort_keys=True).encode() + b"\n")


GOOD = {"samples_per_step": 8, "tokens_per_step": None, "step_times_s": [0.1, 0.2], "host": "b"}


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ({"2": GOOD, "3": GOOD, "0": GOOD}, "records of ranks other than 2 to 3"),
        ({"2": GOOD, "3": "many"}, 'rank 3: it holds "many", not a JSON object'),
        ({"2": GOOD, "3": {**GOOD, "step_times_s": "x"}}, 'rank 3: step_times_s is "x", not a'),
        (
            {"2": GOOD, "3": {**GOOD, "step_times_s": []}},
            "rank 3: step_times_s holds 0 step times, not 1 to 10,000,000",
        ),
        (
            {"2": GOOD, "3": {**GOOD, "step_times_s": [0.1, float("nan")]}},
            r"rank 3: step_times_s\[1\] is NaN, not a finite number of seconds above 0",
        ),
        ({"2": GOOD, "3": {**GOOD, "step_times_s": [0.1, -1]}}, r"step_times_s\[1\] is -1, not"),
        ({"2": GOOD, "3": {**GOOD, "step_times_s": [0.1, True]}}, r"step_times_s\[1\] is true"),
        ({"2": GOOD, "3": {**GOOD, "step_times_s": [0.0]}}, r"step_times_s\[0\] is 0.0, not"),
        (
            {"2": GOOD, "3": {**GOOD, "samples_per_step": None}},
            "rank 3: samples_per_step and tokens_per_step are both missing",
        ),
        (
            {"2": GOOD, "3": {**GOOD, "samples_per_step": 1e400}},
            "rank 3: samples_per_step is Infinity, not a finite number above 0",
        ),
    ],
)
def test_records_from_another_node_are_held_to_bounds(records: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        checked_records(records, range(2, 4))


def test_a_record_holds_at_most_max_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(script_module, "MAX_STEPS", 2)
    assert len(checked_records({"2": GOOD, "3": GOOD}, range(2, 4))) == 2
    too_many = {**GOOD, "step_times_s": [0.1, 0.1, 0.1]}
    with pytest.raises(ValueError, match="rank 3: step_times_s holds 3 step times, not 1 to 2"):
        checked_records({"2": GOOD, "3": too_many}, range(2, 4))


def test_records_keep_only_what_is_summarised() -> None:
    record = {**GOOD, "pid": 7, "extra": "x" * 100}
    assert checked_records({"2": record, "3": GOOD}, range(2, 4))[2] == {
        "samples_per_step": 8,
        "tokens_per_step": None,
        "step_times_s": [0.1, 0.2],
        "step_weights": None,  # each step's share of the figure, where one differs
        "cuda": False,
        "host": "b",
    }


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ((2, 6), "must not exceed --nnodes x --nproc-per-node = 4"),
        ((3,), "multiples of --nproc-per-node 2) or at most 2 (node 0 alone); 3 is neither"),
    ],
)
def test_world_sizes_across_nodes_are_whole_nodes_or_node_0_alone(
    sizes: tuple[int, ...], message: str
) -> None:
    shape = ClusterShape(nnodes=2, nproc_per_node=2, node_rank=0, rdzv_endpoint="h:1")
    assert across_sizes(None, shape) == (2, 4)
    assert across_sizes((4, 1, 2), shape) == (1, 2, 4)
    with pytest.raises(InputError) as refused:
        across_sizes(sizes, shape)
    assert message in refused.value.issues[0].sentence("--world-sizes")
