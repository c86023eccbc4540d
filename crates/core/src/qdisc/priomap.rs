//! The band choice that prio and ETS share (net/sched/sch_prio.c
//! `prio_classify`, net/sched/sch_ets.c `ets_classify`, the same steps in
//! both): a `skb->priority` whose major is the qdisc's handle names band
//! `minor - 1`; else the first matching `tc filter` names it by its
//! classid's minor (its skbedit action applied); with no filter or no
//! match, the priomap entry of `skb->priority & TC_PRIO_MAX` (a priority
//! with any major bits counts as 0); a minor naming no band falls back to
//! `priomap[0]`. Classification never drops: every frame has a band.

use super::{tc_h_major, tc_h_minor, Handle};
use crate::packet::filter::FilterChain;
use crate::packet::Packet;

/// `TC_PRIO_MAX`: the priomap covers `skb->priority & TC_PRIO_MAX`.
pub const TC_PRIO_MAX: u32 = 15;

/// The band, of `bands`, a frame goes to in a qdisc of handle `handle`
/// with `priomap` (16 entries, each a band) and `filters`.
pub fn band(
    handle: Handle,
    priomap: &[u8; 16],
    bands: usize,
    filters: &FilterChain,
    pkt: &mut Packet,
) -> usize {
    let prio = pkt.meta.priority;
    let classid = if tc_h_major(prio) == tc_h_major(handle) {
        prio
    } else {
        match filters.classify(&pkt.meta) {
            Some((classid, skbedit)) => {
                if let Some(p) = skbedit {
                    pkt.meta.priority = p;
                }
                classid
            }
            None => {
                let p = if tc_h_major(prio) != 0 { 0 } else { prio };
                return priomap[(p & TC_PRIO_MAX) as usize] as usize;
            }
        }
    };
    let band = (tc_h_minor(classid) as usize).wrapping_sub(1);
    if band < bands {
        band
    } else {
        priomap[0] as usize
    }
}
