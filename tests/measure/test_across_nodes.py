"""``dpscale measure`` across nodes, for real: two torchrun agents on this machine play two
nodes (gloo, the rendezvous on localhost), each ``dpscale measure`` with a /tmp of its own as
on two machines. One run of the issue's command is shared by the assertions on a finished run;
a killed rank and Ctrl-C have a run each. Every test checks that no process survives (each
node's processes carry a marker in their environment) and that no /tmp is left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from dpscale.store.runs import get_run, list_runs

from .conftest import ENDS_S, Node, assert_clean

pytestmark = pytest.mark.distributed

QUICK = ("--sizes", "4KiB,64KiB", "--iterations", "3", "--warmup", "1", "--backend", "gloo")
# Twenty timed steps: a few milliseconds each, and a mean steady enough to calibrate on.
QUICK += ("--model-params", "100k", "--steps", "20", "--warmup-steps", "1", "--json")
# 16 MiB all-reduces take long enough to act during them, even on a fast machine.
FAULTY = ("--no-training", "--sizes", "4KiB,16MiB", "--iterations", "50", "--warmup", "1")
FAULTY += ("--backend", "gloo", "--timeout", "60s", "--json")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start_nodes(
    root: Path, options: Sequence[str], *, nproc_per_node: int, node_ranks: bool
) -> list[Node]:
    port = _free_port()
    nodes = []
    for rank in (0, 1):
        command = [sys.executable, "-m", "dpscale", "measure", "--nnodes", "2"]
        command += ["--nproc-per-node", str(nproc_per_node)]
        command += ["--node-rank", str(rank)] if node_ranks else []
        command += ["--rdzv-endpoint", f"127.0.0.1:{port}", *options]
        nodes.append(Node.start(root, rank, command))
    return nodes


def _stop(nodes: Sequence[Node]) -> None:
    for node in nodes:
        if node.process.poll() is None:
            node.process.kill()
        node.process.wait()


def _wait_for(condition: Any, nodes: Sequence[Node], what: str) -> Any:
    """Poll ``condition`` until it holds; fail if a node ends first or after ``ENDS_S``."""
    deadline = time.monotonic() + ENDS_S
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        if any(node.process.poll() is not None for node in nodes):
            ended = [
                node.process.communicate()[1] for node in nodes if node.process.poll() is not None
            ]
            pytest.fail(f"a node ended before {what}: {ended}")
        # Block on the lead node's end for a moment: wakes at once if it ends, else looks again.
        with contextlib.suppress(subprocess.TimeoutExpired):
            nodes[0].process.wait(timeout=0.05)
    pytest.fail(f"no {what} within {ENDS_S:g} s")


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The issue's command, started twice (node ranks 0 and 1), finished."""
    root = tmp_path_factory.mktemp("two-nodes")
    url = f"sqlite:///{root / 'dpscale.sqlite3'}"
    previous = os.environ.get("DPSCALE_DATABASE_URL")
    os.environ["DPSCALE_DATABASE_URL"] = url
    nodes = _start_nodes(root, QUICK, nproc_per_node=1, node_ranks=True)
    try:
        for node in nodes:
            node.finish()
    finally:
        _stop(nodes)
    yield {"root": root, "url": url, "nodes": nodes}
    if previous is None:
        os.environ.pop("DPSCALE_DATABASE_URL")
    else:
        os.environ["DPSCALE_DATABASE_URL"] = previous


def test_node_0_prints_one_run_over_both_nodes(two_nodes: dict[str, Any]) -> None:
    lead = two_nodes["nodes"][0]
    assert lead.process.returncode == 0, lead.err
    payload = json.loads(lead.out)
    env = payload["environment"]
    host = socket.gethostname()
    assert env["nodes"] == 2
    assert env["hosts"] == [host]
    assert env["node_hosts"] == [
        {"node_rank": 0, "host": host, "ranks": [0]},
        {"node_rank": 1, "host": host, "ranks": [1]},
    ]
    assert payload["partial"] is False
    assert [row["devices"] for row in payload["results"]] == [1, 2]


def test_the_other_node_prints_a_note_not_a_second_run(two_nodes: dict[str, Any]) -> None:
    lead, other = two_nodes["nodes"]
    assert other.process.returncode == 0, other.err
    note = json.loads(other.out)
    run_id = json.loads(lead.out)["run_id"]
    assert note["lead"] is False
    assert note["run_id"] == run_id
    assert (note["node_rank"], note["ranks"]) == (1, [1])
    assert "results" not in note
    assert note["note"] == (
        f"node 1 (rank 1) took part in run {run_id}; rank 0 on {socket.gethostname()} "
        "gathers, stores and prints it"
    )


def test_the_run_is_stored_once(two_nodes: dict[str, Any]) -> None:
    payload = json.loads(two_nodes["nodes"][0].out)
    runs = list_runs(url=two_nodes["url"])
    assert [(run["run_id"], run["nodes"]) for run in runs] == [(payload["run_id"], 2)]
    assert get_run(payload["run_id"], url=two_nodes["url"]) == payload


def test_what_crosses_nodes_is_labelled(two_nodes: dict[str, Any]) -> None:
    payload = json.loads(two_nodes["nodes"][0].out)
    assert len(payload["collectives"]) == 8  # four ops at two sizes, at 2 devices
    for row in payload["collectives"]:
        assert (row["devices"], row["nodes"], row["crosses_nodes"]) == (2, 2, True)
        assert row["busbw"] > 0
    one, two = payload["results"]
    assert (one["nodes"], one["crosses_nodes"]) == (1, False)
    assert (two["nodes"], two["crosses_nodes"]) == (2, True)


def test_each_result_splits_its_step(two_nodes: dict[str, Any]) -> None:
    for row in json.loads(two_nodes["nodes"][0].out)["results"]:
        assert row["step_time_cv"] >= 0
        assert min(row["compute_time_s"], row["comm_time_s"]) > 0
        assert 0 <= row["exposed_comm_time_s"] <= row["comm_time_s"]
        # the split adds up to the median step (where compute alone is not slower)
        parts = row["compute_time_s"] + row["exposed_comm_time_s"] + row["step_overhead_s"]
        assert parts == pytest.approx(max(row["step_time_p50_s"], row["compute_time_s"]))


def test_predict_calibrated_on_the_run_holds_what_it_measured(two_nodes: dict[str, Any]) -> None:
    """The issue's end: ``predict --measured run:ID`` on the two-node run gives a band that
    holds the efficiency measured at that size (the run's jitter is used, its fixed cost fitted
    to its throughputs)."""
    payload = json.loads(two_nodes["nodes"][0].out)
    one, two = payload["results"]
    config = payload["config"]
    command = [sys.executable, "-m", "dpscale", "predict", "--json", "--devices", "2"]
    command += ["--params", str(config["model_params"]), "--grad-dtype", config["precision"]]
    command += ["--micro-batch", str(config["micro_batch"])]
    command += ["--grad-accum", str(config["grad_accum"])]
    command += ["--per-device-throughput", repr(one["throughput"])]
    command += ["--devices-per-node", "1", "--intra-node-bandwidth", "10 GB/s"]
    command += ["--inter-node-bandwidth", "10 Gbit/s", "--transport", "tcp"]
    command += ["--measured", f"run:{payload['run_id']}"]
    env = dict(os.environ, DPSCALE_DATABASE_URL=two_nodes["url"])
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    predicted = json.loads(done.stdout)
    (point,) = predicted["points"]
    # The band carries the run's own spread (its steps' CV over their count) and stops at
    # ideal: a noisy run measured above ideal is held by the band's top.
    assert point["efficiency_low"] <= min(two["efficiency"], 1.0) <= point["efficiency_high"]
    if predicted["inputs"]["step_overhead_s"] > 0:
        # The fixed cost took up what the model left: the point itself is reproduced.
        assert point["efficiency"] == pytest.approx(two["efficiency"], rel=0.01)
    else:
        # On a noisy machine the two-device steps can come out faster than the model of
        # them (compute timed on one device, the run's jitter): no fixed cost is fitted,
        # and the point is faster than the prediction, by no more than the band allows.
        assert point["efficiency"] < two["efficiency"]


def test_a_finished_run_leaves_nothing_behind(two_nodes: dict[str, Any]) -> None:
    assert_clean(two_nodes["nodes"])
    assert not (two_nodes["root"] / "state").exists()  # no logs kept without --keep-logs


def test_a_killed_rank_on_the_second_node_is_named_with_its_node(
    tmp_path: Path, sqlite_url: str
) -> None:
    options = (*FAULTY, "--world-sizes", "4")
    nodes = _start_nodes(tmp_path, options, nproc_per_node=2, node_ranks=True)
    lead, other = nodes
    try:

        def rank_3_in_the_big_all_reduce() -> Any:
            return [
                status
                for status in other.statuses()
                if status["rank"] == 3 and status["label"].startswith("all_reduce 16.8 MB")
            ]

        (status,) = _wait_for(rank_3_in_the_big_all_reduce, nodes, "the 16 MiB run")
        assert (status["node_rank"], status["local_rank"]) == (1, 1)
        os.kill(status["pid"], signal.SIGKILL)
        for node in nodes:
            node.finish()
    finally:
        _stop(nodes)
    expected = (
        f"rank 3 (node 1, {socket.gethostname()}) of world size 4 was killed by SIGKILL "
        "(during all_reduce 16.8 MB at 4 devices)"
    )
    # Node 0's ranks saw only a broken connection; node 1 told them why, through the store.
    assert lead.process.returncode == 1
    payload = json.loads(lead.out)
    assert payload["partial"] is True
    assert payload["error"].startswith(expected + "; log: ")
    assert any(row["bytes"] == 4096 for row in payload["collectives"])
    assert get_run(payload["run_id"], url=sqlite_url)["error"] == payload["error"]
    log = Path(payload["error"].rsplit("; log: ", 1)[1])
    assert log.name == "torchrun.log"
    assert log.is_file()
    assert other.process.returncode == 1
    note = json.loads(other.out)
    assert note["error"].startswith(expected)
    assert note["run_id"] == payload["run_id"]
    assert_clean(nodes)


def test_ctrl_c_on_rank_0s_node_gives_the_log_and_stops_both_nodes(
    tmp_path: Path, sqlite_url: str
) -> None:
    # The elastic c10d rendezvous (no --node-rank) gives out the node ranks: rank 0's node
    # is found by its statuses.
    options = (*FAULTY, "--world-sizes", "2")
    nodes = _start_nodes(tmp_path, options, nproc_per_node=1, node_ranks=False)
    try:

        def rank_0_in_the_big_all_reduce() -> Any:
            for node in nodes:
                for status in node.statuses():
                    if status["rank"] == 0 and status["label"].startswith("all_reduce 16.8 MB"):
                        return node
            return None

        lead = _wait_for(rank_0_in_the_big_all_reduce, nodes, "the 16 MiB run")
        lead.process.send_signal(signal.SIGINT)
        for node in nodes:
            node.finish()
    finally:
        _stop(nodes)
    other = nodes[1 - nodes.index(lead)]
    assert lead.process.returncode == 130
    line = lead.err.strip().splitlines()[-1]
    assert line.startswith("dpscale: interrupted; every rank of this node was stopped; log: ")
    assert line.endswith(" stored")  # the partial run, by rank 0's node only
    log = Path(line.split("; log: ", 1)[1].split(";", 1)[0])
    assert log.name == "torchrun.log"
    assert log.is_file()
    assert log.is_relative_to(tmp_path / "state")
    assert [run["partial"] for run in list_runs(url=sqlite_url)] == [True]
    assert other.process.returncode == 1
    # Told by node 0 where its agent held the rendezvous' store, else left to say so much.
    error = json.loads(other.out)["error"].split("; log: ")[0]
    host = socket.gethostname()
    assert error == f"node 0 ({host}) was interrupted (Ctrl-C or SIGTERM)" or (
        error.startswith(f"rank 1 (node 1, {host}) of world size 2 failed: ")
        and error.endswith("; a rank on another node stopped first (that node's output says why)")
    )
    assert_clean(nodes)


def test_hsdp_across_nodes_shards_within_a_node_and_replicates_across(tmp_path: Path) -> None:
    options = ("--strategy", "hsdp", "--no-collectives", "--backend", "gloo", "--json")
    options += ("--model-params", "400k", "--layers", "2", "--steps", "3", "--no-store")
    nodes = _start_nodes(tmp_path, options, nproc_per_node=1, node_ranks=True)
    try:
        for node in nodes:
            node.finish()
    finally:
        _stop(nodes)
    lead = nodes[0]
    assert lead.process.returncode == 0, lead.err
    payload = json.loads(lead.out)
    assert payload["config"]["strategy"] == "hsdp"
    one, two = payload["results"]
    # One process per node: the shard group is the node (LOCAL_WORLD_SIZE 1), the replicas
    # are the nodes, so nothing is gathered and the gradients are all-reduced across them.
    assert two["shard_groups"] == [[0], [1]]
    assert two["replicate_groups"] == [[0, 1]]
    assert two["crosses_nodes"] is True
    assert two["all_gather_time_s"] == 0.0
    assert two["replicate_all_reduce_time_s"] > 0
    assert two["memory_per_device_bytes"] == one["memory_per_device_bytes"]
    assert_clean(nodes)
