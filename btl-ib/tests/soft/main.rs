//! Multi-process tests of the software verbs provider. The binary re-executes itself as the
//! peer process: `peer_entry` dispatches on SOFT_ROLE and exits.

mod harness;
mod mesh;
mod queues;
mod rdma;
mod regs;

#[test]
fn peer_entry() {
    let Ok(role) = std::env::var("SOFT_ROLE") else {
        return;
    };
    let a = harness::args();
    match role.as_str() {
        "mesh" => mesh::child(&a),
        "rnr" => queues::rnr_child(),
        "send_big" => queues::send_big_child(),
        "idle" => queues::idle_child(),
        "orderly" => queues::orderly_child(),
        "rdma_target" => rdma::target_child(),
        "remap_target" => rdma::remap_child(),
        "memlock" => regs::memlock_child(),
        r => panic!("unknown role {r}"),
    }
    std::process::exit(0);
}
