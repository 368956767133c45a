//! Which hosts a job runs on, with how many slots (Open MPI's ras): `--host a,b:2`,
//! `--hostfile FILE`, and the placement of ranks on them (`--map-by slot|node`, `--npernode`).

/// One host of the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    pub slots: usize,
}

/// `--host a,b:2,a`: a name alone is one slot, `name:N` N slots; a name given again adds its
/// slots (Open MPI's rule).
pub fn parse_host_list(list: &str) -> Result<Vec<Host>, String> {
    let mut hosts: Vec<Host> = Vec::new();
    for item in list.split(',').map(str::trim) {
        let (name, slots) = match item.rsplit_once(':') {
            Some((name, n)) => (
                name,
                n.parse::<usize>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("invalid --host entry '{item}': expected NAME or NAME:SLOTS with SLOTS at least 1"))?,
            ),
            None => (item, 1),
        };
        if name.is_empty() {
            return Err(format!("invalid --host '{list}': an empty host name"));
        }
        add(&mut hosts, name, slots);
    }
    Ok(hosts)
}

/// A hostfile: one host per line, `name [slots=N] [max_slots=M]`, `#` comments.
pub fn parse_hostfile(path: &str, text: &str) -> Result<Vec<Host>, String> {
    let mut hosts: Vec<Host> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        let mut words = line.split_whitespace();
        let Some(name) = words.next() else { continue };
        let mut slots = 1;
        for w in words {
            let bad = || {
                format!(
                    "{path}:{}: cannot read '{w}' (expected slots=N or max_slots=N)",
                    i + 1
                )
            };
            match w.split_once('=') {
                Some(("slots", n)) => {
                    slots = n.parse().ok().filter(|&n: &usize| n > 0).ok_or_else(bad)?
                }
                Some(("max_slots" | "max-slots", n)) => {
                    n.parse::<usize>().map_err(|_| bad())?;
                }
                _ => return Err(bad()),
            }
        }
        add(&mut hosts, name, slots);
    }
    if hosts.is_empty() {
        return Err(format!("hostfile {path} names no host"));
    }
    Ok(hosts)
}

fn add(hosts: &mut Vec<Host>, name: &str, slots: usize) {
    match hosts.iter_mut().find(|h| h.name == name) {
        Some(h) => h.slots += slots,
        None => hosts.push(Host {
            name: name.to_string(),
            slots,
        }),
    }
}

/// The hosts of a Slurm allocation: `SLURM_JOB_NODELIST` (`n[1-3,07],gpu5`) with the slots of
/// `SLURM_TASKS_PER_NODE` (`2(x3),1`, in the same order).
pub fn slurm_hosts(nodelist: &str, tasks_per_node: &str) -> Result<Vec<Host>, String> {
    let names = expand_nodelist(nodelist)?;
    let mut slots = Vec::new();
    for item in tasks_per_node
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let bad = || format!("cannot read SLURM_TASKS_PER_NODE={tasks_per_node}");
        let (n, times) = match item.split_once("(x") {
            Some((n, t)) => (
                n,
                t.strip_suffix(')')
                    .ok_or_else(bad)?
                    .parse::<usize>()
                    .map_err(|_| bad())?,
            ),
            None => (item, 1),
        };
        let n: usize = n.parse().map_err(|_| bad())?;
        slots.extend(std::iter::repeat(n).take(times));
    }
    if slots.len() != names.len() {
        return Err(format!(
            "SLURM_JOB_NODELIST={nodelist} names {} hosts but SLURM_TASKS_PER_NODE={tasks_per_node} gives {}",
            names.len(),
            slots.len()
        ));
    }
    Ok(names
        .into_iter()
        .zip(slots)
        .map(|(name, slots)| Host {
            name,
            slots: slots.max(1),
        })
        .collect())
}

/// Slurm's host list notation: comma-separated names, each with at most one bracketed range
/// list (`n[01-03,7]` is n01 n02 n03 n7: a range keeps its zero padding).
pub fn expand_nodelist(list: &str) -> Result<Vec<String>, String> {
    let bad = || format!("cannot read the host list {list:?}");
    let mut out = Vec::new();
    let mut rest = list.trim();
    while !rest.is_empty() {
        // The next name ends at a comma outside brackets.
        let mut depth = 0;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    _ => {}
                }
                c == ',' && depth == 0
            })
            .map_or(rest.len(), |(i, _)| i);
        let item = &rest[..end];
        rest = rest[end..].trim_start_matches(',');
        match item.split_once('[') {
            None if !item.is_empty() => out.push(item.to_string()),
            None => return Err(bad()),
            Some((prefix, more)) => {
                let (ranges, suffix) = more.split_once(']').ok_or_else(bad)?;
                for r in ranges.split(',') {
                    let (a, b) = r.split_once('-').unwrap_or((r, r));
                    let (lo, hi): (u64, u64) =
                        (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                    if hi < lo || hi - lo > 100_000 {
                        return Err(bad());
                    }
                    for k in lo..=hi {
                        out.push(format!("{prefix}{k:0width$}{suffix}", width = a.len()));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Whether `name` is this machine (started without a launch agent).
pub fn is_local(name: &str) -> bool {
    if matches!(name, "localhost" | "127.0.0.1" | "::1") {
        return true;
    }
    let me = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default();
    name == me || Some(name) == me.split('.').next()
}

/// How the ranks go onto the hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Fill each host's slots before the next (`--map-by slot`, the default).
    BySlot,
    /// One rank per host in turn (`--map-by node`).
    ByNode,
}

/// The host index of every rank, in rank order. `per_node` (`--npernode`) puts exactly that
/// many on each host. More ranks than slots is an error unless `oversubscribe`; then the
/// remaining ranks go round robin.
pub fn place(
    hosts: &[Host],
    n: usize,
    order: Order,
    per_node: Option<usize>,
    oversubscribe: bool,
) -> Result<Vec<usize>, String> {
    let slots: Vec<usize> = match per_node {
        Some(k) => vec![k; hosts.len()],
        None => hosts.iter().map(|h| h.slots).collect(),
    };
    let total: usize = slots.iter().sum();
    if n > total && !oversubscribe {
        let why = match per_node {
            Some(k) => format!("--npernode {k} on {} hosts places {total}", hosts.len()),
            None => format!("the {} hosts have {total} slots", hosts.len()),
        };
        return Err(format!(
            "{n} ranks requested but {why}; use --oversubscribe to run more ranks than slots"
        ));
    }
    let mut left = slots.clone();
    let mut node_of = Vec::with_capacity(n);
    match order {
        Order::BySlot => {
            for (h, &s) in slots.iter().enumerate() {
                for _ in 0..s {
                    if node_of.len() < n {
                        node_of.push(h);
                        left[h] -= 1;
                    }
                }
            }
        }
        Order::ByNode => {
            while node_of.len() < n && left.iter().any(|&l| l > 0) {
                for h in 0..hosts.len() {
                    if left[h] > 0 && node_of.len() < n {
                        node_of.push(h);
                        left[h] -= 1;
                    }
                }
            }
        }
    }
    // Oversubscribed: the rest round robin.
    let mut h = 0;
    while node_of.len() < n {
        node_of.push(h % hosts.len());
        h += 1;
    }
    // Ranks are numbered host by host under --map-by slot; under node they alternate.
    if order == Order::BySlot {
        node_of.sort_unstable();
    }
    Ok(node_of)
}

/// PMI's `PMI_process_mapping` for a placement, in Hydra's notation: runs of ranks on one host
/// as `(host,1,count)` blocks.
pub fn process_mapping(node_of: &[usize]) -> String {
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < node_of.len() {
        let j = (i..node_of.len())
            .find(|&j| node_of[j] != node_of[i])
            .unwrap_or(node_of.len());
        blocks.push(format!("({},1,{})", node_of[i], j - i));
        i = j;
    }
    format!("(vector,{})", blocks.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(name: &str, slots: usize) -> Host {
        Host {
            name: name.into(),
            slots,
        }
    }

    #[test]
    fn host_lists_add_up_slots() {
        assert_eq!(
            parse_host_list("a,b:2,a").unwrap(),
            vec![h("a", 2), h("b", 2)]
        );
        assert!(parse_host_list("a,b:0").unwrap_err().contains("'b:0'"));
        assert!(parse_host_list("a,,b").is_err());
    }

    #[test]
    fn hostfiles_take_slots_and_comments() {
        let text = "# cluster\nn1 slots=4\n\nn2 max_slots=8   # spare\nn1\n";
        assert_eq!(
            parse_hostfile("hf", text).unwrap(),
            vec![h("n1", 5), h("n2", 1)]
        );
        assert!(parse_hostfile("hf", "n1 cpus=3\n")
            .unwrap_err()
            .starts_with("hf:1:"));
        assert!(parse_hostfile("hf", "# nothing\n").is_err());
    }

    #[test]
    fn placement_by_slot_node_and_npernode() {
        let hosts = [h("a", 2), h("b", 2)];
        assert_eq!(
            place(&hosts, 4, Order::BySlot, None, false).unwrap(),
            [0, 0, 1, 1]
        );
        assert_eq!(
            place(&hosts, 4, Order::ByNode, None, false).unwrap(),
            [0, 1, 0, 1]
        );
        assert_eq!(
            place(&hosts, 3, Order::BySlot, None, false).unwrap(),
            [0, 0, 1]
        );
        assert_eq!(
            place(&hosts, 2, Order::BySlot, Some(1), false).unwrap(),
            [0, 1]
        );
        let e = place(&hosts, 5, Order::BySlot, None, false).unwrap_err();
        assert!(
            e.contains("4 slots") && e.contains("--oversubscribe"),
            "{e}"
        );
        assert_eq!(
            place(&hosts, 6, Order::BySlot, None, true).unwrap(),
            [0, 0, 0, 1, 1, 1]
        );
    }

    #[test]
    fn slurm_allocations() {
        assert_eq!(
            expand_nodelist("n[01-03,7],gpu5,x[9]y").unwrap(),
            ["n01", "n02", "n03", "n7", "gpu5", "x9y"]
        );
        assert!(expand_nodelist("n[3-1]").is_err());
        assert!(expand_nodelist("n[1-2").is_err());
        assert_eq!(
            slurm_hosts("node[1-3]", "2(x2),1").unwrap(),
            vec![h("node1", 2), h("node2", 2), h("node3", 1)]
        );
        assert!(slurm_hosts("node[1-3]", "2")
            .unwrap_err()
            .contains("gives 1"));
    }

    #[test]
    fn mappings_in_hydra_notation() {
        assert_eq!(process_mapping(&[0, 0, 1, 1]), "(vector,(0,1,2),(1,1,2))");
        assert_eq!(
            process_mapping(&[0, 1, 0, 1]),
            "(vector,(0,1,1),(1,1,1),(0,1,1),(1,1,1))"
        );
    }
}
