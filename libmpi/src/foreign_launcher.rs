//! A launcher we cannot speak to: Open MPI's mpirun talks PMIx and passes no `PMI_FD`, so each of
//! its ranks would otherwise run as a singleton, silently computing alone.

use crate::error::{err, ErrorClass, Result};

/// With no `PMI_FD`: fine for a real singleton (also a job of one rank, which is one); an error
/// when a PMIx launcher started this process as one of several ranks, or of an unknown number.
/// `env` reads the environment.
pub fn check_singleton(env: &dyn Fn(&str) -> Option<String>) -> Result<()> {
    let size = env("OMPI_COMM_WORLD_SIZE");
    let open_mpi = size.is_some() || env("OMPI_COMM_WORLD_RANK").is_some();
    let pmix = env("PMIX_RANK").is_some() || env("PMIX_NAMESPACE").is_some();
    if !open_mpi && !pmix {
        return Ok(());
    }
    if size.and_then(|s| s.trim().parse::<u64>().ok()) == Some(1) {
        return Ok(());
    }
    let launcher = if open_mpi {
        "Open MPI's mpirun (PMIx)"
    } else {
        "a PMIx launcher"
    };
    err(
        ErrorClass::Other,
        format!(
            "this program uses rmpi but was started by {launcher}, which rmpi cannot speak: \
             run it with rmpi's mpirun (or MPICH's mpiexec, through PMI-1)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(vars: &[(&str, &str)]) -> std::result::Result<(), String> {
        let env = |k: &str| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        };
        check_singleton(&env).map_err(|e| e.to_string())
    }

    #[test]
    fn singletons_run() {
        assert_eq!(check(&[]), Ok(()));
        assert_eq!(check(&[("OMPI_COMM_WORLD_SIZE", "1")]), Ok(()));
        let one = [
            ("OMPI_COMM_WORLD_SIZE", "1"),
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("PMIX_RANK", "0"),
            ("PMIX_NAMESPACE", "1316880385"),
        ];
        assert_eq!(check(&one), Ok(()));
    }

    #[test]
    fn several_ranks_of_open_mpi_fail() {
        let e = check(&[("OMPI_COMM_WORLD_SIZE", "2"), ("PMIX_RANK", "1")]).unwrap_err();
        assert!(e.contains("started by Open MPI's mpirun (PMIx)"), "{e}");
        assert!(e.contains("run it with rmpi's mpirun"), "{e}");
        // Size unknown.
        assert!(check(&[("OMPI_COMM_WORLD_RANK", "0")]).is_err());
        assert!(check(&[("OMPI_COMM_WORLD_SIZE", "many")]).is_err());
        let e = check(&[("PMIX_NAMESPACE", "slurm.pmix.1.0")]).unwrap_err();
        assert!(e.contains("started by a PMIx launcher"), "{e}");
    }
}
