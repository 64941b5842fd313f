"""The command line the README-figure scripts share: print the lines, or check a README holds them.

  SCRIPT --binary path/to/megasim                 # print the lines today's build gives
  SCRIPT --binary path/to/megasim --check README  # exit 1 naming each line the README lacks
"""
import argparse
import re
from pathlib import Path


def flat(text):
    """Whitespace runs as one space: a figure may wrap across README lines."""
    return re.sub(r"\s+", " ", text)


def run(description, lines_of, script):
    """Parse the command line, form the lines with lines_of(binary), print or check them."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--check", help="a README that must hold every line verbatim")
    args = parser.parse_args()
    lines = lines_of(args.binary)
    if not args.check:
        print("\n".join(lines))
        return 0
    readme = Path(args.check).read_text(encoding="utf-8")
    missing = [line for line in lines if line not in readme]
    for line in missing:
        print(f"{args.check} does not say: {line!r}; regenerate with {script}")
    return 1 if missing else 0
