//! The bounded packet buffer pool of the live datapath: frames are read into
//! buffers taken from here and the buffers come back when a frame is sent or
//! dropped, so that after warm-up no frame allocates. A buffer is handed out
//! empty, with room for `buf_size` bytes, and never zeroed: a frame is read
//! or copied into its spare capacity (`port::FramePort::recv_vec`), so a
//! short frame touches only the cache lines it fills. The pool never holds
//! more than `max_buffers` buffers in total (in use plus free); at that cap
//! `get` fails and counts the exhaustion (the caller drops the frame with
//! `DropReason::PoolExhausted`). `Buffers` pairs a pool of frame-sized
//! buffers with one of super-frame-sized ones, as a lane that takes GSO
//! super-frames needs (`bridge::Lane::ingress_offloaded`).

/// Ethernet header plus two VLAN tags: the most a frame exceeds the MTU by
/// (a frame buffer is the MTU plus this).
pub const FRAME_OVERHEAD: usize = 14 + 8;

/// Size of the buffers super-frames are read into: the largest GSO
/// super-frame a TAP hands over (64 KB, `gso_max_size`) and some slack, so
/// that a read filling the buffer is known to be cut short.
pub const GSO_FRAME_BUF: usize = 65_536 + 64;

/// A free list of equally sized byte buffers with a hard cap.
#[derive(Debug)]
pub struct PacketPool {
    buf_size: usize,
    max_buffers: usize,
    /// Buffers created and not lost (in use + free).
    allocated: usize,
    free: Vec<Vec<u8>>,
    exhausted: u64,
}

impl PacketPool {
    /// A pool of up to `max_buffers` buffers of `buf_size` bytes each.
    /// Buffers are created on demand (the free list itself is allocated
    /// once here).
    pub fn new(buf_size: usize, max_buffers: usize) -> Self {
        PacketPool {
            buf_size,
            max_buffers,
            allocated: 0,
            free: Vec::with_capacity(max_buffers),
            exhausted: 0,
        }
    }

    /// An empty buffer with room for at least `buf_size` bytes, or `None`
    /// when all `max_buffers` are in use.
    pub fn get(&mut self) -> Option<Vec<u8>> {
        if let Some(mut buf) = self.free.pop() {
            buf.clear();
            return Some(buf);
        }
        if self.allocated < self.max_buffers {
            self.allocated += 1;
            return Some(Vec::with_capacity(self.buf_size));
        }
        self.exhausted += 1;
        None
    }

    /// Returns a buffer (any length). Buffers the pool did not hand out, or
    /// that shrank below `buf_size` bytes of capacity, are freed instead of
    /// kept, so the pool never grows past its cap.
    pub fn put(&mut self, buf: Vec<u8>) {
        if self.free.len() >= self.allocated {
            return; // not one of ours: every pool buffer is already home
        }
        if buf.capacity() < self.buf_size {
            self.allocated -= 1; // a pool buffer was replaced by a smaller one
            return;
        }
        self.free.push(buf);
    }

    /// Buffers handed out and not yet returned.
    pub fn in_use(&self) -> usize {
        self.allocated - self.free.len()
    }

    /// How many `get` calls failed at the cap.
    pub fn exhausted(&self) -> u64 {
        self.exhausted
    }

    /// The size of every buffer the pool hands out, bytes (the largest frame it
    /// holds).
    pub fn buf_size(&self) -> usize {
        self.buf_size
    }

    /// The hard cap on buffers the pool hands out at once.
    pub fn max_buffers(&self) -> usize {
        self.max_buffers
    }
}

/// The two pools a lane's frames come from: frames of up to one MTU
/// (`frames`) and whole GSO super-frames of up to 64 KB (`super_frames`).
/// A returned buffer goes back to the pool its capacity says it came from.
#[derive(Debug)]
pub struct Buffers {
    /// Buffers for one frame each.
    pub frames: PacketPool,
    /// Buffers for whole super-frames.
    pub super_frames: PacketPool,
}

impl Buffers {
    /// Returns a buffer to the pool it came from (by its capacity).
    pub fn put(&mut self, buf: Vec<u8>) {
        if buf.capacity() >= self.super_frames.buf_size() {
            self.super_frames.put(buf);
        } else {
            self.frames.put(buf);
        }
    }

    /// Buffers of both pools handed out and not yet returned.
    pub fn in_use(&self) -> usize {
        self.frames.in_use() + self.super_frames.in_use()
    }

    /// How many `get` calls failed at either pool's cap.
    pub fn exhausted(&self) -> u64 {
        self.frames.exhausted() + self.super_frames.exhausted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_up_to_the_cap_then_counts_exhaustion() {
        let mut p = PacketPool::new(2048, 3);
        let bufs: Vec<Vec<u8>> = (0..3).map(|_| p.get().unwrap()).collect();
        assert!(bufs.iter().all(|b| b.is_empty() && b.capacity() >= 2048));
        assert_eq!(p.in_use(), 3);
        assert!(p.get().is_none());
        assert!(p.get().is_none());
        assert_eq!(p.exhausted(), 2);
        for b in bufs {
            p.put(b);
        }
        assert_eq!(p.in_use(), 0);
        assert!(p.get().is_some());
    }

    #[test]
    fn reuses_returned_buffers_without_allocating() {
        let mut p = PacketPool::new(1600, 2);
        let mut b = p.get().unwrap();
        b.extend_from_slice(&[7; 60]); // a short frame was read into it
        let ptr = b.as_ptr();
        p.put(b);
        let again = p.get().unwrap();
        assert_eq!(again.as_ptr(), ptr, "same allocation");
        assert!(again.is_empty(), "handed out empty again");
        assert!(again.capacity() >= 1600, "with room for a whole frame");
        assert_eq!(p.in_use(), 1);
    }

    #[test]
    fn foreign_and_shrunk_buffers_do_not_grow_the_pool() {
        let mut p = PacketPool::new(1000, 2);
        // Nothing handed out: a foreign buffer is simply freed.
        p.put(vec![0; 5000]);
        assert_eq!(p.in_use(), 0);
        let a = p.get().unwrap();
        let b = p.get().unwrap();
        p.put(a);
        p.put(vec![0; 1000]); // stands in for `b`
        p.put(b); // every slot is home: freed
        assert_eq!(p.in_use(), 0);
        assert_eq!(p.free.len(), 2);
        // A pool buffer swapped for a small one frees its slot; a fresh
        // buffer is created on a later get, still within the cap.
        let c = p.get().unwrap();
        drop(c);
        p.put(Vec::new());
        assert_eq!((p.allocated, p.in_use()), (1, 0));
        assert!(p.get().is_some());
        assert!(p.get().is_some());
        assert!(p.get().is_none());
        assert_eq!(p.exhausted(), 1);
    }

    #[test]
    fn zero_cap_pool_always_fails() {
        let mut p = PacketPool::new(64, 0);
        assert!(p.get().is_none());
        p.put(vec![0; 64]);
        assert!(p.get().is_none());
        assert_eq!(p.exhausted(), 2);
    }

    #[test]
    fn steady_state_cycles_stay_at_the_working_set() {
        let mut p = PacketPool::new(256, 100);
        let mut held = std::collections::VecDeque::new();
        for i in 0..10_000 {
            held.push_back(p.get().unwrap());
            if i >= 10 {
                p.put(held.pop_front().unwrap());
            }
        }
        assert_eq!(p.in_use(), 10);
        assert_eq!(p.allocated, 11, "no buffer beyond the working set");
        assert_eq!(p.exhausted(), 0);
    }
}
