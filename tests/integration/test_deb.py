#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Debian packages (debian/): built with dpkg-buildpackage from a copy of
the source tree, checked with lintian, their files, conffile, maintainer
scripts and the sysusers entry inspected, then really installed on this
machine, used, removed and purged, leaving the machine as it was.

Installing for real is what shows that the maintainer scripts work on a
machine without systemd as PID 1 (this one) and what creates the unit
links. It is done only as root, only when none of the packages is installed
already, and everything it adds is purged afterwards (the group gpuprof too,
when the install created it)."""

import fcntl
import grp
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from gpd import SOURCE, Skip, eq, expect, main, test

PACKAGES = ["gpuprofd", "gpuprofctl", "libgpuprof-client0", "libgpuprof-client-dev",
            "python3-gpuprof"]
MULTIARCH = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True,
                           text=True).stdout.strip() if shutil.which("dpkg-architecture") else ""
EXPECTED = {
    "gpuprofd": ["/usr/sbin/gpuprofd", "/lib/systemd/system/gpuprofd.service",
                 "/lib/systemd/system/gpuprofd.socket", "/usr/lib/sysusers.d/gpuprof.conf",
                 "/etc/gpuprof/gpuprofd.conf", "/usr/share/man/man8/gpuprofd.8.gz",
                 "/usr/share/man/man5/gpuprofd.conf.5.gz"],
    "gpuprofctl": ["/usr/bin/gpuprofctl", "/usr/share/man/man1/gpuprofctl.1.gz",
                   "/usr/share/bash-completion/completions/gpuprofctl",
                   "/usr/share/zsh/vendor-completions/_gpuprofctl"],
    "libgpuprof-client0": ["/usr/lib/%s/libgpuprof-client.so.0" % MULTIARCH,
                           "/usr/lib/%s/libgpuprof-client.so.0.1.0" % MULTIARCH],
    "libgpuprof-client-dev": ["/usr/include/gpuprof/client.h", "/usr/include/gpuprof/protocol.h",
                              "/usr/lib/%s/libgpuprof-client.so" % MULTIARCH,
                              "/usr/lib/%s/pkgconfig/gpuprof-client.pc" % MULTIARCH,
                              "/usr/share/man/man3/libgpuprof-client.3.gz"],
    "python3-gpuprof": ["/usr/lib/python3/dist-packages/gpuprof/%s.py" % m
                        for m in ("__init__", "_lib", "client", "frames", "hta")],
}
BUILD_PARENT = os.path.join(tempfile.gettempdir(), "gpuprof-deb-build")
WANTS = {"/etc/systemd/system/multi-user.target.wants/gpuprofd.service":
         "/lib/systemd/system/gpuprofd.service",
         "/etc/systemd/system/sockets.target.wants/gpuprofd.socket":
         "/lib/systemd/system/gpuprofd.socket"}
# lintian tags we accept, and why (docs/operations.md, "Debian packages").
LINTIAN_ACCEPTED = {
    # a daemon for systemd (sd_notify, socket activation); no init.d script
    "package-supports-alternative-init-but-no-init.d-script",
    # the library calls none of the functions _FORTIFY_SOURCE replaces
    "hardening-no-fortify-functions",
}


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def copy_source(dst):
    """The files git knows of (tracked, or new and not ignored), else the
    tree without build directories."""
    ls = run(["git", "-C", SOURCE, "ls-files", "-co", "--exclude-standard", "-z"])
    if ls.returncode == 0 and ls.stdout:
        for rel in ls.stdout.split("\0"):
            src = os.path.join(SOURCE, rel)
            if rel and os.path.lexists(src) and not os.path.isdir(src):
                os.makedirs(os.path.join(dst, os.path.dirname(rel)), exist_ok=True)
                shutil.copy2(src, os.path.join(dst, rel), follow_symlinks=False)
    else:
        shutil.copytree(SOURCE, dst, symlinks=True, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("build*", "obj-*", ".git"))


def build(tmp):
    src = os.path.join(tmp, "gpuprof-0.1.0")
    copy_source(src)
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "DESTDIR", "LD_PRELOAD", "ASAN_OPTIONS",
                        "UBSAN_OPTIONS")}
    env["DEB_BUILD_OPTIONS"] = "nocheck parallel=%d" % (os.cpu_count() or 2)
    # debhelper 13 gives the build a HOME of its own, where ccache would
    # start an empty cache every time: name the user's.
    if shutil.which("ccache") and "CCACHE_DIR" not in env:
        p = run(["ccache", "-k", "cache_dir"])
        if p.returncode == 0 and p.stdout.strip():
            env["CCACHE_DIR"] = p.stdout.strip()
    t0 = time.time()
    p = run(["dpkg-buildpackage", "-b", "-us", "-uc"], cwd=src, env=env, timeout=1500)
    secs = time.time() - t0
    print("dpkg-buildpackage -b -us -uc (nocheck): %.0f s" % secs, flush=True)
    eq(p.returncode, 0, "dpkg-buildpackage:\n" + p.stdout[-4000:] + p.stderr[-4000:])
    debs = {}
    for f in os.listdir(tmp):
        m = re.match(r"([a-z0-9.+-]+)_0\.1\.0_(amd64|arm64|all|[a-z0-9]+)\.deb$", f)
        if m:
            debs[m.group(1)] = os.path.join(tmp, f)
    for pkg in PACKAGES:
        expect(pkg in debs, "%s built: %r" % (pkg, sorted(debs)))
    return src, debs


def deb_files(deb):
    p = run(["dpkg-deb", "-c", deb])
    eq(p.returncode, 0, "dpkg-deb -c %s: %s" % (deb, p.stderr))
    listing = p.stdout
    return {line.split(None, 5)[5].split(" -> ")[0].lstrip(".") for line in listing.splitlines()}


def control_file(deb, name, tmp):
    d = tempfile.mkdtemp(dir=tmp)
    run(["dpkg-deb", "-e", deb, d])
    path = os.path.join(d, name)
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        return f.read()


def check_contents(debs, tmp):
    for pkg, files in EXPECTED.items():
        have = deb_files(debs[pkg])
        for f in files:
            expect(f in have, "%s ships %s" % (pkg, f))
    eq(control_file(debs["gpuprofd"], "conffiles", tmp).split(), ["/etc/gpuprof/gpuprofd.conf"],
       "the config is gpuprofd's only conffile")
    post = control_file(debs["gpuprofd"], "postinst", tmp)
    i = post.find("systemd-sysusers")
    j = post.find("deb-systemd-invoke")
    expect(i >= 0 and "gpuprof.conf" in post[i:i + 80], "postinst runs systemd-sysusers gpuprof.conf")
    expect(0 <= i < j, "the group exists before the socket can start")
    for unit in ("gpuprofd.service", "gpuprofd.socket"):
        expect("deb-systemd-helper enable '%s'" % unit in post, "postinst enables " + unit)
    ctl = control_file(debs["gpuprofd"], "control", tmp)
    expect("systemd-sysusers" in ctl, "gpuprofd depends on a systemd-sysusers: " + ctl)
    py = control_file(debs["python3-gpuprof"], "control", tmp)
    expect(re.search(r"Depends:.*libgpuprof-client0", py), "python3-gpuprof needs the library")
    # the sysusers entry, applied to an empty root, creates the group
    root = tempfile.mkdtemp(dir=tmp)
    os.makedirs(os.path.join(root, "etc"))
    x = tempfile.mkdtemp(dir=tmp)
    run(["dpkg-deb", "-x", debs["gpuprofd"], x])
    p = run(["systemd-sysusers", "--root=" + root,
             os.path.join(x, "usr/lib/sysusers.d/gpuprof.conf")])
    eq(p.returncode, 0, "systemd-sysusers --root: " + p.stderr)
    with open(os.path.join(root, "etc", "group")) as f:
        expect(re.search(r"^gpuprof:x:\d+:", f.read(), re.M), "group gpuprof created by sysusers")
    # the daemon's default config is /etc's, not the build's prefix
    p = run([os.path.join(x, "usr/sbin/gpuprofd"), "--help"])
    expect("/etc/gpuprof/gpuprofd.conf" in p.stdout + p.stderr,
           "default config /etc/gpuprof/gpuprofd.conf:\n" + p.stdout)


def check_lintian(tmp):
    changes = [f for f in os.listdir(tmp) if f.endswith(".changes")]
    eq(len(changes), 1, "one .changes: %r" % changes)
    p = run(["lintian", "--pedantic", "--display-info", os.path.join(tmp, changes[0])],
            timeout=600)
    tags = [line for line in p.stdout.splitlines() if re.match(r"[EWIPX]: ", line)]
    print("lintian: %d tags" % len(tags) + "".join("\n  " + t for t in tags), flush=True)
    for t in tags:
        kind, tag = t[0], t.split(": ", 2)[2].split()[0]
        expect(kind not in "EW" or tag in LINTIAN_ACCEPTED, "lintian: " + t)
    # 0: it ran and found no error (an error tag fails it with 2)
    eq(p.returncode, 0, "lintian's exit status: " + p.stderr)


def dpkg(*args):
    """dpkg, waiting for its lock while another apt or dpkg holds it."""
    deadline = time.time() + 600
    while True:
        p = run(["dpkg"] + list(args), timeout=600)
        if p.returncode == 0 or "lock" not in p.stderr or time.time() > deadline:
            return p
        time.sleep(3)


def installed(pkg):
    p = run(["dpkg-query", "-W", "-f=${Status}", pkg])
    return p.stdout if p.returncode == 0 and "not-installed" not in p.stdout else ""


def group_exists():
    try:
        grp.getgrnam("gpuprof")
        return True
    except KeyError:
        return False


def install_use_purge(debs, tmp):
    had_group = group_exists()
    try:
        p = dpkg("-i", *[debs[k] for k in PACKAGES])
        eq(p.returncode, 0, "dpkg -i:\n" + p.stdout + p.stderr)
        for pkg in PACKAGES:
            eq(installed(pkg), "install ok installed", pkg)
        for pkg, files in EXPECTED.items():
            for f in files:
                expect(os.path.lexists(f), "%s installed %s" % (pkg, f))
        expect(group_exists(), "group gpuprof exists after the install")
        for link, target in WANTS.items():
            expect(os.path.islink(link) and os.readlink(link) == target,
                   "%s -> %s" % (link, target))
        if os.path.isdir("/run/systemd/system"):
            p = run(["systemctl", "is-active", "gpuprofd.socket"])
            eq(p.stdout.strip(), "active", "systemd started the socket")
        # the installed pieces work together: the packaged daemon on a
        # private socket, asked by the packaged CLI and Python module
        sock = os.path.join(tmp, "s.sock")
        d = subprocess.Popen(["/usr/sbin/gpuprofd", "--foreground", "--socket", sock,
                              "--state-dir", os.path.join(tmp, "state")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(200):
                if os.path.exists(sock):
                    break
                time.sleep(0.05)
            p = run(["/usr/bin/gpuprofctl", "--socket", sock, "version"])
            eq(p.returncode, 0, "installed gpuprofctl: " + p.stderr)
            env = {k: v for k, v in os.environ.items()
                   if k not in ("PYTHONPATH", "GPUPROF_CLIENT_LIB", "LD_PRELOAD")}
            p = run(["/usr/bin/python3", "-c",
                     "import sys, gpuprof; c = gpuprof.Client(sys.argv[1]); "
                     "print(gpuprof.__file__, c.status()['pid'])", sock], env=env, cwd="/")
            eq(p.returncode, 0, "installed module: " + p.stderr)
            expect(p.stdout.startswith("/usr/lib/python3/dist-packages/gpuprof/") and
                   p.stdout.split()[1] == str(d.pid), p.stdout)
        finally:
            d.send_signal(signal.SIGTERM)
            d.wait(30)
        # remove keeps the edited conffile, purge takes it and the links
        with open("/etc/gpuprof/gpuprofd.conf", "a") as f:
            f.write("# edited by test_deb\n")
        p = dpkg("-r", *PACKAGES)
        eq(p.returncode, 0, "dpkg -r:\n" + p.stdout + p.stderr)
        eq(installed("gpuprofd"), "deinstall ok config-files", "removed, config kept")
        with open("/etc/gpuprof/gpuprofd.conf") as f:
            expect("edited by test_deb" in f.read(), "the edited conffile stays on remove")
        expect(not os.path.exists("/usr/sbin/gpuprofd"), "the daemon is gone")
    finally:
        p = dpkg("-P", *PACKAGES)
        purge_rc = p.returncode
        if not had_group and group_exists():
            run(["groupdel", "gpuprof"])
    eq(purge_rc, 0, "dpkg -P:\n" + p.stdout + p.stderr)
    for pkg in PACKAGES:
        eq(installed(pkg), "", pkg + " purged")
    expect(not os.path.exists("/etc/gpuprof"), "/etc/gpuprof purged")
    for link in WANTS:
        expect(not os.path.lexists(link), link + " removed")
    for files in EXPECTED.values():
        for f in files:
            expect(not os.path.lexists(f), f + " removed")
    eq(group_exists(), had_group, "the group as it was before")


@test
def packages_build_lint_install_and_purge():
    for tool in ("dpkg-buildpackage", "dh", "lintian", "systemd-sysusers"):
        if not shutil.which(tool):
            raise Skip("%s is not installed (scripts/deps.sh installs it)" % tool)
    # Always the same directory: the compiler flags carry the source path
    # (dpkg-buildflags' -ffile-prefix-map), so only a fixed path lets ccache
    # (meson uses it when found) reuse the last build's objects. One run at
    # a time holds it; it is removed at the end.
    os.makedirs(BUILD_PARENT, exist_ok=True)
    lock = open(os.path.join(BUILD_PARENT, "lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    tmp = os.path.join(BUILD_PARENT, "work")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        src, debs = build(tmp)
        check_contents(debs, tmp)
        check_lintian(tmp)
        if os.geteuid() != 0:
            raise Skip("installing the packages needs root")
        busy = [p for p in PACKAGES if installed(p)]
        if busy:
            raise Skip("already installed here, not touched: %s" % " ".join(busy))
        install_use_purge(debs, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        lock.close()
        try:
            os.unlink(os.path.join(BUILD_PARENT, "lock"))
            os.rmdir(BUILD_PARENT)
        except OSError:
            pass  # another run waits on it, or holds it now


if __name__ == "__main__":
    main()
