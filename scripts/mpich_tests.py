#!/usr/bin/env python3
"""Run MPICH's test suite (test/mpi, configured and built by scripts/mpich-tests.sh).

  mpich_tests.py run --build DIR --src DIR --mpi NAME --out DIR --dirs "pt2pt ..." -- LAUNCHER...
  mpich_tests.py table OUT [MPI...]

`run` reads each directory's `testlist` the way MPICH's runtests does (comments, `!dir:target`
prerequisites, `prog np key=value...` with arg=, env=, timeLimit=, resultTest=, strict=, xfail=,
mem=, a subdirectory entry naming another testlist), builds the directory's programs with its
Makefile (`make -k`), and runs each entry as `LAUNCHER... TIMEOUT NP ./prog args` in the
program's build directory. The verdict follows runtests' default check (TestNormal): exit status
0, a line " No Errors" and no other output but lines runtests tolerates; the other resultTest
kinds as runtests defines them. As with `runtests -strict` (what MPICH's configure
--enable-strictmpi passes), entries marked strict=false are skipped, like xfail= entries and
mem= above 4 GB. A program that does not build fails its entries.

Per entry: OUT/MPI/DIR/NNN-prog.log (command, environment, output, status, verdict); per run:
OUT/MPI/results.tsv. `table` prints the per-directory counts (and, given several MPIs, the
passes side by side).
"""
import os
import re
import shlex
import subprocess
import sys
import time

MEMORY_TOTAL_GB = 4.0  # runtests' default memory_total
TIMEOUT_RC = 124  # timeout(1) and our mpirun --timeout
VERDICTS = ("pass", "fail", "timeout", "nobuild", "skip")


def read_testlist(builddir, srcdir, rel, entries, prereqs):
    """Append (dir, prog, np, opts) for every entry of rel/testlist (recursing into subdirs)."""
    path = os.path.join(builddir, rel, "testlist")
    if not (os.path.exists(path) and os.path.getsize(path) > 0):  # generated, or static
        path = os.path.join(srcdir, rel, "testlist")
    if not os.path.exists(path):
        return
    with open(path) as f:
        for line in f:
            line = re.sub(r"#.*", "", line).strip()
            if not line:
                continue
            m = re.match(r"!([^:]*):(.*)", line)
            if m:
                prereqs.append((os.path.join(rel, m.group(1)), m.group(2).strip()))
                continue
            args = line.split()
            prog = args[0]
            if os.path.isdir(os.path.join(builddir, rel, prog)) and "=" not in prog:
                read_testlist(builddir, srcdir, os.path.join(rel, prog), entries, prereqs)
                continue
            np_ = int(args[1]) if len(args) > 1 and args[1].isdigit() else 2
            opts = {"arg": [], "env": []}
            for kv in args[2:]:
                if "=" not in kv:
                    continue
                k, v = kv.split("=", 1)
                if k in ("arg", "env", "mpiexecarg"):
                    opts.setdefault(k, []).append(v)
                else:
                    opts[k] = v
            d = rel
            if "/" in prog:
                sub, prog = prog.rsplit("/", 1)
                d = os.path.join(rel, sub)
            entries.append((d, prog, np_, opts))


def skip_reason(opts):
    if opts.get("strict", "").lower() == "false":
        return "strict=false (runtests -strict)"
    if opts.get("xfail"):
        return "xfail=" + opts["xfail"]
    if opts.get("hasgpu"):
        return "needs a GPU"
    mem = opts.get("mem")
    if mem:
        try:
            if float(mem) > MEMORY_TOTAL_GB:
                return "mem=" + mem
        except ValueError:
            pass
    return None


def check_output(text, rc, kind):
    """runtests' check_result + the resultTest kinds: True when the entry passes."""
    no_errors = skipped = stray = warning = 0
    for line in text.splitlines():
        if re.match(r"^\s*No [Ee]rrors\s*$", line) and not no_errors:
            no_errors = 1
        elif re.match(r"^\s*Test Skipped\s*$", line):
            skipped += 1
        elif re.match(r"^(MPICH: |WARNING: |(Abort.*)?application called MPI_Abort)", line):
            warning += 1
        elif re.search(r"(FORTRAN STOP|requesting checkpoint|checkpoint completed)\s*$", line):
            pass
        else:
            stray += 1
    if kind in ("TestStatus", "TestErrFatal"):
        return rc != 0
    if kind == "TestStatusNoErrors":
        return no_errors and not stray and rc != 0
    if not no_errors and not skipped:
        return False
    if stray or (warning and kind != "TestAllowWarnings"):
        return False
    return rc == 0


def build_dir(builddir, d, progs, logdir):
    """make -k the programs of one directory; returns the set of programs that built."""
    os.makedirs(logdir, exist_ok=True)
    with open(os.path.join(logdir, "make.log"), "w") as log:
        subprocess.run(["nice", "-n", "19", "make", "-k", "-j2", *sorted(progs)],
                       cwd=os.path.join(builddir, d), stdout=log, stderr=subprocess.STDOUT)
    built = set()
    for p in progs:
        if os.access(os.path.join(builddir, d, p), os.X_OK):
            built.add(p)
        else:
            # Its own make output, for the per-entry log.
            r = subprocess.run(["make", p], cwd=os.path.join(builddir, d), capture_output=True,
                               text=True, errors="replace")
            with open(os.path.join(logdir, p + ".make.log"), "w") as f:
                f.write(r.stdout + r.stderr)
    return built


def run(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--mpi", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dirs", required=True)
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("launcher", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    launcher = [x for x in a.launcher if x != "--"]
    out = os.path.join(a.out, a.mpi)
    os.makedirs(out, exist_ok=True)
    tsv_path = os.path.join(out, "results.tsv")
    done = set()
    rows = []
    if os.path.exists(tsv_path):  # a rerun of some directories keeps the others' results
        with open(tsv_path) as f:
            rows = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    dirs = a.dirs.split()
    rows = [r for r in rows if r[0] not in dirs]
    for top in dirs:
        entries, prereqs = [], []
        read_testlist(a.build, a.src, top, entries, prereqs)
        logdir = os.path.join(out, top)
        subprocess.run(["rm", "-rf", logdir])
        os.makedirs(logdir)
        for d, target in prereqs:
            subprocess.run(["make", target], cwd=os.path.join(a.build, d),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        by_dir = {}
        for d, prog, _, opts in entries:
            if not skip_reason(opts):
                by_dir.setdefault(d, set()).add(prog)
        built = set()
        for d, progs in by_dir.items():
            built |= {(d, p) for p in build_dir(a.build, d, progs, logdir)}
        start = time.time()
        for i, (d, prog, np_, opts) in enumerate(entries, 1):
            name = f"{i:03d}-{prog}"
            desc = " ".join([prog, str(np_)] + [f"arg={x}" for x in opts["arg"]]
                            + [f"env={x}" for x in opts["env"]])
            reason = skip_reason(opts)
            secs = 0.0
            if reason:
                verdict = "skip"
                detail = reason
            elif (d, prog) not in built:
                verdict = "nobuild"
                mk = os.path.join(logdir, prog + ".make.log")
                detail = open(mk).read() if os.path.exists(mk) else "(no make log)"
                with open(os.path.join(logdir, name + ".log"), "w") as f:
                    f.write(f"# {desc}\n# build failed\n{detail}")
            else:
                limit = a.timeout
                # An entry that expects to be killed (init/timeout: TestErrFatal) gets its own
                # limit, as runtests sets MPIEXEC_TIMEOUT; the others get at least ours.
                fatal = opts.get("resultTest", "") == "TestErrFatal"
                if opts.get("timeLimit", "").isdigit():
                    tl = int(opts["timeLimit"])
                    limit = tl if fatal else max(limit, tl)
                cmd = [x.replace("@TIMEOUT@", str(limit)).replace("@NP@", str(np_))
                       for x in launcher] + ["./" + prog] + opts["arg"]
                env = dict(os.environ)
                for kv in opts["env"]:
                    k, _, v = kv.partition("=")
                    env[k] = v
                t0 = time.time()
                r = subprocess.run(cmd, cwd=os.path.join(a.build, d), env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)
                secs = time.time() - t0
                text = r.stdout.decode(errors="replace")
                sep = "" if text.endswith("\n") or not text else "\n"
                if r.returncode in (TIMEOUT_RC, 137) and secs >= limit - 1 and not fatal:
                    verdict = "timeout"
                elif check_output(text, r.returncode, opts.get("resultTest", "")):
                    verdict = "pass"
                else:
                    verdict = "fail"
                with open(os.path.join(logdir, name + ".log"), "w") as f:
                    f.write(f"# {desc}\n# cwd {os.path.join(a.build, d)}\n# {shlex.join(cmd)}\n"
                            f"# env {' '.join(opts['env'])}\n{text}{sep}"
                            f"# exit status {r.returncode} after {secs:.1f} s: {verdict}\n")
                detail = ""
            rows.append([top, str(i), d, prog, str(np_), " ".join(opts["arg"]), verdict,
                         f"{secs:.1f}"])
            if verdict not in ("pass", "skip"):
                print(f"   {a.mpi} {desc}: {verdict} ({name}.log)", file=sys.stderr, flush=True)
        print(f"== {a.mpi} {top}: {len(entries)} entries, {time.time() - start:.0f} s",
              file=sys.stderr, flush=True)
        with open(tsv_path, "w") as f:
            f.writelines("\t".join(r) + "\n" for r in rows)
    table([a.out, a.mpi])


def counts(rows):
    c = {v: 0 for v in VERDICTS}
    for r in rows:
        c[r[6]] += 1
    run_ = sum(c[v] for v in VERDICTS if v != "skip")
    return run_, c


def table(argv):
    out = argv[0]
    mpis = argv[1:] or sorted(m for m in os.listdir(out)
                              if os.path.exists(os.path.join(out, m, "results.tsv")))
    res = {}
    for m in mpis:
        with open(os.path.join(out, m, "results.tsv")) as f:
            res[m] = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    dirs = []
    for m in mpis:
        for r in res[m]:
            if r[0] not in dirs:
                dirs.append(r[0])
    for m in mpis:
        print(f"\n{m}:\n")
        print("| dir | tests | built | passed | failed | timed out | skipped |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        tot = {v: 0 for v in VERDICTS}
        tot_run = 0
        for d in dirs:
            run_, c = counts([r for r in res[m] if r[0] == d])
            tot_run += run_
            for v in VERDICTS:
                tot[v] += c[v]
            print(f"| {d} | {run_} | {run_ - c['nobuild']} | {c['pass']} | "
                  f"{c['fail'] + c['nobuild']} | {c['timeout']} | {c['skip']} |")
        print(f"| total | {tot_run} | {tot_run - tot['nobuild']} | {tot['pass']} | "
              f"{tot['fail'] + tot['nobuild']} | {tot['timeout']} | {tot['skip']} |")
    if len(mpis) > 1:
        print("\npassed / tests run:\n")
        print("| dir | " + " | ".join(mpis) + " |")
        print("|---|" + "---:|" * len(mpis))
        for d in dirs + ["total"]:
            cells = []
            for m in mpis:
                run_, c = counts([r for r in res[m] if d in ("total", r[0])])
                cells.append(f"{c['pass']}/{run_}" + (f" ({100 * c['pass'] / run_:.0f}%)" if run_ else ""))
            print(f"| {d} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        run(sys.argv[2:])
    elif len(sys.argv) > 2 and sys.argv[1] == "table":
        table(sys.argv[2:])
    else:
        print(__doc__)
        sys.exit(2)
