#!/usr/bin/env python3
"""Generate libmpi/include/mpi.h from the MPI 5.0 standard-ABI data.

Usage:
    python3 tools/gen_mpi_h.py [ABI_DATA_DIR] [-o OUTPUT] [--check]

ABI_DATA_DIR holds constants.tsv, types.txt and functions.tsv; it defaults to
../shared/mpi-abi relative to the repository root.  OUTPUT defaults to
libmpi/include/mpi.h in the repository.  With --check nothing is written: the
exit status is 1 (and a message is printed) when OUTPUT is not what this
generator would produce, so CI can catch a stale or hand-edited header.

Standard library only.  The output is deterministic (no timestamps).
"""

import argparse
import os
import re
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_ABI_DIR = os.path.join(REPO_ROOT, "..", "shared", "mpi-abi")
DEFAULT_OUTPUT = os.path.join(REPO_ROOT, "libmpi", "include", "mpi.h")

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
INT_LITERAL = re.compile(r"^-?(0[xX][0-9a-fA-F]+|[0-9]+)$")


class AbiError(Exception):
    pass


# --------------------------------------------------------------------------
# Reading the data
# --------------------------------------------------------------------------

def read_tsv(path, ncols):
    """Rows of a TSV file with a header line; short rows are padded."""
    rows = []
    with open(path, encoding="ascii") as f:
        header = f.readline().rstrip("\n").split("\t")
        if len(header) < ncols:
            raise AbiError("%s: expected %d columns in the header, got %r" % (path, ncols, header))
        for lineno, line in enumerate(f, start=2):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            cols = line.split("\t")
            if len(cols) > ncols:
                raise AbiError("%s:%d: too many columns" % (path, lineno))
            cols += [""] * (ncols - len(cols))
            rows.append([c.strip() for c in cols] + [lineno])
    return rows


def workspace_version():
    """[workspace.package] version from the repository's Cargo.toml."""
    path = os.path.join(REPO_ROOT, "Cargo.toml")
    try:
        import tomllib  # Python >= 3.11
        with open(path, "rb") as f:
            data = tomllib.load(f)
        return data["workspace"]["package"]["version"]
    except ImportError:
        pass
    except (OSError, KeyError):
        return "0.0.0"
    # Fallback for older Pythons: a minimal scan of the [workspace.package] table.
    section = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            s = line.strip()
            if s.startswith("["):
                section = s
            elif section == "[workspace.package]":
                m = re.match(r'version\s*=\s*"([^"]+)"', s)
                if m:
                    return m.group(1)
    return "0.0.0"


# --------------------------------------------------------------------------
# Typedefs
# --------------------------------------------------------------------------

class Typedef:
    def __init__(self, text, lineno):
        self.text = text
        self.lineno = lineno
        self.name = self._defined_name(text)
        self.deps = set()

    @staticmethod
    def _defined_name(text):
        if not text.startswith("typedef ") or not text.endswith(";"):
            raise AbiError("types.txt: not a one-line typedef: %r" % text)
        # Function type: typedef RET (NAME)(PARAMS);
        m = re.match(r"typedef\s+[^(]*\(\s*\*?\s*([A-Za-z_]\w*)\s*\)\s*\(", text)
        if m:
            return m.group(1)
        # Everything else: the last identifier before the ';'
        m = re.search(r"([A-Za-z_]\w*)\s*;$", text)
        if not m:
            raise AbiError("types.txt: cannot find the defined name in %r" % text)
        return m.group(1)

    def referenced_identifiers(self):
        # Drop "struct TAG" / "enum TAG" (tags are not typedef names) before scanning.
        body = re.sub(r"\b(struct|enum|union)\s+[A-Za-z_]\w*", r"\1", self.text)
        return set(IDENT.findall(body)) - {self.name}


def read_typedefs(path):
    typedefs = []
    with open(path, encoding="ascii") as f:
        for lineno, line in enumerate(f, start=1):
            line = line.strip()
            if not line or line.startswith("//") or line.startswith("/*"):
                continue
            typedefs.append(Typedef(line, lineno))
    names = {}
    for t in typedefs:
        if t.name in names:
            raise AbiError("types.txt:%d: %s already defined on line %d"
                           % (t.lineno, t.name, names[t.name].lineno))
        names[t.name] = t
    for t in typedefs:
        t.deps = {n for n in t.referenced_identifiers() if n in names}
    return typedefs


def dependency_order(typedefs):
    """Stable topological sort: file order, except that a typedef's
    dependencies are emitted before it (depth-first).  Cycles are an error:
    this ABI needs no forward typedefs."""
    by_name = {t.name: t for t in typedefs}
    state = {}  # name -> "visiting" | "done"
    out = []

    def visit(t, chain):
        st = state.get(t.name)
        if st == "done":
            return
        if st == "visiting":
            raise AbiError("types.txt: circular typedef dependency: %s"
                           % " -> ".join(chain + [t.name]))
        state[t.name] = "visiting"
        for dep in sorted(t.deps, key=lambda n: by_name[n].lineno):
            visit(by_name[dep], chain + [t.name])
        state[t.name] = "done"
        out.append(t)

    for t in typedefs:
        visit(t, [])
    return out


def handle_types(typedefs):
    """Typedef names that are pointers to incomplete structs (MPI handles)."""
    out = set()
    for t in typedefs:
        if re.match(r"typedef\s+struct\s+[A-Za-z_]\w*\s*\*\s*[A-Za-z_]\w*\s*;$", t.text):
            out.add(t.name)
    return out


# --------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------

# Rows that select the platform's integer types rather than define a constant.
# The data lists several platforms; the first pair is the generic (Linux LP64)
# one, which is also what types.txt spells out.
ABI_TYPE_ROWS = {"MPI_ABI_Aint", "MPI_ABI_Offset", "MPI_ABI_Count"}


def split_comment(value):
    """'512 /* MPICH: ... */' -> ('512', 'MPICH: ...')."""
    m = re.match(r"^(.*?)\s*/\*(.*?)\*/\s*$", value)
    if m:
        return m.group(1).strip(), m.group(2).strip()
    return value, None


def format_constants(rows, handles, typedef_names):
    """Return (abi_type_rows, [(name, expansion, comment)])."""
    abi_types = {}
    defs = []
    seen = {}
    names_in_order = [r[0] for r in rows]
    for name, value, ctype, lineno in rows:
        if not IDENT.fullmatch(name):
            raise AbiError("constants.tsv:%d: bad name %r" % (lineno, name))
        if name in ABI_TYPE_ROWS:
            # First occurrence wins: it is the generic/LP64 choice.
            abi_types.setdefault(name, value)
            continue
        if name in seen:
            raise AbiError("constants.tsv:%d: %s already defined on line %d" % (lineno, name, seen[name]))
        seen[name] = lineno
        expr, comment = split_comment(value)
        if not expr:
            raise AbiError("constants.tsv:%d: %s has no value" % (lineno, name))

        if ctype in handles:
            if not INT_LITERAL.match(expr):
                raise AbiError("constants.tsv:%d: handle %s has non-integer value %r" % (lineno, name, expr))
            expansion = "((%s)%s)" % (ctype, expr)
        elif IDENT.fullmatch(expr) and not INT_LITERAL.match(expr):
            # Alias of another constant.
            if expr not in names_in_order:
                raise AbiError("constants.tsv:%d: %s aliases unknown constant %s" % (lineno, name, expr))
            expansion = expr
        elif expr.startswith("("):
            # Pointer-style / cast expression: keep as given, but check it names
            # only known types.
            if expr.count("(") != expr.count(")"):
                raise AbiError("constants.tsv:%d: unbalanced expression %r" % (lineno, expr))
            for ident in IDENT.findall(expr):
                if ident.startswith("MPI_") and ident not in typedef_names:
                    raise AbiError("constants.tsv:%d: %s uses unknown type %s" % (lineno, name, ident))
            expansion = expr
        elif INT_LITERAL.match(expr):
            if ctype not in ("", "int"):
                raise AbiError("constants.tsv:%d: %s: unexpected C type %r for an integer" % (lineno, name, ctype))
            # Parenthesise negative values so that e.g. `x-MPI_ANY_SOURCE` stays valid.
            expansion = "(%s)" % expr if expr.startswith("-") else expr
        else:
            raise AbiError("constants.tsv:%d: cannot classify %s = %r (type %r)" % (lineno, name, value, ctype))
        defs.append((name, expansion, comment))
    return abi_types, defs


# --------------------------------------------------------------------------
# Functions
# --------------------------------------------------------------------------

def read_functions(path):
    funcs = []
    seen = {}
    for name, ret, params, lineno in read_tsv(path, 3):
        if not re.fullmatch(r"MPI_\w+", name):
            raise AbiError("functions.tsv:%d: unexpected function name %r" % (lineno, name))
        if name in seen:
            raise AbiError("functions.tsv:%d: %s already declared on line %d" % (lineno, name, seen[name]))
        seen[name] = lineno
        if not ret:
            raise AbiError("functions.tsv:%d: %s has no return type" % (lineno, name))
        params = re.sub(r"\s+", " ", params).strip() or "void"
        funcs.append((name, ret, params))
    return funcs


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

def generate(abi_dir):
    typedefs = read_typedefs(os.path.join(abi_dir, "types.txt"))
    typedef_names = {t.name for t in typedefs}
    handles = handle_types(typedefs)
    const_rows = read_tsv(os.path.join(abi_dir, "constants.tsv"), 3)
    funcs = read_functions(os.path.join(abi_dir, "functions.tsv"))
    abi_types, consts = format_constants(const_rows, handles, typedef_names | {"MPI_Fint"})
    version = workspace_version()

    # Cross-check the platform rows against types.txt (Linux LP64: intptr_t / int64_t).
    by_name = {t.name: t for t in typedefs}
    for abi_name, c_name in (("MPI_ABI_Aint", "MPI_Aint"), ("MPI_ABI_Offset", "MPI_Offset")):
        want = abi_types.get(abi_name)
        t = by_name.get(c_name)
        if t is None:
            raise AbiError("types.txt: %s is not defined" % c_name)
        if want is not None and t.text != "typedef %s %s;" % (want, c_name):
            raise AbiError("types.txt: %r disagrees with constants.tsv %s = %s" % (t.text, abi_name, want))

    const_names = {c[0] for c in consts}
    for required in ("MPI_VERSION", "MPI_SUBVERSION"):
        if required not in const_names:
            consts.insert(0, (required, {"MPI_VERSION": "5", "MPI_SUBVERSION": "0"}[required], None))

    # Everything the prototypes name must be a known type (or a C builtin).
    builtin = {"int", "void", "char", "double", "const", "unsigned", "long", "short", "float"}
    for name, ret, params in funcs:
        for ident in IDENT.findall(ret):
            if ident not in builtin and ident not in typedef_names:
                raise AbiError("functions.tsv: %s returns unknown type %s" % (name, ident))
        for p in params.split(","):
            p = p.strip()
            if p in ("void", "..."):
                continue
            toks = IDENT.findall(re.sub(r"\[.*?\]", "", p))
            # The last identifier is the parameter name; the rest is the type.
            for ident in toks[:-1]:
                if ident not in builtin and ident not in typedef_names:
                    raise AbiError("functions.tsv: %s: unknown type %s in %r" % (name, ident, p))

    out = []
    w = out.append
    w("/*")
    w(" * mpi.h -- MPI 5.0 standard-ABI C header for rmpi (libmpi_abi.so.1).")
    w(" *")
    w(" * GENERATED FILE -- DO NOT EDIT BY HAND.")
    w(" * Generated by tools/gen_mpi_h.py from the MPI ABI data (constants.tsv,")
    w(" * types.txt, functions.tsv).  To regenerate, from the repository root:")
    w(" *     python3 tools/gen_mpi_h.py [path/to/mpi-abi]")
    w(" * and check with `python3 tools/gen_mpi_h.py --check`.")
    w(" *")
    w(" * Target: Linux LP64 (MPI_Aint = intptr_t, MPI_Offset = MPI_Count = int64_t).")
    w(" * %d functions, each also declared with the PMPI_ profiling prefix." % len(funcs))
    w(" */")
    w("")
    w("#ifndef RMPI_MPI_H_INCLUDED")
    w("#define RMPI_MPI_H_INCLUDED")
    w("")
    w("#include <stdint.h>")
    w("#include <stddef.h>")
    w("")
    w("#if defined(__SIZEOF_POINTER__) && __SIZEOF_POINTER__ != 8")
    w('#error "rmpi mpi.h: only LP64 targets are supported (MPI_Aint must be 64-bit)"')
    w("#endif")
    w("")
    w("#if defined(__cplusplus)")
    w('extern "C" {')
    w("#endif")
    w("")
    w("/* ---- Implementation identification ------------------------------------ */")
    w("")
    w("#define RMPI 1")
    major, minor, patch = (version.split("-")[0].split(".") + ["0", "0", "0"])[:3]
    w('#define RMPI_VERSION "%s"' % version)
    w("#define RMPI_VERSION_MAJOR %d" % int(major))
    w("#define RMPI_VERSION_MINOR %d" % int(minor))
    w("#define RMPI_VERSION_PATCH %d" % int(re.match(r"\d+", patch).group(0)))
    w("")
    w("/* ---- Types (dependency order) ------------------------------------------ */")
    w("")
    w("/* MPI_Fint: the C type of a default-kind Fortran INTEGER.  Not in the ABI")
    w("   data tables: the MPI 5.0 ABI leaves it (and the c2f/f2c conversions) to")
    w("   the Fortran support.  Provided for source compatibility as int, the")
    w("   default INTEGER of every Fortran compiler without -i8-style flags. */")
    if "MPI_Fint" not in typedef_names:
        w("typedef int MPI_Fint;")
    for t in dependency_order(typedefs):
        w(t.text)
    w("")
    w("/* ---- Constants ---------------------------------------------------------- */")
    w("")
    width = max(len(n) for n, _, _ in consts) + 1
    for name, expansion, comment in consts:
        line = "#define %-*s %s" % (width, name, expansion)
        if comment:
            line += " /* %s */" % comment
        w(line)
    w("")
    w("/* ---- Functions ---------------------------------------------------------- */")
    w("")
    for prefix in ("", "P"):
        if prefix:
            w("")
            w("/* Profiling interface: every function again with the PMPI_ prefix. */")
            w("")
        for name, ret, params in funcs:
            w("%s %s%s(%s);" % (ret, prefix, name, params))
    w("")
    w("#if defined(__cplusplus)")
    w("}")
    w("#endif")
    w("")
    w("#endif /* RMPI_MPI_H_INCLUDED */")
    return "\n".join(out) + "\n", len(funcs), len(consts), len(typedefs)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("abi_dir", nargs="?", default=DEFAULT_ABI_DIR,
                    help="directory with constants.tsv, types.txt, functions.tsv "
                         "(default: ../shared/mpi-abi relative to the repository root)")
    ap.add_argument("-o", "--output", default=DEFAULT_OUTPUT,
                    help="header to write (default: libmpi/include/mpi.h)")
    ap.add_argument("--check", action="store_true",
                    help="do not write; exit 1 if the output file is out of date")
    args = ap.parse_args(argv)

    for f in ("constants.tsv", "types.txt", "functions.tsv"):
        p = os.path.join(args.abi_dir, f)
        if not os.path.isfile(p):
            print("gen_mpi_h.py: %s not found (give the MPI ABI data directory as an argument)" % p,
                  file=sys.stderr)
            return 2
    try:
        text, nfuncs, nconsts, ntypes = generate(args.abi_dir)
    except AbiError as e:
        print("gen_mpi_h.py: %s" % e, file=sys.stderr)
        return 2

    if args.check:
        try:
            with open(args.output, encoding="ascii") as f:
                current = f.read()
        except OSError as e:
            print("gen_mpi_h.py: cannot read %s: %s" % (args.output, e), file=sys.stderr)
            return 1
        if current != text:
            print("gen_mpi_h.py: %s is out of date; rerun tools/gen_mpi_h.py" % args.output,
                  file=sys.stderr)
            return 1
        print("%s is up to date" % args.output)
        return 0

    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    tmp = args.output + ".tmp"
    with open(tmp, "w", encoding="ascii", newline="\n") as f:
        f.write(text)
    os.replace(tmp, args.output)
    print("wrote %s: %d typedefs, %d constants, %d functions (+ %d PMPI_)"
          % (args.output, ntypes + 1, nconsts, nfuncs, nfuncs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
