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

#endif
