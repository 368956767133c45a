//! `mpirun --shm-report [-np N] [--mca K V]... [--json]` and `mpirun --mca-list`: print the
//! shared-memory model or the tunables; no rank is started.

use std::process::ExitCode;

use crate::cli::Cli;

pub fn run(cli: &Cli, ncores: usize) -> ExitCode {
    if cli.mca_list {
        print!("{}", mca_list());
        if !cli.shm_report {
            return ExitCode::SUCCESS;
        }
    }
    let n = match cli.np.as_deref() {
        None => ncores,
        Some(s) => match s.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                return fail(&format!(
                    "invalid number of ranks '{s}': expected a positive integer"
                ))
            }
        },
    };
    // Same precedence as a real launch: --mca, then RMPI_MCA_<name>, then <name>.
    let mca: Vec<(&String, &String)> = cli
        .mca
        .chunks(2)
        .filter_map(|kv| match kv {
            [k, v] => Some((k, v)),
            _ => None,
        })
        .collect();
    let lookup = |name: &str| {
        mca.iter()
            .rev()
            .find(|(k, _)| k.as_str() == name)
            .map(|(_, v)| v.to_string())
            .or_else(|| std::env::var(format!("RMPI_MCA_{name}")).ok())
            .or_else(|| std::env::var(name).ok())
    };
    let params = match btl_sm::Params::resolve(n, &lookup) {
        Ok(p) => p,
        Err(e) => return fail(&e.to_string()),
    };
    let r = btl_sm::model::Report::new(&params, page_size());
    if cli.json {
        println!("{}", r.json());
    } else {
        print!("{}", r.text());
    }
    ExitCode::SUCCESS
}

fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

fn mca_list() -> String {
    let mut s = String::from(
        "MCA parameters (--mca NAME VALUE, or environment variable RMPI_MCA_NAME or NAME):\n",
    );
    // `btl` first, then sm's tunables, then ib's, then tcp's.
    let (btl, ib) = btl_ib::PARAMS.split_at(1);
    let all = btl.iter().map(|p| (p.name, p.default, p.meaning));
    let all = all.chain(
        btl_sm::PARAMS
            .iter()
            .map(|p| (p.name, p.default, p.meaning)),
    );
    let all = all.chain(ib.iter().map(|p| (p.name, p.default, p.meaning)));
    let all = all.chain(
        btl_tcp::PARAMS
            .iter()
            .map(|p| (p.name, p.default, p.meaning)),
    );
    let all = all.chain(crate::mca::GENERAL.iter().copied());
    for (name, default, meaning) in all {
        s += &format!("  {name}\n      default: {default}\n      {meaning}\n");
    }
    s
}

fn fail(msg: &str) -> ExitCode {
    crate::report::say(&format!("mpirun: {msg}"));
    ExitCode::from(2)
}
