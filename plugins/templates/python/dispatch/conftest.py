"""Puts the SDK (`wasq_policy`) on the path for pytest, from the first of: `$WASQ_PYTHON_SDK`,
a copy next to this plugin (`./wasq_policy/`, as `wasq plugin new` vendors it), or a
`sdk-python/` (or `plugins/sdk-python/`) folder here or above (a checkout of wasq)."""

import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent


def roots():
    yield os.environ.get("WASQ_PYTHON_SDK", "")
    yield str(HERE)
    for folder in (HERE, *HERE.parents):
        yield str(folder / "sdk-python")
        yield str(folder / "plugins" / "sdk-python")


for root in roots():
    if root and os.path.isdir(os.path.join(root, "wasq_policy")):
        sys.path.insert(0, root)
        break
sys.path.insert(0, str(HERE))
