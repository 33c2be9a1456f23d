//! # Deletes: a rollback's entries, and the contacts they give back
//!
//! Seed 000 (Koenig, Karamouzas and Guy), Algorithm 7: an entity rolled back deletes every
//! entry it wrote after the rollback tick, in one section over all their buckets, and gets
//! back the contacts those entries had, so that it can send antievents for them. The section
//! first checks that every entry is there, of this entity and with the box it was written
//! with; then, in each of an entry's buckets, it removes the contact records of the entry's
//! body at its tick (each builds the contact from both stored entries), and clears the entry's
//! bit (a run left empty leaves the bucket; its hold is let go of after the commit); in the
//! entry's sleep buckets it removes and returns the contacts the entry had with sleep records.
//!
//! Invariants: on error nothing is deleted; each contact is given back exactly once, since its
//! record sits in the owner cell's bucket, which the deleted entry's box covers; after the
//! section, no record names a deleted entry.

use super::write::WriteBuffers;
use super::{BodyEntry, Contact, EntityId, Step, Tick, Tvht, TvhtError};

impl Tvht {
    /// Deletes the entries of `entity` at `tick` for `bodies` (each with the box it was written
    /// with; the state is ignored) and returns the contacts they had, each once.
    pub fn delete(
        &self,
        entity: EntityId,
        tick: Tick,
        bodies: &[BodyEntry],
    ) -> Result<Vec<Contact>, TvhtError> {
        self.delete_steps(entity, &[Step { tick, bodies }])
    }

    /// Algorithm 7: deletes all the given entries in one section and returns every contact
    /// they had (each once, sorted). On error nothing is deleted.
    pub fn delete_steps(
        &self,
        entity: EntityId,
        steps: &[Step<'_>],
    ) -> Result<Vec<Contact>, TvhtError> {
        let planned = self.plan_steps(steps, false, &mut WriteBuffers::default())?;
        let out = self.section(&planned.keys, |view, look| {
            for (s, ps) in planned.per_step(steps) {
                for (b, p) in s.bodies.iter().zip(ps.iter().map(|&i| planned.plan(i))) {
                    for &k in planned.buckets(p) {
                        match view.get(k).find(b.body, s.tick, look) {
                            Some(e) if e.entity == entity => {
                                if e.aabb != b.aabb {
                                    return Err(TvhtError::BoundsMismatch {
                                        body: b.body,
                                        tick: s.tick,
                                    });
                                }
                            }
                            _ => {
                                return Err(TvhtError::NotFound {
                                    entity,
                                    body: b.body,
                                    tick: s.tick,
                                });
                            }
                        }
                    }
                }
            }
            let (mut contacts, mut dropped) = (Vec::new(), Vec::new());
            for (s, ps) in planned.per_step(steps) {
                for (b, p) in s.bodies.iter().zip(ps.iter().map(|&i| planned.plan(i))) {
                    for &k in planned.buckets(p) {
                        let bucket = view.get_mut(k);
                        let (body, tick) = (b.body, s.tick);
                        let mut i = 0;
                        while i < bucket.contacts.len() {
                            let c = bucket.contacts[i];
                            if c.tick == tick && (c.a == body || c.b == body) {
                                let other = if c.a == body { c.b } else { c.a };
                                let (Some(x), Some(y)) = (
                                    bucket.find(body, tick, look),
                                    bucket.find(other, tick, look),
                                ) else {
                                    unreachable!("a contact record's entries share its bucket")
                                };
                                contacts.push(Contact::new(*x, *y));
                                bucket.contacts.swap_remove(i);
                            } else {
                                i += 1;
                            }
                        }
                        bucket.release(body, tick, &mut dropped);
                    }
                    for &k in planned.sleep_buckets(p) {
                        let (body, tick) = (b.body, s.tick);
                        let ours = |c: &Contact| {
                            c.tick() == tick
                                && ((c.a.entity == entity && c.a.body == body)
                                    || (c.b.entity == entity && c.b.body == body))
                        };
                        if view.get(k).met.iter().any(ours) {
                            view.get_mut(k).met.retain(|c| {
                                let gone = ours(c);
                                if gone {
                                    contacts.push(*c);
                                }
                                !gone
                            });
                        }
                        if !view
                            .get(k)
                            .woken
                            .iter()
                            .any(|c| c.awake.body == body && c.awake.tick == tick)
                        {
                            continue;
                        }
                        let bucket = view.get_mut(k);
                        let mut i = 0;
                        while i < bucket.woken.len() {
                            let c = bucket.woken[i];
                            if c.awake.body == body && c.awake.tick == tick {
                                let Some(r) = bucket.record(c.sleeper, tick) else {
                                    unreachable!("a sleep contact's record shares its bucket")
                                };
                                contacts.push(Contact::new(c.awake, r.at(tick)));
                                bucket.woken.swap_remove(i);
                            } else {
                                i += 1;
                            }
                        }
                    }
                }
            }
            Ok((contacts, dropped))
        });
        out.map(|(mut c, dropped)| {
            // SAFETY: `dropped` is what the committed run of the section took out of its
            // buckets (`Bucket::release`), once per bucket.
            unsafe { self.release_all(dropped) };
            c.sort_unstable_by_key(Contact::key);
            c
        })
    }
}
