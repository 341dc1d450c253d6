//! The state a [`crate::CommandHandler`] last folded or wrote for each recently used stream.
//!
//! A command on a busy stream (a run reporting hundreds of steps) would otherwise fold the
//! stream again from its last snapshot each time: decode the snapshot and up to
//! [`crate::SNAPSHOT_EVERY`] events. With the cached state at version `v` the handler reads only
//! the events after `v`, usually none — or, deciding on the cached state itself
//! ([`crate::CommandHandler::execute_cached`]), nothing. The cache is never the truth: a load
//! reads the events after `v` from the log, and a decision on the cached state is appended with
//! `v` expected, so a state cached on one instance stays right when another instance appends
//! to the same stream; an entry only ever holds a state folded from committed events.
//!
//! Bounded by two generations: entries go into the current map; when it holds `capacity / 2`
//! the current map becomes the previous one and the old previous one is dropped. A hit in the
//! previous map moves back into the current one, so a stream in use is never evicted.

use std::{
    any::{Any, TypeId},
    collections::HashMap,
    sync::{Arc, Mutex},
};

/// Streams kept by default, over both generations.
pub const DEFAULT_CAPACITY: usize = 4_096;

type Key = (TypeId, String);

#[derive(Clone)]
struct Entry {
    version: i64,
    state: Arc<dyn Any + Send + Sync>,
}

#[derive(Default)]
struct Generations {
    current: HashMap<Key, Entry>,
    previous: HashMap<Key, Entry>,
}

/// Recently folded aggregate states, by aggregate type and stream.
pub(crate) struct StateCache {
    generations: Mutex<Generations>,
    half: usize,
}

impl StateCache {
    /// A cache of about `capacity` streams (0 keeps nothing).
    pub(crate) fn new(capacity: usize) -> Self {
        Self { generations: Mutex::new(Generations::default()), half: capacity / 2 }
    }

    /// The state of `stream_id` as `A` and its version, when cached.
    pub(crate) fn get<A: Clone + Send + Sync + 'static>(&self, stream_id: &str) -> Option<(A, i64)> {
        let key = (TypeId::of::<A>(), stream_id.to_string());
        let mut g = self.generations.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let entry = match g.current.get(&key) {
            Some(e) => e.clone(),
            None => {
                let e = g.previous.remove(&key)?;
                self.insert(&mut g, key, e.clone());
                e
            }
        };
        drop(g);
        entry.state.downcast_ref::<A>().map(|s| (s.clone(), entry.version))
    }

    /// Is a state of `stream_id` as `A` cached?
    pub(crate) fn holds<A: 'static>(&self, stream_id: &str) -> bool {
        let key = (TypeId::of::<A>(), stream_id.to_string());
        let g = self.generations.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        g.current.contains_key(&key) || g.previous.contains_key(&key)
    }

    /// Remember `state` as `stream_id`'s at `version`, unless a later version is cached.
    pub(crate) fn put<A: Clone + Send + Sync + 'static>(&self, stream_id: &str, state: &A, version: i64) {
        if self.half == 0 || version <= 0 {
            return;
        }
        let key = (TypeId::of::<A>(), stream_id.to_string());
        let mut g = self.generations.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let newer = g.current.get(&key).or_else(|| g.previous.get(&key)).is_some_and(|e| e.version >= version);
        if newer {
            return;
        }
        g.previous.remove(&key);
        self.insert(&mut g, key, Entry { version, state: Arc::new(state.clone()) });
    }

    fn insert(&self, g: &mut Generations, key: Key, entry: Entry) {
        if g.current.len() >= self.half && !g.current.contains_key(&key) {
            g.previous = std::mem::take(&mut g.current);
        }
        g.current.insert(key, entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_latest_version_and_types_apart() {
        let cache = StateCache::new(8);
        cache.put("s", &"v2".to_string(), 2);
        cache.put("s", &"v1".to_string(), 1);
        assert_eq!(cache.get::<String>("s"), Some(("v2".to_string(), 2)));
        assert_eq!(cache.get::<u32>("s"), None, "another aggregate type's state is not this one's");
        assert!(cache.holds::<String>("s") && !cache.holds::<u32>("s"));
        cache.put("s", &7u32, 3);
        assert_eq!(cache.get::<u32>("s"), Some((7, 3)));
        assert_eq!(cache.get::<String>("s"), Some(("v2".to_string(), 2)));
    }

    #[test]
    fn bounded_and_a_used_stream_survives() {
        let cache = StateCache::new(8);
        for i in 0..100 {
            cache.put(&format!("s{i}"), &i, 1);
            // s0 is used all along: it moves back to the current generation each time.
            assert!(cache.get::<i32>("s0").is_some(), "s0 evicted at {i}");
        }
        let g = cache.generations.lock().unwrap();
        assert!(g.current.len() + g.previous.len() <= 8);
        drop(g);
        assert_eq!(cache.get::<i32>("s1"), None, "an unused stream is evicted");
    }

    #[test]
    fn zero_capacity_keeps_nothing() {
        let cache = StateCache::new(0);
        cache.put("s", &1u8, 1);
        assert_eq!(cache.get::<u8>("s"), None);
    }
}
