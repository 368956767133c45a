//! The Rust API for communicators: duplicate (isolated traffic), split (colors, reversed keys,
//! None), split_shared, create from a group, groups, compare, names, error handler choice, and
//! many communicators created and dropped.

use std::cell::Cell;
use std::rc::Rc;

use rmpi::{Comparison, ErrorClass, ErrorHandler, Keyval, Tag};

/// An attribute value that counts its clones and drops.
struct Counted {
    value: i32,
    clones: Rc<Cell<i32>>,
    drops: Rc<Cell<i32>>,
}

impl Clone for Counted {
    fn clone(&self) -> Counted {
        self.clones.set(self.clones.get() + 1);
        Counted {
            value: self.value + 1,
            clones: self.clones.clone(),
            drops: self.drops.clone(),
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.set(self.drops.get() + 1);
    }
}

/// Typed attributes: cloned on duplicate, dropped on replace, delete and free.
fn attributes(world: &rmpi::Communicator) {
    let key: Keyval<Counted> = Keyval::new().expect("keyval");
    let names: Keyval<String> = Keyval::new().expect("keyval");
    let (clones, drops) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
    let c = world.duplicate().expect("duplicate");
    let v = Counted {
        value: 10,
        clones: clones.clone(),
        drops: drops.clone(),
    };
    c.set_attr(&key, v).expect("set_attr");
    c.set_attr(&names, "first".to_string()).expect("set_attr");
    assert_eq!(c.attr(&names).as_deref(), Some("first"));
    let d = c.duplicate().expect("duplicate");
    assert_eq!(clones.get(), 1);
    // `attr` hands out clones too (value + 1 per clone).
    assert_eq!(d.attr(&key).map(|v| v.value), Some(12));
    assert_eq!(c.attr(&key).map(|v| v.value), Some(11));
    let before = drops.get();
    drop(d);
    assert_eq!(
        drops.get(),
        before + 1,
        "freeing a communicator drops its values"
    );
    c.set_attr(&names, "second".to_string()).expect("replace");
    assert_eq!(c.attr(&names).as_deref(), Some("second"));
    c.delete_attr(&key).expect("delete_attr");
    assert!(c.attr(&key).is_none());
    assert_eq!(c.delete_attr(&key).unwrap_err().class, ErrorClass::Keyval);
    let live = clones.get() + 1 - drops.get();
    assert_eq!(live, 0, "every value was dropped");
}

/// Info objects and communicator hints: ordered keys, limits, set/get round trip, dup keeps the
/// hints, dup_with_info replaces them, MPI_INFO_ENV.
fn info_hints(world: &rmpi::Communicator) {
    let mut i = rmpi::Info::new();
    i.set("zeta", "1").unwrap();
    i.set("alpha", "2").unwrap();
    i.set("zeta", "3").unwrap();
    assert_eq!(
        (i.nkeys(), i.nthkey(0).unwrap(), i.nthkey(1).unwrap()),
        (2, "zeta", "alpha")
    );
    assert_eq!(i.get("zeta").unwrap(), Some("3"));
    let long = "k".repeat(rmpi::api::info::MAX_KEY + 1);
    assert_eq!(i.set(&long, "v").unwrap_err().class, ErrorClass::InfoKey);
    let long = "v".repeat(rmpi::api::info::MAX_VAL + 1);
    assert_eq!(i.set("k", &long).unwrap_err().class, ErrorClass::InfoValue);
    assert_eq!(i.delete("nope").unwrap_err().class, ErrorClass::InfoNokey);

    let c = world.duplicate().expect("duplicate");
    assert_eq!(c.info().unwrap().nkeys(), 0);
    c.set_info(&i).unwrap();
    let mut more = rmpi::Info::new();
    more.set("mpi_assert_no_any_source", "true").unwrap();
    more.set("alpha", "4").unwrap();
    c.set_info(&more).unwrap();
    let got = c.info().unwrap();
    assert_eq!(got.nkeys(), 3);
    assert_eq!(got.get("alpha").unwrap(), Some("4"));
    assert_eq!(got.get("zeta").unwrap(), Some("3"));
    let d = c.duplicate().expect("duplicate");
    assert_eq!(d.info().unwrap(), got, "MPI_Comm_dup keeps the hints");
    let e = c.duplicate_with_info(&more).expect("duplicate_with_info");
    assert_eq!(e.info().unwrap(), more);

    let env = rmpi::env_info();
    assert_eq!(
        env.get("maxprocs").unwrap(),
        Some(world.size().to_string().as_str())
    );
    assert!(env.get("command").unwrap().unwrap().contains("comms"));
}

fn main() {
    let universe = rmpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let (to, from) = ((rank + 1) % size, (rank + size - 1) % size);
    info_hints(&world);

    // A duplicate: congruent, and its traffic never matches WORLD's with the same tag.
    let dup = world.duplicate().expect("duplicate");
    assert_eq!(world.compare(&dup), Comparison::Congruent);
    assert_eq!(world.compare(&world), Comparison::Identical);
    let a = [1000 + rank];
    let b = [2000 + rank];
    rmpi::scope(|s| {
        let sa = dup.isend(s, &a, to, 5).expect("isend dup");
        let sb = world.isend(s, &b, to, 5).expect("isend world");
        let mut w = [0i32];
        let mut d = [0i32];
        world
            .recv(&mut w, rmpi::Source::Any, Tag::Any)
            .expect("recv world");
        dup.recv(&mut d, from, 5).expect("recv dup");
        assert_eq!((w[0], d[0]), (2000 + from, 1000 + from));
        sa.wait().expect("wait");
        sb.wait().expect("wait");
    });

    // Names.
    assert_eq!(world.name(), "MPI_COMM_WORLD");
    assert_eq!(dup.name(), "");
    dup.set_name("rust dup").expect("set_name");
    assert_eq!(dup.name(), "rust dup");

    // Split: colors rank % 2, keys reversed.
    let half = world
        .split(Some(rank % 2), -rank)
        .expect("split")
        .expect("a color gives a communicator");
    let expect_size = (0..size).filter(|r| r % 2 == rank % 2).count() as i32;
    let expect_rank = (0..size).filter(|r| r % 2 == rank % 2 && *r > rank).count() as i32;
    assert_eq!((half.size(), half.rank()), (expect_size, expect_rank));
    let mut sum = [0i32];
    half.sendrecv(
        &[rank],
        (half.rank() + 1) % half.size(),
        1,
        &mut sum,
        (half.rank() + half.size() - 1) % half.size(),
        1,
    )
    .expect("sendrecv on the split");
    assert_eq!(sum[0] % 2, rank % 2);

    // None: not a member.
    let some = world
        .split(if rank == 0 { Some(0) } else { None }, 0)
        .expect("split");
    assert_eq!(some.is_some(), rank == 0);
    assert_eq!(world.split(Some(-1), 0).unwrap_err().class, ErrorClass::Arg);

    // Shared: all ranks are on this node.
    let node = world.split_shared(0).expect("split_shared");
    assert_eq!((node.size(), node.rank()), (size, rank));

    // Groups and create.
    let g = world.group();
    assert_eq!((g.size(), g.rank()), (size, Some(rank)));
    let evens = g.range_incl(&[[0, size - 1, 2]]).expect("range_incl");
    assert_eq!(
        evens.rank(),
        if rank % 2 == 0 { Some(rank / 2) } else { None }
    );
    let ce = world.create(&evens).expect("create");
    assert_eq!(ce.is_some(), rank % 2 == 0);
    if let Some(c) = &ce {
        assert_eq!(c.rank(), rank / 2);
        c.barrier().expect("barrier on the evens");
    }
    // create_group: only the members of the lower half call it.
    let low = g.range_incl(&[[0, (size - 1) / 2, 1]]).expect("range_incl");
    if low.rank().is_some() {
        let c = world.create_group(&low, 3).expect("create_group");
        assert_eq!((c.rank(), c.size()), (rank, low.size()));
        c.barrier().expect("barrier");
    } else {
        let not_member = world.create_group(&low, 3).unwrap_err();
        assert_eq!(not_member.class, ErrorClass::Group);
    }
    let rev: Vec<i32> = (0..size).rev().collect();
    let reversed = g.incl(&rev).expect("incl");
    assert_eq!(
        g.compare(&reversed),
        if size == 1 {
            Comparison::Identical
        } else {
            Comparison::Similar
        }
    );
    assert_eq!(
        g.translate(&[0], &reversed).expect("translate"),
        vec![size - 1]
    );

    // Error handler choice.
    assert_eq!(dup.error_handler(), ErrorHandler::Fatal);
    dup.set_error_handler(ErrorHandler::Return)
        .expect("set_error_handler");
    assert_eq!(dup.error_handler(), ErrorHandler::Return);
    let inherits = dup.duplicate().expect("duplicate");
    assert_eq!(inherits.error_handler(), ErrorHandler::Return);
    assert_eq!(
        dup.send(&[0u8], size, 0).unwrap_err().class,
        ErrorClass::Rank
    );

    attributes(&world);

    // Many communicators, dropped or freed explicitly.
    for i in 0..200 {
        let c = if i % 2 == 0 {
            world.duplicate().expect("dup")
        } else {
            dup.split(Some(0), rank).expect("split").expect("member")
        };
        let mut got = [0i32];
        c.sendrecv(
            &[i],
            (c.rank() + 1) % c.size(),
            0,
            &mut got,
            (c.rank() + c.size() - 1) % c.size(),
            0,
        )
        .expect("sendrecv");
        assert_eq!(got[0], i);
        if i % 3 == 0 {
            c.free().expect("free");
        }
    }

    world.barrier().expect("barrier");

    // A value on SELF is dropped when MPI is finalized.
    let key: Keyval<Counted> = Keyval::new().expect("keyval");
    let drops = Rc::new(Cell::new(0));
    let v = Counted {
        value: 0,
        clones: Rc::new(Cell::new(0)),
        drops: drops.clone(),
    };
    universe
        .self_comm()
        .set_attr(&key, v)
        .expect("set_attr on SELF");
    universe.finalize().expect("MPI_Finalize");
    assert_eq!(
        drops.get(),
        1,
        "SELF's attribute was not dropped at finalize"
    );
    drop(key);
    if rank == 0 {
        println!("comms: OK");
    }
}
