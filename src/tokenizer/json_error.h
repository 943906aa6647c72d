// Locates the first syntax error in a JSON text, so that a malformed
// tokenizer.json is reported with a line and column (simdjson reports only
// what went wrong). Only for error paths: a plain recursive-descent scan.
#ifndef TOKPACK_SRC_TOKENIZER_JSON_ERROR_H_
#define TOKPACK_SRC_TOKENIZER_JSON_ERROR_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace tokpack {

// The byte offset of the first syntax error in `json`, or json.size() if the
// scan finds none (then simdjson's complaint is about something else, such as
// nesting depth or invalid UTF-8).
size_t JsonErrorOffset(std::string_view json);

// "line L, column C (byte B)" for a byte offset; columns count bytes from 1.
std::string DescribeOffset(std::string_view text, size_t offset);

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_JSON_ERROR_H_
