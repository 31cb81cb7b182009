"""`wasq_policy.wit` mirrors componentize-py's generated bindings of `wit/`: the same classes,
fields and enum values, so that the SDK reads the host's records and builds answers alike in a
component and in plain CPython. Needs componentize-py (`$COMPONENTIZE_PY` or on `PATH`);
skipped without it."""

import dataclasses
import enum
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from wasq_policy import wit

WIT = pathlib.Path(__file__).resolve().parents[3] / "wit"
TOOL = os.environ.get("COMPONENTIZE_PY") or shutil.which("componentize-py")
WORLDS = {
    "ordering-plugin": "ordering",
    "preemption-plugin": "preemption",
    "flavor-assignment-plugin": "flavor_assignment",
    "placement-plugin": "placement",
    "dispatch-plugin": "dispatch",
}
# Generated names that the mirror renames, because several interfaces use them.
RENAMED = {
    ("preemption", "Request"): "PreemptionRequest",
    ("flavor_assignment", "Request"): "FlavorRequest",
    ("placement", "Request"): "PlacementRequest",
    ("dispatch", "Request"): "DispatchRequest",
    ("dispatch", "Answer"): "DispatchAnswer",
    ("dispatch", "Workload"): "DispatchWorkload",
    ("dispatch", "PodSet"): "DispatchPodSet",
}

pytestmark = pytest.mark.skipif(
    TOOL is None or not WIT.is_dir(), reason="componentize-py or wit/ not found"
)


def generated(tmp_path, world, interface):
    out = tmp_path / world
    subprocess.run([TOOL, "-d", str(WIT), "-w", world, "bindings", str(out)], check=True,
                   capture_output=True)
    sys.path.insert(0, str(out))
    try:
        for name in [m for m in sys.modules if m.split(".")[0] in ("wit_world", "componentize_py_types")]:
            del sys.modules[name]
        import importlib

        types = importlib.import_module("wit_world.imports.types")
        exports = importlib.import_module(f"wit_world.exports.{interface}")
        return [("types", types), (interface, exports)]
    finally:
        sys.path.remove(str(out))
        for name in [m for m in sys.modules if m.split(".")[0] in ("wit_world", "componentize_py_types")]:
            del sys.modules[name]


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_the_mirror_has_every_generated_class_field_and_value(tmp_path, world):
    checked = 0
    for interface, module in generated(tmp_path, world, WORLDS[world]):
        for name, cls in vars(module).items():
            if not isinstance(cls, type) or cls.__module__ != module.__name__:
                continue
            ours = getattr(wit, RENAMED.get((interface, name), name), None)
            if issubclass(cls, enum.Enum):
                assert ours is not None, f"wit lacks enum {name}"
                assert {m.name: m.value for m in cls} == {m.name: m.value for m in ours}, name
                checked += 1
            elif dataclasses.is_dataclass(cls):
                assert ours is not None, f"wit lacks record {name}"
                theirs = [f.name for f in dataclasses.fields(cls)]
                assert sorted(theirs) == sorted(f.name for f in dataclasses.fields(ours)), name
                checked += 1
    assert checked > 20
