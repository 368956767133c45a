//! Programs built with another MPI (Open MPI, MPICH). Run under our mpirun they do not speak our
//! PMI (Open MPI) or speak it with no promise of working (MPICH), so N of them would be N
//! singletons; instead mpirun names the MPI and what to do. Recognised by library name: the
//! libraries a program needs (up front, `needed`) or has loaded (at run time, `running`).

pub mod needed;
pub mod running;
pub mod schedule;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mpi {
    OpenMpi,
    Mpich,
}

impl Mpi {
    pub fn name(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "Open MPI",
            Mpi::Mpich => "MPICH",
        }
    }

    /// The launcher that runs such a program.
    pub fn launcher(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "Open MPI's mpirun",
            Mpi::Mpich => "MPICH's mpiexec",
        }
    }
}

/// A library that gives away a foreign MPI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    pub mpi: Mpi,
    /// The name as found (a DT_NEEDED entry, or a mapped file's base name).
    pub library: String,
}

/// The foreign MPI libraries, by soname (a mapped file is the soname or the soname + `.x.y`).
/// `libmpi.so.12` is MPICH's compatibility name for `libmpich.so.12`.
const LIBRARIES: &[(&str, Mpi)] = &[
    ("libmpi.so.40", Mpi::OpenMpi),
    ("libmpich.so.12", Mpi::Mpich),
    ("libmpi.so.12", Mpi::Mpich),
];

/// Open MPI's runtime libraries (any version): only loaded by Open MPI programs. Hints only: a
/// program never needs them directly, but they are mapped beside libmpi.
const HINTS: &[(&str, Mpi)] = &[
    ("libopen-rte.so", Mpi::OpenMpi),
    ("libopen-pal.so", Mpi::OpenMpi),
];

/// The MPI standard ABI's library, ours: a program that has it is ours, whatever else it has.
const STANDARD_ABI: &str = "libmpi_abi.so";

/// Whether `file` is `soname` or a version of it (`libmpi.so.40.30.4` for `libmpi.so.40`).
fn is_version_of(file: &str, soname: &str) -> bool {
    file.strip_prefix(soname)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// The foreign MPI among library base names, if any; `hints` also counts Open MPI's runtime
/// libraries. Nothing when the standard ABI library is among them.
pub fn classify<'a>(names: impl IntoIterator<Item = &'a str>, hints: bool) -> Option<Foreign> {
    let mut best: Option<(Foreign, bool)> = None; // and whether it is a hint
    for name in names {
        if is_version_of(name, STANDARD_ABI) {
            return None;
        }
        let Some((mpi, is_hint)) = lookup(name, hints) else {
            continue;
        };
        // The first real MPI library is the one to name; a hint only until one shows up.
        let better = match &best {
            None => true,
            Some((_, best_is_hint)) => *best_is_hint && !is_hint,
        };
        if better {
            let library = name.to_string();
            best = Some((Foreign { mpi, library }, is_hint));
        }
    }
    best.map(|(f, _)| f)
}

fn lookup(name: &str, hints: bool) -> Option<(Mpi, bool)> {
    let hint_list = if hints { HINTS } else { &[] };
    let libs = LIBRARIES.iter().map(|l| (l, false));
    libs.chain(hint_list.iter().map(|l| (l, true)))
        .find(|((soname, _), _)| is_version_of(name, soname))
        .map(|(&(_, mpi), is_hint)| (mpi, is_hint))
}

/// The up-front refusal: `program` as the user typed it.
pub fn needs_message(program: &str, f: &Foreign) -> String {
    format!(
        "{program} was built with {} (it needs {}): run it with {}, or rebuild it with rmpi's mpicc",
        f.mpi.name(),
        f.library,
        f.mpi.launcher()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mpi_of(names: &[&str], hints: bool) -> Option<(Mpi, String)> {
        classify(names.iter().copied(), hints).map(|f| (f.mpi, f.library))
    }

    #[test]
    fn needed_entries() {
        let open = |l: &str| Some((Mpi::OpenMpi, l.to_string()));
        let mpich = |l: &str| Some((Mpi::Mpich, l.to_string()));
        assert_eq!(
            mpi_of(&["libmpi.so.40", "libc.so.6"], false),
            open("libmpi.so.40")
        );
        assert_eq!(
            mpi_of(&["libc.so.6", "libmpich.so.12"], false),
            mpich("libmpich.so.12")
        );
        assert_eq!(mpi_of(&["libmpi.so.12"], false), mpich("libmpi.so.12"));
        // Ours, plain programs, and names that merely look alike.
        assert_eq!(mpi_of(&["libmpi_abi.so.1", "libc.so.6"], false), None);
        assert_eq!(mpi_of(&["libmpi.so"], false), None);
        assert_eq!(mpi_of(&["libc.so.6", "libm.so.6"], false), None);
        assert_eq!(mpi_of(&[], false), None);
        assert_eq!(mpi_of(&["libmpi.so.4"], false), None);
        assert_eq!(mpi_of(&["libmpi.so.400"], false), None);
        assert_eq!(mpi_of(&["libmpich.so.1"], false), None);
        // Built against both: the standard ABI makes it ours.
        assert_eq!(mpi_of(&["libmpi.so.40", "libmpi_abi.so.1"], false), None);
    }

    #[test]
    fn mapped_files_and_hints() {
        assert_eq!(
            mpi_of(&["libopen-pal.so.40.30.3", "libmpi.so.40.30.4"], true),
            Some((Mpi::OpenMpi, "libmpi.so.40.30.4".into()))
        );
        assert_eq!(
            mpi_of(&["libopen-pal.so.80.0.5"], true),
            Some((Mpi::OpenMpi, "libopen-pal.so.80.0.5".into()))
        );
        assert_eq!(mpi_of(&["libopen-rte.so.40"], false), None);
        assert_eq!(
            mpi_of(&["libmpich.so.12.3.0"], true),
            Some((Mpi::Mpich, "libmpich.so.12.3.0".into()))
        );
        assert_eq!(
            mpi_of(&["libmpi_abi.so.1.0.0", "libopen-pal.so.40"], true),
            None
        );
    }

    #[test]
    fn message() {
        let f = Foreign {
            mpi: Mpi::OpenMpi,
            library: "libmpi.so.40".into(),
        };
        assert_eq!(
            needs_message("./ompi_hello", &f),
            "./ompi_hello was built with Open MPI (it needs libmpi.so.40): run it with Open MPI's mpirun, or rebuild it with rmpi's mpicc"
        );
    }
}
