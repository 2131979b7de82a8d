#!/usr/bin/python3.11
"""Checks that `make deps` installs every Debian package that a build and test run uses.

    tools/depcheck.py record TRACE -- COMMAND [ARG ...]
        Runs COMMAND and writes to TRACE every file under /usr that it, or any process it
        starts, opens or executes. Needs root: COMMAND runs in a private mount namespace whose
        own bind mount of /usr is watched with fanotify, so nothing else on the machine is
        recorded and COMMAND runs at full speed, untraced (LeakSanitizer, which refuses to run
        under ptrace, keeps working). Exits with COMMAND's exit status.

    tools/depcheck.py check TRACE [--packages FILE] [--without PKG ...]
        Maps each file of TRACE to the Debian package that installed it (dpkg's own file lists,
        as `dpkg -S` reads them) and fails (exit 1) when that package is neither in FILE
        (default: tools/debian-packages.txt, the list `make deps` installs) nor pulled in by it
        through Depends/Pre-Depends, nor part of every Debian system (Essential or Priority
        required). A module's byte-code cache counts as its source. A file that no package
        installed fails too, unless the machine image provides it (ENVIRONMENT). Files that
        tools open only because they are installed (INCIDENTAL) are not dependencies. --without
        drops packages from the list, to see what would break without them.

`.ci/run` records `make test run` and checks the trace; tests/tools/depcheck_test.cpp tests both.
"""
import argparse
import ctypes
import fnmatch
import glob
import os
import pathlib
import re
import resource
import select
import signal
import struct
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_PACKAGES = HERE / "debian-packages.txt"
WATCHED = "/usr"
NS_MARKER = "AOTRACE_DEPCHECK_IN_NAMESPACE"

# Files a run opens because they are installed, not because it needs them: each tool below reads
# every file of its kind that it finds, so these name whatever else is on the machine. Anything
# such a file leads to that the run does need (a library, a header, a module) is checked itself.
INCIDENTAL = {
    "/usr/lib/python3/dist-packages/*.pth": "site.py runs every .pth file at each Python start",
    "/usr/local/lib/python3*/dist-packages/*.pth": "site.py runs every .pth file at each Python start",
    "/usr/lib/python3/dist-packages/*.egg-info/*":
        "importlib.metadata and pkg_resources read every installed distribution's metadata",
    "/usr/lib/python3/dist-packages/*.dist-info/*":
        "importlib.metadata and pkg_resources read every installed distribution's metadata",
    "/usr/lib/python3/dist-packages/_distutils_hack/*":
        "setuptools' .pth imports it at each Python start, where setuptools is installed",
    "/usr/lib/python3/dist-packages/setuptools/*":
        "where installed, it takes over `import distutils`, which CMake's FindPython tries "
        "before falling back to sysconfig",
    "*/pkgconfig/*.pc": "pkg-config reads every .pc file when asked for a package that is not "
                        "installed (LLVM's CMake package asks for libcurl)",
    "/usr/lib32/ld-linux.so.2": "ldd tries every loader it knows (RTLDLIST) on each library",
    "/usr/libx32/ld-linux-x32.so.2": "ldd tries every loader it knows (RTLDLIST) on each library",
}
# binutils (ar, nm, ld.bfd) load every linker plugin in this folder, with the libraries it links
# (LLVMgold-14.so pulls in libLLVM-14); the trace has the symlinks' targets.
PLUGIN_DIRS = ["/usr/lib/bfd-plugins"]
# What the machine image provides outside Debian's packages, and why it is allowed.
ENVIRONMENT = {
    "/usr/local/cuda*": "the CUDA toolkit of the machine image (DESIGN §9); not a Debian package",
}
# dpkg lists the pre-merged-/usr paths of some packages (/lib/x86_64-linux-gnu/libc.so.6);
# on Debian 12 these directories are symlinks into /usr.
MERGED_USR = ("/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/libx32/")


def fail_usage(message):
    print(f"depcheck: error: {message}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------------------------------------
# record

FAN_CLOEXEC, FAN_NONBLOCK, FAN_UNLIMITED_QUEUE = 0x1, 0x2, 0x10
FAN_MARK_ADD, FAN_MARK_MOUNT = 0x1, 0x10
FAN_OPEN, FAN_OPEN_EXEC, FAN_Q_OVERFLOW = 0x20, 0x1000, 0x4000
EVENT = struct.Struct("=IBBHQii")  # struct fanotify_event_metadata


def watch_mount(path):
    """A non-blocking fanotify descriptor reporting every open and exec on the mount at path."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int,
                                   ctypes.c_char_p]
    fd = libc.fanotify_init(FAN_CLOEXEC | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE,
                            os.O_RDONLY | os.O_LARGEFILE)
    if fd < 0:
        fail_usage(f"fanotify_init: {os.strerror(ctypes.get_errno())} (needs root and a kernel "
                   "with fanotify)")
    if libc.fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN | FAN_OPEN_EXEC, -100,
                          path.encode()) != 0:
        fail_usage(f"fanotify_mark {path}: {os.strerror(ctypes.get_errno())}")
    return fd


class Recorder:
    """Collects the paths (and the first process name) of the events on a fanotify descriptor."""

    def __init__(self, fd):
        self.fd, self.opened, self.comm, self.overflow = fd, {}, {}, False

    def process_name(self, pid):
        """The process's command line, as far as it can still be read (it may have exited)."""
        if pid not in self.comm:
            try:
                argv = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                text = " ".join(" ".join(a.decode(errors="replace").split()) for a in argv if a)
                self.comm[pid] = (text[:117] + "...") if len(text) > 120 else text or "?"
            except OSError:
                self.comm[pid] = "?"
        return self.comm[pid]

    def drain(self):
        while True:
            try:
                buf = os.read(self.fd, 16384)
            except BlockingIOError:
                return
            for off in range(0, len(buf), EVENT.size):
                _, _, _, _, mask, efd, pid = EVENT.unpack_from(buf, off)
                if mask & FAN_Q_OVERFLOW:
                    self.overflow = True
                if efd < 0:
                    continue
                try:
                    path = os.readlink(f"/proc/self/fd/{efd}").removesuffix(" (deleted)")
                finally:
                    os.close(efd)
                if pid != os.getpid() and path not in self.opened:
                    self.opened[path] = self.process_name(pid)


def record(trace, command):
    if os.geteuid() != 0:
        fail_usage("record needs root (fanotify and a private mount namespace); run it as root "
                   "or with sudo")
    if os.environ.get(NS_MARKER) != "1":
        # Into a mount namespace of our own, where /usr is bound onto itself: that new mount is
        # seen only by the processes of this namespace, so its events are COMMAND's alone.
        env = dict(os.environ, **{NS_MARKER: "1"})
        args = ["unshare", "--mount", "--propagation", "private", "--", sys.executable,
                __file__, "record", trace, "--", *command]
        os.execvpe("unshare", args, env)
    subprocess.run(["mount", "--bind", WATCHED, WATCHED], check=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    recorder = Recorder(watch_mount(WATCHED))
    env = {k: v for k, v in os.environ.items() if k != NS_MARKER}
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as e:
        fail_usage(f"cannot run {command[0]}: {e.strerror}")
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda s, _: child.send_signal(s))
    while child.poll() is None:
        select.select([recorder.fd], [], [], 0.2)
        recorder.drain()
    recorder.drain()  # an open is queued before it returns, so all of COMMAND's are here now
    lines = [f"# depcheck trace of: {' '.join(command)}",
             "# path<TAB>a process that opened it (its command line when the event was read)"]
    lines += [f"{p}\t{c}" for p, c in sorted(recorder.opened.items())]
    pathlib.Path(trace).write_text("\n".join(lines) + "\n")
    print(f"depcheck: {len(recorder.opened)} files under {WATCHED} opened; trace in {trace}",
          file=sys.stderr)
    if recorder.overflow:
        print("depcheck: error: fanotify's queue overflowed; the trace is incomplete",
              file=sys.stderr)
        return child.returncode or 1
    return child.returncode


# ---------------------------------------------------------------------------------------------
# check

def read_trace(trace):
    opened = {}
    for number, line in enumerate(pathlib.Path(trace).read_text().splitlines(), 1):
        if line and not line.startswith("#"):
            path, _, comm = line.partition("\t")
            if not path.startswith("/"):
                fail_usage(f"{trace}:{number}: not a trace line (PATH<TAB>COMMAND): {line[:80]}")
            opened[path] = comm or "?"
    return opened


def read_package_list(path):
    names = []
    for line in pathlib.Path(path).read_text().splitlines():
        names += line.split("#", 1)[0].split()
    return names


def installed_packages(status="/var/lib/dpkg/status"):
    """name -> fields of each installed package; virtual name -> packages that provide it."""
    packages, provides = {}, {}
    for stanza in pathlib.Path(status).read_text().split("\n\n"):
        fields, key = {}, None
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") and key:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if not fields.get("Status", "").endswith(" installed"):
            continue
        name = fields["Package"]
        packages[name] = fields
        for virtual in split_relations(fields.get("Provides", "")):
            for alt in virtual:
                provides.setdefault(alt, []).append(name)
    return packages, provides


def split_relations(text):
    """'a (>= 1) | b:any, c' -> [['a', 'b'], ['c']]"""
    groups = []
    for group in filter(None, (g.strip() for g in text.split(","))):
        groups.append([re.split(r"[\s(:\[]", alt.strip(), maxsplit=1)[0]
                       for alt in group.split("|")])
    return groups


def closure(roots, packages, provides):
    """The installed packages that roots pull in through Depends and Pre-Depends, with apt's
    choice among alternatives: the first one that is installed."""
    def resolve(name):
        if name in packages:
            return [name]
        return provides.get(name, [])

    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        for real in resolve(name):
            if real in seen:
                continue
            seen.add(real)
            fields = packages[real]
            for group in split_relations(fields.get("Pre-Depends", "")) + \
                    split_relations(fields.get("Depends", "")):
                chosen = next((r for alt in group for r in resolve(alt)), None)
                if chosen:
                    todo.append(chosen)
    return seen


def base_system(packages):
    return [n for n, f in packages.items()
            if f.get("Essential") == "yes" or f.get("Priority") == "required"]


def owners_of(paths, info_dir="/var/lib/dpkg/info"):
    """path -> set of packages whose dpkg file list holds it (merged /usr and diversions)."""
    wanted, owners = set(paths), {}
    for listing in glob.glob(os.path.join(info_dir, "*.list")):
        package = os.path.basename(listing)[:-len(".list")].split(":")[0]
        with open(listing, encoding="utf-8", errors="replace") as f:
            for line in f:
                path = line.rstrip("\n")
                if path.startswith(MERGED_USR):
                    path = "/usr" + path
                if path in wanted:
                    owners.setdefault(path, set()).add(package)
    # A diverted file lives at its new name, still installed by the package that ships it.
    diversions = pathlib.Path("/var/lib/dpkg/diversions")
    if diversions.exists():
        lines = diversions.read_text().splitlines()
        for original, moved, by in zip(lines[0::3], lines[1::3], lines[2::3]):
            moved = "/usr" + moved if moved.startswith(MERGED_USR) else moved
            if moved in wanted:
                shipped_by = owners_of_one(original) - {by}
                owners.setdefault(moved, set()).update(shipped_by)
    return owners


def owners_of_one(path):
    result = subprocess.run(["dpkg-query", "-S", path], capture_output=True, text=True)
    return {line.split(":")[0] for line in result.stdout.splitlines() if ": " in line}


def incidental(path, plugins):
    return path in plugins or any(fnmatch.fnmatch(path, p) for p in INCIDENTAL)


def plugin_targets():
    plugins = {os.path.realpath(os.path.join(d, f)) for d in PLUGIN_DIRS if os.path.isdir(d)
               for f in os.listdir(d)}
    libraries = set()
    for plugin in plugins:
        ldd = subprocess.run(["ldd", plugin], capture_output=True, text=True).stdout
        libraries |= {os.path.realpath(m) for m in re.findall(r"=> (/\S+)", ldd)}
    return plugins | libraries


def from_environment(path):
    return any(fnmatch.fnmatch(path, p) or fnmatch.fnmatch(path, p + "/*") for p in ENVIRONMENT)


PYC = re.compile(r"(.*)/__pycache__/([^/.]+)\.[^/]*\.pyc")


def source_of(path):
    """A module's byte-code cache stands for its source: dir/__pycache__/m.cpython-311.pyc is
    dir/m.py, which a package installed; the cache was written later, by Python. None for a
    cache whose source is gone (generated, stale)."""
    m = PYC.fullmatch(path)
    if not m:
        return path
    source = f"{m.group(1)}/{m.group(2)}.py"
    return source if os.path.exists(source) else None


def check(trace, package_file, without):
    opened = read_trace(trace)
    listed = read_package_list(package_file)
    packages, provides = installed_packages()
    not_installed = [p for p in listed if p not in packages and p not in provides]
    roots = [p for p in listed if p not in without]
    allowed = closure(roots + base_system(packages), packages, provides)
    plugins = plugin_targets()
    needed = {}  # the file whose package counts -> (the path opened, who opened it)
    for path, comm in sorted(opened.items()):
        looked_up = source_of(path)
        if looked_up and not incidental(looked_up, plugins) and not from_environment(looked_up):
            needed.setdefault(looked_up, (path, comm))
    owners = owners_of(needed)

    missing, unowned = {}, []
    for looked_up, (path, comm) in needed.items():
        found = owners.get(looked_up)
        if found is None:
            unowned.append((path, comm))
        elif not found & allowed:
            missing.setdefault(" or ".join(sorted(found)), []).append((path, comm))

    if not_installed:
        print("depcheck: warning: listed but not installed here (run `make deps`): " +
              " ".join(not_installed), file=sys.stderr)
    if not missing and not unowned:
        print(f"depcheck: ok: the run opened {len(opened)} files under /usr; the {len(needed)} "
              f"it needs come from {len({p for o in owners.values() for p in o})} packages, all "
              f"installed by `make deps` ({len(roots)} listed in {package_file}, "
              f"{len(allowed)} with their dependencies and the base system)")
        return 0
    if missing:
        print(f"depcheck: error: the run opened files of {len(missing)} Debian package(s) that "
              f"`make deps` does not install (not in {package_file}, nor pulled in by it):")
        for package, files in sorted(missing.items()):
            print(f"  {package}: {len(files)} file(s), e.g.")
            for path, comm in files[:3]:
                print(f"    {path}  (opened by {comm})")
        names = " ".join(sorted(missing))
        print(f"  hint: add {names} to {package_file}, so that `make deps` installs it on a "
              "fresh machine")
    if unowned:
        print(f"depcheck: error: the run opened {len(unowned)} file(s) under /usr that no Debian "
              "package installed (copied or built by hand?); a fresh machine will not have them:")
        for path, comm in unowned[:20]:
            print(f"    {path}  (opened by {comm})")
        print("  hint: install them from a Debian package listed in tools/debian-packages.txt; "
              "if the machine image provides them, add them to ENVIRONMENT in tools/depcheck.py "
              "with the reason")
    return 1


def main(argv):
    parser = argparse.ArgumentParser(prog="depcheck", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    rec = sub.add_parser("record", help="run COMMAND and write the files under /usr it opens")
    rec.add_argument("trace")
    rec.add_argument("command", nargs=argparse.REMAINDER)
    chk = sub.add_parser("check", help="fail when a traced file's package is not in make deps")
    chk.add_argument("trace")
    chk.add_argument("--packages", default=str(DEFAULT_PACKAGES))
    chk.add_argument("--without", action="append", default=[], metavar="PKG")
    args = parser.parse_args(argv)
    if args.verb == "record":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not command:
            fail_usage("record TRACE -- COMMAND: no COMMAND given")
        return record(args.trace, command)
    for path in (args.trace, args.packages):
        if not os.path.isfile(path):
            fail_usage(f"{path}: no such file")
    return check(args.trace, args.packages, set(args.without))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
