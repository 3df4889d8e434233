#pragma once
// Zips built in memory for tests of Ray's package store: the files at the zip's root, as a
// code package is laid out. Header-only; a test using it links PkgConfig::LIBZIP.

#include <zip.h>

#include <map>
#include <stdexcept>
#include <string>

namespace rg::testing {

// A zip holding `files` (path in the zip -> content). Throws std::runtime_error when libzip
// fails, which a test reports as an error.
inline std::string ZipBytes(const std::map<std::string, std::string>& files) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* out = zip_source_buffer_create(nullptr, 0, 0, &error);
  if (out == nullptr) throw std::runtime_error("zip: no buffer");
  // zip_close frees the archive's source; keep it to read the bytes it received.
  zip_source_keep(out);
  zip_t* archive = zip_open_from_source(out, ZIP_TRUNCATE, &error);
  zip_error_fini(&error);
  if (archive == nullptr) {
    zip_source_free(out);
    zip_source_free(out);
    throw std::runtime_error("zip: cannot open the buffer");
  }
  for (const auto& [name, content] : files) {
    // The content is only read by zip_close, while `files` is still alive.
    zip_source_t* file = zip_source_buffer(archive, content.data(), content.size(), 0);
    if (file == nullptr || zip_file_add(archive, name.c_str(), file, ZIP_FL_ENC_UTF_8) < 0) {
      if (file != nullptr) zip_source_free(file);
      zip_discard(archive);
      zip_source_free(out);
      throw std::runtime_error("zip: cannot add " + name);
    }
  }
  if (zip_close(archive) != 0) {
    zip_discard(archive);
    zip_source_free(out);
    throw std::runtime_error("zip: cannot write");
  }
  std::string bytes;
  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_source_open(out) == 0) {
    if (zip_source_stat(out, &stat) == 0 && (stat.valid & ZIP_STAT_SIZE) != 0) {
      bytes.resize(stat.size);
      const zip_int64_t read = zip_source_read(out, bytes.data(), stat.size);
      if (read < 0 || static_cast<zip_uint64_t>(read) != stat.size) bytes.clear();
    }
    zip_source_close(out);
  }
  zip_source_free(out);
  if (bytes.empty()) throw std::runtime_error("zip: cannot read the result back");
  return bytes;
}

}  // namespace rg::testing
