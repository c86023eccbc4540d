//! HFSC's service-curve arithmetic (net/sched/sch_hfsc.c, Linux 6.18): a
//! two-piece linear curve `m1 d m2` as tc gives it (`struct
//! tc_service_curve`: slopes in bytes/s, `d` in µs) converted to the
//! kernel's internal form in psched ticks (`PSCHED_SHIFT` 10: one tick is
//! 1.024 µs), with the slopes scaled by `SM_SHIFT` and the inverse slopes
//! by `ISM_SHIFT` (`sc2isc`, `m2sm`, `m2ism`, `d2dx` and back `sm2m`,
//! `dx2d`), and the runtime curves the scheduler keeps (deadline, eligible,
//! virtual, upper limit): `rtsc_init`, `rtsc_x2y`, `rtsc_y2x` and
//! `rtsc_min`, each rounding as the kernel's integer code does.

/// `PSCHED_SHIFT` (include/net/pkt_sched.h): a psched tick is 2^10 ns.
pub const PSCHED_SHIFT: u32 = 10;
/// `PSCHED_TICKS_PER_SEC`: `NSEC_PER_SEC >> PSCHED_SHIFT`.
pub const PSCHED_TICKS_PER_SEC: u64 = 1_000_000_000 >> PSCHED_SHIFT;
const USEC_PER_SEC: u64 = 1_000_000;
/// `SM_SHIFT`: `30 - PSCHED_SHIFT`.
pub const SM_SHIFT: u32 = 30 - PSCHED_SHIFT;
/// `ISM_SHIFT`: `8 + PSCHED_SHIFT`.
pub const ISM_SHIFT: u32 = 8 + PSCHED_SHIFT;
const SM_MASK: u64 = (1 << SM_SHIFT) - 1;
const ISM_MASK: u64 = (1 << ISM_SHIFT) - 1;
/// `HT_INFINITY`: an infinite time.
pub const HT_INFINITY: u64 = u64::MAX;

/// `struct tc_service_curve`: what tc sends and the kernel dumps back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServiceCurve {
    /// Slope of the first segment, bytes/s.
    pub m1: u32,
    /// x-projection of the first segment, µs.
    pub d: u32,
    /// Slope of the second segment, bytes/s.
    pub m2: u32,
}

impl ServiceCurve {
    /// The curve the kernel dumps for one it was given (`hfsc_dump_sc` of
    /// `sc2isc`'s result: the slopes and `d` after the round trip through
    /// psched ticks).
    pub fn dumped(&self) -> ServiceCurve {
        let isc = InternalSc::new(self);
        ServiceCurve {
            m1: sm2m(isc.sm1),
            d: dx2d(isc.dx),
            m2: sm2m(isc.sm2),
        }
    }

    /// `m1 == 0 && m2 == 0`: `hfsc_change_class` takes such a curve as
    /// none given.
    pub fn is_zero(&self) -> bool {
        self.m1 == 0 && self.m2 == 0
    }
}

/// `seg_x2y`: `x * sm >> SM_SHIFT`, split to stay within 64 bits.
pub fn seg_x2y(x: u64, sm: u64) -> u64 {
    (x >> SM_SHIFT)
        .wrapping_mul(sm)
        .wrapping_add(((x & SM_MASK).wrapping_mul(sm)) >> SM_SHIFT)
}

/// `seg_y2x`: `y * ism >> ISM_SHIFT`, infinite for an infinite slope.
pub fn seg_y2x(y: u64, ism: u64) -> u64 {
    if y == 0 {
        0
    } else if ism == HT_INFINITY {
        HT_INFINITY
    } else {
        (y >> ISM_SHIFT)
            .wrapping_mul(ism)
            .wrapping_add(((y & ISM_MASK).wrapping_mul(ism)) >> ISM_SHIFT)
    }
}

/// `m2sm`: bytes/s into scaled bytes per tick, rounded up.
pub fn m2sm(m: u32) -> u64 {
    ((m as u64) << SM_SHIFT).div_ceil(PSCHED_TICKS_PER_SEC)
}

/// `m2ism`: bytes/s into scaled ticks per byte, rounded up; infinite for 0.
pub fn m2ism(m: u32) -> u64 {
    if m == 0 {
        HT_INFINITY
    } else {
        (PSCHED_TICKS_PER_SEC << ISM_SHIFT).div_ceil(m as u64)
    }
}

/// `d2dx`: µs into ticks, rounded up.
pub fn d2dx(d: u32) -> u64 {
    (d as u64 * PSCHED_TICKS_PER_SEC).div_ceil(USEC_PER_SEC)
}

/// `sm2m`: scaled bytes per tick back into bytes/s (truncated to 32 bits).
pub fn sm2m(sm: u64) -> u32 {
    (sm.wrapping_mul(PSCHED_TICKS_PER_SEC) >> SM_SHIFT) as u32
}

/// `dx2d`: ticks back into µs (truncated to 32 bits).
pub fn dx2d(dx: u64) -> u32 {
    (dx.wrapping_mul(USEC_PER_SEC) / PSCHED_TICKS_PER_SEC) as u32
}

/// `struct internal_sc`: a service curve in ticks and scaled slopes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InternalSc {
    /// Scaled slope of the first segment.
    pub sm1: u64,
    /// Scaled inverse slope of the first segment.
    pub ism1: u64,
    /// x-projection of the first segment, ticks.
    pub dx: u64,
    /// y-projection of the first segment, bytes.
    pub dy: u64,
    /// Scaled slope of the second segment.
    pub sm2: u64,
    /// Scaled inverse slope of the second segment.
    pub ism2: u64,
}

impl InternalSc {
    /// `sc2isc`.
    pub fn new(sc: &ServiceCurve) -> InternalSc {
        let sm1 = m2sm(sc.m1);
        let dx = d2dx(sc.d);
        InternalSc {
            sm1,
            ism1: m2ism(sc.m1),
            dx,
            dy: seg_x2y(dx, sm1),
            sm2: m2sm(sc.m2),
            ism2: m2ism(sc.m2),
        }
    }

    /// The curve is convex (`sm1 <= sm2`): no burst above the long-term
    /// rate.
    pub fn convex(&self) -> bool {
        self.sm1 <= self.sm2
    }
}

/// `struct runtime_sc`: an internal curve anchored at (x, y), the ticks
/// and bytes where it starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeSc {
    /// Starting position on the x axis, ticks.
    pub x: u64,
    /// Starting position on the y axis, bytes.
    pub y: u64,
    /// The curve's segments (its `dx`/`dy` may be cut by `rtsc_min`).
    pub sc: InternalSc,
}

impl RuntimeSc {
    /// `rtsc_init`: `isc` starting at (x, y).
    pub fn new(isc: &InternalSc, x: u64, y: u64) -> RuntimeSc {
        RuntimeSc { x, y, sc: *isc }
    }

    /// `rtsc_y2x`: the time at which the curve reaches `y` bytes.
    pub fn y2x(&self, y: u64) -> u64 {
        let s = &self.sc;
        if y < self.y {
            self.x
        } else if y <= self.y.wrapping_add(s.dy) {
            if s.dy == 0 {
                self.x.wrapping_add(s.dx)
            } else {
                self.x.wrapping_add(seg_y2x(y - self.y, s.ism1))
            }
        } else {
            self.x
                .wrapping_add(s.dx)
                .wrapping_add(seg_y2x(y - self.y - s.dy, s.ism2))
        }
    }

    /// `rtsc_x2y`: the bytes the curve has reached at time `x`.
    pub fn x2y(&self, x: u64) -> u64 {
        let s = &self.sc;
        if x <= self.x {
            self.y
        } else if x <= self.x.wrapping_add(s.dx) {
            self.y.wrapping_add(seg_x2y(x - self.x, s.sm1))
        } else {
            self.y
                .wrapping_add(s.dy)
                .wrapping_add(seg_x2y(x - self.x - s.dx, s.sm2))
        }
    }

    /// `rtsc_min`: this curve becomes the minimum of itself and `isc`
    /// starting at (x, y).
    pub fn min_with(&mut self, isc: &InternalSc, x: u64, y: u64) {
        if isc.convex() {
            // A convex curve: the current one stays if it is below at x.
            if self.x2y(x) < y {
                return;
            }
            self.x = x;
            self.y = y;
            return;
        }
        let y1 = self.x2y(x);
        if y1 <= y {
            return;
        }
        let y2 = self.x2y(x.wrapping_add(isc.dx));
        if y2 >= y.wrapping_add(isc.dy) {
            self.x = x;
            self.y = y;
            self.sc.dx = isc.dx;
            self.sc.dy = isc.dy;
            return;
        }
        // The curves cross: seg_x2y(dx, sm1) == seg_x2y(dx, sm2) + (y1 - y).
        let mut dx = ((y1 - y) << SM_SHIFT) / (isc.sm1 - isc.sm2);
        if self.x.wrapping_add(self.sc.dx) > x {
            dx = dx.wrapping_add(self.x.wrapping_add(self.sc.dx) - x);
        }
        self.x = x;
        self.y = y;
        self.sc.dx = dx;
        self.sc.dy = seg_x2y(dx, isc.sm1);
    }
}
