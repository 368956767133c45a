#!/usr/bin/env python3
"""Helper of scripts/mpi4py.sh: run mpi4py's test suite recording each test, and report.

  mpi4py_tests.py run OUT_PREFIX MAIN_PY [main.py options...]
      In each rank (under mpirun): runs mpi4py's test/main.py and appends one line per event to
      OUT_PREFIX.r<rank>.tsv, flushed at once, so a crash or a hang still leaves the test that
      was running: "START<TAB>test", "<outcome><TAB>test<TAB>detail" (outcome one of ok, FAIL,
      ERROR, skip, xfail, xpass; FAIL and ERROR once per failing subtest), "STOP<TAB>test".

  mpi4py_tests.py report RESULTS_DIR [--quick]
      Merges the ranks' files of every (MPI, np) run under RESULTS_DIR/<mpi>/np<N>/ into
      RESULTS_DIR/<mpi>-np<N>.tsv (test, outcome, detail: the worst outcome over the ranks; a
      test started and never finished is CRASH, or TIMEOUT when its job hit mpirun's --timeout),
      prints per-np counts and, when Open MPI ran too, the tests passing there and not with rmpi,
      grouped by the unimplemented function (and its area) or the error they hit.
      Exit status 1 when --quick and any test failed, errored, crashed or timed out with rmpi.
"""

import os
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Outcomes, worst first: the merged outcome of a test is the worst over the ranks.
ORDER = ["TIMEOUT", "CRASH", "ERROR", "FAIL", "xpass", "ok", "xfail", "skip"]
BAD = {"TIMEOUT", "CRASH", "ERROR", "FAIL", "xpass"}


def one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text[:limit]


def last_line(err):
    """The exception's own line ('mpi4py.MPI.Exception: ...') of an exc_info triple."""
    exc_type, value, _tb = err
    name = getattr(exc_type, "__qualname__", str(exc_type))
    mod = getattr(exc_type, "__module__", "")
    if mod and mod != "builtins":
        name = f"{mod}.{name}"
    # A module that failed to import carries the whole traceback in its message: its last line
    # is the exception that stopped it.
    lines = [l for l in str(value).splitlines() if l.strip()]
    if len(lines) > 1:
        return one_line(f"{name}: {lines[0]} ... {lines[-1].strip()}")
    return one_line(f"{name}: {value}")


def run(argv):
    import runpy
    import unittest

    out_prefix, main_py, rest = argv[0], argv[1], argv[2:]
    rank = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or "0"
    out = open(f"{out_prefix}.r{rank}.tsv", "a", encoding="utf-8")

    def emit(*fields):
        out.write("\t".join(one_line(f) for f in fields) + "\n")
        out.flush()

    class Recording(unittest.TextTestResult):
        def startTest(self, test):
            emit("START", test.id())
            super().startTest(test)

        def stopTest(self, test):
            super().stopTest(test)
            emit("STOP", test.id())

        def addSuccess(self, test):
            super().addSuccess(test)
            emit("ok", test.id())

        def addFailure(self, test, err):
            super().addFailure(test, err)
            emit("FAIL", test.id(), last_line(err))

        def addError(self, test, err):
            super().addError(test, err)
            emit("ERROR", test.id(), last_line(err))

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            emit("skip", test.id(), reason)

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            emit("xfail", test.id())

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            emit("xpass", test.id())

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None:
                kind = "FAIL" if issubclass(err[0], test.failureException) else "ERROR"
                emit(kind, test.id(), f"{subtest._subDescription()} {last_line(err)}")

    unittest.TextTestRunner.resultclass = Recording
    sys.argv = [main_py, *rest]
    try:
        runpy.run_path(main_py, run_name="__main__")
    finally:
        emit("DONE", "-")
        out.close()


def merge_run(run_dir):
    """{test: (outcome, detail)} over the modules and ranks of one (MPI, np) run directory."""
    merged = {}
    # A rank that fails a test can leave the others waiting in it (a collective it never
    # reached): the hang is reported with that rank's error.
    errors = {}

    def put(test, outcome, detail):
        old = merged.get(test)
        if old is None or ORDER.index(outcome) < ORDER.index(old[0]):
            merged[test] = (outcome, detail)

    for log in sorted(run_dir.glob("*.rc")):
        module = log.name[: -len(".rc")]
        rc = log.read_text().strip()
        files = sorted(run_dir.glob(f"{module}.r*.tsv"))
        if not files:
            put(f"{module} (module)", "TIMEOUT" if rc == "124" else "CRASH",
                f"no test ran (mpirun exit {rc}; see {module}.log)")
            continue
        hung = []
        for f in files:
            running = None
            for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
                fields = line.split("\t")
                kind, test = fields[0], fields[1] if len(fields) > 1 else ""
                detail = fields[2] if len(fields) > 2 else ""
                if kind == "START":
                    running = test
                elif kind in ("STOP", "DONE"):
                    running = None
                elif kind in ORDER:
                    put(test, kind, detail)
                    if kind in ("ERROR", "FAIL"):
                        errors.setdefault(test, detail)
            if running is not None:
                hung.append((running, f.name.split(".")[-2]))
        for test, rank in hung:
            how = "TIMEOUT" if rc == "124" else "CRASH"
            why = f"; another rank: {errors[test]}" if test in errors else ""
            put(test, how, f"never finished on {rank} (mpirun exit {rc}; see {module}.log){why}")
    return merged


def stub_area(function):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import gen_capi_stubs as g
        for title, pattern in g.AREAS:
            if pattern and re.match(pattern, function[len("MPI_"):]):
                return title
    except Exception:
        pass
    return "Other"


OWNER = {
    "One-sided": "issue 14 (MPI breadth: RMA)",
    "I/O": "issue 14 (MPI breadth: I/O)",
    "Sessions": "issue 14 (MPI breadth: sessions)",
    "Process management": "issue 14 (MPI breadth: spawn)",
    "Topologies, neighborhood collectives": "issue 14 (MPI breadth: topologies)",
    "Intercommunicators": "issue 14 (MPI breadth: intercommunicators)",
    "Info objects": "issue 14 (MPI breadth: Info)",
}


def reason_of(detail):
    m = re.search(r"(MPI_\w+) is not implemented", detail)
    if m:
        area = stub_area(m.group(1))
        return f"stub {m.group(1)} [{area}; {OWNER.get(area, 'not owned elsewhere')}]"
    detail = re.sub(r"0x[0-9a-f]+", "0x…", detail)
    return detail[:160] or "(no message)"


def report(argv):
    quick = "--quick" in argv
    results = Path(argv[0])
    runs = {}
    for mpi_dir in sorted(p for p in results.iterdir() if p.is_dir()):
        for np_dir in sorted(p for p in mpi_dir.iterdir() if p.is_dir() and p.name.startswith("np")):
            merged = merge_run(np_dir)
            runs[(mpi_dir.name, int(np_dir.name[2:]))] = merged
            with open(results / f"{mpi_dir.name}-{np_dir.name}.tsv", "w", encoding="utf-8") as f:
                for test in sorted(merged):
                    outcome, detail = merged[test]
                    f.write(f"{test}\t{outcome}\t{detail}\n")
    print(f"== mpi4py test suite: per-test results in {results}/<mpi>-np<N>.tsv")
    print(f"{'mpi':8} {'np':>3} {'tests':>6} {'passed':>7} {'failed':>7} {'errors':>7} "
          f"{'skipped':>8} {'crashed':>8} {'timeout':>8}")
    bad_rmpi = 0
    for (mpi, np), merged in sorted(runs.items()):
        count = defaultdict(int)
        for outcome, _ in merged.values():
            count[outcome] += 1
        if mpi == "rmpi":
            bad_rmpi += sum(count[o] for o in BAD)
        print(f"{mpi:8} {np:>3} {len(merged):>6} {count['ok'] + count['xfail']:>7} "
              f"{count['FAIL'] + count['xpass']:>7} {count['ERROR']:>7} {count['skip']:>8} "
              f"{count['CRASH']:>8} {count['TIMEOUT']:>8}")
    for (mpi, np), merged in sorted(runs.items()):
        if mpi != "rmpi":
            continue
        base = runs.get(("openmpi", np))
        bad = {t: v for t, v in merged.items() if v[0] in BAD}
        if base is not None:
            # Tests passing with Open MPI (or that Open MPI's run never reached) and not with us.
            bad = {t: v for t, v in bad.items() if base.get(t, ("ok",))[0] in ("ok", "xfail")}
            print(f"\n== np {np}: {len(bad)} tests pass with Open MPI and not with rmpi")
        elif bad:
            print(f"\n== np {np}: {len(bad)} tests fail with rmpi")
        groups = defaultdict(list)
        for test, (outcome, detail) in bad.items():
            stub = "is not implemented" in detail
            groups[reason_of(detail) if outcome in ("FAIL", "ERROR") or stub else
                   f"{outcome}: {detail}"].append(f"{test} [{outcome}]")
        for reason in sorted(groups, key=lambda r: (-len(groups[r]), r)):
            print(f"-- {len(groups[reason])}: {reason}")
            for t in sorted(groups[reason]):
                print(f"     {t}")
    if quick and bad_rmpi:
        print(f"\n{bad_rmpi} tests failed, errored, crashed or timed out with rmpi")
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "run":
        run(sys.argv[2:])
    elif len(sys.argv) >= 3 and sys.argv[1] == "report":
        sys.exit(report(sys.argv[2:]))
    else:
        sys.exit(__doc__)
