//! A per-step union-find that groups bodies into islands (interim, until the persistent island
//! graph of `crate::islands` is wired in).
//!
//! Bodies joined by a touching contact belong to the same island (seed 002, "Union-find"). Static
//! bodies are not part of the graph: a contact with a static body joins nothing. Unions always
//! make the smaller root the parent, so an island's root is its smallest body id, whatever order
//! the unions come in: the grouping is a pure function of the contact set.

/// Disjoint sets over body ids with path halving.
#[derive(Debug, Default)]
pub struct UnionFind {
    parent: Vec<u32>,
}

impl UnionFind {
    /// Resets to `n` singleton sets.
    pub fn reset(&mut self, n: usize) {
        self.parent.clear();
        self.parent.extend(0..n as u32);
    }

    /// The root (smallest id) of `x`'s set.
    #[inline]
    pub fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let p = self.parent[x as usize];
            let gp = self.parent[p as usize];
            self.parent[x as usize] = gp;
            x = gp;
        }
        x
    }

    /// Joins the sets of `a` and `b`; the smaller root becomes the root.
    #[inline]
    pub fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra < rb {
            self.parent[rb as usize] = ra;
        } else if rb < ra {
            self.parent[ra as usize] = rb;
        }
    }

    /// Checks that every parent chain ends at a root no larger than its members.
    pub fn validate(&mut self) -> Result<(), String> {
        for x in 0..self.parent.len() as u32 {
            let r = self.find(x);
            if r > x {
                return Err(format!("root {r} of {x} is larger than the member"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_smallest_members() {
        let mut uf = UnionFind::default();
        uf.reset(8);
        uf.union(5, 3);
        uf.union(7, 5);
        uf.union(1, 6);
        uf.validate().unwrap();
        assert_eq!(uf.find(7), 3);
        assert_eq!(uf.find(6), 1);
        assert_eq!(uf.find(0), 0);
        uf.union(6, 7);
        assert_eq!(uf.find(3), 1);
    }
}
