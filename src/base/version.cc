#include "tokpack/version.h"

// The project's version, from CMakeLists.txt's project().
#ifndef TOKPACK_VERSION
#define TOKPACK_VERSION "0.0.0"
#endif

namespace tokpack {

const char* Version() { return TOKPACK_VERSION; }

}  // namespace tokpack
