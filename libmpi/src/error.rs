//! MPI error classes and the library's error type.

use std::fmt;

/// MPI error classes (values from the MPI 5.0 ABI).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ErrorClass {
    Buffer = 1,
    Count = 2,
    Type = 3,
    Tag = 4,
    Comm = 5,
    Rank = 6,
    Request = 7,
    Root = 8,
    Group = 9,
    Op = 10,
    Topology = 11,
    Dims = 12,
    Arg = 13,
    Unknown = 14,
    Truncate = 15,
    Other = 16,
    Intern = 17,
    Pending = 18,
    InStatus = 19,
    InfoKey = 31,
    InfoNokey = 32,
    InfoValue = 33,
    Info = 34,
    Keyval = 36,
    NoMem = 39,
    UnsupportedOperation = 55,
    ProcAborted = 58,
    Errhandler = 61,
    Assert = 22,
    Base = 24,
    Disp = 26,
    Locktype = 37,
    RmaAttach = 46,
    RmaConflict = 47,
    RmaRange = 48,
    RmaShared = 49,
    RmaSync = 50,
    Size = 52,
    Win = 56,
    RmaFlavor = 57,
    Name = 38,
    Port = 43,
    Service = 51,
    Spawn = 53,
    Access = 20,
    Amode = 21,
    BadFile = 23,
    Conversion = 25,
    DupDatarep = 27,
    FileExists = 28,
    FileInUse = 29,
    File = 30,
    Io = 35,
    NotSame = 40,
    NoSpace = 41,
    NoSuchFile = 42,
    Quota = 44,
    ReadOnly = 45,
    UnsupportedDatarep = 54,
    Session = 60,
}

impl ErrorClass {
    /// The class's name as MPI spells it.
    pub fn name(self) -> &'static str {
        use ErrorClass::*;
        match self {
            Buffer => "MPI_ERR_BUFFER",
            Count => "MPI_ERR_COUNT",
            Type => "MPI_ERR_TYPE",
            Tag => "MPI_ERR_TAG",
            Comm => "MPI_ERR_COMM",
            Rank => "MPI_ERR_RANK",
            Request => "MPI_ERR_REQUEST",
            Root => "MPI_ERR_ROOT",
            Group => "MPI_ERR_GROUP",
            Op => "MPI_ERR_OP",
            Topology => "MPI_ERR_TOPOLOGY",
            Dims => "MPI_ERR_DIMS",
            Arg => "MPI_ERR_ARG",
            Unknown => "MPI_ERR_UNKNOWN",
            Truncate => "MPI_ERR_TRUNCATE",
            Other => "MPI_ERR_OTHER",
            Intern => "MPI_ERR_INTERN",
            Pending => "MPI_ERR_PENDING",
            InStatus => "MPI_ERR_IN_STATUS",
            InfoKey => "MPI_ERR_INFO_KEY",
            InfoNokey => "MPI_ERR_INFO_NOKEY",
            InfoValue => "MPI_ERR_INFO_VALUE",
            Info => "MPI_ERR_INFO",
            Keyval => "MPI_ERR_KEYVAL",
            NoMem => "MPI_ERR_NO_MEM",
            UnsupportedOperation => "MPI_ERR_UNSUPPORTED_OPERATION",
            ProcAborted => "MPI_ERR_PROC_ABORTED",
            Errhandler => "MPI_ERR_ERRHANDLER",
            Assert => "MPI_ERR_ASSERT",
            Base => "MPI_ERR_BASE",
            Disp => "MPI_ERR_DISP",
            Locktype => "MPI_ERR_LOCKTYPE",
            RmaAttach => "MPI_ERR_RMA_ATTACH",
            RmaConflict => "MPI_ERR_RMA_CONFLICT",
            RmaRange => "MPI_ERR_RMA_RANGE",
            RmaShared => "MPI_ERR_RMA_SHARED",
            RmaSync => "MPI_ERR_RMA_SYNC",
            Size => "MPI_ERR_SIZE",
            Win => "MPI_ERR_WIN",
            RmaFlavor => "MPI_ERR_RMA_FLAVOR",
            Name => "MPI_ERR_NAME",
            Port => "MPI_ERR_PORT",
            Service => "MPI_ERR_SERVICE",
            Spawn => "MPI_ERR_SPAWN",
            Access => "MPI_ERR_ACCESS",
            Amode => "MPI_ERR_AMODE",
            BadFile => "MPI_ERR_BAD_FILE",
            Conversion => "MPI_ERR_CONVERSION",
            DupDatarep => "MPI_ERR_DUP_DATAREP",
            FileExists => "MPI_ERR_FILE_EXISTS",
            FileInUse => "MPI_ERR_FILE_IN_USE",
            File => "MPI_ERR_FILE",
            Io => "MPI_ERR_IO",
            NotSame => "MPI_ERR_NOT_SAME",
            NoSpace => "MPI_ERR_NO_SPACE",
            NoSuchFile => "MPI_ERR_NO_SUCH_FILE",
            Quota => "MPI_ERR_QUOTA",
            ReadOnly => "MPI_ERR_READ_ONLY",
            UnsupportedDatarep => "MPI_ERR_UNSUPPORTED_DATAREP",
            Session => "MPI_ERR_SESSION",
        }
    }

    /// A one-line description, as MPI_Error_string gives it.
    pub fn description(self) -> &'static str {
        use ErrorClass::*;
        match self {
            Buffer => "invalid buffer pointer",
            Count => "invalid count argument",
            Type => "invalid datatype",
            Tag => "invalid tag",
            Comm => "invalid communicator",
            Rank => "invalid rank",
            Request => "invalid request",
            Root => "invalid root",
            Group => "invalid group",
            Op => "invalid reduce operation",
            Topology => "invalid topology",
            Dims => "invalid dimension argument",
            Arg => "invalid argument of some other kind",
            Unknown => "unknown error",
            Truncate => "message truncated",
            Other => "known error not in this list",
            Intern => "internal error",
            Pending => "pending request",
            InStatus => "error code is in status",
            InfoKey => "invalid info key (empty or too long)",
            InfoNokey => "no such key in the info object",
            InfoValue => "invalid info value (too long)",
            Info => "invalid info object",
            Keyval => "invalid attribute key",
            NoMem => "out of memory",
            UnsupportedOperation => "operation not supported",
            ProcAborted => "a process in the job has aborted",
            Errhandler => "invalid error handler",
            Assert => "invalid assert argument",
            Base => "invalid base address",
            Disp => "invalid displacement",
            Locktype => "invalid lock type",
            RmaAttach => "memory cannot be attached",
            RmaConflict => "conflicting accesses to a window",
            RmaRange => "target memory is outside the window",
            RmaShared => "memory cannot be shared",
            RmaSync => "wrong synchronization of RMA calls",
            Size => "invalid size argument",
            Win => "invalid window",
            RmaFlavor => "wrong window flavor for this call",
            Name => "no service published under this name",
            Port => "invalid port name",
            Service => "invalid service name (not published)",
            Spawn => "the processes could not be spawned",
            Access => "permission denied",
            Amode => "invalid file access mode",
            BadFile => "invalid file name",
            Conversion => "data conversion failed",
            DupDatarep => "data representation already registered",
            FileExists => "file exists",
            FileInUse => "file in use",
            File => "invalid file handle",
            Io => "input/output error",
            NotSame => "arguments differ between the processes of a collective call",
            NoSpace => "no space left on the device",
            NoSuchFile => "no such file or directory",
            Quota => "quota exceeded",
            ReadOnly => "read-only file or file system",
            UnsupportedDatarep => "unsupported data representation",
            Session => "invalid session",
        }
    }

    pub fn from_code(code: i32) -> Option<ErrorClass> {
        use ErrorClass::*;
        const ALL: [ErrorClass; 60] = [
            Buffer,
            Count,
            Type,
            Tag,
            Comm,
            Rank,
            Request,
            Root,
            Group,
            Op,
            Topology,
            Dims,
            Arg,
            Unknown,
            Truncate,
            Other,
            Intern,
            Pending,
            InStatus,
            InfoKey,
            InfoNokey,
            InfoValue,
            Info,
            Keyval,
            NoMem,
            UnsupportedOperation,
            ProcAborted,
            Errhandler,
            Assert,
            Base,
            Disp,
            Locktype,
            RmaAttach,
            RmaConflict,
            RmaRange,
            RmaShared,
            RmaSync,
            Size,
            Win,
            RmaFlavor,
            Access,
            Amode,
            BadFile,
            Conversion,
            DupDatarep,
            FileExists,
            FileInUse,
            File,
            Io,
            NotSame,
            NoSpace,
            NoSuchFile,
            Quota,
            ReadOnly,
            UnsupportedDatarep,
            Session,
            Name,
            Port,
            Service,
            Spawn,
        ];
        ALL.into_iter().find(|c| *c as i32 == code)
    }
}

/// An MPI error: its class and a message naming what went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub class: ErrorClass,
    pub message: String,
    /// A code of the user's (MPI_Add_error_code/class) returned by a callback, passed on as
    /// the call's result; `class` is then only what Rust callers see.
    user_code: Option<i32>,
}

impl Error {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Error {
        Error {
            class,
            message: message.into(),
            user_code: None,
        }
    }

    /// An error carrying a user-defined code (one MPI_Add_error_code/class gave).
    pub fn with_user_code(code: i32, message: impl Into<String>) -> Error {
        Error {
            user_code: Some(code),
            ..Error::new(ErrorClass::Other, message)
        }
    }

    /// The MPI error code: the class, or the user's code a callback returned.
    pub fn code(&self) -> i32 {
        self.user_code.unwrap_or(self.class as i32)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class.name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Shorthand for building an `Err`.
pub(crate) fn err<T>(class: ErrorClass, message: impl Into<String>) -> Result<T> {
    Err(Error::new(class, message))
}
