//! # Messages between entities
//!
//! Seed 000 (Koenig, Karamouzas and Guy), Section 5: entities talk only by messages. A
//! collision found in the TVHT at tick `k` becomes an **event** from the entity that detected
//! it (the second writer at `k`) to the other; the receiver **acks** it once it has taken the
//! event into account (rolled back if `k` was in its past). A rollback that deletes an entry
//! whose contact had been reported sends an **antievent** for that contact to the other entity,
//! which acks it once it has undone the contact (rolled back to `k`).
//!
//! Every message names a contact *instance* ([`Instance`]): the tick, the two bodies and the
//! tags of the two TVHT entries it joined ([`super::TvhtEntry::tag`]). An entry deleted by a
//! rollback and written again is a new entry with a new tag, so a message about an old instance
//! can always be told from one about the current instance, even when the states are bitwise
//! equal (which happens: an event followed by its antievent replays the same states).

use super::tvht::Contact;
use super::{BodyId, Tick};

/// The identity of one contact record of the TVHT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instance {
    pub tick: Tick,
    /// Lower body id, and the tag of its entry.
    pub a: BodyId,
    pub tag_a: u64,
    /// Higher body id, and the tag of its entry.
    pub b: BodyId,
    pub tag_b: u64,
}

impl Instance {
    /// The instance of a contact.
    pub fn of(c: &Contact) -> Instance {
        Instance {
            tick: c.a.tick,
            a: c.a.body,
            tag_a: c.a.tag,
            b: c.b.body,
            tag_b: c.b.tag,
        }
    }

    /// The body that is not `me`.
    pub fn other(&self, me: BodyId) -> BodyId {
        if self.a == me { self.b } else { self.a }
    }

    /// The tag of `me`'s entry.
    pub fn tag_of(&self, me: BodyId) -> u64 {
        if self.a == me { self.tag_a } else { self.tag_b }
    }
}

/// A message in an entity's mailbox. An event carries both entries (the pre-event states the
/// receiver computes its kick from), so it is the large variant; boxing it would cost an
/// allocation per event for no gain (messages are moved once, into a queue and out).
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Msg {
    /// A collision at `contact.tick()`, with both bodies' pre-event states.
    Event(Contact),
    /// The event of this instance has been taken into account by its receiver.
    EventAck(Instance),
    /// The contact of this instance no longer exists (its sender deleted its entry).
    Antievent(Instance),
    /// The antievent of this instance has been taken into account by its receiver.
    AntieventAck(Instance),
}
