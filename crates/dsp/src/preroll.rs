//! The warm mic's memory: the last few hundred milliseconds before a push-to-talk press, so the
//! first word is never clipped by the time it takes to press the key.

/// A fixed-size ring of the most recent samples. Allocates once, at construction.
#[derive(Debug)]
pub struct PreRoll {
    samples: Box<[f32]>,
    /// Index of the oldest sample once the ring is full; the next write position.
    next: usize,
    filled: usize,
}

impl PreRoll {
    /// A pre-roll holding `duration_ms` of audio at `sample_rate_hz`.
    pub fn new(sample_rate_hz: u32, duration_ms: u32) -> Self {
        let capacity = (sample_rate_hz as usize * duration_ms as usize) / 1000;
        Self {
            samples: vec![0.0; capacity].into_boxed_slice(),
            next: 0,
            filled: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.samples.len()
    }

    pub fn len(&self) -> usize {
        self.filled
    }

    pub fn is_empty(&self) -> bool {
        self.filled == 0
    }

    /// Remembers samples, forgetting the oldest beyond the capacity.
    pub fn push(&mut self, mut input: &[f32]) {
        let capacity = self.samples.len();
        if capacity == 0 {
            return;
        }
        if input.len() > capacity {
            input = &input[input.len() - capacity..];
        }
        let first = (capacity - self.next).min(input.len());
        self.samples[self.next..self.next + first].copy_from_slice(&input[..first]);
        let rest = input.len() - first;
        self.samples[..rest].copy_from_slice(&input[first..]);
        self.next = (self.next + input.len()) % capacity;
        self.filled = (self.filled + input.len()).min(capacity);
    }

    /// Forgets every remembered sample.
    pub fn clear(&mut self) {
        self.filled = 0;
    }

    /// Hands the remembered samples, oldest first, to `sink` (in at most two slices) and
    /// empties the ring.
    pub fn drain(&mut self, sink: impl FnMut(&[f32])) {
        self.drain_latest(usize::MAX, sink);
    }

    /// Like [`Self::drain`], but hands over only the most recent `max_samples` (a press that
    /// asks for less pre-roll than the ring keeps); the older rest is forgotten.
    pub fn drain_latest(&mut self, max_samples: usize, mut sink: impl FnMut(&[f32])) {
        self.filled = self.filled.min(max_samples);
        let capacity = self.samples.len();
        let start = (self.next + capacity - self.filled) % capacity.max(1);
        if self.filled > 0 {
            let first = (capacity - start).min(self.filled);
            sink(&self.samples[start..start + first]);
            if first < self.filled {
                sink(&self.samples[..self.filled - first]);
            }
        }
        self.filled = 0;
    }
}
