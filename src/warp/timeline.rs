//! # An entity's timeline: its bodies at every tick it keeps
//!
//! Seed 000 (Koenig, Karamouzas and Guy), Section 5: an entity keeps a *state queue*, its
//! states from the last one the GVT may still need up to its LVT, to roll back to and to
//! answer for. Here that is a [`Timeline`]: for every tick `base ..= lvt` and every body of the
//! entity, the pre-event state, the box the TVHT knows it by and the tag of the write that put
//! it there, with the anchor a single body flies from (rule 4 of [`super::rules`]) or the
//! island a group stands in before the rules of that tick (which holds its bodies' anchors).
//!
//! The ticks are kept in **segments** of consecutive ticks: a *tick segment* holds each tick's
//! values, as written tick by tick (a group stepped by its solver, a body kicked at every tick);
//! a *span segment* is one body flying from one anchor through ticks `from..=to`, written to the
//! TVHT as one record: it keeps the anchor, the record's box and tag, and computes a tick's state
//! when asked ([`super::rules::Rules::flight`]), so a span costs what its events cost, not its
//! ticks (DESIGN.md, "The two engines"). A *glide* is the span segment of a group's bodies
//! inside a substep of its island solver: each body glides from its anchor (the substep's
//! start and the solver's move, [`super::rules::Anchor::glide`]), one record per body. A
//! *still segment* is a nap of a sleeping group: its bodies do not move, so it keeps one state,
//! box and tag per body and its island for all its ticks (the TVHT holds them as sleep
//! records), however many ticks the nap lasts.
//!
//! Invariants (checked by [`Timeline::validate`]): the segments cover `base ..= lvt` without gap
//! or overlap, in tick order, none empty; a tick segment holds `bodies` states, boxes and tags per
//! tick, and one anchor per tick (single bodies) or one island per tick (groups), never both; a
//! span segment holds one anchor and box per body, and a group's its island; a still segment
//! one state and box per body.

use super::Tick;
use super::group_rules::Island;
use super::gvt::Piece;
use super::rules::{Anchor, Rules};
use crate::dynamics::BodyState;
use crate::geometry::Aabb;
use std::collections::VecDeque;
use std::sync::Arc;

/// A run of consecutive ticks written tick by tick.
#[derive(Clone, Debug, Default)]
struct TickSeg {
    /// `bodies` per tick, in body order.
    states: VecDeque<BodyState>,
    aabbs: VecDeque<Aabb>,
    tags: VecDeque<u64>,
    /// One per tick: a single body's anchors, or a group's islands (the other is empty).
    anchors: VecDeque<Anchor>,
    islands: VecDeque<Arc<Island>>,
}

/// Each body flying (or gliding) from its anchor at every tick of the segment, written as one
/// TVHT record per body with its box, all under `tag`: a single body's span, or the glide of
/// a group's bodies inside a substep; `island` is its group's with contact groups (a single
/// body's: one body, no contact; a glide's: the substep's, which no tick of it changes).
#[derive(Clone, Debug)]
struct SpanSeg {
    ticks: u64,
    /// Per body, in body order: its anchor and the box of its record.
    paths: smallvec::SmallVec<[(Anchor, Aabb); 1]>,
    tag: u64,
    island: Option<Arc<Island>>,
    /// A glide that reaches its substep's last tick: the island there (due again), if it is.
    end: Option<Arc<Island>>,
}

impl SpanSeg {
    /// The island at offset `i` of the segment.
    fn island_at(&self, i: u64) -> Option<&Arc<Island>> {
        match &self.end {
            Some(e) if i + 1 == self.ticks => Some(e),
            _ => self.island.as_ref(),
        }
    }
}

/// A sleeping group's nap: every body at one state and box at every tick of the segment, all
/// under `tag`, in `island` (asleep).
#[derive(Clone, Debug)]
struct StillSeg {
    ticks: u64,
    states: Vec<BodyState>,
    aabbs: Vec<Aabb>,
    tag: u64,
    island: Arc<Island>,
}

#[derive(Clone, Debug)]
enum Data {
    Ticks(TickSeg),
    Span(SpanSeg),
    Still(StillSeg),
}

#[derive(Clone, Debug)]
struct Seg {
    /// Its first tick.
    from: Tick,
    data: Data,
}

impl Seg {
    /// Body `j`'s state at tick `t` of the segment, of `bodies` bodies a tick.
    #[inline]
    fn state(&self, bodies: usize, rules: &Rules, t: Tick, j: usize) -> BodyState {
        match &self.data {
            Data::Ticks(d) => d.states[(t - self.from) as usize * bodies + j],
            Data::Span(p) => rules.flight(&p.paths[j].0, t),
            Data::Still(n) => n.states[j],
        }
    }

    fn ticks(&self, bodies: usize) -> u64 {
        match &self.data {
            Data::Ticks(d) => (d.states.len() / bodies) as u64,
            Data::Span(s) => s.ticks,
            Data::Still(s) => s.ticks,
        }
    }
}

/// What an entity keeps of its bodies at the ticks `base ..= lvt` (see the module
/// documentation).
#[derive(Clone, Debug)]
pub struct Timeline {
    bodies: usize,
    segs: VecDeque<Seg>,
}

/// The pieces of frame states ([`Walk::piece`]) for ticks asked in ascending order
/// ([`Timeline::walk`]): it keeps the segment of the last tick asked and where it ends, so a
/// walk over many ticks (a record's frames) finds each segment once instead of searching for it
/// at every tick.
pub struct Walk<'a> {
    line: &'a Timeline,
    seg: usize,
    cur: &'a Seg,
    /// The first tick after `cur`.
    end: Tick,
}

impl<'a> Walk<'a> {
    fn at(line: &'a Timeline, seg: usize) -> Walk<'a> {
        let cur = &line.segs[seg];
        Walk {
            line,
            seg,
            cur,
            end: cur.from + cur.ticks(line.bodies),
        }
    }

    /// Moves on to the segment holding tick `t` (at or after the last tick asked).
    #[inline]
    fn seek(&mut self, t: Tick) {
        while t >= self.end {
            *self = Walk::at(self.line, self.seg + 1);
        }
    }

    /// Body `j`'s piece of the frame states at tick `t` (at or after the last tick asked, at
    /// most the LVT; see [`Piece`]): a span's anchor, through the span's last tick; at any
    /// other tick its state there alone (a glide's too: a glide flies by its substep's move,
    /// not by rule 4).
    #[inline]
    pub fn piece(&mut self, rules: &Rules, t: Tick, j: usize) -> Piece {
        self.seek(t);
        debug_assert!(self.cur.from <= t, "tick {t} before the walk");
        match &self.cur.data {
            Data::Span(s) if s.paths[j].0.glide.is_none() => {
                let a = &s.paths[j].0;
                Piece {
                    tick: a.tick,
                    state: a.state,
                    last: self.end - 1,
                }
            }
            _ => Piece::at(t, self.cur.state(self.line.bodies, rules, t, j)),
        }
    }
}

/// One tick of one body, as the timeline holds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct At {
    pub state: BodyState,
    pub aabb: Aabb,
    pub tag: u64,
}

impl Timeline {
    /// `states.len()` bodies at tick `tick` with these boxes and tags, the first tick kept; a
    /// single body flies from `anchor`, a group stands in `island`.
    pub fn start(
        tick: Tick,
        states: &[BodyState],
        aabbs: &[Aabb],
        tags: &[u64],
        anchor: Option<Anchor>,
        island: Option<Arc<Island>>,
    ) -> Timeline {
        debug_assert!(!states.is_empty() && states.len() == aabbs.len());
        let mut t = Timeline {
            bodies: states.len(),
            segs: VecDeque::new(),
        };
        t.push_tick(tick, states, aabbs, tags, anchor, island);
        t
    }

    /// Bodies per tick.
    pub fn bodies(&self) -> usize {
        self.bodies
    }

    /// The first tick kept.
    pub fn base(&self) -> Tick {
        self.segs.front().expect("a timeline is never empty").from
    }

    /// The last tick kept (the entity's LVT).
    pub fn lvt(&self) -> Tick {
        let last = self.segs.back().expect("a timeline is never empty");
        last.from + last.ticks(self.bodies) - 1
    }

    /// The segment holding tick `t` and `t`'s offset in it.
    fn locate(&self, t: Tick) -> (&Seg, usize) {
        debug_assert!(
            self.base() <= t && t <= self.lvt(),
            "tick {t} outside the timeline"
        );
        // Most asks are about the last segment (the LVT, a rollback's few ticks).
        if let Some(s) = self.segs.back()
            && s.from <= t
        {
            return (s, (t - s.from) as usize);
        }
        let i = self.segs.partition_point(|s| s.from <= t) - 1;
        let s = &self.segs[i];
        (s, (t - s.from) as usize)
    }

    /// Body `j` at tick `t`: its state, box and tag.
    pub fn at(&self, rules: &Rules, body: u32, t: Tick, j: usize) -> At {
        let (s, i) = self.locate(t);
        match &s.data {
            Data::Ticks(d) => {
                let k = i * self.bodies + j;
                At {
                    state: d.states[k],
                    aabb: d.aabbs[k],
                    tag: d.tags[k],
                }
            }
            Data::Span(p) => {
                let state = rules.flight(&p.paths[j].0, t);
                At {
                    state,
                    aabb: rules.aabb(body as usize, &state),
                    tag: p.tag,
                }
            }
            Data::Still(n) => At {
                state: n.states[j],
                aabb: n.aabbs[j],
                tag: n.tag,
            },
        }
    }

    /// Body `j`'s state at tick `t` (the per-tick values of a tick segment; a span's flight).
    pub fn state(&self, rules: &Rules, t: Tick, j: usize) -> BodyState {
        let (s, _) = self.locate(t);
        s.state(self.bodies, rules, t, j)
    }

    /// A walk over the frame pieces of ticks from `t` on, asked in ascending order (see
    /// [`Walk`]).
    pub fn walk(&self, t: Tick) -> Walk<'_> {
        let seg = self.segs.partition_point(|s| s.from <= t).saturating_sub(1);
        Walk::at(self, seg)
    }

    /// Body `j`'s tag at tick `t`.
    pub fn tag(&self, t: Tick, j: usize) -> u64 {
        let (s, i) = self.locate(t);
        match &s.data {
            Data::Ticks(d) => d.tags[i * self.bodies + j],
            Data::Span(p) => p.tag,
            Data::Still(n) => n.tag,
        }
    }

    /// A single body's anchor at tick `t` (the one its state there flies from).
    pub fn anchor(&self, t: Tick) -> Anchor {
        let (s, i) = self.locate(t);
        match &s.data {
            Data::Ticks(d) => d.anchors[i],
            Data::Span(p) => p.paths[0].0,
            Data::Still(_) => unreachable!("a single body never naps"),
        }
    }

    /// A group's island at tick `t`, as it stands before the rules of that tick.
    pub fn island(&self, t: Tick) -> &Arc<Island> {
        let (s, i) = self.locate(t);
        match &s.data {
            Data::Ticks(d) => &d.islands[i],
            Data::Span(p) => p
                .island_at(i as u64)
                .expect("a group's span keeps its island"),
            Data::Still(n) => &n.island,
        }
    }

    /// The island at the LVT, if the timeline is a group's.
    pub fn last_island(&self) -> Option<&Arc<Island>> {
        match &self.segs.back()?.data {
            Data::Ticks(d) => d.islands.back(),
            Data::Span(p) => p.island_at(p.ticks - 1),
            Data::Still(n) => Some(&n.island),
        }
    }

    /// Sets body `j`'s box and tag at tick `t` of a tick segment (a start tick's, known once
    /// its first write or the change that made the entity gives them).
    pub fn set_tick(&mut self, t: Tick, j: usize, aabb: Aabb, tag: u64) {
        let i = self.segs.partition_point(|s| s.from <= t) - 1;
        let s = &mut self.segs[i];
        let k = (t - s.from) as usize * self.bodies + j;
        match &mut s.data {
            Data::Ticks(d) => {
                d.aabbs[k] = aabb;
                d.tags[k] = tag;
            }
            Data::Span(_) | Data::Still(_) => {
                unreachable!("a span's or a nap's ticks are set by its record")
            }
        }
    }

    /// Whether tick `t` is in a span segment.
    pub fn in_span(&self, t: Tick) -> bool {
        matches!(self.locate(t).0.data, Data::Span(_))
    }

    /// The last segment, to append ticks to: a new tick segment from `from` (the tick after
    /// the LVT) if the last one is a span or there is none.
    fn tick_seg_from(&mut self, from: Tick) -> &mut TickSeg {
        if !matches!(
            self.segs.back(),
            Some(Seg {
                data: Data::Ticks(_),
                ..
            })
        ) {
            self.segs.push_back(Seg {
                from,
                data: Data::Ticks(TickSeg::default()),
            });
        }
        match self.segs.back_mut() {
            Some(Seg {
                data: Data::Ticks(d),
                ..
            }) => d,
            _ => unreachable!("a tick segment was just made"),
        }
    }

    /// Appends tick `tick` (the one after the LVT, or the first): every body's state, box and
    /// tag, and a single body's anchor or a group's island.
    pub fn push_tick(
        &mut self,
        tick: Tick,
        states: &[BodyState],
        aabbs: &[Aabb],
        tags: &[u64],
        anchor: Option<Anchor>,
        island: Option<Arc<Island>>,
    ) {
        debug_assert!(self.segs.is_empty() || tick == self.lvt() + 1);
        debug_assert_eq!(states.len(), self.bodies);
        let d = self.tick_seg_from(tick);
        d.states.extend(states);
        d.aabbs.extend(aabbs);
        d.tags.extend(tags);
        d.anchors.extend(anchor);
        d.islands.extend(island);
    }

    /// Appends the ticks `from..from + n` (from the one after the LVT) written by one request
    /// under tags `tag, tag + 1, ...`: `entries` holds `n` ticks of every body (state and box);
    /// a single body's `anchors` (`n` of them) or a group's `islands` (`n`).
    pub fn push_ticks(
        &mut self,
        from: Tick,
        n: usize,
        entries: &[super::tvht::BodyEntry],
        tag: u64,
        anchors: &[Anchor],
        islands: impl IntoIterator<Item = Arc<Island>>,
    ) {
        debug_assert!(from == self.lvt() + 1 && entries.len() >= n * self.bodies);
        let bodies = self.bodies;
        let d = self.tick_seg_from(from);
        let done = &entries[..n * bodies];
        d.states.extend(done.iter().map(|b| b.state));
        d.aabbs.extend(done.iter().map(|b| b.aabb));
        d.tags
            .extend((0..done.len()).map(|i| tag + (i / bodies) as u64));
        d.anchors.extend(anchors.iter().take(n).copied());
        d.islands.extend(islands.into_iter().take(n));
    }

    /// Appends a nap of a sleeping group: ticks `from..=to` (from the one after the LVT), every
    /// body at `states` with boxes `aabbs` under `tag`, in `island`. Extends the last segment
    /// if it is a nap under the same tag (a nap that goes on).
    pub fn push_still(
        &mut self,
        (from, to): (Tick, Tick),
        states: &[BodyState],
        aabbs: &[Aabb],
        tag: u64,
        island: Arc<Island>,
    ) {
        debug_assert!(from == self.lvt() + 1 && to >= from);
        debug_assert!(states.len() == self.bodies && aabbs.len() == self.bodies);
        if let Some(Seg {
            data: Data::Still(n),
            ..
        }) = self.segs.back_mut()
            && n.tag == tag
        {
            debug_assert!(n.states == states && n.aabbs == aabbs);
            n.ticks += to - from + 1;
            return;
        }
        self.segs.push_back(Seg {
            from,
            data: Data::Still(StillSeg {
                ticks: to - from + 1,
                states: states.to_vec(),
                aabbs: aabbs.to_vec(),
                tag,
                island,
            }),
        });
    }

    /// Appends the span of a single body: ticks `from..=to` (from the one after the LVT),
    /// flying from `anchor`, written as one record with box `aabb` under `tag`; `island` is
    /// its group's with contact groups.
    pub fn push_span(
        &mut self,
        from: Tick,
        to: Tick,
        anchor: Anchor,
        aabb: Aabb,
        tag: u64,
        island: Option<Arc<Island>>,
    ) {
        debug_assert!(self.bodies == 1);
        let paths = [(anchor, aabb)].into_iter().collect();
        self.push_paths(from, to, paths, tag, (island, None));
    }

    /// Appends the glide of a group's bodies: ticks `from..=to` (from the one after the LVT),
    /// each body (in body order) gliding from its anchor, written as one record per body with
    /// its box under `tag`, all in the substep's `island`, but for the substep's last tick if
    /// the glide reaches it (`end`: the island there).
    pub fn push_glide(
        &mut self,
        from: Tick,
        to: Tick,
        paths: &[(Anchor, Aabb)],
        tag: u64,
        island: Arc<Island>,
        end: Option<Arc<Island>>,
    ) {
        debug_assert_eq!(paths.len(), self.bodies);
        let paths = paths.iter().copied().collect();
        self.push_paths(from, to, paths, tag, (Some(island), end));
    }

    fn push_paths(
        &mut self,
        from: Tick,
        to: Tick,
        paths: smallvec::SmallVec<[(Anchor, Aabb); 1]>,
        tag: u64,
        (island, end): (Option<Arc<Island>>, Option<Arc<Island>>),
    ) {
        debug_assert!(from == self.lvt() + 1 && to >= from);
        self.segs.push_back(Seg {
            from,
            data: Data::Span(SpanSeg {
                ticks: to - from + 1,
                paths,
                tag,
                island,
                end,
            }),
        });
    }

    /// The spans and glides after tick `r`: each one's first tick after `r`, its bodies'
    /// anchors and boxes (in body order) and its tag (what a rollback to `r` cuts in the TVHT).
    pub fn spans_after(
        &self,
        r: Tick,
    ) -> impl Iterator<Item = (Tick, &[(Anchor, Aabb)], u64)> + '_ {
        self.segs.iter().filter_map(move |s| match &s.data {
            Data::Span(p) if s.from + p.ticks > r + 1 => {
                Some((s.from.max(r + 1), &p.paths[..], p.tag))
            }
            _ => None,
        })
    }

    /// The ticks after `r` written tick by tick (what a rollback to `r` deletes entry by
    /// entry), ascending.
    pub fn ticks_after(&self, r: Tick) -> impl Iterator<Item = Tick> + '_ {
        let bodies = self.bodies;
        self.segs.iter().flat_map(move |s| {
            let end = s.from + s.ticks(bodies);
            let from = s.from.max(r + 1);
            let ticked = matches!(s.data, Data::Ticks(_));
            (from..end).filter(move |_| ticked)
        })
    }

    /// Forgets the ticks after `r` (`base <= r <= lvt`): a rollback.
    pub fn truncate(&mut self, r: Tick) {
        debug_assert!(self.base() <= r && r <= self.lvt());
        while self.segs.back().is_some_and(|s| s.from > r) {
            self.segs.pop_back();
        }
        let bodies = self.bodies;
        let s = self.segs.back_mut().expect("tick r is kept");
        let keep = r - s.from + 1;
        match &mut s.data {
            Data::Ticks(d) => {
                let k = keep as usize;
                d.states.truncate(k * bodies);
                d.aabbs.truncate(k * bodies);
                d.tags.truncate(k * bodies);
                d.anchors.truncate(k.min(d.anchors.len()));
                d.islands.truncate(k.min(d.islands.len()));
            }
            Data::Span(p) => {
                if keep < p.ticks {
                    p.end = None;
                }
                p.ticks = keep;
            }
            Data::Still(n) => n.ticks = keep,
        }
    }

    /// Forgets the ticks before `base` (`base <= lvt`): final, never read again.
    pub fn trim(&mut self, base: Tick) {
        debug_assert!(base <= self.lvt());
        let bodies = self.bodies;
        while self
            .segs
            .front()
            .is_some_and(|s| s.from + s.ticks(bodies) <= base)
        {
            self.segs.pop_front();
        }
        let s = self.segs.front_mut().expect("tick base is kept");
        if s.from >= base {
            return;
        }
        let drop = (base - s.from) as usize;
        s.from = base;
        match &mut s.data {
            Data::Ticks(d) => {
                d.states.drain(..drop * bodies);
                d.aabbs.drain(..drop * bodies);
                d.tags.drain(..drop * bodies);
                let drop_one = |n: usize| drop.min(n);
                let n = drop_one(d.anchors.len());
                d.anchors.drain(..n);
                let n = drop_one(d.islands.len());
                d.islands.drain(..n);
            }
            Data::Span(p) => p.ticks -= drop as u64,
            Data::Still(n) => n.ticks -= drop as u64,
        }
    }

    /// Gives back the room of the tick segments beyond `ticks` ticks (after a lead that fell).
    pub fn shrink_to(&mut self, ticks: usize) {
        let bodies = self.bodies;
        for s in &mut self.segs {
            if let Data::Ticks(d) = &mut s.data
                && d.states.capacity() > 2 * ticks * bodies
            {
                d.states.shrink_to(ticks * bodies);
                d.aabbs.shrink_to(ticks * bodies);
                d.tags.shrink_to(ticks * bodies);
                d.anchors.shrink_to(ticks);
                d.islands.shrink_to(ticks);
            }
        }
    }

    /// Checks the invariants of the module documentation.
    pub fn validate(&self) -> Result<(), String> {
        let mut next: Option<Tick> = None;
        for s in &self.segs {
            let n = s.ticks(self.bodies);
            if n == 0 {
                return Err(format!("an empty segment at tick {}", s.from));
            }
            if next.is_some_and(|t| t != s.from) {
                return Err(format!(
                    "a segment at {} after one ending at {next:?}",
                    s.from
                ));
            }
            next = Some(s.from + n);
            match &s.data {
                Data::Ticks(d) => {
                    let k = n as usize * self.bodies;
                    if d.aabbs.len() != k || d.tags.len() != k || d.states.len() != k {
                        return Err(format!("a tick segment at {} is ragged", s.from));
                    }
                    let (a, i) = (d.anchors.len(), d.islands.len());
                    if !((a == n as usize && i == 0) || (i == n as usize && a == 0)) {
                        return Err(format!(
                            "a tick segment at {} of {n} ticks has {a} anchors and {i} islands",
                            s.from
                        ));
                    }
                }
                Data::Span(p) if p.paths.len() != self.bodies => {
                    return Err(format!(
                        "a span at {} of {} bodies in a timeline of {}",
                        s.from,
                        p.paths.len(),
                        self.bodies
                    ));
                }
                Data::Span(p) if self.bodies > 1 && p.island.is_none() => {
                    return Err(format!("a glide at {} without its island", s.from));
                }
                Data::Span(_) => {}
                Data::Still(n) if n.states.len() != self.bodies || n.aabbs.len() != self.bodies => {
                    return Err(format!("a nap at {} is ragged", s.from));
                }
                Data::Still(n) if !n.island.asleep => {
                    return Err(format!("a nap at {} of an island awake", s.from));
                }
                Data::Still(_) => {}
            }
        }
        if next.is_none() {
            return Err("an empty timeline".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::{BodySpec, SceneBuilder, SplitMix64};
    use crate::warp::tvht::BodyEntry;
    use glam::{Quat, Vec3};

    /// A rollback of `line` (`truncate`) or else a trim at a random tick it keeps, the same on
    /// its `model` (entries by tick, ascending, `tick` of each).
    fn cut_or_trim<M>(
        line: &mut Timeline,
        model: &mut Vec<M>,
        tick: impl Fn(&M) -> Tick,
        (rng, cut): (&mut SplitMix64, bool),
    ) {
        let (base, lvt) = (line.base(), line.lvt());
        let t = base + rng.next_u64() % (lvt - base + 1);
        if cut {
            line.truncate(t);
            model.retain(|m| tick(m) <= t);
        } else {
            line.trim(t);
            model.retain(|m| tick(m) >= t);
        }
    }

    /// `line` is valid and keeps the ticks of `model`.
    fn keeps<M>(line: &Timeline, model: &[M], tick: impl Fn(&M) -> Tick) {
        line.validate().unwrap();
        let ends = (tick(&model[0]), tick(model.last().unwrap()));
        assert_eq!((line.base(), line.lvt()), ends);
    }

    /// Against a model that keeps every tick: random appends (ticks one at a time and in
    /// batches, spans), rollbacks and trims of one body's timeline; every tick kept answers its
    /// state, box, tag and anchor as the model does, span ticks by the flight of their anchor.
    #[test]
    fn a_timeline_answers_every_tick_as_a_tick_by_tick_model() {
        let scene = SceneBuilder::new()
            .gravity(Vec3::new(0.0, -9.81, 0.0))
            .body(BodySpec::sphere(0.5))
            .build()
            .unwrap();
        let rules = Rules::new(&scene).unwrap();
        let mut rng = SplitMix64::new(5);
        let state = |x: f32| BodyState {
            position: Vec3::new(x, 2.0, 0.0),
            rotation: Quat::IDENTITY,
            velocity: Vec3::new(1.0, x, 0.0),
            angular_velocity: Vec3::ZERO,
        };
        // The model: per tick (state, box, tag, anchor).
        let a0 = Anchor::at(10, state(0.0));
        let mut model: Vec<(Tick, At, Anchor)> = Vec::new();
        let at = |s: BodyState, tag: u64| At {
            state: s,
            aabb: rules.aabb(0, &s),
            tag,
        };
        let first = rules.flight(&a0, 10);
        model.push((10, at(first, 0), a0));
        let mut line =
            Timeline::start(10, &[first], &[rules.aabb(0, &first)], &[0], Some(a0), None);
        let mut tag = 1u64;
        for step in 0..2000 {
            let lvt = line.lvt();
            match rng.next_u64() % 5 {
                0 => {
                    let s = state(step as f32 * 0.01);
                    let a = Anchor::at(lvt, s);
                    line.push_tick(lvt + 1, &[s], &[rules.aabb(0, &s)], &[tag], Some(a), None);
                    model.push((lvt + 1, at(s, tag), a));
                    tag += 1;
                }
                1 => {
                    let n = 1 + (rng.next_u64() % 8) as usize;
                    let a = Anchor::at(lvt, state(step as f32 * 0.02));
                    let entries: Vec<BodyEntry> = (1..=n as Tick)
                        .map(|i| {
                            let s = rules.flight(&a, lvt + i);
                            BodyEntry {
                                body: 0,
                                aabb: rules.aabb(0, &s),
                                state: s,
                                asleep: false,
                            }
                        })
                        .collect();
                    line.push_ticks(lvt + 1, n, &entries, tag, &vec![a; n], std::iter::empty());
                    for (i, e) in entries.iter().enumerate() {
                        model.push((lvt + 1 + i as Tick, at(e.state, tag + i as u64), a));
                    }
                    tag += n as u64;
                }
                2 => {
                    let n = 1 + rng.next_u64() % 100;
                    let a = Anchor::at(lvt, state(-(step as f32) * 0.01));
                    let bx = rules.span_aabb(&rules.span(0, &a, lvt + 1, lvt + n));
                    line.push_span(lvt + 1, lvt + n, a, bx, tag, None);
                    for t in lvt + 1..=lvt + n {
                        model.push((t, at(rules.flight(&a, t), tag), a));
                    }
                    tag += 1;
                }
                k => cut_or_trim(&mut line, &mut model, |m| m.0, (&mut rng, k == 3)),
            }
            keeps(&line, &model, |m| m.0);
            for &(t, want, anchor) in &model {
                assert_eq!(line.at(&rules, 0, t, 0), want, "step {step}, tick {t}");
                assert_eq!(line.state(&rules, t, 0), want.state);
                assert_eq!(line.tag(t, 0), want.tag);
                assert_eq!(line.anchor(t), anchor);
            }
        }
    }

    /// A group's timeline against the same kind of model: ticks written one at a time, naps
    /// (still segments) that go on under their tag or start under a new one, rollbacks into
    /// them and trims; every tick kept answers each body's state, box and tag and the island
    /// as the model does, and only the ticks written one at a time are `ticks_after`.
    #[test]
    fn a_group_timeline_with_naps_answers_every_tick_as_a_model() {
        let scene = SceneBuilder::new()
            .body(BodySpec::sphere(0.5))
            .body(BodySpec::sphere(0.5))
            .build()
            .unwrap();
        let rules = Rules::new(&scene).unwrap();
        let mut rng = SplitMix64::new(9);
        let states = |x: f32| {
            [0.0, 3.0].map(|z| BodyState {
                position: Vec3::new(x, 2.0, z),
                rotation: Quat::IDENTITY,
                velocity: Vec3::ZERO,
                angular_velocity: Vec3::ZERO,
            })
        };
        let boxes = |s: &[BodyState; 2]| [rules.aabb(0, &s[0]), rules.aabb(1, &s[1])];
        let island = |asleep: bool, rest: u64| {
            Arc::new(Island {
                asleep,
                rest_ticks: rest,
                ..Island::single(0, Anchor::at(0, states(0.0)[0]))
            })
        };
        // The model: per tick, each body's (state, box, tag), the island, and whether it was
        // written one tick at a time.
        type Tick2 = (Tick, [At; 2], Arc<Island>, bool);
        let mut model: Vec<Tick2> = Vec::new();
        let s0 = states(0.0);
        let first = island(false, 0);
        let mut line = Timeline::start(5, &s0, &boxes(&s0), &[0, 0], None, Some(first.clone()));
        let at2 = |s: &[BodyState; 2], tag: u64| {
            let b = boxes(s);
            [0, 1].map(|j| At {
                state: s[j],
                aabb: b[j],
                tag,
            })
        };
        model.push((5, at2(&s0, 0), first, true));
        let mut tag = 1u64;
        for step in 0..1500 {
            let lvt = line.lvt();
            match rng.next_u64() % 5 {
                0 => {
                    let s = states(step as f32 * 0.01);
                    let isl = island(false, step);
                    line.push_tick(lvt + 1, &s, &boxes(&s), &[tag; 2], None, Some(isl.clone()));
                    model.push((lvt + 1, at2(&s, tag), isl, true));
                    tag += 1;
                }
                1 | 2 => {
                    // A nap from the LVT's states: one that goes on keeps its tag.
                    let (&(_, last, ref isl, _), n) =
                        (model.last().unwrap(), 1 + rng.next_u64() % 90);
                    let s = [last[0].state, last[1].state];
                    let goes_on =
                        line.last_island().is_some_and(|i| i.asleep) && rng.next_u64() % 2 == 0;
                    let (nap_tag, isl) = if goes_on {
                        (last[0].tag, isl.clone())
                    } else {
                        tag += 1;
                        (tag - 1, island(true, step))
                    };
                    line.push_still((lvt + 1, lvt + n), &s, &boxes(&s), nap_tag, isl.clone());
                    for t in lvt + 1..=lvt + n {
                        model.push((t, at2(&s, nap_tag), isl.clone(), false));
                    }
                }
                k => cut_or_trim(&mut line, &mut model, |m| m.0, (&mut rng, k == 3)),
            }
            keeps(&line, &model, |m| m.0);
            for (t, want, isl, _) in &model {
                for (j, w) in want.iter().enumerate() {
                    assert_eq!(
                        line.at(&rules, j as u32, *t, j),
                        *w,
                        "step {step}, tick {t}"
                    );
                    assert_eq!(line.state(&rules, *t, j), w.state);
                    assert_eq!(line.tag(*t, j), w.tag);
                }
                assert!(Arc::ptr_eq(line.island(*t), isl), "step {step}, tick {t}");
            }
            let r = model[0].0;
            let ticked: Vec<Tick> = model
                .iter()
                .filter(|m| m.3 && m.0 > r)
                .map(|m| m.0)
                .collect();
            assert_eq!(line.ticks_after(r).collect::<Vec<_>>(), ticked);
        }
    }
}
