#!/usr/bin/env python3
"""Markdown (the subset docs/ uses) to man(7) roff, so kiln's man pages are
made from docs/ at build time and cannot drift from them.

md2man.py --name kiln-spec --section 5 --title "host spec format" IN.md [IN2.md ...] > OUT
--help-of KILN  adds COMMANDS from `KILN help` and `KILN help CMD` (kiln(1))."""
import argparse
import re
import subprocess
import sys


TABLE_SHORT_CELL = 28    # characters: a column whose cells are all this short is not stretched
TABLE_PAGE = 72          # columns a table has on an 80-column terminal (man indents 7)
TABLE_MIN_TEXT = 15      # columns a stretched (text) column gets at least


def plain(text):
    """text as the page shows it (its width): no markup"""
    text = re.sub(r"`([^`]+)`", r"\1", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    return re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text)


def esc(text):
    text = text.replace("\\", "\\e")
    text = re.sub(r"`([^`]+)`", lambda m: "\\fB" + m.group(1) + "\\fR", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"\\fB\1\\fR", text)
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text)
    text = text.replace("-", "\\-")
    return text


def line_out(out, text):
    # a roff line must not start with a control character
    if text.startswith((".", "'")):
        text = "\\&" + text
    out.append(text)


def convert(md, out, top_heading):
    lines = md.splitlines()
    i = 0
    para = []

    def flush():
        if para:
            out.append(".PP")
            for p in para:
                line_out(out, esc(p))
            para.clear()

    while i < len(lines):
        ln = lines[i]
        if ln.startswith("```"):
            flush()
            out.append(".RS 4\n.nf")
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                line_out(out, lines[i].replace("\\", "\\e"))
                i += 1
            out.append(".fi\n.RE")
            i += 1
            continue
        m = re.match(r"^(#+)\s+(.*)", ln)
        if m:
            flush()
            level = len(m.group(1))
            title = esc(m.group(2))
            if level == 1:
                if top_heading:
                    out.append(".SH " + '"' + title.upper() + '"')
            elif level == 2:
                out.append(".SH " + '"' + title.upper() + '"')
            else:
                out.append(".SS " + '"' + title + '"')
            i += 1
            continue
        if ln.startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                    rows.append(cells)
                i += 1
            n = max(len(r) for r in rows)
            rows = [r + [""] * (n - len(r)) for r in rows]
            # a column of short cells (a code, a name) keeps its width; the
            # others share what is left (x), so no short column is padded to
            # a third of the page while the text column wraps every word
            widths = [max(len(plain(r[k])) for r in rows) for k in range(n)]
            wide = [w > TABLE_SHORT_CELL for w in widths]
            if not any(wide):
                wide[widths.index(max(widths))] = True
            # what the short columns keep must leave the others room
            while not all(wide) and sum(w + 3 for w, x in zip(widths, wide) if not x) + TABLE_MIN_TEXT * wide.count(True) > TABLE_PAGE:
                k = max((w, k) for k, (w, x) in enumerate(zip(widths, wide)) if not x)[1]
                wide[k] = True
            out.append(".TS\nallbox tab(\t);")
            out.append(" ".join(["lb"] * n))
            out.append(" ".join("lx" if w else "l" for w in wide) + ".")
            for r in rows:
                out.append("\t".join("T{\n" + esc(c) + "\nT}" for c in r))
            out.append(".TE")
            continue
        m = re.match(r"^(\s*)[-*] (.*)", ln)
        if m:
            flush()
            item = [m.group(2)]
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and not re.match(r"^\s*[-*] ", lines[i]):
                item.append(lines[i].strip())
                i += 1
            out.append(".IP \\(bu 2")
            for p in item:
                line_out(out, esc(p))
            continue
        if not ln.strip():
            flush()
        else:
            para.append(ln.strip())
        i += 1
    flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--section", required=True)
    ap.add_argument("--title", required=True)
    ap.add_argument("--help-of")
    ap.add_argument("docs", nargs="*")
    a = ap.parse_args()
    out = ["'\\\" t", '.TH "%s" "%s" "" "kiln" "kiln manual"' % (a.name.upper(), a.section),
           ".SH NAME", "%s \\- %s" % (a.name, esc(a.title))]
    if a.help_of:
        top = subprocess.run([a.help_of, "help"], capture_output=True, text=True, check=True).stdout
        out += [".SH SYNOPSIS", ".nf"]
        for ln in top.splitlines():
            line_out(out, ln.replace("\\", "\\e"))
        out.append(".fi")
        out.append(".SH COMMANDS")
        # the command list only: the lines above it ("  log lines go to
        # stderr") are indented alike
        listing = top.split("\ncommands:\n", 1)
        if len(listing) != 2:
            sys.exit("md2man: no 'commands:' list in '%s help'" % a.help_of)
        for m in re.finditer(r"^  ([a-z]+) ", listing[1], re.M):
            cmd = m.group(1)
            if cmd in ("help", "version"):
                continue
            text = subprocess.run([a.help_of, "help", cmd], capture_output=True, text=True).stdout
            out += [".SS " + cmd, ".nf"]
            for ln in text.splitlines():
                line_out(out, ln.replace("\\", "\\e"))
            out.append(".fi")
    for path in a.docs:
        with open(path, encoding="utf-8") as f:
            convert(f.read(), out, top_heading=len(a.docs) > 1 or bool(a.help_of))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
