#include "lattice_support.h"

_Thread_local int lattice_placeholding_flag = 0;
