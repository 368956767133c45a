#!/usr/bin/env python3
"""Generate the C ABI bad-argument test programs from the MPI ABI data.

Usage:
    python3 tools/gen_bad_args.py [ABI_DATA_DIR] [--check]

Reads functions.tsv and types.txt (default ../shared/mpi-abi, as tools/gen_mpi_h.py) and writes
tests/c/generated/:

  * bad_args.h: the harness (fork per case, classify the outcome, tally);
  * bad_args_<family>.c: for every function of the family and every parameter this script can
    classify (handle of a kind, count, rank, root, tag, keyval, output pointer, input array,
    string), calls with that one argument bad and the others valid, under MPI_ERRORS_RETURN;
  * bad_args_phases.c: every function called before MPI_Init (`before`) or after MPI_Finalize
    (`after`): an error, never a crash; the calls the standard allows then must succeed.

Each case runs in a forked child (a crash or a hang is caught and named, and a wrong success
cannot disturb the next case). A case checks: the call does not return MPI_SUCCESS,
MPI_Error_class gives the class the standard names (or, where it names none, anything but
MPI_ERR_UNKNOWN/MPI_ERR_OTHER: recorded), MPI_Error_string a non-empty message.
MPI_ERR_UNSUPPORTED_OPERATION (a generated stub) is counted apart, never a failure. The output
does not depend on which functions libmpi implements, so implementing one does not make it stale.
tests/tests/bad_args.rs runs the programs and checks (--check) that they are current.
Standard library only; deterministic output.
"""

import argparse
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_mpi_h import DEFAULT_ABI_DIR, REPO_ROOT, AbiError, read_functions  # noqa: E402

OUT_DIR = os.path.join(REPO_ROOT, "tests", "c", "generated")

# Not called at all: they end or start the library, or start processes through the launcher
# or talk to it (spawn, ports, names: a forked child speaking PMI on its parent's connection
# would interleave its requests and replies with the parent's and confuse mpirun; accept/connect
# and join would also block waiting for a peer that never comes).
SKIP = {
    "MPI_Init", "MPI_Init_thread", "MPI_Finalize", "MPI_Abort", "MPI_Pcontrol",
    "MPI_Comm_spawn", "MPI_Comm_spawn_multiple", "MPI_Comm_accept", "MPI_Comm_connect",
    "MPI_Comm_join", "MPI_Open_port", "MPI_Close_port", "MPI_Publish_name",
    "MPI_Lookup_name", "MPI_Unpublish_name", "MPI_Session_init",
}
# Callable before MPI_Init and after MPI_Finalize (MPI 4.1 §11.4.1 and §11.2.1; Info and
# MPI_T as well, which the phase program leaves alone).
ALLOWED_OUTSIDE = {
    "MPI_Initialized", "MPI_Finalized", "MPI_Get_version", "MPI_Get_library_version",
    "MPI_Error_class", "MPI_Error_string", "MPI_Abi_get_version", "MPI_Abi_get_info",
    "MPI_Abi_get_fortran_info", "MPI_Abi_get_fortran_booleans", "MPI_Abi_set_fortran_info",
    "MPI_Abi_set_fortran_booleans", "MPI_Session_init", "MPI_Info_create_env",
    "MPI_Session_create_errhandler",
}

# Functions whose int result is not an error code.
NOT_ERRORS = re.compile(r"MPI_\w+_toint$")
# Arguments with no invalid values (a status field may be set to anything).
NO_BAD_VALUES = re.compile(r"MPI_Status_set_")

# Where rmpi deliberately accepts what the generic rules call bad: (function, case label).
ACCEPTED = {
    # A null handle has a name (MPI_COMM_NULL, ...), as in MPICH; mpi4py reads it.
    ("MPI_Comm_get_name", "comm = MPI_COMM_NULL"),
    ("MPI_Type_get_name", "datatype = MPI_DATATYPE_NULL"),
    ("MPI_Win_get_name", "win = MPI_WIN_NULL"),
    # Freeing a predefined error handler is allowed (MPI 4.1 §9.3.4: a no-op for them).
    ("MPI_Errhandler_free", "predefined MPI_ERRORS_RETURN freed"),
    # *buflen is 0 here: MPI 4.1 §10 lets value be anything then (only the length is returned).
    ("MPI_Info_get_string", "value = NULL"),
    # A packed size does not depend on the extent: 8 GiB fits its MPI_Aint result.
    ("MPI_Pack_external_size", "incount x extent 2^40 beyond isize"),
    # The graph is unweighted: MPI 4.1 §8.5.5 leaves the weight arrays untouched then.
    ("MPI_Dist_graph_neighbors", "sourceweights = NULL"),
    ("MPI_Dist_graph_neighbors", "destweights = NULL"),
    # MPI_FILE_NULL has an error handler, the one file opens use (MPI 4.1 §14.7): it may be
    # set, read and called.
    ("MPI_File_set_errhandler", "file = MPI_FILE_NULL"),
    ("MPI_File_get_errhandler", "file = MPI_FILE_NULL"),
    ("MPI_File_call_errhandler", "fh = MPI_FILE_NULL"),
    # *pset_len is 0 here: only the length is returned (MPI 4.1 §11.3.2), as for
    # MPI_Info_get_string.
    ("MPI_Session_get_nth_pset", "pset_name = NULL"),
}

FAMILIES = [
    ("p2p", r"(I|Ib|Is|Ir|B|S|R)?[Ss]end|I?[Rr]ecv|I?[Mm]?[Pp]robe|I?[Mm]recv|Sendrecv|Isendrecv|"
            r"Wait|Test|Start|Request_|Cancel|Grequest|Buffer|Comm_attach_buffer|Comm_detach_buffer|"
            r"Comm_flush_buffer|Comm_iflush_buffer|Session_(attach|detach|flush|iflush)_buffer|"
            r"P(send|recv)_init|Pready|Parrived|Get_count|Get_elements|Status_"),
    ("coll", r"I?(Allgather|Allreduce|Alltoall|Barrier|Bcast|Exscan|Gather|Reduce|Scan|Scatter)|"
             r"I?[Nn]eighbor_|Op_|Reduce_local"),
    ("dtype", r"Type_|Pack|Unpack|Get_address|Aint_|Register_datarep"),
    ("rma", r"Win_|R?(Put|Get|Accumulate)(_c)?$|R?[Gg]et_accumulate|Fetch_and_op|Compare_and_swap|"
            r"Alloc_mem|Free_mem"),
    ("topo", r"Cart|Graph|Dist_graph|Topo_test|Dims_create"),
    ("file", r"File_"),
    ("comm", r""),
]

# --- values ----------------------------------------------------------------------------------

HANDLE_NULL = {
    "MPI_Comm": ("MPI_COMM_NULL", "MPI_ERR_COMM"),
    "MPI_Datatype": ("MPI_DATATYPE_NULL", "MPI_ERR_TYPE"),
    "MPI_Op": ("MPI_OP_NULL", "MPI_ERR_OP"),
    "MPI_Group": ("MPI_GROUP_NULL", "MPI_ERR_GROUP"),
    "MPI_Win": ("MPI_WIN_NULL", "MPI_ERR_WIN"),
    "MPI_File": ("MPI_FILE_NULL", "MPI_ERR_FILE"),
    "MPI_Session": ("MPI_SESSION_NULL", "MPI_ERR_SESSION"),
    "MPI_Errhandler": ("MPI_ERRHANDLER_NULL", "MPI_ERR_ERRHANDLER"),
    "MPI_Info": (None, "MPI_ERR_INFO"),  # MPI_INFO_NULL is a valid hint argument
    "MPI_Request": (None, "MPI_ERR_REQUEST"),
    "MPI_Message": (None, None),
}
# Objects the harness frees in setup (ba_freed_*), per kind.
FREED = {"MPI_Comm", "MPI_Datatype", "MPI_Op", "MPI_Group", "MPI_Win", "MPI_Info",
         "MPI_Errhandler", "MPI_File", "MPI_Session"}

# The datatype argument a count counts.
PAIRED_TYPE = {"count": "datatype", "sendcount": "sendtype", "recvcount": "recvtype",
               "origin_count": "origin_datatype", "target_count": "target_datatype",
               "result_count": "result_datatype", "incount": "datatype"}
P2P_PEER = {"dest", "source", "rank_source", "rank_dest"}
COUNTS = {"count", "sendcount", "recvcount", "origin_count", "target_count", "result_count",
          "incount"}
TAGS = {"tag", "sendtag", "recvtag"}
INT_DEFAULTS = {
    "tag": "0", "sendtag": "0", "recvtag": "0", "root": "0", "target_rank": "0",
    "errorcode": "MPI_ERR_OTHER", "errorclass": "MPI_ERR_OTHER", "lock_type": "MPI_LOCK_SHARED",
    "order": "MPI_ORDER_C", "typeclass": "MPI_TYPECLASS_INTEGER", "required": "MPI_THREAD_SINGLE",
    "split_type": "MPI_COMM_TYPE_SHARED", "keyval": "ba_kv_comm", "comm_keyval": "ba_kv_comm",
    "type_keyval": "ba_kv_type", "win_keyval": "ba_kv_win", "disp_unit": "1", "commute": "1",
    "extent": "4", "logical_size": "4", "maxlen": "64", "valuelen": "64", "buflen": "64",
    "size": "64", "maxdims": "1", "maxindex": "1", "maxedges": "1", "maxneighbors": "1",
    "maxindegree": "1", "maxoutdegree": "1", "max_integers": "1", "max_addresses": "1",
    "max_datatypes": "1", "max_large_counts": "1", "insize": "64", "outsize": "64",
    "partitions": "1", "partition": "0", "partition_low": "0", "partition_high": "0",
    "stride": "1", "blocklength": "1", "ndims": "1", "nnodes": "1", "n": "1", "outcount": "1",
    "indegree": "1", "outdegree": "1", "maxprocs": "1", "local_leader": "0",
    "remote_leader": "1", "r": "4", "p": "4", "high": "0", "color": "0", "key": "0",
}


class Param:
    def __init__(self, text):
        m = re.fullmatch(r"(.*?)([A-Za-z_]\w*)((?:\s*\[[^\]]*\])*)", text)
        if not m:
            raise AbiError("cannot read parameter %r" % text)
        self.ctype, self.name, self.array = m.group(1).strip(), m.group(2), bool(m.group(3))
        self.const = self.ctype.startswith("const ")
        self.base = self.ctype.replace("const ", "").replace("*", "").strip()
        self.stars = self.ctype.count("*") + (1 if self.array else 0)


def family_of(name):
    bare = name[len("MPI_"):]
    for fam, pat in FAMILIES:
        if re.match(pat, bare):
            return fam
    raise AssertionError(name)


def comm_for(fn):
    """The valid communicator a function gets: p2p on COMM_WORLD with MPI_PROC_NULL peers (no
    traffic), collectives on COMM_SELF (a lone child cannot hang them), topology calls on a
    communicator of that topology, intercommunicator calls on the harness's intercomm."""
    bare = fn[len("MPI_"):]
    if re.match(r"Cart|I?[Nn]eighbor_", bare):
        return "ba_cart"
    if re.match(r"Graph", bare):
        return "ba_graph"
    if re.match(r"Dist_graph_neighbors", bare):
        return "ba_distgraph"
    if re.match(r"Intercomm_merge|Comm_remote_", bare):
        return "ba_inter"
    if family_of(fn) == "p2p":
        return "MPI_COMM_WORLD"
    return "MPI_COMM_SELF"


# Calls that release their object like the _free calls (a pointer to a handle they reset).
RELEASES = {"File_close", "Session_finalize"}

RMA_COMM_OPS = re.compile(r"R?(Put|Get|Accumulate|Get_accumulate)(_c)?$|Fetch_and_op|"
                          r"Compare_and_swap|Win_flush|Win_unlock_all|Win_sync")
INREQ = re.compile(r"Wait|Test|Start|Request_free|Cancel|Request_get_status|Pready|Parrived")


def valid(fn, p):
    """A C expression for a valid value of parameter p of fn."""
    b, n = p.base, p.name
    bare = fn[len("MPI_"):]
    if p.stars == 0:
        if b == "MPI_Comm":
            return comm_for(fn)
        if b == "MPI_Datatype":
            return "MPI_INT"
        if b == "MPI_Op":
            return "MPI_SUM"
        if b == "MPI_Group":
            return "ba_group"
        if b == "MPI_Info":
            return "ba_info" if bare.startswith("Info_") else "MPI_INFO_NULL"
        if b == "MPI_Errhandler":
            return "MPI_ERRORS_RETURN"
        if b == "MPI_Win":
            return "ba_win_locked" if RMA_COMM_OPS.match(bare) else "ba_win"
        if b == "MPI_File":
            # A real file, open on MPI_COMM_SELF (a lone forked child can make its collective
            # calls), with MPI_ERRORS_RETURN.
            return "ba_file"
        if b == "MPI_Session":
            return "ba_session"
        if b == "MPI_Request":
            return "MPI_REQUEST_NULL"
        if b == "MPI_Message":
            return "MPI_MESSAGE_NO_PROC"
        if b in ("int", "MPI_Count", "MPI_Aint", "MPI_Offset", "MPI_Fint"):
            if n in P2P_PEER:
                return "MPI_PROC_NULL"
            if n in COUNTS:
                return "1"
            if n == "amode":
                # Reopen the harness's file read-only: nothing is created (a child ends with
                # _exit, so MPI_MODE_DELETE_ON_CLOSE would never remove a file it made).
                return "MPI_MODE_RDONLY"
            if n == "whence":
                return "MPI_SEEK_SET"
            return INT_DEFAULTS.get(n, "0")
        if b.startswith("MPI_T_"):
            return "0"
        return None
    # Pointers and arrays.
    if b.endswith("_function") or b.endswith("_function_c") or b.endswith("_fn") or \
            b.startswith("MPI_T_event_") and b.endswith("function"):
        return "(%s *)ba_dummy_fn" % b if p.stars == 1 else None
    if b == "void":
        return "ba_sbuf" if p.const else "ba_rbuf"
    if b == "MPI_Status":
        return "ba_status"
    if b == "char":
        if n == "datarep" and bare.startswith("File_"):
            return '"native"'
        if n == "datarep":
            return '"external32"'
        if n == "filename" and bare == "File_open":
            return "ba_path"
        if n == "filename":
            # MPI_File_delete: a name that does not exist, so a wrong success deletes nothing.
            return "ba_path_none"
        if n == "pset_name":
            return '"mpi://SELF"'
        if p.stars == 1 and p.const:
            return '"ba_key"'
        if p.stars == 1:
            return "ba_chars"
        return "NULL"
    if b == "MPI_Request":
        if INREQ.match(bare):
            return "ba_req_in()"
        return "ba_req_out"
    if b == "MPI_Datatype" and p.const:
        return "ba_types"
    if b in ("int", "MPI_Aint", "MPI_Count") and p.const:
        if "displ" in n or n in ("ranks", "indices", "edges", "destinations", "sources",
                                  "array_of_starts", "array_of_displacements", "coords",
                                  "index", "periods", "ranks1", "ranks2"):
            return "ba_zeros_%s" % ctype_tag(b)
        return "ba_ones_%s" % ctype_tag(b)
    if n == "ranges":
        return "ba_ranges"
    if b in ("int", "MPI_Aint", "MPI_Count", "MPI_Offset"):
        return "ba_out_%s" % ctype_tag(b)
    if b in ("MPI_Comm", "MPI_Datatype", "MPI_Op", "MPI_Group", "MPI_Win", "MPI_Info",
             "MPI_Errhandler", "MPI_File", "MPI_Session", "MPI_Message"):
        if p.const:
            return "ba_out_%s" % b[4:]
        if bare.endswith("_free") or bare in ("Type_commit", "Win_free_keyval") or \
                bare in RELEASES:
            return "ba_freeable_%s()" % b[4:]
        if bare in ("Mrecv", "Imrecv"):
            return "ba_msg_noproc()"
        return "ba_out_%s" % b[4:]
    return None


def ctype_tag(b):
    return {"int": "int", "MPI_Aint": "aint", "MPI_Count": "count", "MPI_Offset": "count"}[b]


def bad_values(fn, p):
    """[(C expression, expected class or None, label)] for parameter p of fn."""
    b, n = p.base, p.name
    bare = fn[len("MPI_"):]
    out = []
    if p.stars == 0 and b in HANDLE_NULL:
        null, cls = HANDLE_NULL[b]
        if b == "MPI_Message":
            return []
        if null and not (b == "MPI_Errhandler" and bare.endswith("_create")):
            out.append((null, cls, "%s = %s" % (n, null)))
        if b == "MPI_Info" and bare.startswith("Info_"):
            out.append(("MPI_INFO_NULL", cls, "%s = MPI_INFO_NULL" % n))
        out.append(("(%s)(intptr_t)0x6" % b, cls, "%s = reserved value 0x6" % n))
        out.append(("(%s)(intptr_t)0x5eadbeef0" % b, cls, "%s = garbage" % n))
        if b in FREED:
            out.append(("ba_freed_%s" % b[4:], cls, "%s = freed" % n))
        if b == "MPI_Datatype" and family_of(fn) in ("p2p", "coll", "rma") and \
                not bare.startswith(("Get_count", "Get_elements", "Status_")):
            out.append(("ba_uncommitted", cls, "%s = not committed" % n))
        return out
    if p.stars == 0 and b in ("int", "MPI_Count", "MPI_Aint", "MPI_Offset"):
        if n in COUNTS and not bare.startswith("Type_"):
            out.append(("-1", "MPI_ERR_COUNT", "%s = -1" % n))
            if b == "MPI_Count" and fn.endswith("_c"):
                out.append(("INT64_MAX", "MPI_ERR_COUNT", "%s x extent beyond isize" % n))
        elif n in ("count", "n", "blocklength") and bare.startswith("Type_"):
            out.append(("-1", None, "%s = -1" % n))
        elif n in TAGS:
            out.append(("-5", "MPI_ERR_TAG", "%s = -5" % n))
            sendlike = (n == "sendtag") or (n == "tag" and re.search(r"[Ss]end", bare))
            if sendlike:
                out.append(("MPI_ANY_TAG", "MPI_ERR_TAG", "%s = MPI_ANY_TAG on a send" % n))
        elif n in P2P_PEER:
            out.append(("ba_world_size", "MPI_ERR_RANK", "%s = size" % n))
            out.append(("-7", "MPI_ERR_RANK", "%s = -7" % n))
        elif n == "root":
            out.append(("5", "MPI_ERR_ROOT", "root = 5 (beyond size)"))
            out.append(("-7", "MPI_ERR_ROOT", "root = -7"))
        elif n == "target_rank":
            out.append(("5", "MPI_ERR_RANK", "target_rank = 5 (beyond size)"))
        elif n in ("keyval", "comm_keyval", "type_keyval", "win_keyval") and \
                not bare.endswith("create_keyval"):
            out.append(("12345", "MPI_ERR_KEYVAL", "%s = 12345 (not a keyval)" % n))
            # A keyval of another kind (window for communicator and type, else communicator).
            other = "ba_kv_comm" if n == "win_keyval" or bare.startswith("Win_") else "ba_kv_win"
            out.append((other, "MPI_ERR_KEYVAL", "%s = %s keyval" % (
                n, "a communicator" if other == "ba_kv_comm" else "a window")))
        elif n == "amode":
            # MPI 4.1 §14.2.1: exactly one of RDONLY, RDWR, WRONLY; no CREATE or EXCL with
            # RDONLY; no SEQUENTIAL with RDWR.
            out.append(("0", "MPI_ERR_AMODE", "amode = 0"))
            out.append(("MPI_MODE_RDONLY | MPI_MODE_RDWR", "MPI_ERR_AMODE",
                        "amode = RDONLY | RDWR"))
            out.append(("MPI_MODE_RDONLY | MPI_MODE_CREATE", "MPI_ERR_AMODE",
                        "amode = RDONLY | CREATE"))
        elif n == "whence":
            out.append(("12345", None, "whence = 12345"))
        elif bare.startswith("File_") and b == "MPI_Offset" and n in ("offset", "size", "disp"):
            # A negative offset, position, size or displacement is erroneous (MPI 4.1 §14.4,
            # §14.3.3; MPI_DISPLACEMENT_CURRENT is the one negative disp allowed).
            out.append(("-1", None, "%s = -1" % n))
        elif n in ("errorcode", "errorclass") and bare in ("Error_class", "Error_string",
                                                           "Add_error_code"):
            out.append(("-9", "MPI_ERR_ARG", "%s = -9" % n))
        return out
    if p.stars == 1 and not p.const and b in ("int", "MPI_Aint", "MPI_Count", "MPI_Comm",
                                              "MPI_Datatype", "MPI_Op", "MPI_Group", "MPI_Win",
                                              "MPI_Info", "MPI_Errhandler", "MPI_Request",
                                              "MPI_Session", "MPI_Message", "MPI_Offset"):
        if p.array and b == "int" and n in ("array_of_indices", "indices"):
            pass
        out.append(("NULL", None, "%s = NULL" % n))
        if (bare.endswith("_free") or bare in RELEASES) and b in HANDLE_NULL and \
                b not in ("MPI_Message",):
            pre = {"MPI_Comm": "MPI_COMM_WORLD", "MPI_Datatype": "MPI_INT", "MPI_Op": "MPI_SUM",
                   "MPI_Errhandler": "MPI_ERRORS_RETURN", "MPI_Info": "MPI_INFO_ENV",
                   "MPI_Group": None, "MPI_Win": None, "MPI_File": None, "MPI_Session": None,
                   "MPI_Request": None}.get(b)
            cls = HANDLE_NULL[b][1]
            if pre:
                out.append(("ba_ptr_%s(%s)" % (b[4:], pre), cls, "predefined %s freed" % pre))
            null = HANDLE_NULL[b][0]
            if null:
                out.append(("ba_ptr_%s(%s)" % (b[4:], null), cls, "%s freed" % null))
            out.append(("ba_ptr_%s((%s)(intptr_t)0x5eadbeef0)" % (b[4:], b), cls,
                        "garbage handle freed"))
        elif b == "MPI_Request" and INREQ.match(bare):
            out.append(("ba_ptr_Request((MPI_Request)(intptr_t)0x5eadbeef0)", "MPI_ERR_REQUEST",
                        "garbage request"))
        return out
    if p.array and p.const and b in ("int", "MPI_Aint", "MPI_Count", "MPI_Datatype"):
        out.append(("NULL", None, "%s = NULL" % n))
        return out
    if b == "char" and p.stars == 1:
        out.append(("NULL", None, "%s = NULL" % n))
        if n == "datarep" and bare == "File_set_view":
            out.append(('"ba_no_such_rep"', "MPI_ERR_UNSUPPORTED_DATAREP",
                        "datarep = unknown"))
    # void * outputs the call writes a pointer or value through (not buffers, where NULL is
    # MPI_BOTTOM).
    if b == "void" and p.stars == 1 and not p.const and (
            n == "baseptr" or (n == "attribute_val" and bare.endswith("get_attr")) or
            (n == "buffer_addr" and "detach" in bare)):
        out.append(("NULL", None, "%s = NULL" % n))
    return out


def parse(params_text):
    if params_text == "void":
        return []
    return [Param(t.strip()) for t in params_text.split(",")]


def cases(funcs):
    """{family: [(fn, what, expected, call text)]} and the functions skipped (no valid value)."""
    by_fam = {f: [] for f, _ in FAMILIES}
    skipped = []
    for name, ret, ptext in funcs:
        if ret != "int" or name in SKIP or name.startswith("MPI_T_") or ptext.endswith("...") \
                or NOT_ERRORS.match(name):
            continue
        params = parse(ptext)
        vals = [valid(name, p) for p in params]
        if any(v is None for v in vals):
            skipped.append(name)
            continue
        names = [p.name for p in params]
        for i, p in enumerate(params):
            if NO_BAD_VALUES.match(name) and p.stars == 0:
                continue
            bad = bad_values(name, p)
            # An int count times a datatype of extent 2^40 passes isize: the count's datatype
            # is then the huge one (the only case where two arguments change together).
            pair = PAIRED_TYPE.get(p.name)
            if p.stars == 0 and p.base == "int" and pair in names and \
                    not name[4:].startswith("Type_") and p.name in COUNTS:
                bad.append(("INT_MAX", "MPI_ERR_COUNT", "%s x extent 2^40 beyond isize" % p.name,
                            {pair: "ba_huge"}))
            for b in bad:
                expr, cls, what = b[:3]
                if (name, what) in ACCEPTED:
                    continue
                args = list(vals)
                args[i] = expr
                for other, oexpr in (b[3] if len(b) > 3 else {}).items():
                    args[names.index(other)] = oexpr
                by_fam[family_of(name)].append(
                    (name, what, cls or "BA_ANY", "%s(%s)" % (name, ", ".join(args))))
    return by_fam, skipped


def phase_calls(funcs):
    """Every function with valid-looking arguments, for the before-Init / after-Finalize runs."""
    out = []
    for name, ret, ptext in funcs:
        if ret != "int" or name in SKIP or name.startswith("MPI_T_") or ptext.endswith("...") \
                or name.startswith("MPI_Info_") or name in ALLOWED_OUTSIDE or NOT_ERRORS.match(name):
            continue
        params = parse(ptext)
        vals = [valid(name, p) for p in params]
        if any(v is None for v in vals):
            continue
        out.append((name, "%s(%s)" % (name, ", ".join(vals))))
    return out


HEADER = "/* GENERATED FILE -- DO NOT EDIT BY HAND. Generated by tools/gen_bad_args.py. */\n"

HARNESS = r'''
/* The bad-argument harness: every case runs in a forked child, which makes the call and reports
 * its result (return code, class, message) through a pipe; the parent judges it. A child killed
 * by a signal crashed (SIGALRM: it hung). */
#ifndef BAD_ARGS_H
#define BAD_ARGS_H
/* Not every program uses every helper. */
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-function"
/* MPI_UNWEIGHTED and deliberately bad pointers. */
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wstringop-overread"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#pragma GCC diagnostic ignored "-Wnonnull"
#include <mpi.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BA_ANY (-1) /* the standard names no class: any but MPI_ERR_UNKNOWN/OTHER */

struct ba_result { int rc, cls, len; char msg[MPI_MAX_ERROR_STRING]; };

static int ba_cases, ba_failed, ba_unsupported, ba_unnamed, ba_pipe[2];
static int ba_by_class[MPI_ERR_LASTCODE > 100 ? 100 : MPI_ERR_LASTCODE];
static int ba_world_size = 2, ba_verbose;
static int ba_initialized = 1;

static char ba_sbuf[1 << 16], ba_rbuf[1 << 16], ba_chars[4096];
static MPI_Status ba_status[64];
static int ba_ones_int[64], ba_zeros_int[64], ba_out_int[64];
static MPI_Aint ba_ones_aint[64], ba_zeros_aint[64], ba_out_aint[64];
static MPI_Count ba_ones_count[64], ba_zeros_count[64], ba_out_count[64];
static MPI_Datatype ba_types[64], ba_out_Datatype[64];
static MPI_Comm ba_out_Comm[64];
static MPI_Group ba_out_Group[64];
static MPI_Op ba_out_Op[64];
static MPI_Win ba_out_Win[64];
static MPI_Info ba_out_Info[64];
static MPI_Errhandler ba_out_Errhandler[64];
static MPI_File ba_out_File[64];
static MPI_Session ba_out_Session[64];
static MPI_Message ba_out_Message[64];
static MPI_Request ba_req_out[64], ba_req_slots[64];
static int ba_ranges[64][3] = {{0, 0, 1}};

static MPI_Comm ba_cart = MPI_COMM_NULL, ba_graph = MPI_COMM_NULL, ba_distgraph = MPI_COMM_NULL,
                ba_inter = MPI_COMM_NULL, ba_freed_Comm = MPI_COMM_NULL;
static MPI_Group ba_group = MPI_GROUP_EMPTY, ba_freed_Group = MPI_GROUP_NULL;
static MPI_Datatype ba_freed_Datatype = MPI_DATATYPE_NULL, ba_uncommitted = MPI_DATATYPE_NULL,
                    ba_huge = MPI_DATATYPE_NULL;
static MPI_Op ba_freed_Op = MPI_OP_NULL;
static MPI_Win ba_win = MPI_WIN_NULL, ba_win_locked = MPI_WIN_NULL, ba_freed_Win = MPI_WIN_NULL;
static MPI_Info ba_info = MPI_INFO_NULL, ba_freed_Info = MPI_INFO_NULL;
/* A real open file (on MPI_COMM_SELF, deleted on close) and a real session, both with
 * MPI_ERRORS_RETURN; ba_path_none names no file. */
static MPI_File ba_file = MPI_FILE_NULL, ba_freed_File = MPI_FILE_NULL;
static MPI_Session ba_session = MPI_SESSION_NULL, ba_freed_Session = MPI_SESSION_NULL;
static char ba_path[256], ba_path_none[256];
static MPI_Errhandler ba_freed_Errhandler = MPI_ERRHANDLER_NULL;
static int ba_kv_comm = MPI_KEYVAL_INVALID, ba_kv_type = MPI_KEYVAL_INVALID,
           ba_kv_win = MPI_KEYVAL_INVALID;
static MPI_Request ba_persistent = MPI_REQUEST_NULL;
static int ba_winbuf[64];

static void ba_dummy_fn(void) {}

/* Pointers to a fresh copy of a handle (the _free calls and in-out requests). */
#define BA_PTR(T) \
    static MPI_##T *ba_ptr_##T(MPI_##T v) { static MPI_##T slot[64]; static int i; i = (i + 1) % 64; slot[i] = v; return &slot[i]; }
BA_PTR(Comm)
BA_PTR(Datatype)
BA_PTR(Op)
BA_PTR(Errhandler)
BA_PTR(Info)
BA_PTR(Group)
BA_PTR(Win)
BA_PTR(File)
BA_PTR(Session)
BA_PTR(Request)
BA_PTR(Message)

/* A valid object of each kind to free (made in the child, so the parent keeps its own). */
static MPI_Comm *ba_freeable_Comm(void) { MPI_Comm c = MPI_COMM_NULL; if (ba_initialized) MPI_Comm_dup(MPI_COMM_SELF, &c); return ba_ptr_Comm(c); }
static MPI_Datatype *ba_freeable_Datatype(void) { MPI_Datatype t = MPI_DATATYPE_NULL; if (ba_initialized) MPI_Type_contiguous(2, MPI_INT, &t); return ba_ptr_Datatype(t); }
static void ba_user_op(void *a, void *b, int *n, MPI_Datatype *t) { (void)a; (void)b; (void)n; (void)t; }
static MPI_Op *ba_freeable_Op(void) { MPI_Op o = MPI_OP_NULL; if (ba_initialized) MPI_Op_create(ba_user_op, 1, &o); return ba_ptr_Op(o); }
static void ba_user_errh(MPI_Comm *c, int *e, ...) { (void)c; (void)e; }
static MPI_Errhandler *ba_freeable_Errhandler(void) { MPI_Errhandler e = MPI_ERRHANDLER_NULL; if (ba_initialized) MPI_Comm_create_errhandler(ba_user_errh, &e); return ba_ptr_Errhandler(e); }
static MPI_Info *ba_freeable_Info(void) { MPI_Info i = MPI_INFO_NULL; MPI_Info_create(&i); return ba_ptr_Info(i); }
static MPI_Group *ba_freeable_Group(void) { MPI_Group g = MPI_GROUP_NULL; if (ba_initialized) MPI_Comm_group(MPI_COMM_WORLD, &g); return ba_ptr_Group(g); }
static MPI_Win *ba_freeable_Win(void) { MPI_Win w = MPI_WIN_NULL; if (ba_initialized) MPI_Win_create(ba_winbuf, sizeof ba_winbuf, 1, MPI_INFO_NULL, MPI_COMM_SELF, &w); return ba_ptr_Win(w); }
static MPI_File *ba_freeable_File(void) { MPI_File f = MPI_FILE_NULL; if (ba_initialized) MPI_File_open(MPI_COMM_SELF, ba_path, MPI_MODE_RDONLY, MPI_INFO_NULL, &f); return ba_ptr_File(f); }
static MPI_Session *ba_freeable_Session(void) { MPI_Session s = MPI_SESSION_NULL; if (ba_initialized) MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s); return ba_ptr_Session(s); }
static MPI_Message *ba_freeable_Message(void) { return ba_ptr_Message(MPI_MESSAGE_NO_PROC); }
static MPI_Message *ba_msg_noproc(void) { return ba_ptr_Message(MPI_MESSAGE_NO_PROC); }
/* An input request: a persistent one (MPI_Start, MPI_Cancel, MPI_Request_free accept it;
 * MPI_Wait/MPI_Test complete it at once, as it is inactive). */
static MPI_Request *ba_req_in(void) {
    for (int i = 0; i < 64; i++) ba_req_slots[i] = ba_persistent;
    return ba_req_slots;
}

static const char *ba_class_name(int c) {
    static const char *names[] = {"MPI_SUCCESS", "MPI_ERR_BUFFER", "MPI_ERR_COUNT", "MPI_ERR_TYPE",
        "MPI_ERR_TAG", "MPI_ERR_COMM", "MPI_ERR_RANK", "MPI_ERR_REQUEST", "MPI_ERR_ROOT",
        "MPI_ERR_GROUP", "MPI_ERR_OP", "MPI_ERR_TOPOLOGY", "MPI_ERR_DIMS", "MPI_ERR_ARG",
        "MPI_ERR_UNKNOWN", "MPI_ERR_TRUNCATE", "MPI_ERR_OTHER", "MPI_ERR_INTERN",
        "MPI_ERR_PENDING", "MPI_ERR_IN_STATUS", "MPI_ERR_ACCESS", "MPI_ERR_AMODE",
        "MPI_ERR_ASSERT", "MPI_ERR_BAD_FILE", "MPI_ERR_BASE", "MPI_ERR_CONVERSION",
        "MPI_ERR_DISP", "MPI_ERR_DUP_DATAREP", "MPI_ERR_FILE_EXISTS", "MPI_ERR_FILE_IN_USE",
        "MPI_ERR_FILE", "MPI_ERR_INFO_KEY", "MPI_ERR_INFO_NOKEY", "MPI_ERR_INFO_VALUE",
        "MPI_ERR_INFO", "MPI_ERR_IO", "MPI_ERR_KEYVAL", "MPI_ERR_LOCKTYPE", "MPI_ERR_NAME",
        "MPI_ERR_NO_MEM", "MPI_ERR_NOT_SAME", "MPI_ERR_NO_SPACE", "MPI_ERR_NO_SUCH_FILE",
        "MPI_ERR_PORT", "MPI_ERR_QUOTA", "MPI_ERR_READ_ONLY", "MPI_ERR_RMA_ATTACH",
        "MPI_ERR_RMA_CONFLICT", "MPI_ERR_RMA_RANGE", "MPI_ERR_RMA_SHARED", "MPI_ERR_RMA_SYNC",
        "MPI_ERR_SERVICE", "MPI_ERR_SIZE", "MPI_ERR_SPAWN", "MPI_ERR_UNSUPPORTED_DATAREP",
        "MPI_ERR_UNSUPPORTED_OPERATION", "MPI_ERR_WIN", "MPI_ERR_RMA_FLAVOR",
        "MPI_ERR_PROC_ABORTED", "MPI_ERR_VALUE_TOO_LARGE", "MPI_ERR_SESSION",
        "MPI_ERR_ERRHANDLER", "MPI_ERR_ABI"};
    if (c >= 0 && c < (int)(sizeof names / sizeof names[0])) return names[c];
    return "(not a class)";
}

/* Parent: fork; the child returns 1 and makes the call. */
static int ba_begin(void) {
    fflush(stdout);
    fflush(stderr);
    if (pipe(ba_pipe) != 0) { perror("pipe"); exit(2); }
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(2); }
    if (pid == 0) {
        close(ba_pipe[0]);
        alarm(10);
        return 1;
    }
    close(ba_pipe[1]);
    return 0;
}

/* Child: report the call's result and leave without running anything else. */
static void ba_end(int rc) {
    struct ba_result r;
    memset(&r, 0, sizeof r);
    r.rc = rc;
    r.cls = -1;
    if (rc != MPI_SUCCESS) {
        if (MPI_Error_class(rc, &r.cls) != MPI_SUCCESS) r.cls = -2;
        if (MPI_Error_string(rc, r.msg, &r.len) != MPI_SUCCESS) r.len = -1;
    }
    ssize_t w = write(ba_pipe[1], &r, sizeof r);
    _exit(w == (ssize_t)sizeof r ? 0 : 3);
}

static void ba_fail(const char *fn, const char *what, const char *why) {
    ba_failed++;
    printf("FAIL %s [%s]: %s\n", fn, what, why);
}

/* Parent: collect the child's result and judge it. want: a class, BA_ANY, or for the phase
 * programs BA_OK (must succeed). */
#define BA_OK (-2)
/* Outside Init..Finalize: any error class will do. */
#define BA_ANY_OUTSIDE (-3)
static const char *ba_phase = "";
static void ba_judge(const char *fn, const char *what, int want) {
    struct ba_result r;
    ssize_t got = 0, n;
    while (got < (ssize_t)sizeof r && (n = read(ba_pipe[0], (char *)&r + got, sizeof r - got)) > 0)
        got += n;
    close(ba_pipe[0]);
    int status = 0;
    while (wait(&status) < 0) {}
    char why[256 + MPI_MAX_ERROR_STRING];
    ba_cases++;
    if (WIFSIGNALED(status)) {
        snprintf(why, sizeof why, WTERMSIG(status) == SIGALRM ? "hung (killed after 10 s)"
                 : "crashed (signal %d)", WTERMSIG(status));
        ba_fail(fn, what, why);
        return;
    }
    if (got != (ssize_t)sizeof r) {
        snprintf(why, sizeof why, "the process ended inside the call (exit status %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        ba_fail(fn, what, why);
        return;
    }
    if (want == BA_OK) {
        if (r.rc != MPI_SUCCESS) {
            snprintf(why, sizeof why, "must succeed, returned %s: %s", ba_class_name(r.cls), r.msg);
            ba_fail(fn, what, why);
        }
        return;
    }
    if (r.rc == MPI_SUCCESS) { ba_fail(fn, what, "returned MPI_SUCCESS"); return; }
    if (r.cls >= 0 && r.cls < (int)(sizeof ba_by_class / sizeof ba_by_class[0])) ba_by_class[r.cls]++;
    if (r.cls == MPI_ERR_UNSUPPORTED_OPERATION) { ba_unsupported++; return; }
    if (r.cls < 0) { ba_fail(fn, what, "MPI_Error_class failed on the returned code"); return; }
    if (r.len <= 0 || r.msg[0] == 0) { ba_fail(fn, what, "empty MPI_Error_string"); return; }
    if (want == BA_ANY_OUTSIDE) return;
    if (want == BA_ANY) {
        ba_unnamed++;
        if (r.cls == MPI_ERR_UNKNOWN || r.cls == MPI_ERR_OTHER || r.cls == MPI_ERR_INTERN) {
            snprintf(why, sizeof why, "class %s is not specific: %s", ba_class_name(r.cls), r.msg);
            ba_fail(fn, what, why);
        } else if (ba_verbose) {
            printf("note %s [%s]: %s: %s\n", fn, what, ba_class_name(r.cls), r.msg);
        }
        return;
    }
    if (r.cls != want) {
        snprintf(why, sizeof why, "class %s, expected %s: %s", ba_class_name(r.cls),
                 ba_class_name(want), r.msg);
        ba_fail(fn, what, why);
    }
}

#define BA_CASE(fn, what, want, call) \
    do { if (ba_begin()) ba_end(call); ba_judge(fn, what, want); } while (0)

static void ba_report(const char *prog) {
    printf("%s: %d cases, %d failed, %d unsupported (stubs), %d with no class named\n", prog,
           ba_cases, ba_failed, ba_unsupported, ba_unnamed);
    printf("%s: classes returned:", prog);
    for (int c = 0; c < (int)(sizeof ba_by_class / sizeof ba_by_class[0]); c++)
        if (ba_by_class[c]) printf(" %s=%d", ba_class_name(c), ba_by_class[c]);
    printf("\n");
}

/* Objects the cases use (collective over MPI_COMM_WORLD, which needs 2 or more ranks). */
static void ba_setup(void) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_size(MPI_COMM_WORLD, &ba_world_size);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 64; i++) {
        ba_ones_int[i] = 1; ba_ones_aint[i] = 1; ba_ones_count[i] = 1;
        ba_types[i] = MPI_INT; ba_req_out[i] = MPI_REQUEST_NULL;
    }
    int dims[1] = {1}, periods[1] = {0};
    MPI_Cart_create(MPI_COMM_SELF, 1, dims, periods, 0, &ba_cart);
    int index[1] = {1}, edges[1] = {0}, self[1] = {0};
    MPI_Graph_create(MPI_COMM_SELF, 1, index, edges, 0, &ba_graph);
    MPI_Dist_graph_create_adjacent(MPI_COMM_SELF, 1, self, MPI_UNWEIGHTED, 1, self,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ba_distgraph);
    /* Ranks 0 and 1 make the intercommunicator (any np >= 2). */
    MPI_Comm pair = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    if (pair != MPI_COMM_NULL) {
        MPI_Intercomm_create(MPI_COMM_SELF, 0, pair, 1 - rank, 77, &ba_inter);
        MPI_Comm_free(&pair);
    }
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ba_kv_comm, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, ba_kv_comm, NULL);
    MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &ba_kv_type, NULL);
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &ba_kv_win, NULL);
    MPI_Comm_group(MPI_COMM_WORLD, &ba_group);
    MPI_Win_create(ba_winbuf, sizeof ba_winbuf, 1, MPI_INFO_NULL, MPI_COMM_SELF, &ba_win);
    MPI_Win_set_errhandler(ba_win, MPI_ERRORS_RETURN);
    MPI_Win_create(ba_winbuf, sizeof ba_winbuf, 1, MPI_INFO_NULL, MPI_COMM_SELF, &ba_win_locked);
    MPI_Win_set_errhandler(ba_win_locked, MPI_ERRORS_RETURN);
    MPI_Win_lock_all(0, ba_win_locked);
    MPI_Info_create(&ba_info);
    MPI_Info_set(ba_info, "ba_key", "value");
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &ba_session);
    const char *tmp = getenv("TMPDIR");
    snprintf(ba_path, sizeof ba_path, "%s/ba_file_%d_%d", tmp && *tmp ? tmp : "/tmp",
             (int)getpid(), rank);
    snprintf(ba_path_none, sizeof ba_path_none, "%s.none", ba_path);
    MPI_File_open(MPI_COMM_SELF, ba_path,
                  MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL,
                  &ba_file);
    MPI_File_set_errhandler(ba_file, MPI_ERRORS_RETURN);
    MPI_Type_contiguous(3, MPI_INT, &ba_uncommitted);
    /* One int in an extent of 2^40 bytes: INT_MAX of them span 2^71. */
    MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)1 << 40, &ba_huge);
    MPI_Type_commit(&ba_huge);
    MPI_Send_init(ba_sbuf, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &ba_persistent);
    /* Freed last, so that no later object takes their slots. */
    MPI_Comm_dup(MPI_COMM_SELF, &ba_freed_Comm);
    MPI_Comm d = ba_freed_Comm;
    MPI_Comm_free(&d);
    MPI_Comm_group(MPI_COMM_SELF, &ba_freed_Group);
    MPI_Group g = ba_freed_Group;
    MPI_Group_free(&g);
    MPI_Type_contiguous(2, MPI_INT, &ba_freed_Datatype);
    MPI_Type_commit(&ba_freed_Datatype);
    MPI_Datatype t = ba_freed_Datatype;
    MPI_Type_free(&t);
    MPI_Op_create(ba_user_op, 1, &ba_freed_Op);
    MPI_Op o = ba_freed_Op;
    MPI_Op_free(&o);
    MPI_Win_create(ba_winbuf, sizeof ba_winbuf, 1, MPI_INFO_NULL, MPI_COMM_SELF, &ba_freed_Win);
    MPI_Win w = ba_freed_Win;
    MPI_Win_free(&w);
    MPI_Info_create(&ba_freed_Info);
    MPI_Info i = ba_freed_Info;
    MPI_Info_free(&i);
    MPI_Comm_create_errhandler(ba_user_errh, &ba_freed_Errhandler);
    MPI_Errhandler e = ba_freed_Errhandler;
    MPI_Errhandler_free(&e);
    MPI_File_open(MPI_COMM_SELF, ba_path, MPI_MODE_RDONLY, MPI_INFO_NULL, &ba_freed_File);
    MPI_File f = ba_freed_File;
    MPI_File_close(&f);
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &ba_freed_Session);
    MPI_Session s = ba_freed_Session;
    MPI_Session_finalize(&s);
    ba_verbose = getenv("BA_VERBOSE") != NULL;
}
#endif
'''


def family_program(fam, items):
    out = [HEADER, '#include "bad_args.h"', ""]
    # One function per MPI function, so no C function gets huge.
    fns = []
    for fn, what, cls, call in items:
        if not fns or fns[-1][0] != fn:
            fns.append((fn, []))
        fns[-1][1].append((what, cls, call))
    for fn, cs in fns:
        out.append("static void t_%s(void) {" % fn)
        for what, cls, call in cs:
            out.append("    BA_CASE(\"%s\", \"%s\", %s,\n            %s);" % (fn, what, cls, call))
        out.append("}")
        out.append("")
    out.append("int main(int argc, char **argv) {")
    out.append("    MPI_Init(&argc, &argv);")
    out.append("    ba_setup();")
    out.append("    int rank;")
    out.append("    MPI_Comm_rank(MPI_COMM_WORLD, &rank);")
    out.append("    if (rank == 0) {")
    for fn, _ in fns:
        out.append("        t_%s();" % fn)
    out.append("        ba_report(\"bad_args_%s\");" % fam)
    out.append("    }")
    out.append("    MPI_Bcast(&ba_failed, 1, MPI_INT, 0, MPI_COMM_WORLD);")
    out.append("    MPI_Win_unlock_all(ba_win_locked);")
    out.append("    MPI_File_close(&ba_file);")
    out.append("    MPI_Session_finalize(&ba_session);")
    out.append("    MPI_Finalize();")
    out.append("    return ba_failed ? 1 : 0;")
    out.append("}")
    return "\n".join(out) + "\n"


def phases_program(calls):
    out = [HEADER, '#include "bad_args.h"', "",
           "/* Every call, arguments as valid as they can be without MPI: an error, never a crash. */",
           "static void t_all(void) {"]
    for fn, call in calls:
        out.append("    BA_CASE(\"%s\", ba_phase, BA_ANY_OUTSIDE,\n            %s);" % (fn, call))
    out.append("}")
    out.append(r'''
/* What the standard allows outside Init..Finalize must work. */
static void t_allowed(void) {
    int flag, v, sv, len;
    char s[MPI_MAX_LIBRARY_VERSION_STRING];
    BA_CASE("MPI_Initialized", ba_phase, BA_OK, MPI_Initialized(&flag));
    BA_CASE("MPI_Finalized", ba_phase, BA_OK, MPI_Finalized(&flag));
    BA_CASE("MPI_Get_version", ba_phase, BA_OK, MPI_Get_version(&v, &sv));
    BA_CASE("MPI_Get_library_version", ba_phase, BA_OK, MPI_Get_library_version(s, &len));
    BA_CASE("MPI_Error_class", ba_phase, BA_OK, MPI_Error_class(MPI_ERR_COMM, &v));
    BA_CASE("MPI_Error_string", ba_phase, BA_OK, MPI_Error_string(MPI_ERR_COMM, s, &len));
    BA_CASE("MPI_Info_create", ba_phase, BA_OK, MPI_Info_create(&ba_info));
}

int main(int argc, char **argv) {
    int after = argc > 1 && strcmp(argv[1], "after") == 0;
    ba_phase = after ? "after MPI_Finalize" : "before MPI_Init";
    ba_initialized = 0;
    for (int i = 0; i < 64; i++) { ba_ones_int[i] = 1; ba_ones_aint[i] = 1; ba_ones_count[i] = 1; ba_types[i] = MPI_INT; }
    if (after) {
        MPI_Init(&argc, &argv);
        MPI_Finalize();
        BA_CASE("MPI_Init", ba_phase, BA_ANY_OUTSIDE, MPI_Init(&argc, &argv));
    }
    t_allowed();
    t_all();
    ba_report(after ? "bad_args_phases after" : "bad_args_phases before");
    if (!after) {
        MPI_Init(&argc, &argv);
        MPI_Finalize();
    }
    return ba_failed ? 1 : 0;
}''')
    return "\n".join(out) + "\n"


def outputs(abi_dir):
    funcs = read_functions(os.path.join(abi_dir, "functions.tsv"))
    by_fam, _ = cases(funcs)
    files = [("bad_args.h", HEADER + HARNESS)]
    for fam, _ in FAMILIES:
        if by_fam[fam]:
            files.append(("bad_args_%s.c" % fam, family_program(fam, by_fam[fam])))
    files.append(("bad_args_phases.c", phases_program(phase_calls(funcs))))
    total = sum(len(v) for v in by_fam.values())
    return files, total


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("abi_dir", nargs="?", default=DEFAULT_ABI_DIR)
    ap.add_argument("--check", action="store_true",
                    help="do not write; exit 1 if tests/c/generated is not what this would write")
    args = ap.parse_args(argv)
    try:
        files, total = outputs(args.abi_dir)
    except (AbiError, OSError) as e:
        print("gen_bad_args.py: %s" % e, file=sys.stderr)
        return 2
    if args.check:
        stale = []
        for name, text in files:
            try:
                with open(os.path.join(OUT_DIR, name), encoding="utf-8") as f:
                    if f.read() != text:
                        stale.append(name)
            except OSError:
                stale.append(name)
        have = set(os.listdir(OUT_DIR)) if os.path.isdir(OUT_DIR) else set()
        stale += sorted(have - {n for n, _ in files})
        if stale:
            print("gen_bad_args.py: tests/c/generated/%s out of date; rerun "
                  "python3 tools/gen_bad_args.py" % ", ".join(stale), file=sys.stderr)
            return 1
        print("tests/c/generated is up to date: %d bad-argument cases" % total)
        return 0
    os.makedirs(OUT_DIR, exist_ok=True)
    for name, text in files:
        with open(os.path.join(OUT_DIR, name), "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    print("wrote tests/c/generated/ (%d files): %d bad-argument cases" % (len(files), total))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
