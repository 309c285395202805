#ifndef LATTICE_SUPPORT_H
#define LATTICE_SUPPORT_H

/// Nonzero while this thread makes an instance of a model class that is to stand for a stored object:
/// `@Persisted` properties then take a cheap placeholder instead of running their initial-value
/// expressions (a managed object reads its record, never those values). Set by Lattice right before
/// the class's `init()` and cleared by `Object.init()`, which every model initializer reaches after
/// its own stored properties are set.
extern _Thread_local int lattice_placeholding_flag;

static inline int lattice_placeholding(void) { return lattice_placeholding_flag; }
static inline void lattice_set_placeholding(int on) { lattice_placeholding_flag = on; }

/// The number of `@Persisted` properties this thread decoded (`Decodable`) that still wait for their
/// declaration: a decoded property cannot see the declaration it replaces (its primary-key and index
/// flags, its initial value when the key was missing), so `Object.init()`, which a synthesized
/// `init(from:)` reaches after setting every property, restores them while this is nonzero.
extern _Thread_local int lattice_decoded_pending_count;

static inline int lattice_decoded_pending(void) { return lattice_decoded_pending_count; }
static inline void lattice_set_decoded_pending(int count) { lattice_decoded_pending_count = count; }

#endif
