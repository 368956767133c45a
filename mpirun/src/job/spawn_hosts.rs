//! Where MPI_Comm_spawn's children run in a multi-host job, as Open MPI maps them: by slot over
//! the job's hosts (or those a command's `host` info key names, which must be the job's), the
//! free slots first, in host order; once every candidate is full, on the least loaded one.

use crate::ras::Host;

/// Each new rank's host index. `busy`: ranks running on each host now; `wanted`: per command,
/// its rank count and its `host` info value if any.
pub fn place(
    hosts: &[Host],
    busy: &[usize],
    wanted: &[(usize, Option<&str>)],
) -> Result<Vec<usize>, String> {
    let mut load = busy.to_vec();
    let mut out = Vec::new();
    for &(n, names) in wanted {
        let candidates: Vec<usize> = match names {
            None => (0..hosts.len()).collect(),
            Some(list) => {
                let mut v = Vec::new();
                for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    // `name:N` as in --host; the slots are the job's.
                    let name = name.split(':').next().unwrap_or(name);
                    let h = hosts.iter().position(|h| h.name == name).ok_or_else(|| {
                        let all: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
                        format!(
                            "the info key host names {name}, which is not one of the job's hosts ({})",
                            all.join(",")
                        )
                    })?;
                    if !v.contains(&h) {
                        v.push(h);
                    }
                }
                if v.is_empty() {
                    return Err(format!("the info key host is empty ({list:?})"));
                }
                v
            }
        };
        for _ in 0..n {
            let h = candidates
                .iter()
                .copied()
                .find(|&h| load[h] < hosts[h].slots)
                .or_else(|| candidates.iter().copied().min_by_key(|&h| load[h]))
                .expect("at least one candidate");
            load[h] += 1;
            out.push(h);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts() -> Vec<Host> {
        vec![
            Host {
                name: "a".into(),
                slots: 2,
            },
            Host {
                name: "b".into(),
                slots: 2,
            },
        ]
    }

    #[test]
    fn free_slots_first_then_the_least_loaded() {
        assert_eq!(place(&hosts(), &[1, 1], &[(2, None)]), Ok(vec![0, 1]));
        assert_eq!(place(&hosts(), &[2, 1], &[(3, None)]), Ok(vec![1, 0, 1]));
        assert_eq!(
            place(&hosts(), &[0, 0], &[(1, None), (1, None)]),
            Ok(vec![0, 0])
        );
    }

    #[test]
    fn the_host_key_picks_among_the_jobs_hosts() {
        assert_eq!(
            place(&hosts(), &[0, 0], &[(3, Some("b"))]),
            Ok(vec![1, 1, 1])
        );
        assert_eq!(
            place(&hosts(), &[2, 2], &[(1, None), (2, Some("a:1, b"))]),
            Ok(vec![0, 1, 0])
        );
        assert!(place(&hosts(), &[0, 0], &[(1, Some("c"))])
            .unwrap_err()
            .contains("not one of the job's hosts (a,b)"));
    }
}
