//! Issue 14 item 1: any committed datatype (holes, negative displacements, resized extents,
//! different send and receive layouts of one type signature) in every collective and
//! point-to-point call, plus the datatype introspection calls; C programs at np 1, 3 and 5
//! (not powers of two), over the suite's transport (`RMPI_TEST_BTL=ib` for ib).

use rmpi_tests::*;

fn run_c(name: &str) {
    let p = c_program(&format!("tests/c/{name}.c"));
    for np in [1, 3, 5] {
        let r = mpirun_np(np, &p, &[]);
        r.assert_ok();
        assert!(
            r.stdout.contains(" No Errors"),
            "{name} at np {np}:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
}

#[test]
fn c_collectives_with_derived_types() {
    run_c("coll_derived");
}

#[test]
fn c_point_to_point_modes_with_derived_types() {
    run_c("p2p_derived");
}

#[test]
fn c_datatype_introspection_attributes_external32_darray() {
    run_c("dtype_introspect");
}

#[test]
fn c_intercommunicator_collectives_with_derived_types() {
    run_c("inter_derived");
}
