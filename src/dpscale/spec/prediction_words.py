"""What the prediction says besides its table of points, worded once: each statement's code
and its :class:`~dpscale.said.Wording` (the page's msgid, the terminal's English) in
:data:`LINES`, with what a calibration from measured points says (:data:`CALIBRATION_WORDS`),
the names the page gives the band's inputs and a stored run's fields and uses, and the order
of the terminal's lines (:data:`TERMINAL_ORDER`).

The statements themselves are made in :mod:`dpscale.spec.prediction` (the keys named here are
those of :func:`dpscale.spec.prediction.lines`), which re-exports every public name of this
module.
"""

from __future__ import annotations

from collections.abc import Mapping

from dpscale.said import Wording
from dpscale.spec.description import N_

__all__ = [
    "BAND_INPUT_NAMES",
    "CALIBRATION_WORDS",
    "LINES",
    "MEASURED_KEYS",
    "RUN_FIELD_NAMES",
    "RUN_USE_NAMES",
    "TARGET_FRACTION",
    "TERMINAL_ORDER",
]


BAND_INPUT_NAMES = {
    "network_share": N_("Share of the network bandwidth achieved"),
    "jitter": N_("Step-time jitter"),
    "overlap_slowdown": N_("Slowdown of overlapped compute"),
    "framework_overhead": N_("Fixed overhead per step"),
    "optimizer": N_("Optimizer"),
    "device_memory_bandwidth": N_("Device memory bandwidth"),
    "ring_plateau": N_("Ring latency factor across nodes"),
    "inter_node_latency": N_("Network latency per hop"),
    "framework_setup": N_("Setup losses across nodes"),
}
"""What the band varies (``band_varies`` in the JSON), as the page names it: the field that
would state it where there is one."""

RUN_FIELD_NAMES = {
    "params": N_("model size"),
    "grad_dtype": N_("gradient precision"),
    "micro_batch": N_("micro-batch"),
    "grad_accum": N_("gradient accumulation"),
    "strategy": N_("strategy"),
    "unit": N_("throughput unit"),
    "throughput": N_("per-device throughput"),
    "hardware": N_("hardware"),
    "training": N_("training (the run timed collectives only)"),
}
"""What a stored run's job may differ in from the query's (:mod:`dpscale.model.transfer`)."""

RUN_USE_NAMES = {
    "network": N_("network bandwidth and latency"),
    "jitter": N_("step-time jitter"),
    "fixed_cost": N_("fixed cost per step (scaled by the layers)"),
}
"""What a prediction takes from a run of another job."""

TARGET_FRACTION = Wording(
    N_(
        "The target efficiency is in percent: %(given)s means %(given)s percent. For the "
        "fraction %(given)s, type %(percent)s."
    ),
    "The target efficiency is in percent: {given} means {given} %; for the fraction {given}, "
    "type {percent}.",
)
"""What ``predict`` and ``fit`` say of a target efficiency of at most 1
(:func:`dpscale.model.questions.target_as_fraction`)."""

CALIBRATION_WORDS: Mapping[str, Wording] = {
    "parameter_level": Wording(N_("the single-device step"), "the single-device step"),
    "parameter_step_overhead": Wording(N_("the fixed per-step cost"), "the fixed per-step cost"),
    "parameter_network_share": Wording(N_("the network share"), "the network share"),
    "parameter_jitter": Wording(N_("the jitter"), "the jitter"),
    "parameter_nothing": Wording(N_("nothing"), "nothing"),
    "calibration_mfu": Wording(
        N_(
            "At %(devices)s devices the points give %(throughput)s %(unit)s per device, an MFU "
            "of %(mfu)s of the device's %(peak)s TFLOP/s, which no device runs at: check the "
            "points' unit (tokens or sequences per second) and the parameter count."
        ),
        "At {devices} devices the points give {throughput} {unit} per device, an MFU of {mfu} "
        "of the device's {peak} TFLOP/s, which no device runs at: check the points' unit "
        "(tokens/s with --unit tokens, sequences/s without) and --params.",
    ),
    "calibration_estimated": Wording(
        N_("Estimated from the points: %(parameters)s."),
        "Estimated from the points: {parameters:, }.",
    ),
    "calibration_network": Wording(
        N_(
            "The points put the communication and waits at %(factor)s times what the stated "
            "network and devices give."
        ),
        "The points put the communication and waits at {factor}x what the stated network "
        "and devices give.",
    ),
    "calibration_kept": Wording(
        N_(
            "These device counts cannot pin down %(parameters)s: kept within the stated "
            "range, which the band includes."
        ),
        "These device counts cannot pin down {parameters:, }: kept within the stated range, "
        "which the band includes.",
    ),
    "calibration_folded": Wording(
        N_(
            "No point ran on one device, so %(parameters)s cannot be told apart from the "
            "single-device step: it is held in it."
        ),
        "No point ran on one device, so {parameters:, } cannot be told apart from the "
        "single-device step: it is held in it.",
    ),
    "calibration_flagged": Wording(
        N_(
            "The point at %(devices)s devices (%(throughput)s) lies off the others' fit "
            "(%(expected)s) beyond its noise: it counts as %(weight)s of a point."
        ),
        "The point at {devices:,} devices ({throughput}) lies off the others' fit "
        "({expected}) beyond its noise: down-weighted to {weight} of a point.",
    ),
    "calibration_misfit": Wording(
        N_(
            "The points miss the stated job's step model by up to %(miss)s, beyond their "
            "noise: the band holds the miss. Check the stated job (network, strategy, "
            "throughput), or fit the points without its facts."
        ),
        "The points miss the stated job's step model by up to {miss}, beyond their noise: "
        "the band holds the miss. Check the stated job (network, strategy, throughput), or "
        "fit the points without its facts.",
    ),
    "calibration_spread_beyond": Wording(
        N_(
            "The run's step spread (%(spread)s) is beyond the jitter's %(bound)s bound, where "
            "the normal model of step times fails: the calibration takes %(bound)s."
        ),
        "The run's step spread ({spread}) is beyond the jitter's {bound} bound, where the "
        "normal model of step times fails: the calibration takes {bound}.",
    ),
    "calibration_run_steps": Wording(
        N_(
            "The run's step on %(devices)s devices (%(measured)s) is shorter than its "
            "collective benchmark and step-time spread imply (%(implied)s), measured under "
            "another load: its steps set %(parameters)s instead."
        ),
        "The run's step on {devices} devices ({measured}) is shorter than its collective "
        "benchmark and step-time spread imply ({implied}), measured under another load: its "
        "steps set {parameters: and } instead.",
    ),
    "calibration_across_nodes": Wording(
        N_(
            "From %(inside)s devices (one node) to %(across)s the throughput per device falls "
            "to %(measured)s of one node's, where the calibrated step model gives %(fitted)s: "
            "beyond one node the points lose more than the job's facts imply. Either the point "
            "at %(devices)s devices is wrong (the others put it at %(expected)s) or crossing "
            "nodes costs more than stated; the points cannot tell which. %(weighed)s %(remedy)s"
        ),
        "From {inside:,} devices (one node) to {across:,} the throughput per device falls to "
        "{measured} of one node's, where the calibrated step model gives {fitted}: beyond one "
        "node the points lose more than the job's facts imply. Either the point at {devices:,} "
        "devices ({throughput}) is wrong (the others put it at {expected}) or crossing nodes "
        "costs more than stated; the points cannot tell which. {weighed} {remedy}",
    ),
    "across_nodes_weighed": Wording(
        N_("In the fit it counts as %(weight)s of a point, so the curve follows the others."),
        "In the fit it counts as {weight} of a point, so the curve (and the efficiency "
        "relative to it) follows the others.",
    ),
    "across_nodes_whole": Wording(
        N_("In the fit it counts whole, and the band holds the miss."),
        "In the fit it counts whole, and the band holds the miss.",
    ),
    "across_nodes_network": Wording(
        N_(
            "With the network between nodes at %(network)s of its speed in the model "
            "(%(bandwidth)s per node) or slower, the step model follows every point: check the "
            "network bandwidth between nodes and the transport you entered against an "
            "all-reduce benchmark across nodes."
        ),
        "With the network between nodes at {network} of its speed in the model ({bandwidth} "
        "per node) or slower, the step model follows every point: check --inter-node-bandwidth "
        "and --transport against an all-reduce benchmark across nodes.",
    ),
    "across_nodes_check": Wording(
        N_(
            "No slower network between nodes lets the step model follow every point: check "
            "that point and the network, or fit the points without the job's facts (the "
            "communication model has a step at the node boundary)."
        ),
        "No slower network between nodes lets the step model follow every point: check that "
        "point and the network, or fit the points without the job's facts (the comm model has "
        "a step at the node boundary).",
    ),
    "calibration_odd": Wording(
        N_(
            "Without the point at %(devices)s devices (%(throughput)s), the others fit the "
            "stated job within their noise and put it at %(expected)s: check that point."
        ),
        "Without the point at {devices:,} devices ({throughput}), the others fit the stated "
        "job within their noise and put it at {expected}: check that point.",
    ),
    "calibration_odd_one": Wording(
        N_(
            "Without the one-device point (%(throughput)s), the others fit the stated job "
            "within their noise and put it at %(expected)s: check that point."
        ),
        "Without the one-device point ({throughput}), the others fit the stated job within "
        "their noise and put it at {expected}: check that point.",
    ),
    "calibration_flat": Wording(
        N_(
            "The total throughput does not rise from %(low)s to %(high)s devices "
            "(%(low_total)s to %(high_total)s): each point is the total over all its devices; "
            "if these are one device's figures, multiply each by its count."
        ),
        "The total throughput does not rise from {low} to {high} devices ({low_total} to "
        "{high_total}): each point is the total over all its devices; if these are one "
        "device's figures, multiply each by its count.",
    ),
}
"""What a calibration from measured points says (:meth:`dpscale.model.measured.MeasuredFit.said`):
the prediction's lines and the fit's notes alike."""

LINES: Mapping[str, Wording] = {
    **CALIBRATION_WORDS,
    "run_transfer": Wording(
        N_(
            "Run %(run)s measured another job; it differs from this query in: %(differs)s. "
            "Used from it here, and nothing else: %(used)s."
        ),
        "{notice}.",
    ),
    "run_transfer_none": Wording(
        N_(
            "Run %(run)s measured another job; it differs from this query in: %(differs)s. "
            "None of its figures are used here."
        ),
        "{notice}.",
    ),
    "gradients": Wording(
        N_(
            "%(params)s parameters in %(dtype)s, sent in %(buckets)s buckets of at most "
            "%(bucket)s as backward produces them (%(strategy)s)."
        ),
        "Gradients: {gradients} ({params} x {dtype}) in buckets of {bucket} ({strategy}).",
    ),
    "strategy_in_groups": Wording(
        N_("%(strategy)s in groups of %(size)s"), "{strategy} in groups of {size}"
    ),
    "sharded": Wording(
        N_(
            "%(params)s parameters, %(strategy)s over groups of %(group)s devices: each of "
            "%(units)s layers moves %(gathered)s per all-gather (%(param_dtype)s) and "
            "%(reduced)s per reduction (%(grad_dtype)s), one layer ahead of the compute."
        ),
        "Sharded: {params} parameters, {strategy} over groups of {group} devices; each of "
        "{units} layers moves {gathered} per all-gather ({param_dtype}) and {reduced} per "
        "reduction ({grad_dtype}), one layer ahead of the compute.",
    ),
    "sharded_one": Wording(
        N_(
            "%(params)s parameters, %(strategy)s in groups of one device: no layer is gathered "
            "or reduce-scattered."
        ),
        "Sharded: {params} parameters, {strategy} in groups of one device: no layer is "
        "gathered or reduce-scattered.",
    ),
    "mfu": Wording(
        N_(
            "MFU %(mfu)s of the device's %(peak)s TFLOP/s gives %(throughput)s %(unit)s per "
            "device, at %(flops)s GFLOP per token (6 P + 12 L h s)."
        ),
        "MFU {mfu} of the device's {peak} TFLOP/s gives {throughput} {unit} per device, at "
        "{flops} GFLOP per token (6 P + 12 L h s).",
    ),
    "mfu_implied": Wording(
        N_(
            "%(throughput)s %(unit)s per device is an MFU of %(mfu)s of the device's "
            "%(peak)s TFLOP/s, at %(flops)s GFLOP per token (6 P + 12 L h s)."
        ),
        "{throughput} {unit} per device is an MFU of {mfu} of the device's {peak} TFLOP/s, at "
        "{flops} GFLOP per token (6 P + 12 L h s).",
    ),
    "mfu_over": Wording(
        N_(
            "No device runs above its peak: check that the throughput is one device's, its "
            "unit (tokens or sequences per second) and the parameter count (a mixture of "
            "experts computes with fewer parameters than it holds)."
        ),
        "No device runs above its peak: check that the throughput is one device's, its unit "
        "(tokens/s with --unit tokens, sequences/s without) and --params (a mixture of experts "
        "computes with fewer parameters than it holds).",
    ),
    "mfu_under": Wording(
        N_(
            "That is far below the 27-67%% that published training runs reach: check the "
            "throughput's unit (tokens or sequences per second) and the parameter count."
        ),
        "That is far below the 27-67 % that published training runs reach: check the "
        "throughput's unit (tokens/s with --unit tokens, sequences/s without) and --params.",
    ),
    "baseline_mfu": Wording(
        N_(
            "Efficiency is relative to %(devices)s devices, where that MFU holds (%(one)s "
            "%(unit)s on one device by the model)."
        ),
        "Efficiency relative to {devices} devices, where that MFU holds ({one} {unit} on one "
        "device by the model).",
    ),
    "baseline": Wording(
        N_(
            "Efficiency is relative to %(devices)s devices, where %(throughput)s %(unit)s per "
            "device was measured (%(one)s on one device by the model)."
        ),
        "Efficiency relative to {devices} devices, where {throughput} {unit} per device was "
        "measured ({one} on one device by the model).",
    ),
    "baseline_fitted": Wording(
        N_(
            "Efficiency is relative to %(fitted)s %(unit)s per device at %(devices)s devices, "
            "the fit's (%(throughput)s measured there; %(one)s on one device by the model)."
        ),
        "Efficiency relative to {fitted} {unit} per device at {devices} devices, the fit's "
        "({throughput} measured; {one} on one device by the model).",
    ),
    "memory": Wording(
        N_(
            "Memory per device at %(devices)s devices: %(total)s (model states %(states)s, "
            "communication buffers %(gathered)s, activations %(activations)s) of %(capacity)s."
        ),
        "Memory per device at {devices} devices: {total} (model states {states}, "
        "communication buffers {gathered}, activations {activations}) of {capacity}.",
    ),
    "memory_unknown": Wording(
        N_(
            "Memory per device at %(devices)s devices: %(total)s (model states %(states)s, "
            "communication buffers %(gathered)s, activations %(activations)s); the device's "
            "own memory is not stated (a hardware preset or the device memory gives it)."
        ),
        "Memory per device at {devices} devices: {total} (model states {states}, "
        "communication buffers {gathered}, activations {activations}); the device's own "
        "memory is not stated (--hardware or --device-memory gives it).",
    ),
    "memory_unknown_one": Wording(
        N_(
            "Memory per device at %(devices)s device: %(total)s (model states %(states)s, "
            "communication buffers %(gathered)s, activations %(activations)s); the device's "
            "own memory is not stated (a hardware preset or the device memory gives it)."
        ),
        "Memory per device at {devices} device: {total} (model states {states}, "
        "communication buffers {gathered}, activations {activations}); the device's own "
        "memory is not stated (--hardware or --device-memory gives it).",
    ),
    # Each "at N devices" has its words for one device, "at 1 device" ("_one": _at).
    "memory_one": Wording(
        N_(
            "Memory per device at %(devices)s device: %(total)s (model states %(states)s, "
            "communication buffers %(gathered)s, activations %(activations)s) of %(capacity)s."
        ),
        "Memory per device at {devices} device: {total} (model states {states}, "
        "communication buffers {gathered}, activations {activations}) of {capacity}.",
    ),
    "memory_tight": Wording(
        N_(
            "That leaves %(spare)s free, under a tenth of the device: the framework's "
            "workspace, the collectives' buffers and the allocator's fragmentation, not "
            "counted here, commonly take a few GiB. Measure it before planning on it."
        ),
        "That leaves {spare} free, under a tenth of the device: the framework's workspace, "
        "the collectives' buffers and the allocator's fragmentation, not counted here, "
        "commonly take a few GiB; measure it before planning on it.",
    ),
    "memory_over": Wording(
        N_("It does not fit at %(devices)s devices: %(total)s needed, %(capacity)s there."),
        "DOES NOT FIT at {devices} devices: {total} needed, {capacity} there.",
    ),
    "memory_over_one": Wording(
        N_("It does not fit at %(devices)s device: %(total)s needed, %(capacity)s there."),
        "DOES NOT FIT at {devices} device: {total} needed, {capacity} there.",
    ),
    "memory_fix": Wording(
        N_("It would fit at %(devices)s devices with %(options)s."),
        "It would fit at {devices} devices with {options}.",
    ),
    "memory_fix_one": Wording(
        N_("It would fit at %(devices)s device with %(options)s."),
        "It would fit at {devices} device with {options}.",
    ),
    "memory_no_fix": Wording(
        N_(
            "Nothing tried fits at %(devices)s devices: not even micro-batch 1 with activation "
            "checkpointing under %(strategy)s."
        ),
        "Nothing tried fits at {devices} devices: not even --micro-batch 1 "
        "--activation-checkpointing under --strategy {strategy}.",
    ),
    "memory_no_fix_one": Wording(
        N_(
            "Nothing tried fits at %(devices)s device: not even micro-batch 1 with activation "
            "checkpointing under %(strategy)s."
        ),
        "Nothing tried fits at {devices} device: not even --micro-batch 1 "
        "--activation-checkpointing under --strategy {strategy}.",
    ),
    "memory_no_fix_ungrouped": Wording(
        N_(
            "Nothing tried fits at %(devices)s devices: not even micro-batch 1 with activation "
            "checkpointing under %(strategy)s over all devices."
        ),
        "Nothing tried fits at {devices} devices: not even --micro-batch 1 "
        "--activation-checkpointing under --strategy {strategy} without --shard-group-size.",
    ),
    "memory_no_fix_ungrouped_one": Wording(
        N_(
            "Nothing tried fits at %(devices)s device: not even micro-batch 1 with activation "
            "checkpointing under %(strategy)s over all devices."
        ),
        "Nothing tried fits at {devices} device: not even --micro-batch 1 "
        "--activation-checkpointing under --strategy {strategy} without --shard-group-size.",
    ),
    "fit_micro_batch": Wording(
        N_("a micro-batch of at most %(micro_batch)s"),
        "--micro-batch at most {micro_batch}",
    ),
    "fit_checkpointing": Wording(
        N_("activation checkpointing and a micro-batch of at most %(micro_batch)s"),
        "--activation-checkpointing and --micro-batch at most {micro_batch}",
    ),
    "fit_checkpointing_as_stated": Wording(
        N_("activation checkpointing"), "--activation-checkpointing"
    ),
    "fit_strategy": Wording(N_("%(strategy)s"), "--strategy {strategy}"),
    "fit_strategy_ungrouped": Wording(
        N_("%(strategy)s over all devices"), "--strategy {strategy} without --shard-group-size"
    ),
    "fit_ungrouped": Wording(
        N_("sharding over all devices (no shard group size)"),
        "no --shard-group-size (sharding over all devices)",
    ),
    "fit_synced": Wording(
        N_("gradients reduced every micro-step (no “no sync”: unsharded gradients are not kept)"),
        "no --no-sync (gradients reduced every micro-step, not kept unsharded)",
    ),
    "fit_combined": Wording(
        N_("%(strategy)s, activation checkpointing and a micro-batch of at most %(micro_batch)s"),
        "--strategy {strategy}, --activation-checkpointing and --micro-batch at most {micro_batch}",
    ),
    "fit_combined_ungrouped": Wording(
        N_(
            "%(strategy)s over all devices, activation checkpointing and a micro-batch of at "
            "most %(micro_batch)s"
        ),
        "--strategy {strategy} without --shard-group-size, --activation-checkpointing and "
        "--micro-batch at most {micro_batch}",
    ),
    "fit_combined_synced": Wording(
        N_(
            "%(strategy)s without “no sync”, activation checkpointing and a micro-batch of at "
            "most %(micro_batch)s"
        ),
        "--strategy {strategy} without --no-sync, --activation-checkpointing and "
        "--micro-batch at most {micro_batch}",
    ),
    "fit_combined_synced_as_stated": Wording(
        N_("%(strategy)s without “no sync” and with activation checkpointing"),
        "--strategy {strategy} without --no-sync and with --activation-checkpointing",
    ),
    "fit_combined_as_stated": Wording(
        N_("%(strategy)s and activation checkpointing"),
        "--strategy {strategy} and --activation-checkpointing",
    ),
    "fit_combined_ungrouped_as_stated": Wording(
        N_("%(strategy)s over all devices and activation checkpointing"),
        "--strategy {strategy} without --shard-group-size and with --activation-checkpointing",
    ),
    "fit_param_dtype": Wording(N_("parameters gathered in %(dtype)s"), "--param-dtype {dtype}"),
    # Lighter gathered parameters as one more item of an option's list (it had been
    # "--strategy fsdp and --activation-checkpointing, with --param-dtype bf16").
    "fit_and_param_dtype": Wording(
        N_("%(option)s and parameters gathered in %(dtype)s"),
        "{option} and --param-dtype {dtype}",
    ),
    "fit_checkpointing_param_dtype": Wording(
        N_(
            "activation checkpointing, a micro-batch of at most %(micro_batch)s and parameters "
            "gathered in %(dtype)s"
        ),
        "--activation-checkpointing, --micro-batch at most {micro_batch} and --param-dtype {dtype}",
    ),
    "fit_checkpointing_param_dtype_as_stated": Wording(
        N_("activation checkpointing and parameters gathered in %(dtype)s"),
        "--activation-checkpointing and --param-dtype {dtype}",
    ),
    "fit_combined_param_dtype": Wording(
        N_(
            "%(strategy)s, activation checkpointing, a micro-batch of at most %(micro_batch)s "
            "and parameters gathered in %(dtype)s"
        ),
        "--strategy {strategy}, --activation-checkpointing, --micro-batch at most "
        "{micro_batch} and --param-dtype {dtype}",
    ),
    "fit_combined_param_dtype_as_stated": Wording(
        N_("%(strategy)s, activation checkpointing and parameters gathered in %(dtype)s"),
        "--strategy {strategy}, --activation-checkpointing and --param-dtype {dtype}",
    ),
    "fit_combined_ungrouped_param_dtype": Wording(
        N_(
            "%(strategy)s over all devices, activation checkpointing, a micro-batch of at most "
            "%(micro_batch)s and parameters gathered in %(dtype)s"
        ),
        "--strategy {strategy} without --shard-group-size, --activation-checkpointing, "
        "--micro-batch at most {micro_batch} and --param-dtype {dtype}",
    ),
    "fit_combined_ungrouped_param_dtype_as_stated": Wording(
        N_(
            "%(strategy)s over all devices, activation checkpointing and parameters gathered "
            "in %(dtype)s"
        ),
        "--strategy {strategy} without --shard-group-size, --activation-checkpointing and "
        "--param-dtype {dtype}",
    ),
    "fit_combined_synced_param_dtype": Wording(
        N_(
            "%(strategy)s without “no sync”, activation checkpointing, a micro-batch of at most "
            "%(micro_batch)s and parameters gathered in %(dtype)s"
        ),
        "--strategy {strategy} without --no-sync, --activation-checkpointing, --micro-batch "
        "at most {micro_batch} and --param-dtype {dtype}",
    ),
    "fit_combined_synced_param_dtype_as_stated": Wording(
        N_(
            "%(strategy)s without “no sync”, activation checkpointing and parameters gathered "
            "in %(dtype)s"
        ),
        "--strategy {strategy} without --no-sync, --activation-checkpointing and "
        "--param-dtype {dtype}",
    ),
    "compute": Wording(
        "",
        "Compute per micro-step {micro} ms ({micro_batch} / {throughput} {unit}), "
        "backward {backward} of it.",
    ),
    "preset_params": Wording(
        N_(
            "The parameters entered (%(params)s) replace the %(preset)s of %(model)s, whose "
            "shape is kept: %(layers)s layers, hidden size %(hidden)s, vocabulary %(vocab)s. "
            "They set the activations and each layer's size: for another shape, enter the "
            "layers and the hidden size, or choose no model."
        ),
        "--params {params} replaces the {preset} of --model {model}, whose shape is kept: "
        "{layers} layers, hidden size {hidden}, vocabulary {vocab}. They set the activations "
        "and each layer's size: for another shape, give --layers and --hidden-size, or no "
        "--model.",
    ),
    "micro_batch_tokens": Wording(
        N_(
            "Throughput in tokens without a sequence length: the micro-batch of %(micro_batch)s "
            "is counted in tokens. If it counts sequences, enter the sequence length or choose "
            "a model."
        ),
        "Throughput in tokens without --seq-len: the micro-batch of {micro_batch} is counted in "
        "tokens; if it counts sequences, give --seq-len (or a --model preset).",
    ),
    "network": Wording(
        N_(
            "%(per_node)s devices per node, %(intra)s per device inside a node; network "
            "%(inter)s per node × %(share)s achieved over %(transport)s = %(effective)s."
        ),
        "Network: {inter} nominal x {share} ({transport}) = {effective} per node; "
        "inside a node {intra} per device.",
    ),
    "wait": Wording(
        N_(
            "At %(devices)s devices the step also waits %(wait)s ms for the slowest device and "
            "pays %(overhead)s ms of fixed costs; the optimizer step (%(optimizer)s) is "
            "%(optimizer_time)s ms of the compute."
        ),
        "At {devices} devices the step also waits {wait} ms for the slowest device and "
        "pays {overhead} ms of fixed costs; the optimizer step ({optimizer}) is "
        "{optimizer_time} ms of the compute.",
    ),
    "optimizer_split": Wording(
        N_(
            "Efficiency passes 100 %% (%(efficiency)s at %(devices)s devices): %(strategy)s "
            "splits the optimizer step (%(optimizer)s) over the devices it shards over, "
            "%(there)s ms each there against %(baseline)s ms in the baseline's step. Published "
            "efficiencies start from a count that is sharded already: give yours as the "
            "baseline."
        ),
        "Efficiency passes 100 % ({efficiency} at {devices} devices): {strategy} splits the "
        "optimizer step ({optimizer}) over the devices it shards over, {there} ms each there "
        "against {baseline} ms in the baseline's step. Published efficiencies start from a "
        "count that is sharded already: give yours with --baseline-devices.",
    ),
    "partial_node": Wording(
        N_(
            "%(devices)s devices are not whole nodes of %(per_node)s: with ranks in order the "
            "last node holds %(last)s, and collectives across nodes run at the network those "
            "devices reach (%(share)s of a node's)."
        ),
        "{devices} devices are not whole nodes of {per_node}: with ranks in order the last "
        "node holds {last}, and collectives across nodes run at the network those devices "
        "reach ({share} of a node's).",
    ),
    "group_straddles": Wording(
        N_(
            "Shard groups of %(group)s devices do not fit whole in nodes of %(per_node)s: with "
            "ranks in order, at %(devices)s devices a group has as few as %(fewest)s devices "
            "on one node, so its all-gathers and reduce-scatters cross the network at what "
            "those reach. A group size that divides %(per_node)s keeps them inside a node; a "
            "multiple of it gives each group whole nodes' networks."
        ),
        "Shard groups of {group} devices do not fit whole in nodes of {per_node}: with ranks "
        "in order, at {devices} devices a group has as few as {fewest} devices on one node, "
        "so its all-gathers and reduce-scatters cross the network at what those reach; a "
        "group size that divides {per_node} keeps them inside a node, a multiple of it gives "
        "each group whole nodes' networks.",
    ),
    "algorithm_unused": Wording(
        N_(
            "The all-reduce algorithm (%(algorithm)s) changes nothing here: %(strategy)s "
            "shards over all its devices at every count, so it runs no all-reduce, only "
            "all-gathers and reduce-scatters, which go in rings."
        ),
        "--algorithm {algorithm} changes nothing here: {strategy} shards over all its devices "
        "at every count, so it runs no all-reduce, only all-gathers and reduce-scatters, which "
        "go in rings.",
    ),
    "bucket_unused": Wording(
        N_(
            "The gradient bucket size changes nothing here: %(strategy)s moves one wrapped "
            "unit (layer) per collective; the number of layers sets how many."
        ),
        "--bucket-size does not apply to {strategy}: it moves one wrapped unit (layer) per "
        "collective; --layers sets how many.",
    ),
    "param_dtype_held": Wording(
        N_(
            "Parameters in fp8 are what FSDP, ZeRO-3 and HSDP gather each layer in; "
            "%(strategy)s gathers no layer and holds its weights in 16 bits, which its memory "
            "counts."
        ),
        "--param-dtype fp8 is what fsdp, zero3, fsdp-shard-grad-op and hsdp gather each "
        "layer in; {strategy} gathers no layer and holds its weights in 16 bits, which its "
        "memory counts.",
    ),
    "throughput_replaced": Wording(
        N_(
            "The measured points set one device's throughput: %(measured)s %(unit)s, in place "
            "of the %(stated)s %(unit)s stated."
        ),
        "The measured points set one device's throughput: {measured} {unit}, in place of the "
        "{stated} {unit} stated.",
    ),
    "optimizer_assumed": Wording(N_("assumed: %(optimizer)s"), "assumed {optimizer}"),
    "optimizer_cut": Wording(
        N_(
            "The assumed %(optimizer)s step alone takes %(optimizer_time)s ms at "
            "%(bandwidth)s, more than the one-device step of %(step)s ms that the throughput "
            "gives: the step is taken to be all optimizer, with no forward or backward to hide "
            "communication under. Check the throughput and the device's memory bandwidth."
        ),
        "The assumed {optimizer} step alone takes {optimizer_time} ms at {bandwidth}, more "
        "than the one-device step of {step} ms that the throughput gives: the step is taken "
        "to be all optimizer, with no forward or backward to hide communication under; check "
        "the throughput and --device-memory-bandwidth.",
    ),
    "calibrated": Wording(
        N_(
            "Calibrated from %(source)s: %(op)s on %(devices)s devices (nodes: %(nodes)s), bus "
            "bandwidth %(bandwidth)s, latency %(latency)s from %(samples)s sizes."
        ),
        "Calibrated from {source}: {op} on {devices} devices (nodes: {nodes}), bus "
        "bandwidth {bandwidth}, latency {latency} from {samples} sizes.",
    ),
    "latency_unresolved": Wording(
        N_("unresolved (the hardware's kept)"), "unresolved (the hardware's kept)"
    ),
    "calibrated_nodes_unknown": Wording(
        N_(
            "Calibrated from %(source)s: %(op)s on %(devices)s devices (nodes unknown), bus "
            "bandwidth %(bandwidth)s, latency %(latency)s from %(samples)s sizes."
        ),
        "Calibrated from {source}: {op} on {devices} devices (nodes unknown), bus "
        "bandwidth {bandwidth}, latency {latency} from {samples} sizes.",
    ),
    "band_measured": Wording(
        N_(
            "Calibrated from %(source)s: residual fixed cost %(overhead)s ms per step, jitter "
            "%(jitter)s; the band is the fit's (two standard deviations)."
        ),
        "Calibrated from {source}: residual fixed cost {overhead} ms per step, jitter "
        "{jitter}; the band is the fit's (two standard deviations).",
    ),
    "band_measured_points": Wording(
        N_(
            "Calibrated from the measured points: residual fixed cost %(overhead)s ms per step, "
            "jitter %(jitter)s; the band is the fit's (two standard deviations)."
        ),
        "Calibrated from measured points: residual fixed cost {overhead} ms per step, jitter "
        "{jitter}; the band is the fit's (two standard deviations).",
    ),
    "band_ranges": Wording(
        N_(
            "The band (%(level)s level) spans the stated ranges of what the inputs leave open: "
            "%(inputs)s."
        ),
        "Band ({level} level): the stated ranges of {inputs}.",
    ),
    "band_budget": Wording(
        N_(
            "The band (%(level)s level) spans the stated ranges of what the inputs leave open; "
            "at %(devices)s devices each of them alone would move an edge of the band by "
            "(percentage points): %(shares)s; together, in quadrature, ±%(total)s."
        ),
        "Band ({level} level), at {devices} devices each input alone (pp each side): "
        "{shares:, }; together +-{total} (in quadrature).",
    ),
    "band_share": Wording(N_("%(input)s ±%(points)s"), "{input} +-{points}"),
    "band_rest": Wording(
        N_("%(count)s more, each under ±%(points)s"), "{count} more under +-{points}"
    ),
    "band_largest": Wording(
        N_("Stating “%(input)s” instead of leaving its range open would remove the largest share."),
        "Largest share: {input}; stating {option} removes it.",
    ),
    "band_largest_setup": Wording(
        N_(
            "The largest share is the setup losses across nodes: measured points from two or "
            "more nodes would replace it with your own job's."
        ),
        "Largest share: framework_setup; --measured points from two or more nodes (or a "
        "measured --step-overhead) replace it with your own job's.",
    ),
    "target_fraction": TARGET_FRACTION,
    "max_devices": Wording(
        N_(
            "Up to %(devices)s devices the predicted efficiency stays at or above %(target)s "
            "(counts searched up to %(limit)s)."
        ),
        "Largest device count that keeps efficiency >= {target}: {devices} (counts searched "
        "up to {limit}).",
    ),
    "max_devices_one": Wording(
        N_(
            "Up to %(devices)s device the predicted efficiency stays at or above %(target)s "
            "(counts searched up to %(limit)s)."
        ),
        # The terminal's line names no unit after the count: the same words for one.
        "Largest device count that keeps efficiency >= {target}: {devices} (counts searched "
        "up to {limit}).",
    ),
    "max_devices_below": Wording(
        N_(
            "%(devices)s devices is the largest count whose predicted efficiency is at or "
            "above %(target)s (counts searched up to %(limit)s), but not every smaller count "
            "keeps it: it first falls below from %(below_from)s to %(below_to)s devices."
        ),
        "Largest device count that keeps efficiency >= {target}: {devices} (counts searched "
        "up to {limit}); not every smaller count keeps it: {below_from} to {below_to} devices "
        "are the first to fall below.",
    ),
    "max_devices_below_one": Wording(
        N_(
            "%(devices)s devices is the largest count whose predicted efficiency is at or "
            "above %(target)s (counts searched up to %(limit)s), but not every smaller count "
            "keeps it: it first falls below at %(below_from)s devices."
        ),
        "Largest device count that keeps efficiency >= {target}: {devices} (counts searched "
        "up to {limit}); not every smaller count keeps it: {below_from} devices are the first "
        "to fall below.",
    ),
    "max_devices_all": Wording(
        N_(
            "Every count searched, up to %(limit)s devices, keeps the predicted efficiency at "
            "or above %(target)s."
        ),
        "Every device count searched keeps efficiency >= {target} (counts searched up to {limit}).",
    ),
    "max_devices_all_below": Wording(
        N_(
            "The predicted efficiency is at or above %(target)s at the end of the search, "
            "%(limit)s devices, but not at every smaller count: it first falls below from "
            "%(below_from)s to %(below_to)s devices."
        ),
        "Efficiency >= {target} holds at the end of the search ({limit} devices), but not at "
        "every smaller count: {below_from} to {below_to} devices are the first to fall below.",
    ),
    "max_devices_all_below_one": Wording(
        N_(
            "The predicted efficiency is at or above %(target)s at the end of the search, "
            "%(limit)s devices, but not at every smaller count: it first falls below at "
            "%(below_from)s devices."
        ),
        "Efficiency >= {target} holds at the end of the search ({limit} devices), but not at "
        "every smaller count: {below_from} devices are the first to fall below.",
    ),
    "max_devices_none": Wording(
        N_("Even 2 devices fall below %(target)s."),
        "No device count keeps {target} (not even 2).",
    ),
    "target_reached": Wording(
        N_("%(target)s is already reached at %(devices)s devices: nothing needs to change."),
        "At {devices} devices (predicted {efficiency}), {target} is already reached.",
    ),
    "target_needs": Wording(
        "", "At {devices} devices (predicted {efficiency}), {target} needs {changes}."
    ),
    "target_out_of_reach": Wording(
        "",
        "At {devices} devices (predicted {efficiency}), neither accumulation nor a larger "
        "micro-batch reaches {target}.",
    ),
    "target_reached_one": Wording(
        N_("%(target)s is already reached at %(devices)s device: nothing needs to change."),
        "At {devices} device (predicted {efficiency}), {target} is already reached.",
    ),
    "target_needs_one": Wording(
        "", "At {devices} device (predicted {efficiency}), {target} needs {changes}."
    ),
    "target_out_of_reach_one": Wording(
        "",
        "At {devices} device (predicted {efficiency}), neither accumulation nor a larger "
        "micro-batch reaches {target}.",
    ),
    "grad_accum_needed": Wording(
        N_(
            "%(value)s micro-steps per optimizer step (now %(now)s) exchange the gradients "
            "once per %(value)s micro-batches; the global batch becomes %(batch)s samples."
        ),
        "--grad-accum {value}",
    ),
    "grad_accum_needed_over": Wording(
        N_(
            "%(value)s micro-steps per optimizer step (now %(now)s) would exchange the "
            "gradients once per %(value)s micro-batches, but they need %(memory)s per device, "
            "more than the %(capacity)s there; the global batch would be %(batch)s samples."
        ),
        "--grad-accum {value} (which does not fit: {memory} needed per device, {capacity} there)",
    ),
    "grad_accum_needed_tight": Wording(
        N_(
            "%(value)s micro-steps per optimizer step (now %(now)s) exchange the gradients "
            "once per %(value)s micro-batches and fit, tightly: %(memory)s of %(capacity)s "
            "per device leaves %(spare)s free, under a tenth of the device, where the "
            "framework's workspace and the allocator's fragmentation, not counted here, "
            "commonly take a few GiB; the global batch becomes %(batch)s samples."
        ),
        "--grad-accum {value} (fits tightly: {memory} of {capacity} per device, {spare} free: "
        "measure it before planning on it)",
    ),
    "grad_accum_needed_over_fits_with": Wording(
        N_(
            "%(value)s micro-steps per optimizer step (now %(now)s) would exchange the "
            "gradients once per %(value)s micro-batches; as stated they need %(memory)s per "
            "device, more than the %(capacity)s there, but with %(changes)s they fit: "
            "%(fixed)s per device. The global batch would be %(batch)s samples."
        ),
        "--grad-accum {value} (which does not fit as stated: {memory} needed per device, "
        "{capacity} there; it fits with {changes}: {fixed})",
    ),
    "grad_accum_needed_over_tight_with": Wording(
        N_(
            "%(value)s micro-steps per optimizer step (now %(now)s) would exchange the "
            "gradients once per %(value)s micro-batches; as stated they need %(memory)s per "
            "device, more than the %(capacity)s there, but with %(changes)s they fit, "
            "tightly: %(fixed)s per device leaves %(spare)s free, under a tenth of the "
            "device; measure it before planning on it. The global batch would be %(batch)s "
            "samples."
        ),
        "--grad-accum {value} (which does not fit as stated: {memory} needed per device, "
        "{capacity} there; it fits tightly with {changes}: {fixed}, {spare} free: measure it "
        "before planning on it)",
    ),
    "micro_batch_needed": Wording(
        N_(
            "A micro-batch of %(value)s samples (now %(now)s), if it fits in memory, gives "
            "each exchange more compute to hide behind; the global batch becomes %(batch)s "
            "samples."
        ),
        "--micro-batch {value} (if it fits in memory)",
    ),
    "micro_batch_needed_fits": Wording(
        N_(
            "A micro-batch of %(value)s samples (now %(now)s) gives each exchange more compute "
            "to hide behind and fits: %(memory)s of %(capacity)s per device; the global batch "
            "becomes %(batch)s samples."
        ),
        "--micro-batch {value} (fits: {memory} of {capacity} per device)",
    ),
    "micro_batch_needed_over": Wording(
        N_(
            "A micro-batch of %(value)s samples (now %(now)s) would give each exchange more "
            "compute to hide behind, but it needs %(memory)s per device, more than the "
            "%(capacity)s there; the global batch would be %(batch)s samples."
        ),
        "--micro-batch {value} (which does not fit: {memory} needed per device, {capacity} there)",
    ),
    "micro_batch_needed_tight": Wording(
        N_(
            "A micro-batch of %(value)s samples (now %(now)s) gives each exchange more compute "
            "to hide behind and fits, tightly: %(memory)s of %(capacity)s per device leaves "
            "%(spare)s free, under a tenth of the device, where the framework's workspace and "
            "the allocator's fragmentation, not counted here, commonly take a few GiB; the "
            "global batch becomes %(batch)s samples."
        ),
        "--micro-batch {value} (fits tightly: {memory} of {capacity} per device, {spare} free: "
        "measure it before planning on it)",
    ),
    "micro_batch_needed_over_fits_with": Wording(
        N_(
            "A micro-batch of %(value)s samples (now %(now)s) would give each exchange more "
            "compute to hide behind; as stated it needs %(memory)s per device, more than the "
            "%(capacity)s there, but with %(changes)s it fits: %(fixed)s per device. The "
            "global batch would be %(batch)s samples."
        ),
        "--micro-batch {value} (which does not fit as stated: {memory} needed per device, "
        "{capacity} there; it fits with {changes}: {fixed})",
    ),
    "micro_batch_needed_over_tight_with": Wording(
        N_(
            "A micro-batch of %(value)s samples (now %(now)s) would give each exchange more "
            "compute to hide behind; as stated it needs %(memory)s per device, more than the "
            "%(capacity)s there, but with %(changes)s it fits, tightly: %(fixed)s per device "
            "leaves %(spare)s free, under a tenth of the device; measure it before planning "
            "on it. The global batch would be %(batch)s samples."
        ),
        "--micro-batch {value} (which does not fit as stated: {memory} needed per device, "
        "{capacity} there; it fits tightly with {changes}: {fixed}, {spare} free: measure it "
        "before planning on it)",
    ),
    "compared_baseline": Wording(
        N_(
            "Every strategy runs the same device: its efficiency is relative to the "
            "%(throughput)s %(unit)s per device at %(devices)s devices, so one slower there "
            "starts below 100%%, one faster above."
        ),
        "Every strategy runs the same device: its efficiency is relative to the {throughput} "
        "{unit} per device at {devices} devices, so one slower there starts below 100 %, one "
        "faster above.",
    ),
    "compared_left_out": Wording(
        N_(
            "%(strategy)s shards within groups of %(group)s devices: it is left out at the "
            "%(count)s counts asked that are not whole groups (the smallest: %(first)s)."
        ),
        "{strategy} shards within groups of {group} devices: it is left out at {shown} devices, "
        "which are not whole groups.",
    ),
    "compared_without_no_sync": Wording(
        N_(
            "Compared without “no sync”: %(strategies)s (DeepSpeed's ZeRO-2 and ZeRO-3 refuse "
            "it and reduce the gradients every micro-step, so they keep no unsharded "
            "gradients between the micro-steps)."
        ),
        "Compared without --no-sync: {strategies} (DeepSpeed's ZeRO-2 and ZeRO-3 refuse "
        "no_sync and reduce the gradients every micro-step, keeping no unsharded gradients "
        "between them).",
    ),
    "compared_uncalibrated": Wording(
        N_(
            "Only %(strategy)s is calibrated by the measured points; the others run the "
            "stated inputs from the same baseline. So stated, without the calibration, "
            "%(strategy)s gives %(efficiency)s at %(devices)s devices (calibrated: "
            "%(calibrated)s): compare the other strategies with that."
        ),
        "Only {strategy} is calibrated by the measured points; the others run the stated "
        "inputs from the same baseline. So stated, without the calibration, {strategy} gives "
        "{efficiency} at {devices} devices (calibrated: {calibrated}): compare the other "
        "strategies with that.",
    ),
    "compared_param_dtype_held": Wording(
        N_(
            "Parameters in fp8 are what FSDP, ZeRO-3 and HSDP gather each layer in; compared "
            "beside them, %(strategies)s gather no layer and hold their weights in 16 bits, "
            "which their memory counts."
        ),
        "--param-dtype fp8 is what fsdp, zero3, fsdp-shard-grad-op and hsdp gather each "
        "layer in; compared beside them, {strategies} gather no layer and hold their weights "
        "in 16 bits, which their memory counts.",
    ),
    "compared_unreachable": Wording(
        N_(
            "The other strategies are not compared: with %(strategy)s as stated, the "
            "communication and waits at %(devices)s devices alone take %(modelled)s, longer "
            "than the %(measured)s step measured there."
        ),
        "The other strategies are not compared: with {strategy} as stated, the communication "
        "and waits at {devices} devices alone take {modelled}, longer than the {measured} step "
        "measured there.",
    ),
    "change_not_needed": Wording(N_("Already reached with the current value."), ""),
    "change_out_of_reach": Wording(N_("No value up to %(limit)s reaches %(target)s."), ""),
    "best_bucket": Wording(
        N_(
            "Buckets of %(best)s leave %(exposed)s ms of communication exposed, for "
            "%(efficiency)s efficiency (now %(now)s buckets)."
        ),
        "Best bucket size there: {best} (exposed communication {exposed} ms, efficiency "
        "{efficiency}).",
    ),
}
"""Each statement's words: the page's msgid and the terminal's English. An empty side is a
statement that surface does not make: the terminal says in one line what to change
(``target_needs``), the page in one result per change, each with its own sentence."""

MEASURED_KEYS = (
    "measured_estimated",
    "measured_network",
    "measured_kept",
    "measured_folded",
    "measured_flagged",
    "measured_misfit",
    "measured_across_nodes",
    "measured_odd",
    "measured_odd_one",
    "measured_spread_beyond",
    "measured_run_steps",
    "measured_flat",
    "measured_mfu",
)
"""The keys of :func:`lines` for what a calibration from measured points estimated, kept,
held in the level and doubted (:data:`CALIBRATION_WORDS`)."""

TERMINAL_ORDER = (
    ("transfer",),
    ("transfer_2",),
    (
        "gradients",
        "compute",
        "network",
        "partial_node",
        "group_straddles",
        "algorithm_unused",
        "bucket_unused",
    ),
    ("micro_batch_tokens",),
    ("preset_params",),
    ("mfu", "mfu_check", "baseline"),
    ("wait", "optimizer_cut", "optimizer_split"),
    ("memory", "memory_tight", "memory_over", "memory_fix", "param_dtype_held"),
    ("calibration", "throughput_replaced"),
    ("band", "band_largest"),
    MEASURED_KEYS,
    ("target_fraction",),
    ("max_devices",),
    ("target",),
    ("best_bucket",),
)
"""The terminal's lines under the table, by the keys of :func:`lines`: one line each, the
statements in a line joined by a space; a key :func:`lines` leaves out is skipped."""
