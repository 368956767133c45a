//! Multi-process hammer: child processes (this test binary re-executed) attach to one memfd
//! segment through an inherited fd, as ranks under mpirun do, and stream checked fragments.

mod common;

use std::os::fd::AsRawFd;
use std::time::Duration;

use btl_sm::{Params, Segment, SmTransport};
use common::{run_rank, spawn_self, wait_all};

const CHILD_ENV: &str = "BTLSM_HAMMER_CHILD";
/// Fragments per ordered pair; override with BTLSM_HAMMER_COUNT.
const COUNT: u64 = 100_000;
const STALL: Duration = Duration::from_secs(20);
const LIMIT: Duration = Duration::from_secs(240);

fn count() -> u64 {
    std::env::var("BTLSM_HAMMER_COUNT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(COUNT)
}

/// The child side: does nothing unless started by `spawn_ranks`.
#[test]
fn hammer_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    // spec: "<fd> <n> <me> <count> <send_to,..> <recv_from,..>"
    let f: Vec<&str> = spec.split(' ').collect();
    let num = |s: &str| s.parse::<usize>().unwrap();
    let list =
        |s: &str| -> Vec<usize> { s.split(',').filter(|x| !x.is_empty()).map(num).collect() };
    let (fd, n, me, count) = (num(f[0]) as i32, num(f[1]), num(f[2]), num(f[3]) as u64);
    let p = Params::from_env(n).unwrap();
    let mut t = SmTransport::new(Segment::attach_fd(fd, &p).unwrap(), me).unwrap();
    let r = run_rank(&mut t, &list(f[4]), &list(f[5]), count, STALL);
    if let Err(e) = r {
        eprintln!("hammer child: {e}");
        std::process::exit(3);
    }
    std::process::exit(0);
}

fn join(v: &[usize]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// n ranks on one segment; `roles[me] = (send_to, recv_from)`; rank 0 runs in this process when
/// `parent_is_0`, the others in children.
fn spawn_ranks(
    n: usize,
    mca: &[(&str, &str)],
    roles: &[(Vec<usize>, Vec<usize>)],
    parent_is_0: bool,
) {
    let p = Params::resolve(n, &|k| {
        mca.iter()
            .find(|(name, _)| *name == k)
            .map(|(_, v)| v.to_string())
    })
    .unwrap();
    let fd = Segment::create_memfd(&p).unwrap();
    let count = count();
    let first_child = usize::from(parent_is_0);
    let mut children: Vec<_> = (first_child..n)
        .map(|me| {
            let mut env: Vec<(String, String)> = mca
                .iter()
                .map(|(k, v)| (format!("RMPI_MCA_{k}"), v.to_string()))
                .collect();
            let (to, from) = &roles[me];
            env.push((
                CHILD_ENV.into(),
                format!(
                    "{} {n} {me} {count} {} {}",
                    fd.as_raw_fd(),
                    join(to),
                    join(from)
                ),
            ));
            spawn_self("hammer_child", &env)
        })
        .collect();
    let parent = if parent_is_0 {
        let mut t = SmTransport::new(Segment::attach_fd(fd.as_raw_fd(), &p).unwrap(), 0).unwrap();
        Some(run_rank(&mut t, &roles[0].0, &roles[0].1, count, STALL))
    } else {
        None
    };
    if let Some(Err(e)) = parent {
        // Senders would only stall now; don't wait for their watchdogs.
        for c in &mut children {
            let _ = c.kill();
            let _ = c.wait();
        }
        panic!("{e}");
    }
    wait_all(&mut children, LIMIT).unwrap();
}

fn fan_in(n: usize, mca: &[(&str, &str)]) {
    let mut roles = vec![(vec![], (1..n).collect::<Vec<_>>())];
    roles.extend((1..n).map(|_| (vec![0], vec![])));
    spawn_ranks(n, mca, &roles, true);
}

fn all_to_all(n: usize, mca: &[(&str, &str)]) {
    let roles: Vec<_> = (0..n)
        .map(|me| {
            let others: Vec<usize> = (0..n).filter(|&p| p != me).collect();
            (others.clone(), others)
        })
        .collect();
    spawn_ranks(n, mca, &roles, false);
}

#[test]
fn four_senders_one_receiver() {
    fan_in(5, &[]);
}

#[test]
fn four_senders_one_receiver_tiny_rings() {
    fan_in(
        5,
        &[("btl_sm_fifo_cells", "4"), ("btl_sm_payload_bytes", "1024")],
    );
}

#[test]
fn all_to_all_four() {
    all_to_all(4, &[]);
}

#[test]
fn all_to_all_four_tiny_rings() {
    all_to_all(
        4,
        &[("btl_sm_fifo_cells", "4"), ("btl_sm_payload_bytes", "1024")],
    );
}

/// The O(n) layout: four processes CAS on one receiver's FIFO head at once.
const FIFO: (&str, &str) = ("btl_sm_fastbox_max_procs", "0");

const NO_FBOX: (&str, &str) = ("btl_sm_fastboxes", "0");

#[test]
fn fifo_four_senders_one_receiver() {
    fan_in(5, &[FIFO, NO_FBOX]);
}

/// Two senders get fast boxes, two share the FIFO.
#[test]
fn fifo_and_fast_boxes_four_senders_one_receiver() {
    fan_in(
        5,
        &[
            FIFO,
            ("btl_sm_fastboxes", "2"),
            ("btl_sm_fastbox_size", "4"),
        ],
    );
}

#[test]
fn fifo_four_senders_one_receiver_tiny_queue_and_pool() {
    fan_in(
        5,
        &[
            FIFO,
            NO_FBOX,
            ("btl_sm_fifo_size", "4"),
            ("btl_sm_fragments", "2"),
            ("btl_sm_fragment_size", "256"),
        ],
    );
}

#[test]
fn fifo_all_to_all_four() {
    all_to_all(4, &[FIFO, NO_FBOX]);
}

#[test]
fn fifo_and_fast_boxes_all_to_all_four() {
    all_to_all(4, &[FIFO, ("btl_sm_fastboxes", "1")]);
}

#[test]
fn fifo_all_to_all_four_tiny_queue_and_pool() {
    all_to_all(
        4,
        &[
            FIFO,
            ("btl_sm_fastboxes", "1"),
            ("btl_sm_fastbox_size", "2"),
            ("btl_sm_fifo_size", "2"),
            ("btl_sm_fragments", "1"),
            ("btl_sm_fragment_size", "128"),
            ("btl_sm_cacheline_size", "128"),
        ],
    );
}
