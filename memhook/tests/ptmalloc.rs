//! The ptmalloc provider's allocator under load, in a process whose malloc it is: random
//! multi-threaded malloc/free/realloc with content checks, cross-thread frees, alignment
//! requests, thread churn, the retain policy, and a real C MPI program linked with libmpi_abi.so
//! exporting it. Skipped (with a line saying so) for other providers.

memhook::export_malloc!();

#[cfg(memhook_provider = "ptmalloc")]
#[global_allocator]
static GLOBAL: memhook::ptmalloc::PtMalloc = memhook::ptmalloc::PtMalloc;

#[cfg(memhook_provider = "ptmalloc")]
mod suite {
    use std::process::Command;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn size(&mut self) -> usize {
            match self.next() % 100 {
                0 => (self.next() % (2 << 20)) as usize,       // huge
                1..=9 => (self.next() % (256 << 10)) as usize, // up to the largest class
                10..=29 => (self.next() % 4096) as usize,
                _ => (self.next() % 256) as usize,
            }
        }
    }

    fn c_malloc(n: usize) -> *mut u8 {
        // SAFETY: malloc of any size.
        let p = unsafe { libc::malloc(n) }.cast::<u8>();
        assert!(!p.is_null() || n == 0, "malloc({n}) failed");
        p
    }

    fn fill(p: *mut u8, n: usize, tag: u8) {
        // SAFETY: `p` holds n bytes.
        unsafe { std::ptr::write_bytes(p, tag, n) };
    }

    fn check(p: *const u8, n: usize, tag: u8, what: &str) {
        // SAFETY: `p` holds n bytes.
        let s = unsafe { std::slice::from_raw_parts(p, n) };
        // Spot checks (ends and a stride) keep huge blocks cheap.
        let stride = (n / 64).max(1);
        for i in (0..n).step_by(stride).chain(n.saturating_sub(1)..n) {
            assert_eq!(s[i], tag, "{what}: byte {i} of {n} corrupted");
        }
    }

    /// Threads doing random malloc/free/realloc on their own slots, checking contents.
    fn random_workload(threads: usize, ops: usize) {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                std::thread::spawn(move || {
                    let mut rng = Rng(0x9E37_79B9 + t as u64 * 7919);
                    let mut slots: Vec<(usize, usize, u8)> = vec![(0, 0, 0); 512];
                    for op in 0..ops {
                        let i = (rng.next() % slots.len() as u64) as usize;
                        let (p, n, tag) = slots[i];
                        let p = p as *mut u8;
                        match rng.next() % 3 {
                            0 if !p.is_null() => {
                                check(p, n, tag, "before free");
                                // SAFETY: a live block of ours.
                                unsafe { libc::free(p.cast()) };
                                slots[i] = (0, 0, 0);
                            }
                            1 if !p.is_null() => {
                                check(p, n, tag, "before realloc");
                                let m = rng.size().max(1);
                                // SAFETY: a live block.
                                let q = unsafe { libc::realloc(p.cast(), m) }.cast::<u8>();
                                assert!(!q.is_null());
                                check(q, n.min(m), tag, "after realloc");
                                let tag = (op % 251) as u8;
                                fill(q, m, tag);
                                slots[i] = (q as usize, m, tag);
                            }
                            _ => {
                                if !p.is_null() {
                                    // SAFETY: a live block.
                                    unsafe { libc::free(p.cast()) };
                                }
                                let n = rng.size();
                                let q = c_malloc(n);
                                // SAFETY: a live block.
                                assert!(unsafe { libc::malloc_usable_size(q.cast()) } >= n);
                                let tag = (op % 251) as u8;
                                fill(q, n, tag);
                                slots[i] = (q as usize, n, tag);
                            }
                        }
                    }
                    for (p, n, tag) in slots {
                        if p != 0 {
                            check(p as *const u8, n, tag, "at end");
                            // SAFETY: a live block.
                            unsafe { libc::free(p as *mut libc::c_void) };
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    }

    /// Producers allocate and fill; a consumer on another thread checks and frees (remote frees).
    /// Repeated rounds must not grow the footprint: the remote-free queue gives the memory back.
    fn cross_thread_frees(rounds: usize, per_round: usize) -> usize {
        let mut peak_after_first = 0;
        for round in 0..rounds {
            let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, usize, u8)>(1024);
            let consumer = std::thread::spawn(move || {
                for (p, n, tag) in rx {
                    check(p as *const u8, n, tag, "remote free");
                    // SAFETY: a live block handed over by the producer.
                    unsafe { libc::free(p as *mut libc::c_void) };
                }
            });
            let producers: Vec<_> = (0..2)
                .map(|t| {
                    let tx = tx.clone();
                    std::thread::spawn(move || {
                        let mut rng = Rng(12345 + t);
                        for i in 0..per_round {
                            let n = 16 + (rng.next() % 2000) as usize;
                            let p = c_malloc(n);
                            let tag = (i % 200) as u8 + 1;
                            fill(p, n, tag);
                            tx.send((p as usize, n, tag)).unwrap();
                        }
                    })
                })
                .collect();
            drop(tx);
            for p in producers {
                p.join().unwrap();
            }
            consumer.join().unwrap();
            let m = memhook::ptmalloc::stats().mapped;
            if round == 0 {
                peak_after_first = m;
            }
            println!("    round {round}: mapped {} KiB", m >> 10);
        }
        peak_after_first
    }

    /// Another thread's frees reach their live owner: batched in the freeing thread's outbox,
    /// a partial last batch handed over at the latest when that thread exits. The owner's next
    /// allocation that finds its block's free list empty (here: all of it was handed out) drains its
    /// queue, and the blocks those frees emptied go back to the source.
    fn remote_frees_go_home() {
        use std::sync::mpsc;
        // The 3.5 KiB class, 584-585 a block (below 4 KiB, where a class's first objects come
        // from span blocks).
        const SIZE: usize = 3500;
        const N: usize = 4663; // 8 blocks nearly full; not a whole number of batches
        let (cmd_tx, cmd_rx) = mpsc::channel::<()>();
        let (ptr_tx, ptr_rx) = mpsc::channel::<Vec<usize>>();
        let owner = std::thread::spawn(move || {
            let v: Vec<usize> = (0..N)
                .map(|i| {
                    let p = c_malloc(SIZE);
                    fill(p, SIZE, (i % 250) as u8 + 1);
                    p as usize
                })
                .collect();
            ptr_tx.send(v).unwrap();
            cmd_rx.recv().unwrap(); // the frees are done; nothing else runs now
            let before = memhook::ptmalloc::node_stats(0).returned;
            // SAFETY: malloc then free of our own block: the malloc drains the queue.
            unsafe { libc::free(libc::malloc(SIZE)) };
            memhook::ptmalloc::node_stats(0).returned - before
        });
        let v = ptr_rx.recv().unwrap();
        let mut blocks: Vec<usize> = v.iter().map(|p| p & !((2 << 20) - 1)).collect();
        blocks.sort();
        blocks.dedup();
        std::thread::spawn(move || {
            for (i, p) in v.into_iter().enumerate() {
                check(p as *const u8, SIZE, (i % 250) as u8 + 1, "remote free");
                // SAFETY: live blocks handed over.
                unsafe { libc::free(p as *mut libc::c_void) };
            }
        })
        .join()
        .unwrap();
        cmd_tx.send(()).unwrap();
        let back = owner.join().unwrap() as usize;
        println!(
            "    {} blocks freed by another thread; the owner's drain gave {back} back",
            blocks.len()
        );
        // Its current block stays with it, and an adopted heap's block of the class may hold
        // objects of earlier tests.
        assert!(
            back + 2 >= blocks.len(),
            "remote frees did not reach their owner: {back} of {} blocks back",
            blocks.len()
        );
    }

    /// Span blocks (span.rs): classes of 4 KiB and more with few live objects take them from
    /// the heap's span blocks, where what one class frees serves the next at once (no block from
    /// the source), each object's size is its class's, memalign may point inside one, and
    /// another thread's frees come home through the owner's queue.
    fn spans_share_blocks() {
        use memhook::ptmalloc::node_stats;
        std::thread::spawn(|| {
            let taken = || {
                let s = node_stats(0);
                s.fresh + s.reused
            };
            // Six of 12 KiB, checked and freed; then eight of 8 KiB (less in all) and mixed
            // sizes fit in the span blocks the heap already has.
            let a: Vec<usize> = (0..6)
                .map(|i| {
                    let p = c_malloc(12288);
                    fill(p, 12288, i as u8 + 1);
                    p as usize
                })
                .collect();
            let before = taken();
            for (i, &p) in a.iter().enumerate() {
                check(p as *const u8, 12288, i as u8 + 1, "span object");
                // SAFETY: our own live object.
                unsafe { libc::free(p as *mut libc::c_void) };
            }
            let b: Vec<(usize, usize)> = (0..8)
                .map(|i| (8192, i))
                .chain([(4096, 8), (5000, 9), (7000, 10)])
                .map(|(n, i)| {
                    let p = c_malloc(n);
                    // SAFETY: a live object of ours.
                    let usable = unsafe { libc::malloc_usable_size(p.cast()) };
                    assert!(usable >= n && usable < n + 2048, "usable {usable} for {n}");
                    fill(p, n, i as u8 + 1);
                    (p as usize, n)
                })
                .collect();
            assert!(
                taken() <= before + 1,
                "freed span objects did not serve the next class"
            );
            // An aligned pointer inside a span object.
            // SAFETY: memalign of a power-of-two alignment.
            let q = unsafe { libc::memalign(4096, 6000) }.cast::<u8>();
            assert!(!q.is_null() && (q as usize).is_multiple_of(4096));
            fill(q, 6000, 0x77);
            for (i, &(p, n)) in b.iter().enumerate() {
                check(
                    p as *const u8,
                    n,
                    i as u8 + 1,
                    "span object beside memalign",
                );
            }
            // SAFETY: our own live objects.
            unsafe {
                assert!(libc::malloc_usable_size(q.cast()) >= 6000);
                libc::free(q.cast());
            }
            // Freed by another thread: queued, then drained by the owner's next allocation.
            std::thread::spawn(move || {
                for (i, &(p, n)) in b.iter().enumerate() {
                    check(p as *const u8, n, i as u8 + 1, "span object, remote free");
                    // SAFETY: live objects handed over.
                    unsafe { libc::free(p as *mut libc::c_void) };
                }
            })
            .join()
            .unwrap();
            let before = taken();
            let c: Vec<usize> = (0..6).map(|_| c_malloc(16384) as usize).collect();
            assert!(
                taken() <= before + 1,
                "remotely freed span objects did not come home"
            );
            for p in c {
                fill(p as *mut u8, 16384, 9);
                // SAFETY: our own live object.
                unsafe { libc::free(p as *mut libc::c_void) };
            }
        })
        .join()
        .unwrap();
    }

    /// memalign's pointers inside objects share blocks with plain mallocs of the same class:
    /// both kinds free and are reused correctly (free finds an object's start only in blocks
    /// marked as holding interior pointers).
    fn interior_pointers_beside_plain_objects() {
        for round in 0..4 {
            let mut v: Vec<(usize, usize, u8)> = Vec::new();
            for i in 0..3000usize {
                let tag = (i % 200) as u8 + 1;
                let n = 40 + i % 50;
                let p = if i % 3 == 0 {
                    let a = 32 << (i % 3 + round % 2);
                    let p = memhook::ptmalloc::memalign(a, n);
                    assert_eq!(p as usize % a, 0, "memalign({a}, {n})");
                    p
                } else {
                    c_malloc(n)
                };
                // SAFETY: a live allocation of at least n bytes.
                assert!(unsafe { memhook::ptmalloc::usable_size(p) } >= n);
                fill(p, n, tag);
                v.push((p as usize, n, tag));
            }
            // Free every other one, reallocate, then free all, checking contents throughout.
            let mut keep = Vec::new();
            for (k, (p, n, tag)) in v.into_iter().enumerate() {
                check(p as *const u8, n, tag, "interior/plain");
                if k % 2 == 0 {
                    // SAFETY: a live allocation.
                    unsafe { libc::free(p as *mut libc::c_void) };
                } else {
                    keep.push((p, n, tag));
                }
            }
            for i in 0..1500usize {
                let n = 40 + i % 50;
                let p = c_malloc(n);
                fill(p, n, 0xee);
                keep.push((p as usize, n, 0xee));
            }
            for (p, n, tag) in keep {
                check(p as *const u8, n, tag, "after reuse");
                // SAFETY: a live allocation.
                unsafe { libc::free(p as *mut libc::c_void) };
            }
        }
    }

    fn alignments() {
        for shift in 4..=23 {
            let align = 1usize << shift;
            for size in [1, 24, 100, 4096, 300 << 10, 3 << 20] {
                // SAFETY: memalign/posix_memalign/aligned_alloc with a power-of-two alignment.
                unsafe {
                    let a = libc::memalign(align, size).cast::<u8>();
                    let mut b: *mut libc::c_void = std::ptr::null_mut();
                    assert_eq!(libc::posix_memalign(&mut b, align, size), 0);
                    let c = libc::aligned_alloc(align, size.next_multiple_of(align)).cast::<u8>();
                    for (p, what) in [
                        (a, "memalign"),
                        (b.cast::<u8>(), "posix_memalign"),
                        (c, "aligned_alloc"),
                    ] {
                        assert!(!p.is_null(), "{what}({align}, {size})");
                        assert_eq!(p as usize % align, 0, "{what}({align}, {size}) misaligned");
                        assert!(libc::malloc_usable_size(p.cast()) >= size);
                        fill(p, size, 0xa5);
                    }
                    for p in [a, b.cast(), c] {
                        check(p, size, 0xa5, "aligned");
                        libc::free(p.cast());
                    }
                }
            }
        }
        // Bad alignments are refused with EINVAL, not crashes.
        let mut p: *mut libc::c_void = std::ptr::null_mut();
        // SAFETY: posix_memalign with an invalid alignment only returns an error.
        assert_eq!(
            unsafe { libc::posix_memalign(&mut p, 24, 10) },
            libc::EINVAL
        );
        // Rust's own aligned allocations go through the global allocator.
        #[repr(align(4096))]
        struct Page([u8; 4096]);
        let v: Vec<Page> = (0..10).map(|_| Page([7; 4096])).collect();
        assert!(v
            .iter()
            .all(|p| p as *const Page as usize & 4095 == 0 && p.0[4095] == 7));
    }

    /// Short-lived threads leave objects behind; their heaps are orphaned and adopted, and the
    /// objects are freed by the main thread.
    fn thread_churn(n: usize) {
        let mut left = Vec::new();
        for t in 0..n {
            let v = std::thread::spawn(move || {
                let ps: Vec<usize> = (0..100)
                    .map(|i| {
                        let p = c_malloc(64 + i);
                        fill(p, 64 + i, t as u8);
                        p as usize
                    })
                    .collect();
                ps
            })
            .join()
            .unwrap();
            left.push((t as u8, v));
        }
        for (t, ps) in left {
            for (i, p) in ps.into_iter().enumerate() {
                check(p as *const u8, 64 + i, t, "churn");
                // SAFETY: a live block from an exited thread.
                unsafe { libc::free(p as *mut libc::c_void) };
            }
        }
    }

    fn calloc_zeroes_reused_memory() {
        for n in [10, 1000, 100_000, 1 << 20] {
            let p = c_malloc(n);
            fill(p, n, 0xff);
            // SAFETY: p is live; calloc result checked below.
            unsafe {
                libc::free(p.cast());
                let q = libc::calloc(1, n).cast::<u8>();
                check(q, n, 0, "calloc");
                libc::free(q.cast());
            }
        }
        // SAFETY: an overflowing calloc returns null.
        assert!(unsafe { libc::calloc(usize::MAX / 2, 4) }.is_null());
    }

    fn retain_policy() {
        use memhook::ptmalloc::{set_policy, stats, Policy};
        let before = memhook::counters()[memhook::Source::Allocator as usize].events;
        set_policy(Policy::Retain);
        let ps: Vec<*mut u8> = (0..8).map(|_| c_malloc(4 << 20)).collect();
        for &p in &ps {
            fill(p, 4 << 20, 1);
            // SAFETY: live blocks.
            unsafe { libc::free(p.cast()) };
        }
        let after = memhook::counters()[memhook::Source::Allocator as usize].events;
        let s = stats();
        println!(
            "    retain: {} allocator events while retaining; held free {} MiB, mapped {} MiB, peak {} MiB",
            after - before,
            s.held_free >> 20,
            s.mapped >> 20,
            s.peak_mapped >> 20
        );
        assert_eq!(
            after, before,
            "the retain policy must never give memory back"
        );
        assert!(
            s.held_free >= 32 << 20,
            "retained blocks are counted as held"
        );
        // Reuse: the same sizes come from the cache, the footprint does not grow.
        let mapped = s.mapped;
        let ps: Vec<*mut u8> = (0..8).map(|_| c_malloc(4 << 20)).collect();
        assert_eq!(stats().mapped, mapped, "retained memory is reused");
        for p in ps {
            // SAFETY: live blocks.
            unsafe { libc::free(p.cast()) };
        }
        set_policy(Policy::Release {
            keep_blocks: memhook::ptmalloc::DEFAULT_KEEP_BLOCKS,
        });
        // The default release policy keeps a few blocks' worth and returns the rest, with events.
        let before = memhook::counters()[memhook::Source::Allocator as usize].events;
        let ps: Vec<*mut u8> = (0..8).map(|_| c_malloc(4 << 20)).collect();
        for p in ps {
            // SAFETY: live blocks.
            unsafe { libc::free(p.cast()) };
        }
        let after = memhook::counters()[memhook::Source::Allocator as usize].events;
        println!(
            "    release: {} allocator events for 32 MiB freed",
            after - before
        );
        assert!(after > before, "the release policy returned nothing");
    }

    /// Builds libmpi_abi.so with this provider and runs tests/c/malloc_stress.c linked with it, under
    /// mpirun with 2 ranks.
    fn c_program() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_path_buf();
        let exe = std::env::current_exe().unwrap();
        let target = exe.parent().unwrap().parent().unwrap().to_path_buf();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build.current_dir(&root).args([
            "build",
            "-q",
            "-p",
            "libmpi",
            "-p",
            "libmpi-abi",
            "-p",
            "mpirun",
            "--lib",
            "--bins",
            "--features",
            "memory-manager/ptmalloc",
        ]);
        if target.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        assert!(
            build.status().unwrap().success(),
            "cargo build libmpi-abi with ptmalloc"
        );
        let out = target.join("malloc_stress");
        let st = Command::new(target.join("mpicc"))
            .args(["-O2", "-Wall", "-pthread", "-o"])
            .arg(&out)
            .arg(root.join("memhook/tests/c/malloc_stress.c"))
            .status()
            .expect("run mpicc (is gcc installed?)");
        assert!(st.success(), "mpicc malloc_stress.c");
        let o = Command::new(target.join("mpirun"))
            .args([
                "--timeout",
                "120",
                "-np",
                "2",
                "--oversubscribe",
                "--mca",
                "memhook_verbose",
                "1",
                "--mca",
                "btl_base_verbose",
                "1",
            ])
            .arg(&out)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        println!("{}", stdout.trim_end().replace('\n', "\n    "));
        println!("    {}", stderr.trim_end().replace('\n', "\n    "));
        assert!(
            o.status.success() && stdout.contains(" No Errors"),
            "malloc_stress failed"
        );
        assert!(
            stderr.contains("memhook provider ptmalloc: active"),
            "ranks did not report ptmalloc active"
        );
        // The 1 and 4 MiB malloc'd buffers lie in the sender's shared range: read by memcpy.
        let reads: u64 = stderr
            .lines()
            .filter_map(|l| {
                let before = l.split(" single-copy reads by memcpy").next()?;
                (before.len() < l.len())
                    .then_some(before)?
                    .rsplit(' ')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum();
        assert!(reads > 0, "no large malloc'd buffer was read by memcpy");
    }

    /// Large blocks lie in the node-shared range, which another mapping of the memfd (what a
    /// peer does) reads; a freed block is reused in place; a forked child's copy is private.
    fn shared_range() {
        let (fd, base, len) = memhook::shared_source().expect("the shared range is on");
        let n = 8 << 20;
        let p = c_malloc(n);
        assert!(
            p as usize >= base && p as usize + n <= base + len,
            "a large malloc lies outside the shared range"
        );
        fill(p, n, 0x3c);
        let path = std::ffi::CString::new(format!("/proc/self/fd/{fd}")).unwrap();
        // SAFETY: open a path, then map the memfd read-only at a kernel-chosen address; the
        // mapping is only read within its length, then unmapped.
        unsafe {
            let f = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            assert!(f >= 0, "open {path:?}");
            let m = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                f,
                0,
            );
            assert_ne!(m, libc::MAP_FAILED);
            libc::close(f);
            check(m.cast::<u8>().add(p as usize - base), n, 0x3c, "peer view");
            memhook::sys::munmap(m, len);
        }
        // SAFETY: a live block.
        unsafe { libc::free(p.cast()) };
        let q = c_malloc(n);
        assert_eq!(q, p, "a freed large block is reused in place");
        fill(q, n, 0x11);
        // SAFETY: fork in a process whose other threads have all been joined; the child only
        // touches its own memory and leaves with _exit.
        unsafe {
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                let s = std::slice::from_raw_parts_mut(q, n);
                let ok = s.iter().all(|&x| x == 0x11);
                s.fill(0x77);
                libc::_exit(if ok { 0 } else { 1 });
            }
            let mut st = 0;
            libc::waitpid(pid, &mut st, 0);
            assert!(
                libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
                "child saw wrong data"
            );
        }
        check(q, n, 0x11, "parent after the child wrote its copy");
        // SAFETY: a live block.
        unsafe { libc::free(q.cast()) };
    }

    /// One machine node (or none in sysfs): placement is off and every block is node 0's, as
    /// before NUMA placement existed.
    fn numa_default() {
        use memhook::ptmalloc::{node_of, node_stats, numa_nodes, NodeStats};
        let nodes = numa_nodes();
        let sysfs = (0..16)
            .filter(|n| std::path::Path::new(&format!("/sys/devices/system/node/node{n}")).exists())
            .count()
            .max(1);
        println!("    {nodes} node(s); sysfs lists {sysfs}");
        if nodes > 1 {
            return; // a NUMA machine: fake_numa's checks apply to it too
        }
        let p = c_malloc(100);
        // SAFETY: a live small block.
        assert_eq!(unsafe { node_of(p) }, Some(0));
        // SAFETY: as above.
        unsafe { libc::free(p.cast()) };
        assert!(node_stats(0).fresh > 0, "node 0 served the blocks");
        for n in 1..16 {
            assert_eq!(node_stats(n), NodeStats::default(), "node {n} was used");
        }
    }

    /// The fake two-node layout, in a child process (the layout is read at the first block).
    fn numa_fake() {
        let o = Command::new(std::env::current_exe().unwrap())
            .arg("numa-child")
            .env("MEMHOOK_PTMALLOC_NUMA_FAKE", "0-0:1-1")
            .output()
            .expect("run the NUMA child");
        let out = String::from_utf8_lossy(&o.stdout);
        print!("{out}");
        eprint!("{}", String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "the NUMA child failed");
    }

    /// Dead heaps' warm blocks and kept blocks' cooled pages, in a child process (a fresh
    /// orphan list).
    fn warm_and_cool() {
        let o = Command::new(std::env::current_exe().unwrap())
            .arg("warm-child")
            .output()
            .expect("run the warm child");
        print!("{}", String::from_utf8_lossy(&o.stdout));
        eprint!("{}", String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "the warm child failed");
    }

    pub fn run() {
        let st = memhook::init();
        println!("memhook provider ptmalloc: {st}");
        assert!(st.is_active(), "{st}");
        println!("  random malloc/free/realloc, 4 threads");
        random_workload(4, 200_000);
        println!("  cross-thread frees");
        let first = cross_thread_frees(4, 100_000);
        let last = memhook::ptmalloc::stats().mapped;
        assert!(
            last <= first + (16 << 20),
            "remote frees leak: {first} -> {last} bytes mapped"
        );
        println!("  remote frees reach their owner (outbox)");
        remote_frees_go_home();
        println!("  alignment requests");
        alignments();
        println!("  memalign's interior pointers beside plain objects");
        interior_pointers_beside_plain_objects();
        println!("  large classes with few objects share span blocks");
        spans_share_blocks();
        println!("  thread churn (orphaned heaps adopted)");
        thread_churn(64);
        println!("  dead heaps keep warm blocks; kept blocks cool (child process)");
        warm_and_cool();
        println!("  calloc");
        calloc_zeroes_reused_memory();
        println!("  NUMA: the one-node default");
        numa_default();
        println!("  NUMA: a fake two-node layout (child process)");
        numa_fake();
        println!("  retain policy");
        retain_policy();
        println!("  large blocks in the node-shared range");
        shared_range();
        println!("  C program linked with libmpi_abi.so (ptmalloc)");
        c_program();
        println!(
            "  stats: {:?}; events: {}",
            memhook::ptmalloc::stats(),
            memhook::counters_line()
        );
        println!("ptmalloc allocator tests: all passed");
    }
}

/// The child of `numa_fake`, run with `MEMHOOK_PTMALLOC_NUMA_FAKE=0-0:1-1`: CPU 0 is node 0, CPU
/// 1 node 1. Workers pinned to each allocate and free, crossing frees; the per-node counters say
/// which node's source served and took back each block.
#[cfg(memhook_provider = "ptmalloc")]
mod numa_child {
    use memhook::ptmalloc::{node_of, node_stats, numa_nodes, NodeStats};
    use std::sync::mpsc;

    type Job = Box<dyn FnOnce() + Send>;

    /// A thread pinned to one CPU, running the jobs it is given one at a time.
    struct Worker {
        tx: Option<mpsc::Sender<Job>>,
        h: Option<std::thread::JoinHandle<()>>,
    }

    fn pin(cpu: usize) {
        // SAFETY: a zeroed cpu_set_t is empty; CPU_SET writes within it; sched_setaffinity
        // reads it for the calling thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            let r = libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
            assert_eq!(r, 0, "pin to CPU {cpu}");
        }
    }

    impl Worker {
        fn pinned(cpu: usize) -> Worker {
            let (tx, rx) = mpsc::channel::<Job>();
            let h = std::thread::spawn(move || {
                pin(cpu);
                for job in rx {
                    job();
                }
            });
            let w = Worker {
                tx: Some(tx),
                h: Some(h),
            };
            // Started and pinned, and its heap holds a block of each class the job machinery
            // uses (the channel's last steps after a reply race the next measurement).
            for _ in 0..4 {
                w.run(|| ());
            }
            w
        }

        fn run<R: Send + 'static>(&self, f: impl FnOnce() -> R + Send + 'static) -> R {
            let (rtx, rrx) = mpsc::channel();
            let job: Job = Box::new(move || rtx.send(f()).unwrap());
            self.tx.as_ref().unwrap().send(job).unwrap();
            rrx.recv().unwrap()
        }

        fn exit(mut self) {
            drop(self.tx.take());
            self.h.take().unwrap().join().unwrap();
        }
    }

    const N: usize = 2000;
    // The 3.5 KiB class, 584-585 a block, so 4 blocks (below 4 KiB, where a class's first
    // objects come from span blocks).
    const SIZE: usize = 3500;

    /// N objects, each checked to come from `node`'s blocks.
    fn alloc_on(node: usize) -> Vec<usize> {
        let v: Vec<usize> = (0..N)
            .map(|_| {
                // SAFETY: malloc of any size.
                let p = unsafe { libc::malloc(SIZE) }.cast::<u8>();
                assert!(!p.is_null());
                // SAFETY: a live small block; SIZE bytes written.
                unsafe {
                    std::ptr::write_bytes(p, 0x5a, SIZE);
                    assert_eq!(node_of(p), Some(node), "a block from the wrong node");
                }
                p as usize
            })
            .collect();
        v
    }

    fn free_all(v: Vec<usize>) {
        for p in v {
            // SAFETY: live blocks handed over.
            unsafe { libc::free(p as *mut libc::c_void) };
        }
    }

    /// A malloc and free of the test's class: its block's free list is empty (every object went
    /// to the other thread), so the heap drains its remote-free queue.
    fn drain() {
        // SAFETY: malloc then free of our own block.
        unsafe { libc::free(libc::malloc(SIZE)) };
    }

    fn blocks(v: &[usize]) -> u64 {
        let mut b: Vec<usize> = v.iter().map(|p| p & !((2 << 20) - 1)).collect();
        b.sort();
        b.dedup();
        b.len() as u64
    }

    fn snap() -> [NodeStats; 2] {
        [node_stats(0), node_stats(1)]
    }

    fn delta(a: &[NodeStats; 2], b: &[NodeStats; 2], n: usize) -> (u64, u64, u64) {
        (
            b[n].fresh - a[n].fresh,
            b[n].reused - a[n].reused,
            b[n].returned - a[n].returned,
        )
    }

    pub fn run() {
        println!("    fake layout: {} nodes", numa_nodes());
        assert_eq!(
            numa_nodes(),
            2,
            "MEMHOOK_PTMALLOC_NUMA_FAKE=0-0:1-1 makes two nodes"
        );
        // SAFETY: a zeroed set filled by sched_getaffinity for this thread.
        let usable = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) == 0
                && libc::CPU_ISSET(0, &set)
                && libc::CPU_ISSET(1, &set)
        };
        if !usable {
            println!("    skipped: CPUs 0 and 1 are not both usable");
            return;
        }
        // The main thread's own allocations stay on node 0.
        pin(0);
        let a = Worker::pinned(0);
        let b = Worker::pinned(1);

        // Each node's source serves its own threads.
        let s0 = snap();
        let pa = a.run(|| alloc_on(0));
        let s1 = snap();
        let pb = b.run(|| alloc_on(1));
        let s2 = snap();
        let (na, nb) = (blocks(&pa), blocks(&pb));
        let (f, r, _) = delta(&s0, &s1, 0);
        println!("    CPU 0 thread: {na} blocks, node 0 gave {f} fresh + {r} reused");
        assert!(f + r >= na, "node 0 served its thread");
        assert_eq!(
            delta(&s0, &s1, 1),
            (0, 0, 0),
            "node 1 served a CPU 0 thread"
        );
        let (f, r, _) = delta(&s1, &s2, 1);
        println!("    CPU 1 thread: {nb} blocks, node 1 gave {f} fresh + {r} reused");
        assert!(f + r >= nb, "node 1 served its thread");
        assert_eq!(
            delta(&s1, &s2, 0).0 + delta(&s1, &s2, 0).1,
            0,
            "node 0 served a CPU 1 thread"
        );

        // Crossed frees: each object goes to its owner heap's queue; the owner, draining it,
        // gives its emptied blocks back to its own node.
        b.run(move || free_all(pa));
        a.run(move || free_all(pb));
        a.run(drain);
        b.run(drain);
        let s3 = snap();
        let (r0, r1) = (delta(&s2, &s3, 0).2, delta(&s2, &s3, 1).2);
        println!(
            "    crossed frees: blocks back to node 0: {r0}, to node 1: {r1}; kept {} and {}",
            s3[0].kept, s3[1].kept
        );
        assert!(r0 >= na - 1 && r1 >= nb - 1, "emptied blocks went back");

        // A block emptied by a thread on the other node goes home: the CPU 0 thread exits
        // leaving its objects, which the CPU 1 thread frees (tending the dead heap).
        let pa = a.run(|| alloc_on(0));
        let na = blocks(&pa);
        a.exit();
        let s4 = snap();
        b.run(move || free_all(pa));
        let s5 = snap();
        let (r0, r1) = (delta(&s4, &s5, 0).2, delta(&s4, &s5, 1).2);
        println!("    freed on CPU 1: {na} blocks of a CPU 0 thread; back to node 0: {r0}, to node 1: {r1}");
        assert!(r0 >= na, "blocks freed on node 1 went home to node 0");
        assert_eq!(r1, 0, "a node 0 block went to node 1");
        assert!(s5[0].kept >= na as usize, "node 0 keeps them");

        // They stay with node 0: a new thread on CPU 1 (adopting the dead heap) gets node 1's.
        // (Its start-up, before it pins itself, runs on CPU 0, as the main thread is pinned.)
        let c = Worker::pinned(1);
        let s6 = snap();
        let pc = c.run(|| alloc_on(1));
        let s7 = snap();
        println!(
            "    new CPU 1 thread: node 1 gave {:?} (fresh, reused, returned), node 0 {:?}; kept before {} and {}",
            delta(&s6, &s7, 1),
            delta(&s6, &s7, 0),
            s6[0].kept,
            s6[1].kept,
        );
        assert_eq!(
            delta(&s6, &s7, 0).1,
            0,
            "node 0's kept blocks went to a CPU 1 thread"
        );
        let (f, r, _) = delta(&s6, &s7, 1);
        assert!(f + r >= blocks(&pc), "node 1 served its new thread");
        assert!(s7[0].kept >= na as usize, "node 0 still keeps them");
        c.run(move || free_all(pc));
        c.exit();
        b.exit();
        println!("    NUMA child: all passed");
    }
}

/// The child of `warm_and_cool`, a fresh process (no orphaned heaps yet): a thread's empty
/// blocks wait, warm, in its dead heap for the next thread, which adopts it and allocates from
/// them with nothing from the memory source; past `WARM_ORPHANS` dead heaps they go back to
/// the source; and a block the source keeps holds no more than its first 64 KiB resident.
#[cfg(memhook_provider = "ptmalloc")]
mod warm_child {
    use memhook::ptmalloc::{node_stats, stats};

    const BLOCK: usize = 2 << 20;
    const SIZES: [usize; 3] = [64, 4096, 65536];

    /// Allocates one object of each size, then frees them; returns their blocks. (All live
    /// at once: a class whose block is idle when another needs a new one gives it back.)
    fn cycle() -> Vec<usize> {
        let ps: Vec<*mut u8> = SIZES
            .iter()
            .map(|&n| {
                // SAFETY: malloc and fill of our own object.
                unsafe {
                    let p = libc::malloc(n).cast::<u8>();
                    assert!(!p.is_null());
                    std::ptr::write_bytes(p, 0x5a, n);
                    p
                }
            })
            .collect();
        for &p in &ps {
            // SAFETY: ours, freed once.
            unsafe { libc::free(p.cast()) };
        }
        ps.iter().map(|&p| p as usize & !(BLOCK - 1)).collect()
    }

    fn taken() -> u64 {
        let s = node_stats(0);
        s.fresh + s.reused
    }

    /// How many of the pages of `[a, a + len)` are resident.
    fn resident(a: usize, len: usize) -> usize {
        let mut v = vec![0u8; len.div_ceil(4096)];
        // SAFETY: `a` is page-aligned and mapped (a kept block keeps its mapping); `v` has a
        // byte per page.
        let r = unsafe { libc::mincore(a as *mut libc::c_void, len, v.as_mut_ptr()) };
        assert_eq!(r, 0, "mincore");
        v.iter().filter(|&&b| b & 1 != 0).count()
    }

    /// Runs `f` on `n` threads, all alive until every one has run it (so none adopts another's
    /// heap), then lets them exit.
    fn exit_together(n: usize, f: fn()) {
        let hold = std::sync::Arc::new(std::sync::Barrier::new(n + 1));
        let go = std::sync::Arc::new(std::sync::Barrier::new(n + 1));
        let ts: Vec<_> = (0..n)
            .map(|_| {
                let (hold, go) = (hold.clone(), go.clone());
                std::thread::spawn(move || {
                    f();
                    hold.wait();
                    go.wait();
                })
            })
            .collect();
        hold.wait();
        go.wait();
        for t in ts {
            t.join().unwrap();
        }
    }

    pub fn run() {
        // Warm: the second thread adopts the first one's heap and its blocks.
        let first = std::thread::spawn(cycle).join().unwrap();
        let before = taken();
        let second = std::thread::spawn(cycle).join().unwrap();
        println!(
            "    adopter's blocks: {}, blocks taken from the source meanwhile: {}",
            if first == second {
                "the dead heap's"
            } else {
                "others"
            },
            taken() - before
        );
        assert_eq!(
            first, second,
            "the adopter allocates from the dead heap's blocks"
        );
        assert_eq!(taken(), before, "no block from the source for the adopter");

        // Dead heaps keep at most 32 MiB warm together: four threads each filling the blocks of
        // five large classes (10 MiB) and exiting together leave some to the source.
        let returned = node_stats(0).returned;
        exit_together(4, || {
            for n in [65536usize, 81920, 98304, 114688, 131072] {
                let ps: Vec<usize> = (0..(2 << 20) / n - 1)
                    .map(|_| {
                        // SAFETY: malloc and fill of our own object.
                        unsafe {
                            let p = libc::malloc(n).cast::<u8>();
                            std::ptr::write_bytes(p, 2, n);
                            p as usize
                        }
                    })
                    .collect();
                for p in ps {
                    // SAFETY: our own live object.
                    unsafe { libc::free(p as *mut libc::c_void) };
                }
            }
        });
        let back = node_stats(0).returned - returned;
        println!(
            "    four threads of 10 MiB each exiting together: {back} blocks back to the source"
        );
        assert!(back >= 3, "warm blocks beyond the budget go back");

        // Past WARM_ORPHANS dead heaps (4) the blocks go back to the source.
        let returned = node_stats(0).returned;
        exit_together(6, || {
            cycle();
        });
        let back = node_stats(0).returned - returned;
        println!("    six threads exiting together: {back} blocks back to the source");
        assert!(
            back >= 3,
            "blocks of dead heaps beyond the warm ones go back"
        );

        // Cool: a block filled with 64 KiB objects, emptied while not current, is kept with
        // only its first 64 KiB resident.
        let ps: Vec<usize> = (0..40)
            .map(|_| {
                // SAFETY: malloc and fill of our own object.
                unsafe {
                    let p = libc::malloc(65536).cast::<u8>();
                    std::ptr::write_bytes(p, 1, 65536);
                    p as usize
                }
            })
            .collect();
        // The class's first few objects come from a span block (span.rs): the middle one is in
        // the class's first block of its own, full and no longer current.
        let full = ps[ps.len() / 2] & !(BLOCK - 1);
        let kept_before = stats().held_free;
        for &p in ps.iter().filter(|&&p| p & !(BLOCK - 1) == full) {
            // SAFETY: our own live object.
            unsafe { libc::free(p as *mut libc::c_void) };
        }
        assert!(stats().held_free > kept_before, "the emptied block is kept");
        let r = resident(full, BLOCK);
        println!("    kept block: {r} of 512 pages resident");
        assert!(r <= 16, "{r} pages of a kept block resident");
        for &p in ps.iter().filter(|&&p| p & !(BLOCK - 1) != full) {
            // SAFETY: our own live object.
            unsafe { libc::free(p as *mut libc::c_void) };
        }
        println!("    warm child: all passed");
    }
}

fn main() {
    #[cfg(memhook_provider = "ptmalloc")]
    if std::env::args().nth(1).as_deref() == Some("numa-child") {
        numa_child::run();
        return;
    }
    #[cfg(memhook_provider = "ptmalloc")]
    if std::env::args().nth(1).as_deref() == Some("warm-child") {
        warm_child::run();
        return;
    }
    #[cfg(memhook_provider = "ptmalloc")]
    suite::run();
    #[cfg(not(memhook_provider = "ptmalloc"))]
    println!(
        "ptmalloc allocator tests: skipped (provider is {})",
        memhook::PROVIDER
    );
}
