// Version: the version of the tokpack library, as the CLI's --version and
// tokpack.__version__ report it and as manifests record it. Thread-safe.
#ifndef TOKPACK_VERSION_H_
#define TOKPACK_VERSION_H_

namespace tokpack {

// The tokpack version string, e.g. "0.1.0".
const char* Version();

}  // namespace tokpack

#endif  // TOKPACK_VERSION_H_
