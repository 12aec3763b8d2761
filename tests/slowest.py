"""The end of the test command's output: the tests that passed, failed and were skipped in all of its
pytest runs together (the parallel part and the tests that run alone), and the ten slowest.

    python -m tests.slowest .output/junit-*.xml"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def main(paths: list[str]) -> int:
    times: list[tuple[float, str]] = []
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for path in paths:
        for case in ET.parse(Path(path)).getroot().iter("testcase"):
            name = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
            times.append((float(case.get("time") or 0), name))
            outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
            counts["skipped" if outcome == "skipped" else "failed" if outcome != "passed" else "passed"] += 1
    print(f"== Tests: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped ==")
    print("The ten slowest (setup, call and teardown together):")
    for seconds, name in sorted(times, reverse=True)[:10]:
        print(f"  {seconds:7.1f} s  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
