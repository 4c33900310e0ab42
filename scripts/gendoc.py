#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Build-time generator of the pages and completions that must not drift
from their one source:

  gendoc.py man-cli  GPUPROFCTL TEMPLATE OUT   gpuprofctl(1) scdoc from the
                                               CLI's command table
  gendoc.py man-conf OPERATIONS_MD TEMPLATE OUT  gpuprofd.conf(5) scdoc from
                                               the key table of docs/operations.md
  gendoc.py bash GPUPROFCTL TEMPLATE OUT       bash completion (TEMPLATE: its
                                               function, after the generated tables)
  gendoc.py zsh  GPUPROFCTL OUT                zsh completion
  gendoc.py analyses-header ANALYSES_JSON OUT  gpuprofctl's table of the
                                               analyses and their parameters
                                               (a C header), from the daemon's
                                               (ANALYSES_JSON: the built
                                               program that prints it)

GPUPROFCTL is the built gpuprofctl: `gpuprofctl __describe` prints its
command table (name, summary, manual) as JSON, the same text `gpuprofctl
help` shows. The manuals are plain text laid out for a terminal; the parser
below reads their layout (synopsis lines, paragraphs, CAPITAL headings,
"  --option ARG   description" items, EXAMPLES) and nothing else.
"""

import json
import os
import re
import subprocess
import sys

# --- the command table ------------------------------------------------------


def describe(exe):
    env = dict(os.environ)
    # a sanitizer build of gpuprofctl runs here too: its exit must not depend
    # on the leak checker finding a ptrace-able process
    env["ASAN_OPTIONS"] = "detect_leaks=0"
    out = subprocess.run([exe, "__describe"], check=True, capture_output=True, env=env).stdout
    return json.loads(out)


def is_heading(line):
    if not line or line[0] == " ":
        return False
    head = line.split("(", 1)[0].strip()
    return len(head) >= 2 and re.fullmatch(r"[A-Z][A-Z -]*[A-Z]", head) is not None


def parse_manual(text):
    """{'synopsis': [lines], 'sections': [(heading, [lines])]}; the first
    section (heading '') is the description."""
    lines = text.rstrip("\n").split("\n")
    i, synopsis = 0, []
    while i < len(lines) and lines[i].strip():
        if lines[i].startswith(" ") and synopsis:
            synopsis[-1] += " " + lines[i].strip()
        else:
            synopsis.append(lines[i].strip())
        i += 1
    sections = [("", [])]
    prev_blank = True
    while i < len(lines):
        line = lines[i]
        if prev_blank and is_heading(line):
            heading = line
            # a heading's parenthesis may go on over more lines
            while heading.count("(") > heading.count(")") and i + 1 < len(lines):
                i += 1
                heading += " " + lines[i].strip()
            sections.append((heading, []))
        else:
            sections[-1][1].append(line)
        prev_blank = not line.strip()
        i += 1
    return {"synopsis": synopsis, "sections": [s for s in sections if s[0] or any(l.strip() for l in s[1])]}


def parse_block(lines):
    """A section's lines as a list of ('para', text) and ('item', term, desc)."""
    out = []
    item = None  # [term, desc, indent]
    para = None
    for line in lines:
        if not line.strip():
            item = para = None
            continue
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if indent == 0:
            item = None
            if para is None:
                para = ["para", body]
                out.append(para)
            else:
                para[1] += " " + body
            continue
        para = None
        m = re.match(r"(\S.*?)\s{2,}(\S.*)$", body)
        if item is not None and indent >= item[2] + 8:
            item[1] = (item[1] + " " + body).strip()
            continue
        if m or body.startswith("-") or (item is not None and indent == item[2]):
            if m:
                term, desc = m.group(1), m.group(2)
            elif not body.startswith("-") and ": " in body:  # "Name: description"
                term, desc = body.split(": ", 1)
            else:
                term, desc = body, ""
            item = [term, desc, indent]
            out.append(("item", item))
        elif item is not None:
            item[1] = (item[1] + " " + body).strip()
        else:
            para = ["para", body]
            out.append(para)
    return [("para", b[1]) if b[0] == "para" else ("item", b[1][0], b[1][1]) for b in out]


# --- scdoc ------------------------------------------------------------------


def esc_inline(text):
    """Text for scdoc inside a line: its markup characters escaped."""
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")


def esc(text):
    """Text for scdoc that may start a line: escaped, and a line that would
    start a list, table, heading or roff request made plain."""
    text = esc_inline(text)
    if text[:1] in ("-", ".", "#", "[", "|", "]", ":", "`", "'"):
        text = "\\" + text
    return text


def term_scd(term):
    # option words bold, the rest (placeholders, values) as written
    words = re.split(r"(\s+|,\s*)", term)
    return "".join("*" + esc_inline(w) + "*" if w.startswith("-") else esc(w) if w.strip(", ") else w
                   for w in words)


def heading_scd(heading):
    m = re.match(r"([A-Z][A-Z -]*[A-Z])(.*)$", heading)
    return "*" + m.group(1).title() + "*" + esc(m.group(2))


def block_scd(lines, literal=False):
    if literal:
        # the indented lines are the examples; a paragraph may follow them
        body = [l for l in lines if l.startswith(" ") and l.strip()]
        rest = [l for l in lines if not l.startswith(" ")]
        cut = min([len(l) - len(l.lstrip(" ")) for l in body] or [0])
        out = ["```"] + [l[cut:].rstrip().replace("\\", "\\\\") for l in body] + ["```", ""] if body else []
        return out + block_scd(rest)
    out = []
    for b in parse_block(lines):
        if b[0] == "para":
            out += [esc(b[1]), ""]
        else:
            out.append(term_scd(b[1]))
            if b[2]:
                out.append("\t" + esc(b[2]))
            out.append("")
    return out


def synopsis_scd(lines):
    out = []
    for n, line in enumerate(lines):
        m = re.match(r"(gpuprofctl(?: [a-z][a-z-]*)*)(.*)$", line)
        text = ("*" + m.group(1) + "*" + esc(m.group(2))) if m else esc(line)
        out.append(text + (" ++" if n + 1 < len(lines) else ""))
    return out + [""]


def command_scd(cmd):
    man = parse_manual(cmd["usage"])
    out = ["## " + esc(cmd["name"]), "", esc(cmd["summary"][0].upper() + cmd["summary"][1:]) + ".", ""]
    out += synopsis_scd(man["synopsis"])
    for heading, lines in man["sections"]:
        if heading:
            out += [heading_scd(heading), ""]
        out += block_scd(lines, literal=heading.startswith("EXAMPLES"))
    return out


def footer_sections(desc):
    return dict(parse_manual("\n" + desc["footer"])["sections"])


def man_cli(exe, template, out):
    desc = describe(exe)
    footer = {h.split("(")[0].strip(): l for h, l in footer_sections(desc).items()}
    cmds = []
    for c in desc["commands"]:
        cmds += command_scd(c)
    exit_lines = [l.strip() for l in footer["EXIT STATUS"] if l.strip()]
    # "0 success; 1 ...; 2 ..." as one item per status
    exit_items = []
    for part in re.split(r";\s*", " ".join(exit_lines).rstrip(".")):
        m = re.match(r"(\d+) (.*)$", part)
        if m:
            exit_items += ["*" + m.group(1) + "*", "\t" + esc(m.group(2)), ""]
    subst = {
        "%%GLOBAL_OPTIONS%%": block_scd(footer["GLOBAL OPTIONS"]),
        "%%COMMANDS%%": cmds,
        "%%EXIT_STATUS%%": exit_items,
    }
    write_template(template, out, subst)


def write_template(template, out, subst):
    res = []
    with open(template) as f:
        for line in f.read().split("\n"):
            if line.strip() in subst:
                res += subst[line.strip()]
            else:
                res.append(line)
    with open(out, "w") as f:
        f.write("\n".join(res).rstrip("\n") + "\n")


# --- gpuprofd.conf(5) from docs/operations.md --------------------------------


def md_cells(row):
    cells, cur, code = [], "", False
    for ch in row.strip().strip("|"):
        if ch == "`":
            code = not code
        if ch == "|" and not code:
            cells.append(cur.strip())
            cur = ""
        else:
            cur += ch
    cells.append(cur.strip())
    return cells


def md_inline(text):
    """Markdown inline text for scdoc: `code` and **strong** bold."""
    out = []
    for n, part in enumerate(re.split(r"`([^`]*)`", text)):
        if n % 2:
            out.append("*" + esc_inline(part) + "*" if part else "")
        else:
            s = esc(part.replace("**", "\x00"))
            out.append(re.sub("\x00(.*?)\x00", r"*\1*", s).replace("\x00", ""))
    s = "".join(out)
    return s


def config_table(md_path):
    """The rows (key, default, meaning) of the table under '## Configuration'."""
    rows, in_section = [], False
    with open(md_path) as f:
        for line in f:
            if line.startswith("## "):
                in_section = line.strip() == "## Configuration"
                continue
            if in_section and line.startswith("| `"):
                cells = md_cells(line)
                if len(cells) == 3:
                    rows.append(cells)
    return rows


def man_conf(md_path, template, out):
    rows = config_table(md_path)
    if not rows:
        sys.exit("gendoc: no key table under '## Configuration' in " + md_path)
    items = []
    for key, default, meaning in rows:
        items += [md_inline(key) + " = " + md_inline(default), "\t" + md_inline(meaning), ""]
    write_template(template, out, {"%%CONFIG_KEYS%%": items})


# --- completions ----------------------------------------------------------------

FILE_ARGS = ("FILE", "ORIGINAL", "PATH")


def cli_model(exe):
    """Per command: its options (from its manual), which take a value, which
    value is a file or one of a list, its sub-words, and whether operands
    are files or capture ids."""
    desc = describe(exe)
    glob = {"opts": [], "arg": {}, "short": {}}
    scan_options(desc["footer"], glob)
    cmds = {}
    for c in desc["commands"]:
        name = c["name"].split(" ")
        if len(name) > 1:  # "analyze comm": a sub-word of analyze, own options
            base = cmds.setdefault(name[0], new_cmd(name[0]))
            if name[1] not in base["subs"]:
                base["subs"].append(name[1])
            sub = new_cmd(c["name"])
            sub["summary"], sub["ids"] = c["summary"], base["ids"]
            scan_options(c["usage"], sub)
            base.setdefault("subcmds", []).append(sub)
            continue
        cmd = cmds.setdefault(name[0], new_cmd(name[0]))
        cmd["summary"] = c["summary"]
        scan_options(c["usage"], cmd)
        syns = []
        for syn in parse_manual(c["usage"])["synopsis"]:
            syns += ["gpuprofctl " + s for s in syn.split("gpuprofctl ") if s.strip(" |")]
        # "[flamegraph options]": that command's options apply too
        for other in re.findall(r"\[([a-z]+) options\]", " ".join(syns)):
            ref = next((x for x in desc["commands"] if x["name"] == other), None)
            if ref:
                scan_options(ref["usage"], cmd)
        # "NAME (e.g. a, b, c)": the values of the first operand
        m = re.search(r"NAME \(e\.g\. ([a-z, -]+)\)", re.sub(r"\s+", " ", c["usage"]))
        if m:
            cmd["subs"] += [w for w in re.split(r",\s*", m.group(1)) if w and w not in cmd["subs"]]
        for syn in syns:
            words = syn.replace(" |", "").split()
            if len(words) > 2 and words[0] == "gpuprofctl" and re.fullmatch(r"[a-z][a-z-]*", words[2]):
                if words[2] not in cmd["subs"]:
                    cmd["subs"].append(words[2])
            operands = " ".join(w for w in words[2:] if not w.startswith(("-", "[-")))
            if re.search(r"\bFILE\b", re.sub(r"--?\S+ FILE", "", syn)):
                cmd["files"] = True
            if re.search(r"\b(ID|A B)\b", operands):
                cmd["ids"] = True
            if re.search(r"\bA B\b", operands):  # capture ids or files
                cmd["files"] = True
    for c in cmds.values():
        for sub in c.get("subcmds", []):
            sub["ids"] = c["ids"]
        for x in [c] + c.get("subcmds", []):
            for o in glob["opts"]:
                if o in x["opts"]:
                    x["opts"].remove(o)
    return glob, [cmds[k] for k in cmds]


def new_cmd(name):
    return {"name": name, "summary": "", "opts": [], "arg": {}, "short": {}, "subs": [],
            "files": False, "ids": False, "help": {}}


def option_lines(text):
    """The lines of a manual that define options: its usage block (up to the
    first blank line) and the lines that start with an option. Prose that
    quotes another tool's options (`nsys export --type sqlite`) is left out."""
    usage, rest = (text.split("\n\n", 1) + [""])[:2]
    return "\n".join([usage] + [l for l in rest.split("\n")
                                if re.match(r"\s+(?:-[a-zA-Z], )?--[a-z]", l)])


def scan_options(text, cmd):
    """Every --option the manual names, with what follows it."""
    for m in re.finditer(r"(?<![\w-])(?:(-[a-zA-Z]), )?(--[a-z][a-z0-9-]*)(?:[ =]([^\s,\]\[]+))?",
                         option_lines(text)):
        short, opt, val = m.group(1), m.group(2), m.group(3)
        if opt not in cmd["opts"]:
            cmd["opts"].append(opt)
        if short:
            cmd["short"][opt] = short
        if val is None or val.startswith("-"):
            continue
        if re.fullmatch(r"[A-Z][A-Z0-9_]*(\[[^\]]*\])?|[A-Z]+[*=|:][^\s]*", val):
            kind = "file" if val in FILE_ARGS else "value"
            if cmd["arg"].get(opt) in (None, "value"):
                cmd["arg"][opt] = kind
        elif re.fullmatch(r"[a-z][a-z-]*(\|[a-z][a-z-]*)+", val):
            cmd["arg"][opt] = val.split("|")
    # one line of help per option, for zsh
    for line in text.split("\n"):
        m = re.match(r"\s+(?:-[a-zA-Z], )?(--[a-z][a-z0-9-]*)\S*(?: \S+)?\s{2,}(\S.*)$", line)
        if m and m.group(1) not in cmd.get("help", {}):
            cmd.setdefault("help", {})[m.group(1)] = m.group(2)


def sh_words(words):
    return " ".join(words)


def bash(exe, template, out):
    glob, cmds = cli_model(exe)
    argopts = set(glob["arg"])
    fileopts = {o for o, k in glob["arg"].items() if k == "file"}
    values = {}
    every = cmds + [sub for c in cmds for sub in c.get("subcmds", [])]
    for c in every:
        argopts |= set(c["arg"])
        for o, k in c["arg"].items():
            if k == "file":
                fileopts.add(o)
            elif isinstance(k, list):
                values.setdefault(o, set()).update(k)
    shorts = {}
    for c in [glob] + every:
        for o, s in c["short"].items():
            if o in argopts:
                shorts.setdefault(s, set()).add(o)
    L = ["# bash completion for gpuprofctl -*- shell-script -*-",
         "# SPDX-License-Identifier: MIT",
         "# Generated from gpuprofctl's command table (scripts/gendoc.py): do not edit.",
         "",
         "_gpuprofctl_commands='%s'" % sh_words(c["name"] for c in cmds),
         "_gpuprofctl_global='%s'" % sh_words(glob["opts"]),
         # short options taking a value in any command: their value is skipped
         "_gpuprofctl_argopts=' %s %s '" % (sh_words(sorted(argopts)), sh_words(sorted(shorts))),
         "_gpuprofctl_fileopts=' %s '" % sh_words(sorted(fileopts)),
         "",
         "# options, sub-words and operand kinds of one command (\"analyze comm\"",
         "# before \"analyze\"); 1 for a command not in the table",
         "_gpuprofctl_cmd() {",
         "\tcase $1 in"]
    for c in sorted(every, key=lambda c: -len(c["name"])):
        L.append("\t'%s') _gpuprofctl_o='%s'; _gpuprofctl_s='%s'; _gpuprofctl_k='%s';;" % (
            c["name"], sh_words(c["opts"]), sh_words(c["subs"]),
            ("file " if c["files"] else "") + ("id" if c["ids"] else "")))
    L += ["\t*) _gpuprofctl_o=; _gpuprofctl_s=; _gpuprofctl_k=; return 1;;", "\tesac", "}", "",
          "_gpuprofctl_values() {", "\tcase $1 in"]
    for o in sorted(values):
        L.append("\t%s) echo '%s';;" % (o, sh_words(sorted(values[o]))))
    L += ["\tesac", "}", ""]
    with open(template) as f:
        L.append(f.read())
    with open(out, "w") as f:
        f.write("\n".join(L))


def zsh_q(text):
    """Text inside a single-quoted _arguments spec's [description]."""
    text = re.sub(r"\s+", " ", text).strip()
    if text.count("(") > text.count(")"):  # cut where the first line of help ended
        text = text[:text.rfind("(")].strip()
    text = text.replace("\\", "").replace("[", "(").replace("]", ")").replace(":", " -")
    return text.replace("'", "'\\''")


def zsh_spec(c, opt, glob_help):
    """_arguments specs of one option: the long name and its short one."""
    kind = c["arg"].get(opt)
    helptext = zsh_q((c.get("help", {}).get(opt) or glob_help.get(opt) or "")[:70])
    names = [opt] + ([c["short"][opt]] if opt in c["short"] else [])
    # an option that may repeat (--pid PID...) is marked with '*'
    if opt in ("--pid", "--tid", "--edit"):
        excl = "*"
    else:
        excl = "(" + " ".join(names) + ")" if len(names) > 1 else ""
    if kind is None:
        action = ""
    elif kind == "file":
        action = ":file:_files"
    elif isinstance(kind, list):
        action = ":value:(" + " ".join(kind) + ")"
    else:
        action = ":value: "
    specs = []
    for n in names:
        # a long option's value may follow '='; a short one's is the next word
        suffix = ("=" if n.startswith("--") else "+") if action else ""
        specs.append("'%s%s%s[%s]%s'" % (excl, n, suffix, helptext, action))
    return " ".join(specs)


def zsh(exe, out):
    glob, cmds = cli_model(exe)
    L = ["#compdef gpuprofctl",
         "# SPDX-License-Identifier: MIT",
         "# Generated from gpuprofctl's command table (scripts/gendoc.py): do not edit.",
         "",
         "_gpuprofctl_ids() {",
         "\tlocal -a ids sock",
         "\tlocal i",
         "\t# the --socket given on the line, if any",
         "\tfor ((i = 1; i < $#words; i++)); do",
         "\t\t[[ $words[i] == --socket ]] && sock=(--socket $words[i+1])",
         "\t\t[[ $words[i] == --socket=* ]] && sock=($words[i])",
         "\tdone",
         "\tids=(${(f)\"$(gpuprofctl $sock --timeout 2s --json list 2>/dev/null |",
         "\t\tsed -n 's/^[[:space:]]*\"id\":[[:space:]]*\\([0-9][0-9]*\\).*/\\1/p')\"})",
         "\t_describe -t captures 'capture id' ids",
         "}",
         "",
         "_gpuprofctl() {",
         "\tlocal curcontext=$curcontext state line ret=1",
         "\tlocal -a global commands",
         "\tglobal=("]
    for o in glob["opts"]:
        L.append("\t\t" + zsh_spec(glob, o, glob["help"]))
    L += ["\t)", "\tcommands=("]
    for c in cmds:
        L.append("\t\t'%s:%s'" % (c["name"], zsh_q(c["summary"])))
    L += ["\t)",
          "\t_arguments -C -s $global '(- *)'{-V,--version}'[show the version]' \\",
          "\t\t'1:command:->command' '*::argument:->argument' && ret=0",
          "\tcase $state in",
          "\tcommand)",
          "\t\t_describe -t commands 'gpuprofctl command' commands && ret=0",
          "\t\t;;",
          "\targument)",
          "\t\tcurcontext=${curcontext%:*:*}:gpuprofctl-$words[1]:",
          "\t\tcase $words[1] in"]
    for c in cmds:
        specs = [zsh_spec(c, o, glob["help"]) for o in c["opts"]]
        if c["name"] == "help":
            pos = ["'1:command:(%s)'" % " ".join(x["name"] for x in cmds)]
        elif c["subs"]:
            pos = ["'1:sub-command:(%s)'" % " ".join(c["subs"]),
                   "'*:argument:%s'" % ("_files" if c["files"] else "_gpuprofctl_ids" if c["ids"] else " ")]
        elif c["files"] and c["ids"]:
            pos = ["'*:capture id or file:_files'"]
        elif c["files"]:
            pos = ["'*:file:_files'"]
        elif c["ids"]:
            pos = ["'*:capture id:_gpuprofctl_ids'"]
        else:
            pos = []
        L.append("\t\t%s)" % c["name"])
        L.append("\t\t\t_arguments -s $global \\")
        for s in specs + pos:
            L.append("\t\t\t\t%s \\" % s)
        L.append("\t\t\t\t&& ret=0")
        L.append("\t\t\t;;")
    L += ["\t\tesac", "\t\t;;", "\tesac", "\treturn ret", "}", "", "_gpuprofctl \"$@\"", ""]
    with open(out, "w") as f:
        f.write("\n".join(L))


# --- the analyses' parameters for gpuprofctl ------------------------------------


def c_string(text):
    """text as C string literal lines."""
    out, line = [], ""
    for ch in text:
        if ch in "\\\"?":  # '?' too: no trigraph can form
            line += "\\" + ch
        elif " " <= ch <= "~":
            line += ch
        else:
            line += "\\%03o" % ord(ch) if ord(ch) < 128 else "".join(
                "\\%03o" % b for b in ch.encode())
        if len(line) >= 88:
            out.append('\t"%s"' % line)
            line = ""
    out.append('\t"%s"' % line)
    return out


def analyses_header(exe, out):
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = "detect_leaks=0"  # as describe(): a sanitizer build runs here too
    text = subprocess.run([exe], check=True, capture_output=True, env=env).stdout.decode()
    table = json.loads(text)  # checked here rather than when gpuprofctl runs
    if not table.get("analyses"):
        sys.exit("gendoc: no analyses in the output of " + exe)
    L = ["/* SPDX-License-Identifier: MIT */",
         "/* Generated from gpuprofd's analysis table (daemon/analysis/analysis.c) by",
         " * scripts/gendoc.py: analyze.list's answer as the daemon was built. */",
         "static const char analyses_json[] ="]
    L += c_string(json.dumps(table, separators=(",", ":"), ensure_ascii=False))
    L[-1] += ";"
    with open(out, "w") as f:
        f.write("\n".join(L) + "\n")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    mode = sys.argv[1]
    if mode == "man-cli":
        man_cli(*sys.argv[2:5])
    elif mode == "man-conf":
        man_conf(*sys.argv[2:5])
    elif mode == "bash":
        bash(*sys.argv[2:5])
    elif mode == "zsh":
        zsh(*sys.argv[2:4])
    elif mode == "analyses-header":
        analyses_header(*sys.argv[2:4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
