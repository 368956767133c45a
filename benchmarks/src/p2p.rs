//! Point-to-point building blocks of the tests: a window of non-blocking sends or receives, and
//! gathering one number per rank at rank 0 (what a reduce will do once collectives land).

use mpi::{Communicator, Result};

/// Tag of the benchmarks' own bookkeeping messages (acks, gathered times), apart from the data.
pub const TAG_CONTROL: i32 = 0x7e57;
/// Tag of the measured data messages.
pub const TAG_DATA: i32 = 1;

/// Post `window` non-blocking sends of `buf` to `dest` and wait for all of them.
pub fn send_window(world: &Communicator, buf: &[u8], window: usize, dest: i32) -> Result<()> {
    mpi::scope(|s| {
        let reqs = (0..window)
            .map(|_| world.isend(s, buf, dest, TAG_DATA))
            .collect::<Result<Vec<_>>>()?;
        mpi::wait_all(reqs).map(|_| ())
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
    mpi::scope(|s| {
        let reqs = bufs
            .chunks_mut(size.max(1))
            .take(window)
            .map(|slot| world.irecv(s, &mut slot[..size], src, TAG_DATA))
            .collect::<Result<Vec<_>>>()?;
        mpi::wait_all(reqs).map(|_| ())
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
    mpi::scope(|s| {
        let mut reqs = rbufs
            .chunks_mut(size.max(1))
            .take(window)
            .map(|slot| world.irecv(s, &mut slot[..size], peer, TAG_DATA))
            .collect::<Result<Vec<_>>>()?;
        for _ in 0..window {
            reqs.push(world.isend(s, &sbuf[..size], peer, TAG_DATA)?);
        }
        mpi::wait_all(reqs).map(|_| ())
    })
}

/// The memory a window of receives of up to `max` bytes needs.
pub fn window_bytes(max: usize, window: usize) -> usize {
    max.max(1) * window
}

/// Every rank's `value`, in rank order, at rank 0 (None elsewhere).
// TODO(collectives): an MPI_Gather / MPI_Reduce once the collective API lands.
pub fn gather_at_root(world: &Communicator, value: f64) -> Result<Option<Vec<f64>>> {
    if world.rank() != 0 {
        world.send(&[value], 0, TAG_CONTROL)?;
        return Ok(None);
    }
    let mut all = vec![value];
    for r in 1..world.size() {
        let mut v = [0f64];
        world.recv(&mut v, r, TAG_CONTROL)?;
        all.push(v[0]);
    }
    Ok(Some(all))
}

/// Min, average and max of per-rank numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub min: f64,
    pub avg: f64,
    pub max: f64,
}

impl Stats {
    pub fn of(values: &[f64]) -> Stats {
        let n = values.len().max(1) as f64;
        Stats {
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            avg: values.iter().sum::<f64>() / n,
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats() {
        let s = Stats::of(&[1.0, 2.0, 6.0]);
        assert_eq!(
            s,
            Stats {
                min: 1.0,
                avg: 3.0,
                max: 6.0
            }
        );
    }
}
