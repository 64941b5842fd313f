#!/usr/bin/env python3
"""Every doctest case must run under CTest.

doctest_discover_tests turns the test binaries' --list-test-cases output into a CMake list, so
a ';' in a TEST_CASE name splits it into two CTest entries whose --test-case filters match no
case: both pass without running an assertion. Such a name is an error here.

The whole file is read, so a name that starts on the next line, a TEST_CASE_FIXTURE's name and
a name of adjacent string literals ("a " "b") are read whole. `--self-test` checks the reading.
"""
import contextlib
import io
import re
import sys
import tempfile
from pathlib import Path

# TEST_CASE( or TEST_CASE_FIXTURE(Fixture, then one or more adjacent string literals.
CASE = re.compile(r'\bTEST_CASE(?:_FIXTURE\(\s*[\w:]+\s*,|\()\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def names(text):
    """(line, name) of every test case in a source text."""
    for m in CASE.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, "".join(LITERAL.findall(m.group(1)))


def main(root: Path) -> int:
    bad = []
    count = 0
    for path in sorted((root / "tests").rglob("*.cpp")):
        for number, name in names(path.read_text(encoding="utf-8")):
            count += 1
            if ";" in name:
                bad.append(f"{path.relative_to(root)}:{number}: {name!r}")
    for b in bad:
        print(f"{b}: a ';' splits this test case under CTest, which then runs none of it")
    if count == 0:
        print("no TEST_CASE found under tests/")
        return 1
    return 1 if bad else 0


def self_test() -> int:
    """The reading finds a ';' however the name is written, and passes a clean tree."""
    cases = {
        'TEST_CASE(\n    "split; here") {}': 1,
        'TEST_CASE_FIXTURE(F, "fix; ture") {}': 1,
        'TEST_CASE("a " "b;c") {}': 1,
        'TEST_CASE("plain") {}\nTEST_CASE_FIXTURE(ns::F,\n "also plain") {}': 0,
    }
    for text, want in cases.items():
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "tests").mkdir()
            (Path(tmp) / "tests" / "t.cpp").write_text(text, encoding="utf-8")
            with contextlib.redirect_stdout(io.StringIO()):
                got = main(Path(tmp))
            if got != want:
                print(f"self-test: {text!r} should give {want}")
                return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    sys.exit(main(Path(sys.argv[1])))
