#include "lattice_support.h"

_Thread_local int lattice_placeholding_flag = 0;
_Thread_local int lattice_decoded_pending_count = 0;
