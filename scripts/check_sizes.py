#!/usr/bin/env python3
"""Functions over 80 lines and files over 450 lines in the C++ of sim/, calibrate/ and reports/
(STYLE.md's limits). Exits 1 when it finds any, so it can become a test once the tree is clean.

A heuristic, not a parser: comments, string and character literals and preprocessor lines are
blanked out, then braces are matched. A brace block at namespace or class level whose header
(the text since the previous ';', '{' or '}') holds a '(' is a function (or a namespace-scope
lambda); its length runs from the header's first line to the closing brace. Namespaces, classes
and enums do not count; lambdas and blocks inside a function count as part of it.

  scripts/check_sizes.py [--max-function 80] [--max-file 450] [ROOT]
"""
import argparse
import pathlib
import re
import sys

SOURCES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
FOLDERS = ("sim", "calibrate", "reports")


def strip(text):
    """The text with comments, literals and preprocessor lines blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if c == "\n":
            at_line_start = True
            out.append(c)
            i += 1
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('"', i + 1) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def classify(header):
    h = " ".join(header.split())
    h = re.sub(r"^template\s*<.*?>\s*", "", h)  # good enough for one level of template<>
    if re.search(r"\bnamespace\b", h) or h == "extern":  # extern "C", its string blanked
        return "namespace"
    paren = h.find("(")
    kw = re.search(r"\b(class|struct|union|enum)\b", h)
    if kw and (paren < 0 or kw.start() < paren):
        return "class"
    if paren >= 0:
        return "function"
    return "other"


def function_name(header):
    h = " ".join(header.split())
    m = re.search(r"((?:[\w~]+::)*(?:operator\s*[^\s(]+|[\w~]+))\s*(?:<[^()]*>)?\s*\(", h)
    return m.group(1) if m else h[:40]


def functions(text):
    """(name, first line, last line) of every function in already stripped text."""
    found = []
    stack = []  # kinds of open blocks: namespace, class, other, function
    header, header_line = "", None
    fn_start = fn_name = None
    line = 1
    for c in text:
        if c == "\n":
            line += 1
        inside_function = "function" in stack
        if c == "{":
            if inside_function:
                stack.append("block")
                continue
            kind = classify(header)
            stack.append(kind)
            if kind == "function":
                fn_start, fn_name = header_line or line, function_name(header)
            if kind == "other":
                header += "{"
            else:
                header, header_line = "", None
        elif c == "}":
            kind = stack.pop() if stack else "namespace"
            if kind == "function":
                found.append((fn_name, fn_start, line))
                header, header_line = "", None
            elif kind == "other":
                header += "}"
            elif not inside_function:
                header, header_line = "", None
        elif not inside_function:
            if c == ";":
                if not stack or stack[-1] != "other":
                    header, header_line = "", None
            else:
                if header_line is None and not c.isspace():
                    header_line = line
                header += c
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-function", type=int, default=80)
    ap.add_argument("--max-file", type=int, default=450)
    ap.add_argument("root", nargs="?", default=pathlib.Path(__file__).resolve().parents[1])
    a = ap.parse_args()
    root = pathlib.Path(a.root)
    long_functions, long_files = [], []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SOURCES or not path.is_file():
                continue
            rel = path.relative_to(root).as_posix()
            text = path.read_text(errors="replace")
            lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            if lines > a.max_file:
                long_files.append((lines, rel))
            for name, first, last in functions(strip(text)):
                length = last - first + 1
                if length > a.max_function:
                    long_functions.append((length, rel, first, name))
    for length, rel, first, name in sorted(long_functions, key=lambda f: (-f[0], f[1], f[2])):
        print(f"{rel}:{first}: function {name} is {length} lines (> {a.max_function})")
    for lines, rel in sorted(long_files, key=lambda f: (-f[0], f[1])):
        print(f"{rel}: file is {lines} lines (> {a.max_file})")
    print(f"{len(long_functions)} function(s) over {a.max_function} lines, "
          f"{len(long_files)} file(s) over {a.max_file} lines")
    return 1 if long_functions or long_files else 0


if __name__ == "__main__":
    sys.exit(main())
