//! Point-to-point building blocks of the tests: a window of non-blocking sends or receives.

use rmpi::{Communicator, Result};

/// Tag of the benchmarks' own bookkeeping messages (acks, gathered times), apart from the data.
pub const TAG_CONTROL: i32 = 0x7e57;
/// Tag of the measured data messages.
pub const TAG_DATA: i32 = 1;

/// Post `window` non-blocking sends of `buf` to `dest` and wait for all of them.
pub fn send_window(world: &Communicator, buf: &[u8], window: usize, dest: i32) -> Result<()> {
    rmpi::scope(|s| {
        let reqs = (0..window)
            .map(|_| world.isend(s, buf, dest, TAG_DATA))
            .collect::<Result<Vec<_>>>()?;
        rmpi::wait_all(reqs).map(|_| ())
    })
}

/// Post `window` non-blocking receives of `size` bytes from `src` and wait for all of them.
/// Each receive gets its own slot of `bufs` (at least `window * max(size, 1)` bytes): the safe API
/// will not let two pending receives share memory, as OSU's C code does (an MPI-erroneous
/// overlap), so large windows touch more memory than OSU's.
pub fn recv_window(
    world: &Communicator,
    bufs: &mut [u8],
    size: usize,
    window: usize,
    src: i32,
) -> Result<()> {
    rmpi::scope(|s| {
        let reqs = bufs
            .chunks_mut(size.max(1))
            .take(window)
            .map(|slot| world.irecv(s, &mut slot[..size], src, TAG_DATA))
            .collect::<Result<Vec<_>>>()?;
        rmpi::wait_all(reqs).map(|_| ())
    })
}

/// Both at once (osu-bibw): receives posted first, then sends, then wait for everything.
pub fn exchange_window(
    world: &Communicator,
    sbuf: &[u8],
    rbufs: &mut [u8],
    size: usize,
    window: usize,
    peer: i32,
) -> Result<()> {
    rmpi::scope(|s| {
        let mut reqs = rbufs
            .chunks_mut(size.max(1))
            .take(window)
            .map(|slot| world.irecv(s, &mut slot[..size], peer, TAG_DATA))
            .collect::<Result<Vec<_>>>()?;
        for _ in 0..window {
            reqs.push(world.isend(s, &sbuf[..size], peer, TAG_DATA)?);
        }
        rmpi::wait_all(reqs).map(|_| ())
    })
}

/// The memory a window of receives of up to `max` bytes needs.
pub fn window_bytes(max: usize, window: usize) -> usize {
    max.max(1) * window
}
