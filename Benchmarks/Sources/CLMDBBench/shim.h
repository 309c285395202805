#ifndef CLMDBBENCH_SHIM_H
#define CLMDBBENCH_SHIM_H
#include <lmdb.h>
#endif
