"""Hardware presets: data files shipped in the package, loaded by name, every value sourced.

Each ``presets/<name>.toml`` holds a ``title`` and one table per value with ``value`` (a
bandwidth or latency with its unit, a count, a transport) and ``source``.

>>> "dgx-h100" in preset_names()
True
>>> preset = load_preset("dgx1-v100")
>>> preset.hardware.devices_per_node, preset.hardware.inter_bandwidth
(8, 50000000000.0)
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from dpscale.model.hardware import Hardware
from dpscale.units import parse_bandwidth, parse_bytes, parse_duration
from dpscale.validation import InputError

__all__ = ["Preset", "load_preset", "preset_names", "shipped_names"]

_FIELDS = (
    "devices_per_node",
    "intra_node_bandwidth",
    "intra_node_latency",
    "inter_node_bandwidth",
    "inter_node_latency",
    "transport",
    "device_memory_bandwidth",
)
_OPTIONAL = ("device_memory", "device_peak_flops", "nics_per_node")
"""Values a preset may leave out (a node whose devices' capacity or peak is not stated; its
NICs where there is one per device)."""


@dataclass(frozen=True)
class Preset:
    """A named hardware description: the values as written, their sources, and the hardware."""

    name: str
    title: str
    values: dict[str, Any]
    sources: dict[str, str]
    hardware: Hardware

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "values": dict(self.values),
            "sources": dict(self.sources),
        }


def _files() -> Any:
    return resources.files("dpscale.model").joinpath("presets")


def shipped_names(folder: Any) -> tuple[str, ...]:
    """Names of the ``.toml`` files shipped in a package folder, sorted (without suffix)."""
    return tuple(
        sorted(
            entry.name.removesuffix(".toml")
            for entry in folder.iterdir()
            if entry.name.endswith(".toml")
        )
    )


def unknown_name(field: str, what: str, name: str, names: Sequence[str]) -> InputError:
    """The error for ``name``, which no shipped ``what`` is called: the closest names first
    (a missing or extra prefix, a hyphen), then all of them.

    >>> unknown_name("hardware", "preset", "h100", ("dgx-a100", "dgx-h100")).issues[0].detail
    "no preset named 'h100' (did you mean dgx-h100?); choose one of: dgx-a100, dgx-h100"
    """
    typed = name[:100].lower()
    ends = [
        known
        for known in names
        if typed and (known.endswith(("-" + typed, typed + "x")) or known.startswith(typed + "-"))
    ]
    close = list(dict.fromkeys([*ends, *difflib.get_close_matches(typed, names, n=1)]))[:2]
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    return InputError.single(
        field, f"no {what} named {name!r}{hint}; choose one of: {', '.join(names)}", name
    )


@cache
def preset_names() -> tuple[str, ...]:
    """Names of the shipped presets, sorted."""
    return shipped_names(_files())


@cache
def load_preset(name: str) -> Preset:
    """The preset called ``name``; :class:`InputError` on ``hardware`` when there is none."""
    if name not in preset_names():
        raise unknown_name("hardware", "preset", name, preset_names())
    data = tomllib.loads(_files().joinpath(f"{name}.toml").read_text(encoding="utf-8"))
    present = (*_FIELDS, *(field for field in _OPTIONAL if field in data))
    values = {field: data[field]["value"] for field in present}
    sources = {field: str(data[field]["source"]) for field in present}
    hardware = Hardware(
        devices_per_node=int(values["devices_per_node"]),
        intra_bandwidth=parse_bandwidth(values["intra_node_bandwidth"]),
        inter_bandwidth=parse_bandwidth(values["inter_node_bandwidth"]),
        transport=values["transport"],
        intra_latency=parse_duration(values["intra_node_latency"]),
        inter_latency=parse_duration(values["inter_node_latency"]),
        memory_bandwidth=parse_bandwidth(values["device_memory_bandwidth"]),
        name=name,
        memory_capacity=(
            parse_bytes(values["device_memory"]) if "device_memory" in values else None
        ),
        peak_flops=(float(values["device_peak_flops"]) if "device_peak_flops" in values else None),
        nics_per_node=int(values["nics_per_node"]) if "nics_per_node" in values else None,
    )
    return Preset(
        name=name, title=str(data["title"]), values=values, sources=sources, hardware=hardware
    )
