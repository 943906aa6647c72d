#include <sys/mman.h>

#include <boost/interprocess/exceptions.hpp>
#include <boost/interprocess/file_mapping.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <cstring>

#include "base/file_system.h"
#include "storage/byte_source.h"

namespace tokpack {
namespace {

namespace bip = boost::interprocess;

class MappedFile : public ByteSource {
 public:
  MappedFile(std::string name, bip::mapped_region region)
      : name_(std::move(name)), region_(std::move(region)) {}
  explicit MappedFile(std::string name) : name_(std::move(name)) {}

  uint64_t size() const override { return region_.get_size(); }
  const char* data() const override { return static_cast<const char*>(region_.get_address()); }
  Status Read(uint64_t offset, uint64_t n, char* dst) const override {
    if (offset > size() || n > size() - offset) {
      return OutOfRangeError(name_ + ": read of " + std::to_string(n) + " bytes at " +
                             std::to_string(offset) + " past the end (" + std::to_string(size()) +
                             " bytes)");
    }
    std::memcpy(dst, data() + offset, n);
    return Status::Ok();
  }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  bip::mapped_region region_;
};

}  // namespace

StatusOr<std::unique_ptr<ByteSource>> OpenMappedFile(const std::string& path) {
  TOKPACK_ASSIGN_OR_RETURN(uint64_t size, FileSize(path));
  if (size == 0) return std::unique_ptr<ByteSource>(new MappedFile(path));
  // Boost reports failures as exceptions; this is the I/O boundary that turns
  // them into a Status.
  try {
    // The region outlives the mapping object, which only holds the file
    // descriptor: closing it keeps a 1000-shard dataset within fd limits.
    bip::file_mapping mapping(path.c_str(), bip::read_only);
    bip::mapped_region region(mapping, bip::read_only, 0, size);
    // Shards are read in random order: don't let the kernel read ahead.
    ::madvise(region.get_address(), region.get_size(), MADV_RANDOM);
    return std::unique_ptr<ByteSource>(new MappedFile(path, std::move(region)));
  } catch (const bip::interprocess_exception& e) {
    return IoError("cannot map '" + path + "': " + e.what());
  }
}

}  // namespace tokpack
