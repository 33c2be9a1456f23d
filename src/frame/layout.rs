//! Island layout (stage 5 of the frame pipeline). The islands themselves live in the persistent
//! island graph ([`crate::islands::IslandGraph`], seed 002), which the narrow phase's begin/end
//! events update and which wakes a whole island when an awake body touches it; here the awake
//! islands are numbered by first body id, packed into solver batches, and their bodies and
//! contacts laid out contiguously per batch (counting sorts, no per-contact allocation) for
//! stage 6.

use super::engine::{FrameEngine, NONE};
use crate::dynamics::{ConstraintPoint, ContactConstraint, SolverBody};
use crate::islands::IslandId;

impl FrameEngine {
    /// Stage 5: islands by union-find over touching contacts; wake islands touched by an awake body;
    /// lay out awake islands' bodies and constraints contiguously for the solver.
    pub(super) fn build_islands(&mut self) {
        let n = self.states.len();
        let touching = self.contacts.iter().filter(|c| c.touching).count();
        self.stats.contacts_last = touching;
        self.stats.contacts_max = self.stats.contacts_max.max(touching);
        // The graph woke every island an awake body touched (link wakes both islands).
        let mut woken = 0;
        for i in 0..n {
            if self.is_static[i] || self.awake[i] {
                continue;
            }
            if self.graph.is_body_awake(i) == Ok(true) {
                self.awake[i] = true;
                self.resting_dirty = true;
                if self.graph.island_of(i) == Ok(Some(IslandId(i as u32))) {
                    woken += 1;
                }
            }
        }
        self.stats.wakes += woken;
        self.stats.islands_sleeping_last = self
            .graph
            .islands()
            .filter(|&isl| self.graph.is_awake(isl) == Ok(false))
            .count();

        // Number the awake islands in order of their root (smallest body id); `local` is a body's
        // rank inside its island.
        self.island_of.iter_mut().for_each(|x| *x = NONE);
        self.island_size.clear();
        for i in 0..n {
            if !self.awake[i] {
                continue;
            }
            // An island's id is one of its bodies (content-derived, seed 002 module docs).
            let r = match self.graph.island_of(i) {
                Ok(Some(id)) => id.index(),
                _ => continue,
            };
            if self.island_of[r] == NONE {
                self.island_of[r] = self.island_size.len() as u32;
                self.island_size.push(0);
            }
            let k = self.island_of[r];
            self.island_of[i] = k;
            self.local[i] = self.island_size[k as usize];
            self.island_size[k as usize] += 1;
        }
        let islands = self.island_size.len();
        self.stats.islands_awake_last = islands;

        // Batches: consecutive islands packed up to BATCH_BODIES bodies, solved by one task. The
        // solver never couples two islands (they share only the static stand-in, which is never
        // written), so batching changes no result, only the overhead per island.
        // Islands with contacts and free ones (exact ballistic flight) never share a batch.
        self.island_has_contact.clear();
        self.island_has_contact.resize(islands, false);
        for c in &self.contacts {
            if c.touching {
                let owner = if !self.is_static[c.a()] { c.a() } else { c.b() };
                let k = self.island_of[owner];
                if k != NONE && self.awake[owner] {
                    self.island_has_contact[k as usize] = true;
                }
            }
        }
        self.island_batch.clear();
        self.island_offset.clear();
        self.batch_size.clear();
        let mut batch_kind = false;
        for (k, &size) in self.island_size.iter().enumerate() {
            let kind = self.island_has_contact[k];
            match self.batch_size.last_mut() {
                Some(b) if *b + size <= self.batch_bodies && kind == batch_kind => {
                    self.island_offset.push(*b);
                    *b += size;
                }
                _ => {
                    self.island_offset.push(0);
                    self.batch_size.push(size);
                    batch_kind = kind;
                }
            }
            self.island_batch.push(self.batch_size.len() as u32 - 1);
        }
        let batches = self.batch_size.len();
        // Body slots: each batch's bodies then its static stand-in.
        self.body_start.clear();
        let mut acc = 0u32;
        for &c in &self.batch_size {
            self.body_start.push(acc);
            acc += c + 1;
        }
        self.body_start.push(acc);
        self.solver_bodies.clear();
        self.solver_bodies.resize(acc as usize, SolverBody::STATIC);
        for i in 0..n {
            let k = self.island_of[i];
            if k == NONE || !self.awake[i] {
                self.slot[i] = NONE;
                continue;
            }
            // From here on `local` is the index inside the batch.
            self.local[i] += self.island_offset[k as usize];
            let s = self.body_start[self.island_batch[k as usize] as usize] + self.local[i];
            self.slot[i] = s;
            let st = &self.states[i];
            let mut body = SolverBody::new(
                st.velocity,
                st.angular_velocity,
                st.rotation,
                &self.masses[i],
            );
            body.rotating_anchors = !matches!(self.shapes[i], crate::scene::Shape::Sphere { .. });
            self.solver_bodies[s as usize] = body;
        }
        // Constraints: touching contacts of awake islands, grouped by batch (counting sort), in
        // contact order inside a batch.
        self.contact_start.clear();
        self.contact_start.resize(batches + 1, 0);
        self.island_contacts.clear();
        for (ci, c) in self.contacts.iter().enumerate() {
            if !c.touching {
                continue;
            }
            let (a, b) = (c.a(), c.b());
            let owner = if !self.is_static[a] { a } else { b };
            let k = self.island_of[owner];
            if k == NONE || !self.awake[owner] {
                continue;
            }
            self.contact_start[self.island_batch[k as usize] as usize + 1] += 1;
            self.island_contacts.push(ci as u32);
        }
        for bt in 0..batches {
            self.contact_start[bt + 1] += self.contact_start[bt];
        }
        self.order.clear();
        self.order.resize(self.island_contacts.len(), 0);
        self.cursor.clear();
        self.cursor
            .extend_from_slice(&self.contact_start[..batches]);
        self.point_start.clear();
        self.point_start.resize(batches + 1, 0);
        for &ci in &self.island_contacts {
            let c = &self.contacts[ci as usize];
            let owner = if !self.is_static[c.a()] { c.a() } else { c.b() };
            let bt = self.island_batch[self.island_of[owner] as usize] as usize;
            self.order[self.cursor[bt] as usize] = ci;
            self.cursor[bt] += 1;
            self.point_start[bt + 1] += c.manifold.count;
        }
        for bt in 0..batches {
            self.point_start[bt + 1] += self.point_start[bt];
        }
        // The constraints themselves are built by each batch's task (stage 6), in parallel.
        self.constraints.clear();
        self.constraints
            .resize(self.order.len(), ContactConstraint::default());
        self.points.clear();
        self.points.resize(
            self.point_start[batches] as usize,
            ConstraintPoint::default(),
        );
    }
}
