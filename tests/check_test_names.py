#!/usr/bin/env python3
"""Every doctest case must run under CTest.

doctest_discover_tests turns the test binaries' --list-test-cases output into a CMake list, so
a ';' in a TEST_CASE name splits it into two CTest entries whose --test-case filters match no
case: both pass without running an assertion. Such a name is an error here.
"""
import re
import sys
from pathlib import Path

NAME = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"')


def main(root: Path) -> int:
    bad = []
    count = 0
    for path in sorted((root / "tests").rglob("*.cpp")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for name in NAME.findall(line):
                count += 1
                if ";" in name:
                    bad.append(f"{path.relative_to(root)}:{number}: {name!r}")
    for b in bad:
        print(f"{b}: a ';' splits this test case under CTest, which then runs none of it")
    if count == 0:
        print("no TEST_CASE found under tests/")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
