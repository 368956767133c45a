#!/usr/bin/env python3
"""Generate stubs for every MPI function mpi.h declares that libmpi does not implement.

Usage:
    python3 tools/gen_capi_stubs.py [ABI_DATA_DIR] [--check]

Reads functions.tsv and types.txt from ABI_DATA_DIR (default ../shared/mpi-abi relative
to the repository root, as for tools/gen_mpi_h.py) and finds the functions libmpi
implements by scanning libmpi/src/capi/**/*.rs for `MPI_x / PMPI_x` (the `mpi_fn!`
macro and the macros built on it) and `extern "C" fn MPI_x`.  Writes

  * libmpi/src/capi/unimplemented.rs: every other function as MPI_x + PMPI_x with the C
    parameter list in ABI-equivalent Rust types, raising MPI_ERR_UNSUPPORTED_OPERATION
    with an error code of its own (MPI_T_* functions: returning MPI_T_ERR_NOT_SUPPORTED);
  * the table of those functions in README.md, between the
    `<!-- unimplemented:begin -->` and `<!-- unimplemented:end -->` markers.

With --check nothing is written: the exit status is 1 (and a message is printed) when
either is not what this generator would produce.  A function that does not return int
(or is variadic) cannot be stubbed: the generator fails, naming it, and it must be
implemented by hand.  Standard library only; the output is deterministic.
"""

import argparse
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the repository from importing gen_mpi_h
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_mpi_h import (  # noqa: E402  (the shared reader of the ABI data)
    DEFAULT_ABI_DIR, REPO_ROOT, AbiError, handle_types, read_functions, read_typedefs)

CAPI_DIR = os.path.join(REPO_ROOT, "libmpi", "src", "capi")
OUTPUT = os.path.join(CAPI_DIR, "unimplemented.rs")
README = os.path.join(REPO_ROOT, "README.md")
BEGIN = "<!-- unimplemented:begin -->"
END = "<!-- unimplemented:end -->"

# How a stub reports its error (functions in capi/unsupported.rs, or a constant).
T_RESULT = "T_ERR_NOT_SUPPORTED"  # MPI_T_*: the standard gives them no error handlers.

RUST_KEYWORDS = {
    "as", "async", "await", "box", "break", "const", "continue", "crate", "dyn", "else", "enum",
    "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move",
    "mut", "pub", "ref", "return", "self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "yield",
}

SCALARS = {
    "int": "c_int",
    "MPI_Fint": "c_int",
    "MPI_Aint": "isize",
    "MPI_Count": "i64",
    "MPI_Offset": "i64",
}

# README table: areas in this order, the first whose pattern matches the name without
# "MPI_" wins; "large-count forms" takes `_c` forms of implemented functions.
AREAS = [
    ("MPI_T tool interface", r"T_"),
    ("I/O", r"File_|Register_datarep"),
    ("One-sided", r"Win_|(Put|Get|Accumulate|Rput|Rget|Raccumulate)(_c)?$|R?[Gg]et_accumulate|"
                  r"Fetch_and_op|Compare_and_swap"),
    ("Sessions", r"Session_|Group_from_session_pset|Comm_create_from_group"),
    ("Process management", r"Comm_(spawn|accept|connect|join)|Open_port|Close_port|"
                           r"(Publish|Lookup|Unpublish)_name"),
    ("Topologies, neighborhood collectives", r"Cart|Graph|Dist_graph|Topo_test|Dims_create|"
                                             r"I?[Nn]eighbor_"),
    ("Intercommunicators", r"Intercomm_"),
    ("Info objects", r"Info_|Get_hw_resource_info"),
    ("Partitioned communication", r"Psend_init|Precv_init|Pready|Parrived"),
    ("Large-count forms of implemented functions", None),
    ("Persistent collectives", r"\w+_init(_c)?$"),
    ("Datatypes", r"Type_|(Pack|Unpack)_external"),
    ("Buffered-send buffers", r"\w*[Bb]uffer"),
    ("Other", r""),
]


class Param:
    def __init__(self, func, text):
        self.text = text
        if text == "...":
            raise AbiError("%s is variadic: stable Rust cannot define it, so it gets no stub; "
                           "implement it by hand (see MPI_Pcontrol in libmpi/src/capi/env.rs)" % func)
        m = re.fullmatch(r"(.*?)([A-Za-z_]\w*)((?:\s*\[[^\]]*\])*)", text)
        if not m:
            raise AbiError("%s: cannot read parameter %r" % (func, text))
        self.ctype, self.name, array = m.group(1).strip(), m.group(2), m.group(3)
        self.is_const = self.ctype.startswith("const ")
        self.base = self.ctype.replace("const ", "").replace("*", "").strip()
        self.indirect = "*" in self.ctype or bool(array)


def rust_type(func, p, handles, enums, fn_types):
    """The ABI-equivalent Rust type of a C parameter (x86-64 / aarch64 Linux LP64)."""
    if p.indirect or p.base in fn_types:
        # Any pointer or array, and a function type (a parameter of one is a pointer to it).
        return "*const c_void" if p.is_const and p.base not in fn_types else "*mut c_void"
    if p.base in handles:
        return "Handle"
    if p.base in SCALARS:
        return SCALARS[p.base]
    if p.base in enums:
        return "c_int"
    raise AbiError("%s: no Rust type for parameter %r" % (func, p.text))


def implemented_functions(declared):
    """Names (MPI_x) libmpi/src/capi/ defines, apart from the generated stubs."""
    found = {}
    pair = re.compile(r"\b(MPI_\w+)\s*/\s*(PMPI_\w+)\b")
    extern = re.compile(r'extern\s+"C"\s+fn\s+(MPI_\w+)\s*\(')
    for root, dirs, files in os.walk(CAPI_DIR):
        dirs.sort()
        for f in sorted(files):
            path = os.path.join(root, f)
            if not f.endswith(".rs") or os.path.abspath(path) == os.path.abspath(OUTPUT):
                continue
            rel = os.path.relpath(path, REPO_ROOT)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            for m in pair.finditer(text):
                if m.group(2) != "P" + m.group(1):
                    raise AbiError("%s: %s / %s: the names differ" % (rel, m.group(1), m.group(2)))
                found.setdefault(m.group(1), rel)
            for m in extern.finditer(text):
                found.setdefault(m.group(1), rel)
    unknown = sorted(n for n in found if n not in declared)
    if unknown:
        raise AbiError("libmpi/src/capi defines functions mpi.h does not declare: %s"
                       % ", ".join("%s (%s)" % (n, found[n]) for n in unknown))
    return set(found)


def stub_result(name, params):
    """How the stub raises its error: (body with {i} for its index, the parameter it reads)."""
    if name.startswith("MPI_T_"):
        return T_RESULT, None
    if name.startswith("MPI_File_") or name.startswith("MPI_Register_datarep"):
        # I/O errors without a file (MPI_File_open, MPI_Register_datarep) go to
        # MPI_FILE_NULL's handler, MPI_ERRORS_RETURN by default, like a file's.
        return "returned({i})", None
    for p in params:
        if p.base == "MPI_Comm" and not p.indirect:
            return "on_comm({i}, %s)" % p.name, p.name
    return "on_world({i})", None


def plan(abi_dir):
    """The stubs to generate, [(name, Rust parameters, body)]; how many functions mpi.h
    declares; the names of those libmpi implements."""
    typedefs = read_typedefs(os.path.join(abi_dir, "types.txt"))
    handles = handle_types(typedefs)
    enums = {t.name for t in typedefs if t.text.startswith("typedef enum")}
    fn_types = {t.name for t in typedefs if re.match(r"typedef\s+[^(]*\(", t.text)}
    # Aliases of function types (typedef MPI_Comm_errhandler_function MPI_Comm_errhandler_fn;).
    for t in typedefs:
        m = re.fullmatch(r"typedef\s+(\w+)\s+(\w+)\s*;", t.text)
        if m and m.group(1) in fn_types:
            fn_types.add(m.group(2))
    funcs = read_functions(os.path.join(abi_dir, "functions.tsv"))
    declared = {f[0] for f in funcs}
    have = implemented_functions(declared)
    stubs = []
    for name, ret, params_text in funcs:
        if name in have:
            continue
        if ret != "int":
            raise AbiError("%s returns %s, so a stub cannot report an error: implement it by "
                           "hand in libmpi/src/capi/" % (name, ret))
        params = [] if params_text == "void" else \
            [Param(name, p.strip()) for p in params_text.split(",")]
        body, used = stub_result(name, params)
        rust = []
        for p in params:
            ident = p.name if p.name == used else "_" + p.name
            if ident in RUST_KEYWORDS:
                raise AbiError("%s: parameter %s is a Rust keyword" % (name, p.name))
            rust.append("%s: %s" % (ident, rust_type(name, p, handles, enums, fn_types)))
        stubs.append((name, rust, body.format(i=len(stubs))))
    return stubs, len(funcs), have


def rust_file(stubs):
    bodies = {b.split("(")[0] for _, _, b in stubs}
    helpers = sorted(b for b in bodies if b != T_RESULT)
    out = []
    w = out.append
    w("//! GENERATED FILE -- DO NOT EDIT BY HAND. Generated by tools/gen_capi_stubs.py from the MPI")
    w("//! ABI data (functions.tsv, types.txt) and the functions libmpi/src/capi/ implements:")
    w("//! every other function mpi.h declares, as MPI_x + PMPI_x with the C parameters in")
    w("//! ABI-equivalent types, raising MPI_ERR_UNSUPPORTED_OPERATION with an error code of its")
    w("//! own (`unsupported.rs`); MPI_T_* ones return MPI_T_ERR_NOT_SUPPORTED. To implement one,")
    w("//! write it elsewhere in capi/ and rerun `python3 tools/gen_capi_stubs.py`.")
    w("")
    w("// The C signatures are the standard's, however many parameters they have.")
    w("#![allow(clippy::too_many_arguments)]")
    w("")
    if stubs:
        w("use std::ffi::{c_int, c_void};")
        w("")
    if T_RESULT in bodies:
        w("use super::tool::%s;" % T_RESULT)
    if helpers:
        w("use super::unsupported::{%s};" % ", ".join(helpers))
    if stubs:
        w("use super::*;")
        w("")
    w("/// The functions stubbed here; `NAMES[i]` raises the error code of index `i`.")
    if stubs:
        w("pub(super) const NAMES: [&str; %d] = [" % len(stubs))
        for name, _, _ in stubs:
            w('    "%s",' % name)
        w("];")
    else:
        w("pub(super) const NAMES: [&str; 0] = [];")
    for name, rust, body in stubs:
        w("")
        w("mpi_fn! {")
        w("    fn %s / P%s(%s) -> c_int {" % (name, name, ", ".join(rust)))
        w("        %s" % body)
        w("    }")
        w("}")
    return "\n".join(out) + "\n"


def area_of(name, have):
    bare = name[len("MPI_"):]
    for title, pattern in AREAS:
        if pattern is None:
            if name.endswith("_c") and name[:-2] in have:
                return title
        elif re.match(pattern, bare):
            return title
    raise AssertionError(name)  # "Other" matches everything


def readme_table(stubs, ndeclared, have):
    missing = {s[0] for s in stubs}
    rows = {title: [] for title, _ in AREAS}
    counts = {title: 0 for title, _ in AREAS}
    for name, _, _ in stubs:
        if name.endswith("_c") and name[:-2] in missing:
            continue  # shown with its int-count form, as X(_c)
        both = name + "_c" in missing
        title = area_of(name, have)
        rows[title].append("`%s%s`" % (name, "(_c)" if both else ""))
        counts[title] += 2 if both else 1
    if not stubs:
        return "\n".join([
            BEGIN,
            "All %d functions mpi.h declares are implemented, each as `MPI_` and `PMPI_`; "
            "`libmpi/src/capi/unimplemented.rs` holds no stub." % ndeclared,
            END,
        ])
    out = [
        BEGIN,
        "%d of the %d functions mpi.h declares are implemented, each as `MPI_` and `PMPI_`. The "
        "other %d are stubs generated by `tools/gen_capi_stubs.py`: they raise "
        "MPI_ERR_UNSUPPORTED_OPERATION with an error code of their own, whose MPI_Error_string "
        "names the function (MPI_T_ ones return MPI_T_ERR_NOT_SUPPORTED). Not implemented yet "
        "(`X(_c)`: X and its large-count form X_c):"
        % (ndeclared - len(stubs), ndeclared, len(stubs)),
        "",
        "| area | count | functions |",
        "|---|---|---|",
    ]
    for title, _ in AREAS:
        if rows[title]:
            out.append("| %s | %d | %s |" % (title, counts[title], ", ".join(rows[title])))
    out.append(END)
    return "\n".join(out)


def with_table(readme, table):
    """README.md's text with the table between the markers replaced."""
    b, e = readme.find(BEGIN), readme.find(END)
    if b < 0 or e < b or readme.count(BEGIN) != 1 or readme.count(END) != 1:
        raise AbiError("README.md needs one %s ... %s pair (in \"The C header\") for the table"
                       % (BEGIN, END))
    return readme[:b] + table + readme[e + len(END):]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("abi_dir", nargs="?", default=DEFAULT_ABI_DIR,
                    help="directory with types.txt and functions.tsv "
                         "(default: ../shared/mpi-abi relative to the repository root)")
    ap.add_argument("--check", action="store_true",
                    help="do not write; exit 1 if the stubs or the README table are out of date")
    args = ap.parse_args(argv)

    for f in ("types.txt", "functions.tsv"):
        p = os.path.join(args.abi_dir, f)
        if not os.path.isfile(p):
            print("gen_capi_stubs.py: %s not found (give the MPI ABI data directory as an argument)"
                  % p, file=sys.stderr)
            return 2
    try:
        stubs, ndeclared, have = plan(args.abi_dir)
        code = rust_file(stubs)
        with open(README, encoding="utf-8") as f:
            readme = f.read()
        new_readme = with_table(readme, readme_table(stubs, ndeclared, have))
    except (AbiError, OSError) as e:
        print("gen_capi_stubs.py: %s" % e, file=sys.stderr)
        return 2

    outputs = [(OUTPUT, code), (README, new_readme)]
    if args.check:
        stale = []
        for path, text in outputs:
            try:
                with open(path, encoding="utf-8") as f:
                    current = f.read()
            except OSError:
                current = None
            if current != text:
                stale.append(os.path.relpath(path, REPO_ROOT))
        if stale:
            print("gen_capi_stubs.py: %s out of date (the implemented functions changed?); "
                  "rerun python3 tools/gen_capi_stubs.py" % " and ".join(stale), file=sys.stderr)
            return 1
        print("stubs and README table are up to date: %d of %d functions implemented"
              % (ndeclared - len(stubs), ndeclared))
        return 0

    for path, text in outputs:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    print("wrote %s and the README table: %d of %d functions implemented, %d stubs"
          % (os.path.relpath(OUTPUT, REPO_ROOT), ndeclared - len(stubs), ndeclared, len(stubs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
