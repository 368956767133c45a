//! General graph topologies (MPI_Graph_create): `index[i]` is the cumulative number of
//! neighbours of nodes 0..=i, `edges` the neighbours in that order.

use crate::error::{err, ErrorClass, Result};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    pub index: Vec<i32>,
    pub edges: Vec<i32>,
}

impl Graph {
    /// Check a graph of `index.len()` nodes for a communicator of `size` ranks.
    pub fn new(index: &[i32], edges: &[i32], size: i32) -> Result<Graph> {
        let n = index.len() as i32;
        if n > size {
            return err(
                ErrorClass::Arg,
                format!("the graph has {n} nodes but the communicator only {size} ranks"),
            );
        }
        let mut prev = 0;
        for (i, &x) in index.iter().enumerate() {
            if x < prev {
                return err(
                    ErrorClass::Arg,
                    format!("index[{i}] = {x} is below index[{}] = {prev}", i.max(1) - 1),
                );
            }
            prev = x;
        }
        if prev as usize != edges.len() {
            return err(
                ErrorClass::Arg,
                format!("index ends at {prev} but {} edges were given", edges.len()),
            );
        }
        if let Some((i, e)) = edges
            .iter()
            .enumerate()
            .find(|(_, &e)| !(0..n).contains(&e))
        {
            return err(
                ErrorClass::Arg,
                format!("edges[{i}] = {e} is not a node (0..{n})"),
            );
        }
        Ok(Graph {
            index: index.to_vec(),
            edges: edges.to_vec(),
        })
    }

    pub fn nnodes(&self) -> i32 {
        self.index.len() as i32
    }

    /// Neighbours of node `rank` (checked by the caller), in the order given.
    pub fn neighbors(&self, rank: i32) -> &[i32] {
        let r = rank as usize;
        let lo = if r == 0 {
            0
        } else {
            self.index[r - 1] as usize
        };
        &self.edges[lo..self.index[r] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_example() {
        // MPI's example: 0-{1,3}, 1-{0}, 2-{3}, 3-{0,2}.
        let g = Graph::new(&[2, 3, 4, 6], &[1, 3, 0, 3, 0, 2], 4).unwrap();
        assert_eq!(g.neighbors(0), &[1, 3]);
        assert_eq!(g.neighbors(3), &[0, 2]);
        assert!(Graph::new(&[2, 1], &[1, 0], 2).is_err());
        assert!(Graph::new(&[1], &[3], 4).is_err());
        assert!(Graph::new(&[0, 0, 0], &[], 2).is_err());
    }
}
