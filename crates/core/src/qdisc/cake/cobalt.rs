//! COBALT, CAKE's AQM (net/sched/sch_cake.c `cobalt_*`): CoDel and BLUE run
//! side by side on each flow queue. CoDel's state is kept in nanoseconds
//! with a Q0.32 reciprocal square root (the first 16 counts from a cache
//! built with four Newton steps each, `cobalt_cache_init`; beyond, one step
//! per change, `cobalt_invsqrt`), and one `drop_next` serves both as the
//! first-drop deadline and the control law's schedule. BLUE raises its drop
//! probability `p_drop` (Q0.32) by `p_inc` when the queue overflows and
//! lowers it by `p_dec` when the queue is found empty, at most once per
//! `target`; its drops never mark.

/// `REC_INV_SQRT_CACHE`: counts below this take the cached value.
pub const REC_INV_SQRT_CACHE: usize = 16;

/// `struct cobalt_params`: times in ns, BLUE's steps in Q0.32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CobaltParams {
    /// CoDel's interval (the first drop's delay and the control law's
    /// scale), ns.
    pub interval: u64,
    /// The sojourn above which CoDel acts, and BLUE's update period, ns.
    pub target: u64,
    /// The serialisation time of an MTU at the tin's rate, ns.
    pub mtu_time: u64,
    /// BLUE's increment of `p_drop` (1/256 in Q0.32).
    pub p_inc: u32,
    /// BLUE's decrement of `p_drop` (1/4096 in Q0.32).
    pub p_dec: u32,
}

/// `struct cobalt_vars`: one flow queue's COBALT state (times as the
/// kernel's `ktime_t`, signed ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CobaltVars {
    /// CoDel's drop count.
    pub count: u32,
    /// 1/sqrt(count) in Q0.32 (`rec_inv_sqrt`).
    pub rec_inv_sqrt: u32,
    /// When the next drop is due, or when the last one was.
    pub drop_next: i64,
    /// When BLUE last changed `p_drop`.
    pub blue_timer: i64,
    /// BLUE's drop probability, Q0.32.
    pub p_drop: u32,
    /// In CoDel's dropping state.
    pub dropping: bool,
    /// The last frame `should_drop` passed was CE-marked.
    pub ecn_marked: bool,
}

/// `cobalt_newton_step`: y ← y·(3 − count·y²)/2 on the Q0.32 reciprocal
/// square root, in the kernel's wrapping 64-bit arithmetic.
pub fn newton_step(count: u32, rec_inv_sqrt: u32) -> u32 {
    let invsqrt = u64::from(rec_inv_sqrt);
    let invsqrt2 = invsqrt.wrapping_mul(invsqrt) >> 32;
    let mut val = (3u64 << 32).wrapping_sub(u64::from(count).wrapping_mul(invsqrt2));
    val >>= 2;
    val = val.wrapping_mul(invsqrt) >> (32 - 2 + 1);
    val as u32
}

/// `cobalt_cache_init`: entry 0 is ~0; entry n is four Newton steps at
/// count n from entry n-1's value.
pub fn inv_sqrt_cache() -> [u32; REC_INV_SQRT_CACHE] {
    let mut cache = [0u32; REC_INV_SQRT_CACHE];
    let mut v = u32::MAX;
    cache[0] = v;
    for (count, slot) in cache.iter_mut().enumerate().skip(1) {
        for _ in 0..4 {
            v = newton_step(count as u32, v);
        }
        *slot = v;
    }
    cache
}

/// `cobalt_control`: t + `reciprocal_scale(interval, rec_inv_sqrt)`; the
/// kernel's `reciprocal_scale` takes a u32, so the interval is cut to its
/// low 32 bits.
pub fn control(t: i64, interval: u64, rec_inv_sqrt: u32) -> i64 {
    let step = (u64::from(interval as u32) * u64::from(rec_inv_sqrt)) >> 32;
    t.wrapping_add(step as i64)
}

impl CobaltVars {
    /// `cobalt_invsqrt`: the cached value below 16, else a Newton step.
    fn invsqrt(&mut self, cache: &[u32; REC_INV_SQRT_CACHE]) {
        self.rec_inv_sqrt = match cache.get(self.count as usize) {
            Some(&v) => v,
            None => newton_step(self.count, self.rec_inv_sqrt),
        };
    }

    /// `cobalt_queue_full`: the queue overflowed at `now`. Returns whether
    /// BLUE went from quiescent to active.
    pub fn queue_full(&mut self, p: &CobaltParams, now: i64) -> bool {
        let mut up = false;
        if now.wrapping_sub(self.blue_timer) > p.target as i64 {
            up = self.p_drop == 0;
            self.p_drop = self.p_drop.wrapping_add(p.p_inc);
            if self.p_drop < p.p_inc {
                self.p_drop = u32::MAX;
            }
            self.blue_timer = now;
        }
        self.dropping = true;
        self.drop_next = now;
        if self.count == 0 {
            self.count = 1;
        }
        up
    }

    /// `cobalt_queue_empty`: the queue was found empty at `now`. Returns
    /// whether BLUE went from active to quiescent.
    pub fn queue_empty(
        &mut self,
        p: &CobaltParams,
        now: i64,
        cache: &[u32; REC_INV_SQRT_CACHE],
    ) -> bool {
        let mut down = false;
        if self.p_drop != 0 && now.wrapping_sub(self.blue_timer) > p.target as i64 {
            self.p_drop = self.p_drop.saturating_sub(p.p_dec);
            self.blue_timer = now;
            down = self.p_drop == 0;
        }
        self.dropping = false;
        if self.count != 0 && now.wrapping_sub(self.drop_next) >= 0 {
            self.count -= 1;
            self.invsqrt(cache);
            self.drop_next = control(self.drop_next, p.interval, self.rec_inv_sqrt);
        }
        down
    }

    /// `cobalt_should_drop` for a frame that waited `sojourn` ns, dequeued
    /// at `now` with `bulk_flows` bulk flows counted (ingress mode, else
    /// 0). `mark` CE-marks the frame and says whether it could; `random`
    /// is `prandom_u32()`, drawn only while BLUE is active. Returns whether
    /// to drop the frame.
    #[allow(clippy::too_many_arguments)]
    pub fn should_drop(
        &mut self,
        p: &CobaltParams,
        now: i64,
        sojourn: u64,
        bulk_flows: u32,
        cache: &[u32; REC_INV_SQRT_CACHE],
        mark: impl FnOnce() -> bool,
        random: impl FnOnce() -> u32,
    ) -> bool {
        let mut schedule = now.wrapping_sub(self.drop_next);
        let over_target = sojourn > p.target
            && sojourn
                > p.mtu_time
                    .wrapping_mul(u64::from(bulk_flows))
                    .wrapping_mul(2)
            && sojourn > p.mtu_time.wrapping_mul(4);
        let mut next_due = self.count != 0 && schedule >= 0;
        let mut drop = false;
        self.ecn_marked = false;
        if over_target {
            if !self.dropping {
                self.dropping = true;
                self.drop_next = control(now, p.interval, self.rec_inv_sqrt);
            }
            if self.count == 0 {
                self.count = 1;
            }
        } else if self.dropping {
            self.dropping = false;
        }
        if next_due && self.dropping {
            self.ecn_marked = mark();
            drop = !self.ecn_marked;
            self.count = self.count.wrapping_add(1);
            if self.count == 0 {
                self.count = u32::MAX;
            }
            self.invsqrt(cache);
            self.drop_next = control(self.drop_next, p.interval, self.rec_inv_sqrt);
            schedule = now.wrapping_sub(self.drop_next);
        } else {
            while next_due {
                self.count -= 1;
                self.invsqrt(cache);
                self.drop_next = control(self.drop_next, p.interval, self.rec_inv_sqrt);
                schedule = now.wrapping_sub(self.drop_next);
                next_due = self.count != 0 && schedule >= 0;
            }
        }
        if self.p_drop != 0 {
            drop |= random() < self.p_drop;
        }
        if self.count == 0 {
            self.drop_next = now.wrapping_add(p.interval as i64);
        } else if schedule > 0 && !drop {
            self.drop_next = now;
        }
        drop
    }
}
