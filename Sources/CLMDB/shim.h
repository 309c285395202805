#ifndef CLMDB_SHIM_H
#define CLMDB_SHIM_H
#include <lmdb.h>
#include <stdint.h>
#include <string.h>

/* LMDB's default order of keys (bytes compared as by memcmp, a prefix first), with two 8-byte keys (the
   keys of every object table) compared as big-endian numbers: the same order in a few instructions.
   Being the default order, it keeps a file readable by any LMDB program. */
static inline int lattice_key_order(const MDB_val *a, const MDB_val *b) {
    if (a->mv_size == 8 && b->mv_size == 8) {
        uint64_t x, y;
        memcpy(&x, a->mv_data, 8);
        memcpy(&y, b->mv_data, 8);
        x = __builtin_bswap64(x);
        y = __builtin_bswap64(y);
        return (x > y) - (x < y);
    }
    size_t shorter = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
    int order = shorter ? memcmp(a->mv_data, b->mv_data, shorter) : 0;
    if (order) return order;
    return (a->mv_size > b->mv_size) - (a->mv_size < b->mv_size);
}
#endif
