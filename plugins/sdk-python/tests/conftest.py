"""Puts the SDK on the path (tests run from anywhere: `python3 -m pytest plugins/sdk-python`)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
