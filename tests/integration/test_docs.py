# SPDX-License-Identifier: MIT
"""Man pages, shell completions and the installed layout: what `meson
install` puts where, that systemd-analyze finds the pages the units name,
that every option, command and config key is documented, that the bash
completion offers what the parser accepts, and that the daemon's default
config path is absolute."""

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

from gpd import (BUILD, GPUPROFCTL, GPUPROFD, SOURCE, Conn, Daemon, Skip, eq, expect, main,
                 test)

MAN = os.path.join(BUILD, "docs", "man")
BASH = os.path.join(BUILD, "cli", "completion", "gpuprofctl")
ZSH = os.path.join(BUILD, "cli", "completion", "_gpuprofctl")
TRACE = os.path.join(SOURCE, "tests", "data", "pytorch-2.11-h200-3steps.json.gz")
# a sanitizer build's leak checker may not run in every sandbox; no test
# here is about leaks
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
# the completion runs `gpuprofctl --json list` for capture ids: this build's
ENV["PATH"] = os.path.dirname(GPUPROFCTL) + os.pathsep + ENV.get("PATH", "")


def need_man():
    if not os.path.exists(os.path.join(MAN, "gpuprofd.8")):
        raise Skip("man pages not built (scdoc missing or -Dman=disabled)")
    if not shutil.which("man"):
        raise Skip("man (man-db) not installed")


def describe():
    out = subprocess.run([GPUPROFCTL, "__describe"], check=True, capture_output=True, env=ENV)
    return json.loads(out.stdout)


def install():
    """meson install into a temporary DESTDIR: (destdir, {source: path})."""
    dest = tempfile.mkdtemp(prefix="gpd-inst-")
    p = subprocess.run(["meson", "install", "-C", BUILD, "--destdir", dest, "--no-rebuild",
                        "--quiet"], capture_output=True, timeout=120)
    eq(p.returncode, 0, "meson install: %s" % p.stderr.decode())
    intro = subprocess.run(["meson", "introspect", "--installed", BUILD], check=True,
                           capture_output=True).stdout
    return dest, json.loads(intro)


def installed(dest, paths, suffix):
    hits = [p for p in paths.values() if p.endswith(suffix)]
    eq(len(hits), 1, "one installed path ends with %s: %r" % (suffix, hits))
    full = dest + hits[0]
    expect(os.path.exists(full), "installed: " + full)
    return hits[0], full


@test
def install_puts_pages_completions_and_config_in_place():
    need_man()
    if not shutil.which("systemd-analyze"):
        raise Skip("systemd-analyze missing")
    dest, paths = install()
    try:
        pages = {}
        for page, sec in (("gpuprofd.8", "man8"), ("gpuprofctl.1", "man1"),
                          ("gpuprofd.conf.5", "man5"), ("libgpuprof-client.3", "man3")):
            path, full = installed(dest, paths, "/" + sec + "/" + page)
            pages[page] = full
            # groff's own warnings (bad requests, unbalanced fonts) on stderr
            p = subprocess.run(["man", "--warnings", "-l", full], capture_output=True,
                               env=dict(ENV, MANWIDTH="80"))
            eq(p.returncode, 0, "man -l " + page)
            eq(p.stderr.decode(), "", "no groff warning in " + page)
            expect(b"SEE ALSO" in p.stdout, page + " renders")
        mandir = os.path.dirname(os.path.dirname(pages["gpuprofd.8"]))
        # the example config lands where the daemon reads it by default
        conf, _ = installed(dest, paths, "/gpuprof/gpuprofd.conf")
        helptext = subprocess.run([GPUPROFD, "--help"], capture_output=True, env=ENV).stdout.decode()
        expect("(default %s," % conf in helptext, "--help names %s: %s" % (conf, helptext))
        expect(conf.startswith("/"), "absolute: " + conf)
        installed(dest, paths, "/completions/gpuprofctl")
        installed(dest, paths, "/_gpuprofctl")

        # systemd-analyze verify runs man(1) on each Documentation= page
        units = tempfile.mkdtemp(prefix="gpd-units-")
        try:
            for u in ("gpuprofd.service", "gpuprofd.socket"):
                _, full = installed(dest, paths, "/" + u)
                with open(full) as f:
                    text = f.read()
                # verify checks that ExecStart= exists: the installed binary
                sbin, _ = installed(dest, paths, "/sbin/gpuprofd")
                text = text.replace("ExecStart=" + sbin, "ExecStart=" + dest + sbin)
                with open(os.path.join(units, u), "w") as f:
                    f.write(text)
                if u == "gpuprofd.service":
                    for page in ("gpuprofd(8)", "gpuprofd.conf(5)", "gpuprofctl(1)"):
                        expect("man:" + page in text, "the service names " + page)
            argv = ["systemd-analyze", "verify", os.path.join(units, "gpuprofd.socket"),
                    os.path.join(units, "gpuprofd.service")]
            empty = os.path.join(units, "noman")
            os.mkdir(empty)
            p = subprocess.run(argv, capture_output=True, env=dict(ENV, MANPATH=empty))
            out = (p.stdout + p.stderr).decode()
            expect("gpuprofd(8)" in out, "without the pages verify complains: %r" % out)
            p = subprocess.run(argv, capture_output=True, env=dict(ENV, MANPATH=mandir))
            out = (p.stdout + p.stderr).decode()
            eq(p.returncode, 0, "systemd-analyze verify: " + out)
            eq(out, "", "no message from systemd-analyze verify")
        finally:
            shutil.rmtree(units, ignore_errors=True)
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def scd(name):
    with open(os.path.join(MAN, name)) as f:
        return f.read()


def rendered(page):
    p = subprocess.run(["man", "-l", os.path.join(MAN, page)], capture_output=True,
                       env=dict(ENV, MANWIDTH="400"), check=True)
    return re.sub(r"\s+", " ", p.stdout.decode())


@test
def every_daemon_option_is_in_gpuprofd_8():
    need_man()
    helptext = subprocess.run([GPUPROFD, "--help"], capture_output=True, env=ENV).stdout.decode()
    opts = re.findall(r"^\s+(-\w), (--[a-z-]+)", helptext, re.M)
    expect(len(opts) >= 7, "options found in --help: %r" % opts)
    page = rendered("gpuprofd.8")
    for short, long in opts:
        expect("%s, %s" % (short, long) in page, "gpuprofd(8) documents %s, %s" % (short, long))
    for section in ("SYNOPSIS", "OPTIONS", "SIGNALS", "FILES", "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
        expect(section in page, "gpuprofd(8) has " + section)


@test
def every_command_and_option_is_in_gpuprofctl_1():
    need_man()
    src = scd("gpuprofctl.1.scd")
    page = rendered("gpuprofctl.1")
    desc = describe()
    for c in desc["commands"]:
        expect("\n## %s\n" % c["name"] in src, "a subsection for " + c["name"])
        for opt in set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", c["usage"])):
            expect(opt in page, "gpuprofctl(1) names %s of %s" % (opt, c["name"]))
    for opt in ("--socket", "--json", "--timeout", "--version"):
        expect(opt in page, "global option " + opt)
    for status in ("cannot connect to the daemon", "usage error", "local I/O error"):
        expect(status in page, "exit status: " + status)
    expect("__describe" not in page, "the build's hidden command stays out of the page")
    p = subprocess.run([GPUPROFCTL, "help"], capture_output=True, env=ENV)
    expect(b"__describe" not in p.stdout, "and out of the help")


def config_keys():
    """Every key daemon/config*.c parses."""
    keys = set()
    daemon = os.path.join(SOURCE, "daemon")
    for name in os.listdir(daemon):
        if not re.fullmatch(r"config.*\.c", name):
            continue
        with open(os.path.join(daemon, name)) as f:
            text = f.read()
        keys |= set(re.findall(r'strcmp\(key, "([a-z_][a-z0-9_.]*)"\)', text))
        keys |= set(re.findall(r'\{"([a-z_]+\.[a-z0-9_.]+)", ', text))
    return keys


@test
def every_config_key_is_in_operations_md_and_gpuprofd_conf_5():
    keys = config_keys()
    expect(len(keys) >= 50 and "socket" in keys and "limits.user_jobs" in keys
           and "xe.oa_period" in keys, "keys read from config.c: %r" % sorted(keys))
    with open(os.path.join(SOURCE, "docs", "operations.md")) as f:
        table = set(re.findall(r"^\| `([^`]+)` \|", f.read(), re.M))
    eq(sorted(keys - table), [], "config keys missing from docs/operations.md's table")
    eq(sorted(table - keys), [], "documented keys the daemon does not parse")
    need_man()
    page = rendered("gpuprofd.conf.5")
    for k in sorted(keys):
        expect(re.search(r"(^| )%s = " % re.escape(k), page), "gpuprofd.conf(5) documents " + k)


@test
def example_config_lists_every_key_and_loads():
    """systemd/gpuprofd.conf, the file installed to /etc: every key, and
    with every line uncommented the daemon takes it (the defaults shown
    are values it accepts)."""
    keys = config_keys()
    with open(os.path.join(SOURCE, "systemd", "gpuprofd.conf")) as f:
        text = f.read()
    shown = set(re.findall(r"^# ([a-z_][a-z0-9_.]*) = ", text, re.M))
    eq(sorted(keys - shown), [], "keys missing from systemd/gpuprofd.conf")
    eq(sorted(shown - keys), [], "keys in systemd/gpuprofd.conf the daemon does not parse")
    live = "\n".join(re.sub(r"\s+#.*$", "", l[2:]) for l in text.splitlines()
                     if re.match(r"# [a-z_][a-z0-9_.]* = ", l)
                     and not l.startswith(("# socket =", "# state_dir =")))
    d = Daemon(live + "\n").start()
    try:
        eq(d.ctl_json("status")["version"] != "", True, "the daemon runs on the example config")
    finally:
        d.cleanup()


@test
def every_library_function_is_in_libgpuprof_client_3():
    need_man()
    page = rendered("libgpuprof-client.3")
    inc = os.path.join(SOURCE, "include", "gpuprof")
    funcs = set()
    for name in os.listdir(inc):
        with open(os.path.join(inc, name)) as f:
            funcs |= set(re.findall(r"\b(gpuprof_\w+)\(", f.read()))
    expect(len(funcs) >= 20, "functions of the public headers: %r" % funcs)
    for fn in sorted(funcs):
        expect(page.count(fn) >= 2, "%s in the synopsis and described" % fn)


# --- bash completion ---------------------------------------------------------


def complete(words, cwd=None, env=None):
    """COMPREPLY of the generated completion for a command line whose last
    word is being completed."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); '
              'COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; _gpuprofctl; printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash", BASH] + list(words),
                       capture_output=True, cwd=cwd, env=env or ENV, timeout=30)
    eq(p.stderr.decode(), "", "completion of %r" % (words,))
    return sorted(w for w in p.stdout.decode().split("\n") if w)


@test
def bash_completion_offers_commands_options_and_values():
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", 'source "$1"; complete -p gpuprofctl',
                        "bash", BASH], capture_output=True, env=ENV)
    eq(p.returncode, 0, p.stderr.decode())
    expect(b"-F _gpuprofctl" in p.stdout and p.stdout.rstrip().endswith(b" gpuprofctl"),
           "complete -p: %r" % p.stdout)
    desc = describe()
    names = sorted({c["name"].split(" ")[0] for c in desc["commands"]})
    eq(complete(["gpuprofctl", ""]), names, "every command of the table")
    eq(complete(["gpuprofctl", "fl"]), ["flamegraph", "flamescope"], "by prefix")
    eq(complete(["gpuprofctl", "--json", "--socket", "/x", "ver"]), ["version"],
       "after global options and their values")
    eq(complete(["gpuprofctl", "help", "ex"]), ["export"], "help takes a command")
    capture = complete(["gpuprofctl", "capture", "--"])
    for opt in ("--pid", "--duration", "--last", "--name", "--no-wait", "--out", "--socket",
                "--json", "--timeout"):
        expect(opt in capture, "capture offers %s: %r" % (opt, capture))
    expect("--weight" not in capture, "not another command's options")
    eq(complete(["gpuprofctl", "folded", "3", "--weight", ""]),
       ["gpu-time", "launches", "samples", "stalls"], "the values the manual lists")
    eq(complete(["gpuprofctl", "export", "3", "--format", "p"]), ["pprof"], "export's formats")
    expect("resume" in complete(["gpuprofctl", "xe", ""]), "xe's sub-commands")
    expect("critical-path" in complete(["gpuprofctl", "analyze", ""]), "analyses by name")
    expect("--svg" in complete(["gpuprofctl", "analyze", "comm", "--"]), "analyze comm's options")
    expect("--svg" not in complete(["gpuprofctl", "analyze", "idle", "--"]), "only there")
    eq(complete(["gpuprofctl", "capture", "--pid", ""]), [], "no options as an option's value")
    tmp = tempfile.mkdtemp(prefix="gpd-comp-")
    try:
        open(os.path.join(tmp, "stacks.folded"), "w").close()
        eq(complete(["gpuprofctl", "capture", "--pid", "1", "--last", "5s", "--out", "st"], cwd=tmp),
           ["stacks.folded"], "files after --out")
        eq(complete(["gpuprofctl", "import", "st"], cwd=tmp), ["stacks.folded"], "import takes files")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
def bash_completion_options_are_accepted_by_the_parser():
    # what the completion offers comes from the manuals: each must be an
    # option the command's parser knows
    names = [c["name"].split(" ") for c in describe()["commands"]]
    eq(len(names), len(complete(["gpuprofctl", ""])) + 1, "one two-word command, analyze comm")
    for name in names:
        opts = complete(["gpuprofctl"] + name + ["--"])
        expect(len(opts) >= 4, "%s: at least the global options" % name)
        for opt in opts:
            argv = [GPUPROFCTL, "--socket", "/nonexistent/s"] + name + [opt, "1", "1"]
            p = subprocess.run(argv, capture_output=True, env=ENV, timeout=30)
            err = p.stderr.decode()
            expect("unrecognized option" not in err, "%s %s: %s" % (name, opt, err))


@test
def completion_lists_capture_ids_from_the_daemon():
    d = Daemon("sampling.cpu = false\n").start()
    try:
        cid = str(d.ctl_json("import", TRACE)["id"])
        got = complete(["gpuprofctl", "--socket", d.sock, "info", ""])
        eq(got, [cid], "capture ids from gpuprofctl --json list")
        got = complete(["gpuprofctl", "--socket=" + d.sock, "folded", ""])
        eq(got, [cid], "with --socket=PATH too")
        # no daemon: nothing, quickly
        t0 = time.time()
        eq(complete(["gpuprofctl", "--socket", "/nonexistent/s", "info", ""]), [], "no daemon")
        expect(time.time() - t0 < 10, "no long wait without a daemon")
    finally:
        d.cleanup()


@test
def zsh_completion_parses():
    if not shutil.which("zsh"):
        raise Skip("zsh not installed")
    p = subprocess.run(["zsh", "-n", ZSH], capture_output=True)
    eq(p.returncode, 0, "zsh -n: %s" % p.stderr.decode())
    with open(ZSH) as f:
        text = f.read()
    expect(text.startswith("#compdef gpuprofctl"), "a #compdef file")
    for c in describe()["commands"]:
        expect("'%s:" % c["name"].split(" ")[0] in text, "zsh lists " + c["name"])


# --- the default config path ---------------------------------------------------


@test
def a_config_in_the_working_directory_is_not_read():
    # The default path is absolute: a root daemon started in a directory
    # holding etc/gpuprof/gpuprofd.conf must not read it. This one would stop
    # the daemon at start (bad value) if it were read.
    tmp = tempfile.mkdtemp(prefix="gpd-cwd-")
    os.chmod(tmp, 0o755)
    proc = None
    try:
        os.makedirs(os.path.join(tmp, "etc", "gpuprof"))
        with open(os.path.join(tmp, "etc", "gpuprof", "gpuprofd.conf"), "w") as f:
            f.write("limits.max_clients = lots\n")
        sock = os.path.join(tmp, "gpuprofd.sock")
        env = dict(ENV)
        env.pop("NOTIFY_SOCKET", None)
        env.pop("LISTEN_FDS", None)
        log = open(os.path.join(tmp, "log"), "wb")
        proc = subprocess.Popen([GPUPROFD, "--foreground", "--socket", sock, "--state-dir",
                                 os.path.join(tmp, "state")], cwd=tmp, stdout=log, stderr=log,
                                env=env)
        deadline = time.time() + 20
        answered = False
        while time.time() < deadline and proc.poll() is None:
            try:
                with Conn(sock) as c:
                    answered = "result" in c.call("version")
                    break
            except OSError:
                time.sleep(0.05)
        with open(os.path.join(tmp, "log")) as f:
            text = f.read()
        expect(answered, "the daemon started and answered (exit %r): %s" % (proc.poll(), text))
        expect("lots" not in text and "gpuprofd.conf" not in text,
               "the relative file was not read: " + text)
        proc.terminate()
        eq(proc.wait(30), 0, "clean stop")
        log.close()
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
