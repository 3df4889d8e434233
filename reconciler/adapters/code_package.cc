#include "reconciler/adapters/code_package.h"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <system_error>

#include "reconciler/adapters/fd_io.h"
#include "reconciler/adapters/git_common.h"
#include "reconciler/core/byte_size.h"
#include "reconciler/core/code_package.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/spec/yaml_document.h"

namespace rg::adapters {
namespace {

namespace fs = std::filesystem;

// Every entry's DOS time and date: 1980-01-01 00:00:00, the earliest a zip can hold.
constexpr uint16_t kDosTime = 0;
constexpr uint16_t kDosDate = (0U << 9U) | (1U << 5U) | 1U;
// zlib's level; part of the zip format (core::kCodeZipFormat).
constexpr uint32_t kDeflateLevel = 6;
constexpr uint32_t kModeRegular = 0100644;
constexpr uint32_t kModeExecutable = 0100755;
constexpr std::string_view kFilesOnly = "; code folders hold files only";
// The largest .gitattributes read: its rules are kept in memory (git reads up to 100 MB).
constexpr uint64_t kMaxAttributesBytes = uint64_t{1} << 20U;
// How deep folders may nest inside a code folder; each level is a step of a recursive walk.
constexpr size_t kMaxFolderDepth = 256;

// A path as errors show it: as it is when it is printable UTF-8, else quoted as git quotes
// names, every other byte as an octal escape.
std::string ShownPath(std::string_view path) {
  const bool plain = spec::IsUtf8(path) && std::ranges::none_of(path, [](char c) {
                       return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
                     });
  if (plain) return std::string(path);
  std::string out = "\"";
  for (const char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.append("\\").push_back(c);
    } else if (byte < 0x20 || byte >= 0x7f) {
      const std::array<char, 5> octal{'\\', static_cast<char>('0' + (byte >> 6U)),
                                      static_cast<char>('0' + ((byte >> 3U) & 7U)),
                                      static_cast<char>('0' + (byte & 7U)), '\0'};
      out += octal.data();
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

// An entry name a code folder may hold: not "." or "..", no '/' or NUL, valid UTF-8 (Ray
// unzips with Python's zipfile, which would read other bytes as code page 437, and "../x"
// would be unpacked outside the working directory).
core::Status CheckEntryName(std::string_view name, std::string_view shown_dir) {
  const std::string shown = ShownPath(std::string(shown_dir) + std::string(name));
  if (name.empty() || name == "." || name == "..") {
    return core::Error::InvalidInput(shown + ": an entry named \"" + std::string(name) +
                                     "\" is no file name (a zip would unpack it outside its "
                                     "folder)");
  }
  if (name.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos) {
    return core::Error::InvalidInput(shown + ": an entry name holds a '/' or a NUL");
  }
  // Git refuses to check out ".git" in any case; Ray would unpack it as a repository.
  if (name.size() == 4 && name[0] == '.' &&
      std::equal(name.begin() + 1, name.end(), "git",
                 [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; })) {
    return core::Error::InvalidInput(shown + ": an entry named \"" + std::string(name) +
                                     "\" is Git's own folder, never part of a tree");
  }
  if (!spec::IsUtf8(name)) {
    return core::Error::InvalidInput(shown +
                                     " is not named in UTF-8 (Ray would unpack it under another "
                                     "name)");
  }
  return core::OkStatus();
}

// The error of a symlink met on the way to code folder `folder` at its component `at`.
core::Error LinkOnPath(const std::string& at, const std::string& folder) {
  if (at == folder) return core::Error::InvalidInput(folder + " is a symlink, not a folder");
  return core::Error::InvalidInput(at + " is a symlink on the path to " + folder +
                                   "; a code folder is read inside the repository only, "
                                   "never through a link");
}

// A file's bytes while the zip reads them: a string of its own, or the blob libgit2 read (not
// copied: a file is held once).
struct CodeFileBytes {
  std::string owned;
  git::Blob blob;
  std::string_view view() const {
    if (!blob) return owned;
    return {static_cast<const char*>(git_blob_rawcontent(blob.get())),
            static_cast<size_t>(git_blob_rawsize(blob.get()))};
  }
};

// One file of a code folder, ready for the zip.
struct CodeFile {
  std::string path;  // relative to the folder
  bool executable = false;
  uint64_t size = 0;
  std::function<core::Result<CodeFileBytes>()> read;  // its bytes, exactly `size` of them
};

// The five largest of `sizes` (path, size), largest first, ties by path.
std::vector<std::pair<std::string, uint64_t>> Largest(
    std::vector<std::pair<std::string, uint64_t>> sizes) {
  const size_t keep = std::min<size_t>(5, sizes.size());
  std::partial_sort(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(keep), sizes.end(),
                    [](const auto& a, const auto& b) {
                      return a.second != b.second ? a.second > b.second : a.first < b.first;
                    });
  sizes.resize(keep);
  return sizes;
}

// The summary of `files` (the archived ones) for a folder whose tree is `tree_id`.
CodeFolderInfo Summarise(std::string tree_id, const std::vector<CodeFile>& files) {
  CodeFolderInfo info;
  info.tree_id = std::move(tree_id);
  info.files = files.size();
  std::vector<std::pair<std::string, uint64_t>> sizes;
  sizes.reserve(files.size());
  for (const CodeFile& f : files) {
    info.bytes += f.size;
    info.path_bytes += f.path.size();
    sizes.emplace_back(f.path, f.size);
  }
  info.largest = Largest(std::move(sizes));
  return info;
}

// ---- The zip writer, shared by both sources ----

// The state of one entry's libzip source: the file, its bytes while libzip reads them, and
// what went wrong.
struct EntrySource {
  const CodeFile* file = nullptr;
  CodeFileBytes bytes;
  std::string_view data;  // bytes.view()
  size_t offset = 0;
  zip_error_t error{};
  std::optional<core::Error> failure;
};

// Opens the entry: reads its bytes, which must be as many as were counted.
zip_int64_t OpenEntry(EntrySource& s) {
  auto bytes = s.file->read();
  if (!bytes.ok()) {
    s.failure = bytes.error();
  } else if (bytes->view().size() != s.file->size) {
    s.failure = core::Error::Transient(s.file->path + " changed while it was being packed");
  } else {
    s.bytes = std::move(bytes).value();
    s.data = s.bytes.view();
    s.offset = 0;
    return 0;
  }
  zip_error_set(&s.error, ZIP_ER_READ, 0);
  return -1;
}

// libzip's callback for an entry's source: sizes from the listing, bytes read on open and
// dropped on close, so that one file at a time is held.
zip_int64_t EntryCallback(void* state, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
  auto& s = *static_cast<EntrySource*>(state);
  switch (cmd) {
    case ZIP_SOURCE_OPEN:
      return OpenEntry(s);
    case ZIP_SOURCE_READ: {
      const size_t n = std::min<size_t>(len, s.data.size() - s.offset);
      std::memcpy(data, s.data.data() + s.offset, n);
      s.offset += n;
      return static_cast<zip_int64_t>(n);
    }
    case ZIP_SOURCE_CLOSE:
      // Let go of, not cleared: a cleared string keeps its buffer, and the zip would then hold
      // every file's bytes until it is closed.
      s.data = {};
      s.bytes = CodeFileBytes();
      return 0;
    case ZIP_SOURCE_STAT: {
      auto* st = static_cast<zip_stat_t*>(data);
      zip_stat_init(st);
      st->valid = ZIP_STAT_SIZE;
      st->size = s.file->size;
      return sizeof(zip_stat_t);
    }
    case ZIP_SOURCE_ERROR:
      return zip_error_to_data(&s.error, data, len);
    case ZIP_SOURCE_FREE:
      return 0;
    case ZIP_SOURCE_SUPPORTS:
      return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE,
                                            ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE,
                                            ZIP_SOURCE_SUPPORTS, -1);
    default:
      zip_error_set(&s.error, ZIP_ER_OPNOTSUPP, 0);
      return -1;
  }
}

core::Error ZipError(std::string_view what, zip_error_t* error) {
  return core::Error::Fatal(std::string(what) + ": " + zip_error_strerror(error));
}

// Adds `file` as the archive's next entry, with the fixed time, its mode and compression.
core::Status AddEntry(zip_t* za, EntrySource& source) {
  const CodeFile& file = *source.file;
  zip_source_t* src = zip_source_function(za, EntryCallback, &source);
  if (src == nullptr) return ZipError("zip source", zip_get_error(za));
  const zip_int64_t index = zip_file_add(za, file.path.c_str(), src, ZIP_FL_ENC_GUESS);
  if (index < 0) {
    zip_source_free(src);
    return ZipError("zip entry " + file.path, zip_get_error(za));
  }
  const auto i = static_cast<zip_uint64_t>(index);
  const uint32_t mode = file.executable ? kModeExecutable : kModeRegular;
  const bool stored = file.size == 0;
  if (zip_set_file_compression(za, i, stored ? ZIP_CM_STORE : ZIP_CM_DEFLATE,
                               stored ? 0 : kDeflateLevel) != 0 ||
      zip_file_set_dostime(za, i, kDosTime, kDosDate, 0) != 0 ||
      zip_file_set_external_attributes(za, i, 0, ZIP_OPSYS_UNIX, mode << 16U) != 0) {
    return ZipError("zip entry " + file.path, zip_get_error(za));
  }
  return core::OkStatus();
}

// The archive as libzip writes it, into an unlinked temporary file, so that the zip is never
// held in memory beside the file being packed. Writes land where libzip puts them (it goes back
// to finish each entry's local header), and the archive's size is the furthest byte written.
struct ZipSink {
  int fd = -1;
  zip_uint64_t written = 0;    // the furthest byte written since writing began
  zip_uint64_t committed = 0;  // the archive's size once zip_close commits it
  zip_uint64_t write_offset = 0;
  zip_uint64_t read_offset = 0;
  zip_error_t error{};
};

// libzip's SEEK and SEEK_WRITE: `offset` moved as `data` asks, within `size` bytes.
zip_int64_t Seek(zip_uint64_t& offset, zip_uint64_t size, void* data, zip_uint64_t len,
                 zip_error_t& error) {
  const zip_int64_t at = zip_source_seek_compute_offset(offset, size, data, len, &error);
  if (at < 0) return -1;
  offset = static_cast<zip_uint64_t>(at);
  return 0;
}

// The reading half of the archive's source: libzip reads back what it committed (the
// archive's earlier state, which is empty here).
zip_int64_t SinkRead(ZipSink& s, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
  switch (cmd) {
    case ZIP_SOURCE_OPEN:
      s.read_offset = 0;
      return 0;
    case ZIP_SOURCE_READ: {
      const size_t n = std::min<zip_uint64_t>(len, s.committed - s.read_offset);
      const ssize_t got = ::pread(s.fd, data, n, static_cast<off_t>(s.read_offset));
      if (got < 0) {
        zip_error_set(&s.error, ZIP_ER_READ, errno);
        return -1;
      }
      s.read_offset += static_cast<zip_uint64_t>(got);
      return got;
    }
    case ZIP_SOURCE_STAT: {
      auto* st = static_cast<zip_stat_t*>(data);
      zip_stat_init(st);
      st->valid = ZIP_STAT_SIZE;
      st->size = s.committed;
      return sizeof(zip_stat_t);
    }
    case ZIP_SOURCE_SEEK:
      return Seek(s.read_offset, s.committed, data, len, s.error);
    case ZIP_SOURCE_TELL:
      return static_cast<zip_int64_t>(s.read_offset);
    default:  // ZIP_SOURCE_CLOSE
      return 0;
  }
}

// Every byte of `data` written at `offset` of `fd`; false (errno set) on an error.
bool WriteAt(int fd, const char* data, size_t len, zip_uint64_t offset) {
  while (len > 0) {
    const ssize_t n = ::pwrite(fd, data, len, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    len -= static_cast<size_t>(n);
    offset += static_cast<zip_uint64_t>(n);
  }
  return true;
}

// The writing half: the archive written into the file, committed by its size.
zip_int64_t SinkWrite(ZipSink& s, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
  switch (cmd) {
    case ZIP_SOURCE_BEGIN_WRITE:
      s.written = 0;
      s.write_offset = 0;
      return 0;
    case ZIP_SOURCE_WRITE:
      if (!WriteAt(s.fd, static_cast<const char*>(data), len, s.write_offset)) {
        zip_error_set(&s.error, ZIP_ER_WRITE, errno);
        return -1;
      }
      s.write_offset += len;
      s.written = std::max(s.written, s.write_offset);
      return static_cast<zip_int64_t>(len);
    case ZIP_SOURCE_SEEK_WRITE:
      return Seek(s.write_offset, s.written, data, len, s.error);
    case ZIP_SOURCE_TELL_WRITE:
      return static_cast<zip_int64_t>(s.write_offset);
    case ZIP_SOURCE_COMMIT_WRITE:
      s.committed = s.written;
      return 0;
    case ZIP_SOURCE_ROLLBACK_WRITE:
      s.written = 0;
      return 0;
    default:  // ZIP_SOURCE_REMOVE
      s.committed = 0;
      return 0;
  }
}

// libzip's callback for the archive's source: readable, seekable and writable.
zip_int64_t SinkCallback(void* state, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
  auto& s = *static_cast<ZipSink*>(state);
  switch (cmd) {
    case ZIP_SOURCE_OPEN:
    case ZIP_SOURCE_READ:
    case ZIP_SOURCE_CLOSE:
    case ZIP_SOURCE_STAT:
    case ZIP_SOURCE_SEEK:
    case ZIP_SOURCE_TELL:
      return SinkRead(s, data, len, cmd);
    case ZIP_SOURCE_BEGIN_WRITE:
    case ZIP_SOURCE_WRITE:
    case ZIP_SOURCE_SEEK_WRITE:
    case ZIP_SOURCE_TELL_WRITE:
    case ZIP_SOURCE_COMMIT_WRITE:
    case ZIP_SOURCE_ROLLBACK_WRITE:
    case ZIP_SOURCE_REMOVE:
      return SinkWrite(s, data, len, cmd);
    case ZIP_SOURCE_ERROR:
      return zip_error_to_data(&s.error, data, len);
    case ZIP_SOURCE_FREE:
      return 0;  // the sink outlives the archive
    case ZIP_SOURCE_SUPPORTS:
      return zip_source_make_command_bitmap(
          ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT, ZIP_SOURCE_SEEK,
          ZIP_SOURCE_TELL, ZIP_SOURCE_BEGIN_WRITE, ZIP_SOURCE_WRITE, ZIP_SOURCE_SEEK_WRITE,
          ZIP_SOURCE_TELL_WRITE, ZIP_SOURCE_COMMIT_WRITE, ZIP_SOURCE_ROLLBACK_WRITE,
          ZIP_SOURCE_REMOVE, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, ZIP_SOURCE_SUPPORTS, -1);
    default:
      zip_error_set(&s.error, ZIP_ER_OPNOTSUPP, 0);
      return -1;
  }
}

// Adds every file and closes the archive, which writes it to its source; on failure the
// archive is discarded.
core::Status WriteEntries(zip_t* za, std::vector<EntrySource>& sources) {
  for (EntrySource& source : sources) {
    if (auto added = AddEntry(za, source); !added.ok()) {
      zip_discard(za);
      return added.error();
    }
  }
  if (zip_close(za) != 0) {
    for (const EntrySource& source : sources) {
      if (source.failure) {
        zip_discard(za);
        return *source.failure;
      }
    }
    auto error = ZipError("zip", zip_get_error(za));
    zip_discard(za);
    return error;
  }
  return core::OkStatus();
}

// An unlinked temporary file for a zip, in $TMPDIR or /tmp.
core::Result<Fd> OpenTempFile() {
  std::error_code ec;
  std::string dir = fs::temp_directory_path(ec).string();
  if (ec) dir = "/tmp";
  Fd fd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (fd.get() >= 0) return fd;
  std::string path = dir + "/ray-gitops-zip-XXXXXX";
  Fd made(::mkostemp(path.data(), O_CLOEXEC));
  if (made.get() < 0) {
    return core::Error::Transient("cannot make a temporary file in " + dir + ": " +
                                  std::strerror(errno));
  }
  ::unlink(path.c_str());
  return made;
}

// A zip written to an unlinked temporary file.
struct ZipFile {
  Fd fd;
  uint64_t size = 0;
};

// The deterministic zip of `files` (sorted here by path, bytewise), into a temporary file: one
// file's bytes are held at a time, never the zip.
core::Result<ZipFile> WriteCodeZip(std::vector<CodeFile> files) {
  if (files.empty()) return core::Error::InvalidInput("no files to pack");
  // No zip reads more than Ray could ever take, whatever asks for it.
  if (const CodeFolderInfo total = Summarise("", files);
      total.bytes > static_cast<uint64_t>(core::kMaxCodeBytes)) {
    return FolderTooLarge("", total.bytes, static_cast<uint64_t>(core::kMaxCodeBytes),
                          total.largest);
  }
  std::sort(files.begin(), files.end(),
            [](const CodeFile& a, const CodeFile& b) { return a.path < b.path; });
  std::vector<EntrySource> sources(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    sources[i].file = &files[i];
    zip_error_init(&sources[i].error);
  }
  core::Result<Fd> temp = OpenTempFile();
  if (!temp.ok()) return temp.error();
  ZipSink sink;
  sink.fd = temp->get();
  zip_error_init(&sink.error);
  zip_error_t error;
  zip_error_init(&error);
  core::Result<ZipFile> out = ZipFile{};
  zip_source_t* archive = zip_source_function_create(SinkCallback, &sink, &error);
  zip_t* za = archive == nullptr ? nullptr : zip_open_from_source(archive, ZIP_TRUNCATE, &error);
  if (archive == nullptr) {
    out = ZipError("zip file", &error);
  } else if (za == nullptr) {
    zip_source_free(archive);  // still ours: zip_open_from_source failed
    out = ZipError("zip open", &error);
  } else if (core::Status written = WriteEntries(za, sources); !written.ok()) {
    out = written.error();
  } else if (sink.committed == 0) {
    out = core::Error::Fatal("zip: the archive was not written");
  } else {
    out = ZipFile{std::move(temp).value(), sink.committed};
  }
  for (EntrySource& source : sources) zip_error_fini(&source.error);
  zip_error_fini(&sink.error);
  zip_error_fini(&error);
  return out;
}

// The bytes of a zip file, read into one string of its size.
core::Result<std::string> ReadZipFile(const ZipFile& zip) {
  std::string bytes(zip.size, '\0');
  size_t used = 0;
  while (used < bytes.size()) {
    const ssize_t n =
        ::pread(zip.fd.get(), bytes.data() + used, bytes.size() - used, static_cast<off_t>(used));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return core::Error::Transient("cannot read the zip back");
    used += static_cast<size_t>(n);
  }
  return bytes;
}

// ---- Folders in the object database ----

// A walk over a tree: the files to archive, with export-ignore applied.
struct TreeWalk {
  git_repository* repo = nullptr;
  git_odb* odb = nullptr;
  std::string display_prefix;  // what comes before a path in errors: "src/trainer/" or ""
  core::ExportIgnoreMatcher matcher;
  std::vector<CodeFile> files;
};

core::Status WalkTree(TreeWalk& w, const git_tree* tree, const std::string& dir, size_t depth);

// The .gitattributes of `tree` (the folder `dir`) into the matcher, before its entries. A
// symlink named .gitattributes is no attributes file (git does not follow it either).
core::Status ReadTreeAttributes(TreeWalk& w, const git_tree* tree, const std::string& dir) {
  const git_tree_entry* attributes = git_tree_entry_byname(tree, ".gitattributes");
  if (attributes == nullptr) return core::OkStatus();
  const git_filemode_t mode = git_tree_entry_filemode(attributes);
  if (mode != GIT_FILEMODE_BLOB && mode != GIT_FILEMODE_BLOB_EXECUTABLE) return core::OkStatus();
  const std::string shown = w.display_prefix + dir + ".gitattributes";
  size_t size = 0;
  git_object_t type = GIT_OBJECT_INVALID;
  if (const int rc = git_odb_read_header(&size, &type, w.odb, git_tree_entry_id(attributes));
      rc != 0) {
    return git::LastError(rc, "read " + shown);
  }
  if (size > kMaxAttributesBytes) {
    return core::Error::InvalidInput(shown + " is larger than " +
                                     core::HumanBytes(kMaxAttributesBytes));
  }
  auto text = git::ReadBlob(w.repo, *git_tree_entry_id(attributes));
  if (!text) return core::Error::NotFound("cannot read " + shown);
  w.matcher.AddAttributesFile(dir.empty() ? dir : dir.substr(0, dir.size() - 1), *text);
  return core::OkStatus();
}

// One entry of a tree at `path` (relative to the walked tree).
core::Status WalkEntry(TreeWalk& w, const git_tree_entry* entry, const std::string& path,
                       size_t depth) {
  const git_filemode_t mode = git_tree_entry_filemode(entry);
  const bool folder_like = mode == GIT_FILEMODE_TREE || mode == GIT_FILEMODE_COMMIT;
  if (w.matcher.IsExportIgnored(path, folder_like)) return core::OkStatus();
  switch (mode) {
    case GIT_FILEMODE_TREE: {
      git_tree* raw = nullptr;
      if (const int rc = git_tree_lookup(&raw, w.repo, git_tree_entry_id(entry)); rc != 0) {
        return git::LastError(rc, "read tree " + w.display_prefix + path);
      }
      const git::Tree subtree(raw);
      return WalkTree(w, subtree.get(), path + "/", depth + 1);
    }
    case GIT_FILEMODE_BLOB:
    case GIT_FILEMODE_BLOB_EXECUTABLE: {
      size_t size = 0;
      git_object_t type = GIT_OBJECT_INVALID;
      const git_oid oid = *git_tree_entry_id(entry);
      if (const int rc = git_odb_read_header(&size, &type, w.odb, &oid); rc != 0) {
        return git::LastError(rc, "read " + w.display_prefix + path);
      }
      git_repository* repo = w.repo;
      std::string shown = w.display_prefix + path;
      w.files.push_back({path, mode == GIT_FILEMODE_BLOB_EXECUTABLE, size,
                         [repo, oid, shown]() -> core::Result<CodeFileBytes> {
                           git_blob* raw = nullptr;
                           if (git_blob_lookup(&raw, repo, &oid) != 0) {
                             git_error_clear();
                             return core::Error::NotFound("cannot read " + shown);
                           }
                           CodeFileBytes bytes;
                           bytes.blob.reset(raw);
                           return bytes;
                         }});
      return core::OkStatus();
    }
    case GIT_FILEMODE_LINK:
      return core::Error::InvalidInput(w.display_prefix + path + " is a symlink" +
                                       std::string(kFilesOnly));
    case GIT_FILEMODE_COMMIT:
      return core::Error::InvalidInput(w.display_prefix + path + " is a submodule" +
                                       std::string(kFilesOnly));
    default:
      return core::Error::InvalidInput(w.display_prefix + path + " has an unknown file mode");
  }
}

// Every entry of `tree`, the folder `dir` ("" or "a/b/") of the walked tree, `depth` folders
// below it.
core::Status WalkTree(TreeWalk& w, const git_tree* tree, const std::string& dir, size_t depth) {
  if (depth > kMaxFolderDepth) {
    return core::Error::InvalidInput(ShownPath(w.display_prefix + dir) + " lies more than " +
                                     std::to_string(kMaxFolderDepth) +
                                     " folders deep in the code folder");
  }
  const size_t count = git_tree_entrycount(tree);
  // Every name first: a name that is no name must not reach the attributes or the zip.
  for (size_t i = 0; i < count; ++i) {
    const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
    if (auto named = CheckEntryName(git_tree_entry_name(entry), w.display_prefix + dir);
        !named.ok()) {
      return named;
    }
  }
  if (auto read = ReadTreeAttributes(w, tree, dir); !read.ok()) return read;
  for (size_t i = 0; i < count; ++i) {
    const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
    if (auto walked = WalkEntry(w, entry, dir + git_tree_entry_name(entry), depth); !walked.ok()) {
      return walked;
    }
  }
  return core::OkStatus();
}

// The archived files of tree `tree_oid`; `shown` names the folder in errors ("" for a bare
// tree id, whose paths are then relative to it).
core::Result<std::vector<CodeFile>> ListTree(git_repository* repo, const git_oid& tree_oid,
                                             const std::string& shown) {
  git::EnsureLibraryInitialised();
  TreeWalk w;
  w.repo = repo;
  w.display_prefix = shown.empty() ? shown : shown + "/";
  git_odb* odb = nullptr;
  if (const int rc = git_repository_odb(&odb, repo); rc != 0) {
    return git::LastError(rc, "open object database");
  }
  const git::Odb owned_odb(odb);
  w.odb = odb;
  git_tree* raw = nullptr;
  if (const int rc = git_tree_lookup(&raw, repo, &tree_oid); rc != 0) {
    return git::LastError(rc, "read tree " + git::OidHex(tree_oid));
  }
  const git::Tree tree(raw);
  if (auto walked = WalkTree(w, tree.get(), "", 0); !walked.ok()) return walked.error();
  if (w.files.empty()) {
    return core::Error::InvalidInput(
        (shown.empty() ? "tree " + git::OidHex(tree_oid).substr(0, 12) : shown) +
        " holds no files once export-ignore is applied");
  }
  return std::move(w.files);
}

// A repository-relative folder as the callers may give it: no leading or trailing '/', no
// empty, "." or ".." component.
core::Status CheckFolderName(std::string_view folder) {
  if (folder.empty()) return core::OkStatus();
  size_t begin = 0;
  while (begin <= folder.size()) {
    const size_t end = std::min(folder.find('/', begin), folder.size());
    const std::string_view part = folder.substr(begin, end - begin);
    if (part.empty() || part == "." || part == "..") {
      return core::Error::InvalidInput("bad code folder \"" + std::string(folder) +
                                       "\": a repository-relative path without a trailing '/'");
    }
    begin = end + 1;
  }
  return core::OkStatus();
}

core::Result<git_oid> ParseTreeId(std::string_view tree_id) {
  const auto oid = git::ParseOid(tree_id);
  if (!oid) return core::Error::InvalidInput("not a tree id: " + std::string(tree_id));
  return *oid;
}

// The error of a component `at` on the path to code folder `folder` that is `what` (a file, a
// submodule) rather than a folder; a file on the path means the folder does not exist at
// `commit_id`.
core::Error NotAFolder(const std::string& at, const std::string& folder, std::string_view what,
                       std::string_view why, std::string_view commit_id = {}) {
  std::string message;
  if (at == folder) {
    message.append(folder).append(" is ").append(what).append(", not a folder");
  } else if (commit_id.empty()) {
    message.append(at).append(" is ").append(what).append(" on the path to ").append(folder);
    message.append(why);
  } else {
    message.append(folder).append(" does not exist at commit ").append(commit_id.substr(0, 12));
    message.append(" (").append(at).append(" is ").append(what).append(")");
  }
  return core::Error::InvalidInput(std::move(message));
}

// The tree of `folder` at `commit_id`, with the errors of a folder that is not one.
core::Result<git_oid> FolderTreeAt(git_repository* repo, std::string_view commit_id,
                                   const std::string& folder) {
  git::EnsureLibraryInitialised();
  if (auto checked = CheckFolderName(folder); !checked.ok()) return checked.error();
  const auto commit_oid = git::ParseOid(commit_id);
  if (!commit_oid) return core::Error::InvalidInput("not a commit id: " + std::string(commit_id));
  git_commit* raw_commit = nullptr;
  if (const int rc = git_commit_lookup(&raw_commit, repo, &*commit_oid); rc != 0) {
    return git::LastError(rc, "read commit " + std::string(commit_id));
  }
  const git::Commit commit(raw_commit);
  if (folder.empty()) return *git_commit_tree_id(commit.get());
  git_tree* raw_tree = nullptr;
  if (const int rc = git_commit_tree(&raw_tree, commit.get()); rc != 0) {
    return git::LastError(rc, "read the tree of " + std::string(commit_id));
  }
  git::Tree tree(raw_tree);
  // One component at a time: a symlink or a submodule anywhere on the path is named, never
  // looked through.
  for (size_t begin = 0;;) {
    const size_t end = std::min(folder.find('/', begin), folder.size());
    const std::string at = folder.substr(0, end);
    const git_tree_entry* entry =
        git_tree_entry_byname(tree.get(), folder.substr(begin, end - begin).c_str());
    if (entry == nullptr) {
      return core::Error::InvalidInput(folder + " does not exist at commit " +
                                       std::string(commit_id.substr(0, 12)));
    }
    switch (git_tree_entry_filemode(entry)) {
      case GIT_FILEMODE_TREE:
        break;
      case GIT_FILEMODE_LINK:
        return LinkOnPath(at, folder);
      case GIT_FILEMODE_COMMIT:
        return NotAFolder(at, folder, "a submodule", "; its files are not in this repository");
      default:
        return NotAFolder(at, folder, "a file", "", commit_id);
    }
    if (end == folder.size()) return *git_tree_entry_id(entry);
    git_tree* raw_sub = nullptr;
    if (const int rc = git_tree_lookup(&raw_sub, repo, git_tree_entry_id(entry)); rc != 0) {
      return git::LastError(rc, "read tree " + at);
    }
    tree = git::Tree(raw_sub);
    begin = end + 1;
  }
}

}  // namespace

core::Result<CodeFolderInfo> InspectCodeFolder(git_repository* repo, std::string_view commit_id,
                                               std::string_view folder) {
  const std::string name(folder);
  const auto tree = FolderTreeAt(repo, commit_id, name);
  if (!tree.ok()) return tree.error();
  auto files = ListTree(repo, *tree, name);
  if (!files.ok()) return files.error();
  return Summarise(git::OidHex(*tree), *files);
}

core::Result<std::string> CodeFolderTreeId(git_repository* repo, std::string_view commit_id,
                                           std::string_view folder) {
  const auto tree = FolderTreeAt(repo, commit_id, std::string(folder));
  if (!tree.ok()) return tree.error();
  return git::OidHex(*tree);
}

core::Result<CodeFolderInfo> InspectCodeTree(git_repository* repo, std::string_view tree_id) {
  const auto tree = ParseTreeId(tree_id);
  if (!tree.ok()) return tree.error();
  auto files = ListTree(repo, *tree, "");
  if (!files.ok()) return files.error();
  return Summarise(git::OidHex(*tree), *files);
}

core::Result<std::string> BuildCodeZip(git_repository* repo, std::string_view tree_id) {
  const auto tree = ParseTreeId(tree_id);
  if (!tree.ok()) return tree.error();
  auto files = ListTree(repo, *tree, "");
  if (!files.ok()) return files.error();
  auto zip = WriteCodeZip(std::move(files).value());
  if (!zip.ok()) return zip.error();
  return ReadZipFile(*zip);
}

core::Result<uint64_t> CodeZipSize(git_repository* repo, std::string_view tree_id) {
  const auto tree = ParseTreeId(tree_id);
  if (!tree.ok()) return tree.error();
  auto files = ListTree(repo, *tree, "");
  if (!files.ok()) return files.error();
  auto zip = WriteCodeZip(std::move(files).value());
  if (!zip.ok()) return zip.error();
  return zip->size;
}

uint64_t ZipSizeUpperBound(const CodeFolderInfo& info) {
  // Raw deflate never writes more than zlib's deflateBound: the input in stored blocks plus
  // their headers (under 0.04 %), plus a few bytes per stream. The shifts of the total are at
  // least the sums of the shifts of each file.
  const uint64_t n = info.bytes;
  const uint64_t data = n + (n >> 12U) + (n >> 14U) + (n >> 25U) + 7 * info.files;
  // Local header (30 bytes) and central header (46 bytes) per entry, each with the path and no
  // extra field, and the end of central directory record (22 bytes).
  uint64_t bound = data + info.files * (30 + 46) + 2 * info.path_bytes + 22;
  if (info.files >= 0xFFFF || bound >= 0xFFFFFFFFULL) {
    // Zip64: an extra field of up to 20 bytes in each local header and 28 in each central
    // one, the Zip64 end record (56) and its locator (20).
    bound += info.files * (20 + 28) + 56 + 20;
  }
  return bound;
}

namespace {

// ---- Folders in a working tree, read without following a link ----

// Why OpenInside stopped.
enum class OpenFailure { kNone, kMissing, kSymlink, kNotFolder, kNotRegular, kUnreadable };

struct Opened {
  Fd fd;
  OpenFailure failure = OpenFailure::kNone;
  std::string at;  // the working-tree-relative path of the component that stopped it
  int error = 0;   // errno, for kUnreadable
};

// Opens `rel` (relative to the working tree `workdir`, '/'-separated, "" for the working tree
// itself) one component at a time with O_NOFOLLOW: a symlink anywhere on the path is met, never
// followed, whenever it was put there. The last component as a folder, or as a regular file.
Opened OpenInside(const std::string& workdir, std::string_view rel, bool folder) {
  Opened out;
  Fd dir(::open(workdir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) {
    out.failure = OpenFailure::kUnreadable;
    out.error = errno;
    return out;
  }
  for (size_t begin = 0; !rel.empty();) {
    const size_t end = std::min(rel.find('/', begin), rel.size());
    const std::string name(rel.substr(begin, end - begin));
    const bool last = end == rel.size();
    const int flags =
        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (!last || folder ? O_DIRECTORY : 0);
    Fd next(::openat(dir.get(), name.c_str(), flags));
    struct stat st {};
    if (next.get() < 0) {
      out.error = errno;
      out.at = std::string(rel.substr(0, end));
      if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        out.failure = errno == ENOENT ? OpenFailure::kMissing : OpenFailure::kUnreadable;
      } else if (S_ISLNK(st.st_mode)) {
        out.failure = OpenFailure::kSymlink;
      } else if (!S_ISDIR(st.st_mode) && (!last || folder)) {
        out.failure = OpenFailure::kNotFolder;
      } else {
        out.failure = OpenFailure::kUnreadable;
      }
      return out;
    }
    if (last && !folder && (::fstat(next.get(), &st) != 0 || !S_ISREG(st.st_mode))) {
      out.at = std::string(rel);
      out.failure = OpenFailure::kNotRegular;
      return out;
    }
    dir = std::move(next);
    if (last) break;
    begin = end + 1;
  }
  out.fd = std::move(dir);
  return out;
}

// The error of an entry that OpenInside could not open while a folder was read: it changed
// since it was listed, or cannot be read.
core::Error OpenError(const Opened& opened) {
  const std::string shown = ShownPath(opened.at);
  switch (opened.failure) {
    case OpenFailure::kSymlink:
      return core::Error::InvalidInput(shown + " is a symlink" + std::string(kFilesOnly));
    case OpenFailure::kMissing:
    case OpenFailure::kNotFolder:
    case OpenFailure::kNotRegular:
      return core::Error::Transient(shown + " changed while it was being read");
    default:
      return core::Error::Transient("cannot read " + (shown.empty() ? "the working tree" : shown) +
                                    ": " + std::strerror(opened.error));
  }
}

// Reads exactly `size` bytes of `fd` to its end; kTransient when the file is not that size
// (it changed since it was sized).
core::Result<std::string> ReadExactly(int fd, uint64_t size, const std::string& shown) {
  std::string bytes(size, '\0');
  size_t used = 0;
  char extra = 0;
  while (true) {
    char* into = used < bytes.size() ? bytes.data() + used : &extra;
    const size_t want = used < bytes.size() ? bytes.size() - used : 1;
    const ssize_t n = ::read(fd, into, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return core::Error::Transient("cannot read " + shown + ": " + std::strerror(errno));
    if (n == 0) break;
    if (into == &extra) return core::Error::Transient(shown + " changed while it was being read");
    used += static_cast<size_t>(n);
  }
  if (used != bytes.size()) {
    return core::Error::Transient(shown + " changed while it was being read");
  }
  return bytes;
}

// The Git blob id of the `size` bytes of `fd`, read in chunks (SHA-1 over "blob <size>\0" and
// the bytes, as Git hashes a blob).
core::Result<git_oid> HashBlobStream(int fd, uint64_t size, const std::string& shown) {
  const git::Owned<EVP_MD_CTX, EVP_MD_CTX_free> ctx(EVP_MD_CTX_new());
  const std::string header = "blob " + std::to_string(size) + std::string(1, '\0');
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha1(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), header.data(), header.size()) != 1) {
    return core::Error::Fatal("SHA-1 is not available");
  }
  std::vector<char> buffer(size_t{64} << 10U);
  uint64_t total = 0;
  while (true) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return core::Error::Transient("cannot read " + shown + ": " + std::strerror(errno));
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    if (total > size) break;
    EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(n));
  }
  if (total != size) return core::Error::Transient(shown + " changed while it was being read");
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest.data(), &length);
  git_oid oid;
  git_oid_fromraw(&oid, digest.data());
  return oid;
}

// The filters `git add` applies to `repo_path` (none without a repository).
core::Result<git::Owned<git_filter_list, git_filter_list_free>> LoadFilters(
    git_repository* repo, const std::string& repo_path) {
  git_filter_list* filters = nullptr;
  if (repo != nullptr) {
    if (const int rc = git_filter_list_load(&filters, repo, nullptr, repo_path.c_str(),
                                            GIT_FILTER_TO_ODB, GIT_FILTER_ALLOW_UNSAFE);
        rc != 0) {
      return git::LastError(rc, "filters of " + repo_path);
    }
  }
  return git::Owned<git_filter_list, git_filter_list_free>(filters);
}

// The bytes `git add` would store for the regular file `repo_path`: its contents, read without
// following a link, through the repository's filters.
core::Result<std::string> ReadDiskFile(git_repository* repo, const std::string& workdir,
                                       const std::string& repo_path) {
  const std::string shown = ShownPath(repo_path);
  Opened file = OpenInside(workdir, repo_path, false);
  if (file.failure != OpenFailure::kNone) return OpenError(file);
  struct stat st {};
  if (::fstat(file.fd.get(), &st) != 0) return core::Error::Transient("cannot read " + shown);
  auto bytes = ReadExactly(file.fd.get(), static_cast<uint64_t>(st.st_size), shown);
  if (!bytes.ok()) return bytes.error();
  auto filters = LoadFilters(repo, repo_path);
  if (!filters.ok()) return filters.error();
  if (!*filters) return bytes;
  git_buf out{};
  if (const int rc =
          git_filter_list_apply_to_buffer(&out, filters->get(), bytes->data(), bytes->size());
      rc != 0) {
    return git::LastError(rc, "filter " + shown);
  }
  std::string filtered(out.ptr, out.size);
  git_buf_dispose(&out);
  return filtered;
}

// One entry of a tree object being built: its name, mode and id.
struct TreeItem {
  std::string name;
  uint32_t mode = 0;
  git_oid id{};
};

// Git's order of tree entries: bytewise, a folder's name compared as if it ended in '/'.
bool GitTreeOrder(const TreeItem& a, const TreeItem& b) {
  std::string left = a.name;
  std::string right = b.name;
  if (a.mode == 040000) left += '/';
  if (b.mode == 040000) right += '/';
  return left < right;
}

// The id of the tree object holding `items`, as Git would write it (nothing is written).
git_oid HashTree(std::vector<TreeItem> items) {
  std::sort(items.begin(), items.end(), GitTreeOrder);
  std::string bytes;
  for (const TreeItem& item : items) {
    std::ostringstream mode;
    mode << std::oct << item.mode;
    bytes += mode.str();
    bytes += ' ';
    bytes += item.name;
    bytes += '\0';
    bytes.append(reinterpret_cast<const char*>(item.id.id), GIT_OID_RAWSZ);
  }
  git_oid oid;
  git_odb_hash(&oid, bytes.data(), bytes.size(), GIT_OBJECT_TREE);
  return oid;
}

// One entry of a folder on disk that `git add -A` would stage, as its listing saw it.
struct DiskNode {
  enum class Kind { kFile, kFolder, kSymlink, kRepository };
  std::string name;
  Kind kind = Kind::kFile;
  bool executable = false;
  uint64_t size = 0;  // a file's, from lstat
  bool archived = false;
  std::vector<DiskNode> children;  // a folder's
};

// A walk over a folder on disk as `git add -A` would stage it: first listed (lstat only, no
// file read, so that a folder over the limit is refused before anything is read), then hashed.
struct DiskWalk {
  git_repository* repo = nullptr;  // null: no checkout, no ignore rules, no filters
  git_index* index = nullptr;      // the checkout's index, for files tracked though ignored
  std::string workdir;             // with a trailing '/'
  std::string folder;              // repository-relative, "" for the whole working tree
  core::ExportIgnoreMatcher matcher;
  std::vector<std::pair<std::string, uint64_t>> listed;  // archived files and lstat sizes
  uint64_t listed_bytes = 0;
  std::vector<CodeFile> files;
  // When set: every entry but folders, as Git would stage it, by path relative to the folder
  // (CodeChangesOnDisk).
  std::map<std::string, std::pair<uint32_t, git_oid>>* staged = nullptr;
};

// The repository-relative path of `rel` (relative to the folder).
std::string RepoPath(const DiskWalk& w, const std::string& rel) {
  if (w.folder.empty()) return rel;
  return rel.empty() ? w.folder : w.folder + "/" + rel;
}

// Whether `git add -A` leaves the path out: ignored by .gitignore and not in the index (a
// folder: nothing under it in the index).
bool LeftOut(const DiskWalk& w, const std::string& repo_path, bool is_dir) {
  if (w.repo == nullptr) return false;
  int ignored = 0;
  const std::string asked = is_dir ? repo_path + "/" : repo_path;
  if (git_ignore_path_is_ignored(&ignored, w.repo, asked.c_str()) != 0 || ignored == 0) {
    return false;
  }
  if (w.index == nullptr) return true;
  if (!is_dir) return git_index_get_bypath(w.index, repo_path.c_str(), 0) == nullptr;
  size_t at = 0;
  return git_index_find_prefix(&at, w.index, asked.c_str()) != 0;
}

// The files libgit2 reads on its own while Git's rules are applied to a folder (its ignore and
// attributes files): they must be no link, and small. `shown_dir` is "" or "a/b/".
core::Status CheckRuleFiles(int dir_fd, const std::string& shown_dir) {
  for (const char* name : {".gitattributes", ".gitignore"}) {
    struct stat st {};
    if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const std::string shown = ShownPath(shown_dir + name);
    if (S_ISLNK(st.st_mode)) {
      return core::Error::InvalidInput(shown +
                                       " is a symlink; Git's rules are read from the repository "
                                       "only, never through a link");
    }
    if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > kMaxAttributesBytes) {
      return core::Error::InvalidInput(shown + " is larger than " +
                                       core::HumanBytes(kMaxAttributesBytes));
    }
  }
  return core::OkStatus();
}

// The names of folder `rel` (relative to the folder) and their lstat, sorted, without ".git".
core::Result<std::vector<std::pair<std::string, struct stat>>> ListFolder(const DiskWalk& w,
                                                                          const std::string& rel) {
  Opened dir = OpenInside(w.workdir, RepoPath(w, rel), true);
  if (dir.failure != OpenFailure::kNone) return OpenError(dir);
  const std::string dir_path = RepoPath(w, rel);
  if (auto checked = CheckRuleFiles(dir.fd.get(), dir_path.empty() ? dir_path : dir_path + "/");
      !checked.ok()) {
    return checked.error();
  }
  DIR* stream = ::fdopendir(dir.fd.get());
  if (stream == nullptr) {
    return core::Error::Transient("cannot list " + ShownPath(dir_path) + ": " +
                                  std::strerror(errno));
  }
  const int dir_fd = dir.fd.release();
  const std::unique_ptr<DIR, int (*)(DIR*)> owned(stream, ::closedir);
  std::vector<std::pair<std::string, struct stat>> names;
  errno = 0;
  while (const dirent* entry = ::readdir(stream)) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == ".." || name == ".git") continue;
    struct stat st {};
    if (::fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return core::Error::Transient("cannot read " + ShownPath(RepoPath(w, rel)) + "/" +
                                    ShownPath(name) + ": " + std::strerror(errno));
    }
    names.emplace_back(std::string(name), st);
  }
  std::sort(names.begin(), names.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return names;
}

// Whether the folder `repo_path` holds a .git: a repository of its own.
bool IsNestedRepository(const DiskWalk& w, const std::string& repo_path) {
  const Opened dir = OpenInside(w.workdir, repo_path, true);
  struct stat st {};
  return dir.failure == OpenFailure::kNone &&
         ::fstatat(dir.fd.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) == 0;
}

// A .gitattributes of folder `rel` into the matcher, read without following a link.
core::Status ReadDiskAttributes(DiskWalk& w, const std::string& rel) {
  const std::string repo_path =
      RepoPath(w, rel.empty() ? ".gitattributes" : rel + "/.gitattributes");
  if (LeftOut(w, repo_path, false)) return core::OkStatus();
  Opened file = OpenInside(w.workdir, repo_path, false);
  if (file.failure != OpenFailure::kNone) return OpenError(file);
  struct stat st {};
  if (::fstat(file.fd.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) > kMaxAttributesBytes) {
    return core::Error::InvalidInput(ShownPath(repo_path) + " is larger than " +
                                     core::HumanBytes(kMaxAttributesBytes));
  }
  auto text = ReadExactly(file.fd.get(), static_cast<uint64_t>(st.st_size), repo_path);
  if (!text.ok()) return text.error();
  w.matcher.AddAttributesFile(rel, *text);
  return core::OkStatus();
}

core::Result<std::vector<DiskNode>> ScanFolder(DiskWalk& w, const std::string& rel, bool archived,
                                               size_t depth);

// One entry `rel` of a folder on disk, as its lstat `st` says, into `nodes` when Git would
// stage it.
core::Status ScanEntry(DiskWalk& w, const std::string& rel, const struct stat& st, bool archived,
                       size_t depth, std::vector<DiskNode>& nodes) {
  const std::string shown = ShownPath(RepoPath(w, rel));
  const bool is_dir = S_ISDIR(st.st_mode);
  if (LeftOut(w, RepoPath(w, rel), is_dir)) return core::OkStatus();
  DiskNode node;
  node.name = rel.substr(rel.rfind('/') + 1);
  node.archived = archived && !w.matcher.IsExportIgnored(rel, is_dir);
  const bool nested = is_dir && IsNestedRepository(w, RepoPath(w, rel));
  if (nested || S_ISLNK(st.st_mode)) {
    if (node.archived) {
      return core::Error::InvalidInput(shown + (nested ? " is a submodule" : " is a symlink") +
                                       std::string(kFilesOnly));
    }
    node.kind = nested ? DiskNode::Kind::kRepository : DiskNode::Kind::kSymlink;
  } else if (is_dir) {
    auto children = ScanFolder(w, rel, node.archived, depth + 1);
    if (!children.ok()) return children.error();
    node.kind = DiskNode::Kind::kFolder;
    node.children = std::move(children).value();
  } else if (S_ISREG(st.st_mode)) {
    node.executable = (st.st_mode & S_IXUSR) != 0;
    node.size = static_cast<uint64_t>(st.st_size);
    if (node.archived) {
      w.listed.emplace_back(rel, node.size);
      w.listed_bytes += node.size;
    }
  } else {
    return core::Error::InvalidInput(shown + " is not a regular file" + std::string(kFilesOnly));
  }
  nodes.push_back(std::move(node));
  return core::OkStatus();
}

// The entries of folder `rel` (relative to the walked folder) Git would stage, `depth` folders
// below it, without reading any file but .gitattributes.
core::Result<std::vector<DiskNode>> ScanFolder(DiskWalk& w, const std::string& rel, bool archived,
                                               size_t depth) {
  const std::string prefix = rel.empty() ? rel : rel + "/";
  if (depth > kMaxFolderDepth) {
    return core::Error::InvalidInput(ShownPath(RepoPath(w, rel)) + " lies more than " +
                                     std::to_string(kMaxFolderDepth) +
                                     " folders deep in the code folder");
  }
  auto names = ListFolder(w, rel);
  if (!names.ok()) return names.error();
  for (const auto& [name, st] : *names) {
    const std::string dir = RepoPath(w, rel);
    if (auto named = CheckEntryName(name, dir.empty() ? dir : dir + "/"); !named.ok()) {
      return named.error();
    }
  }
  for (const auto& [name, st] : *names) {
    if (name != ".gitattributes" || !S_ISREG(st.st_mode)) continue;
    if (auto read = ReadDiskAttributes(w, rel); !read.ok()) return read.error();
  }
  std::vector<DiskNode> nodes;
  for (const auto& [name, st] : *names) {
    if (auto scanned = ScanEntry(w, prefix + name, st, archived, depth, nodes); !scanned.ok()) {
      return scanned.error();
    }
  }
  return nodes;
}

// The blob id the index holds for `repo_path` when the file on disk is still the one it
// describes: the same size, mode, inode and times, changed before the index was written (the
// test git itself makes before it hashes a file again); nullopt otherwise.
std::optional<git_oid> IndexedBlob(const DiskWalk& w, const std::string& repo_path,
                                   const DiskNode& node) {
  if (w.index == nullptr) return std::nullopt;
  const git_index_entry* entry = git_index_get_bypath(w.index, repo_path.c_str(), 0);
  const char* index_path = git_index_path(w.index);
  Opened file = OpenInside(w.workdir, repo_path, false);
  struct stat st {};
  struct stat index_st {};
  if (entry == nullptr || index_path == nullptr || file.failure != OpenFailure::kNone ||
      ::fstat(file.fd.get(), &st) != 0 || ::stat(index_path, &index_st) != 0) {
    return std::nullopt;
  }
  const bool same = entry->file_size == static_cast<uint32_t>(st.st_size) &&
                    entry->ino == static_cast<uint32_t>(st.st_ino) &&
                    entry->mode == (node.executable ? kModeExecutable : kModeRegular) &&
                    entry->mtime.seconds == static_cast<int32_t>(st.st_mtim.tv_sec) &&
                    entry->mtime.nanoseconds == static_cast<uint32_t>(st.st_mtim.tv_nsec) &&
                    entry->ctime.seconds == static_cast<int32_t>(st.st_ctim.tv_sec) &&
                    entry->ctime.nanoseconds == static_cast<uint32_t>(st.st_ctim.tv_nsec);
  const bool racy = st.st_mtim.tv_sec > index_st.st_mtim.tv_sec ||
                    (st.st_mtim.tv_sec == index_st.st_mtim.tv_sec &&
                     st.st_mtim.tv_nsec >= index_st.st_mtim.tv_nsec);
  if (!same || racy) return std::nullopt;
  return entry->id;
}

// The regular file `rel` as Git would store it: its blob id into `item`, and into the walk's
// files when archived (with the size of its bytes once filtered).
core::Status HashFile(DiskWalk& w, const std::string& rel, const DiskNode& node, TreeItem& item) {
  const std::string repo_path = RepoPath(w, rel);
  const std::string shown = ShownPath(repo_path);
  item.mode = node.executable ? kModeExecutable : kModeRegular;
  auto filters = LoadFilters(w.repo, repo_path);
  if (!filters.ok()) return filters.error();
  uint64_t size = 0;
  if (!*filters) {
    Opened file = OpenInside(w.workdir, repo_path, false);
    if (file.failure != OpenFailure::kNone) return OpenError(file);
    struct stat st {};
    if (::fstat(file.fd.get(), &st) != 0) return core::Error::Transient("cannot read " + shown);
    size = static_cast<uint64_t>(st.st_size);
    auto oid = HashBlobStream(file.fd.get(), size, shown);
    if (!oid.ok()) return oid.error();
    item.id = *oid;
  } else {
    // Git's filters need the whole file: only a file the limit allows is read, or one the index
    // still describes.
    if (node.size > static_cast<uint64_t>(core::kMaxCodeBytes)) {
      if (std::optional<git_oid> indexed = IndexedBlob(w, repo_path, node)) {
        item.id = *indexed;
        return core::OkStatus();  // never archived: the files' total is within the limit
      }
      return core::Error::InvalidInput(
          shown + " is larger than " +
          core::HumanBytes(static_cast<uint64_t>(core::kMaxCodeBytes)) +
          " and Git's filters apply to it (.gitattributes text, eol or ident): leave it out "
          "of the code folder, or out of Git with .gitignore");
    }
    auto bytes = ReadDiskFile(w.repo, w.workdir, repo_path);
    if (!bytes.ok()) return bytes.error();
    git_odb_hash(&item.id, bytes->data(), bytes->size(), GIT_OBJECT_BLOB);
    size = bytes->size();
  }
  if (!node.archived) return core::OkStatus();
  git_repository* repo = w.repo;
  w.files.push_back({rel, node.executable, size,
                     [repo, workdir = w.workdir, repo_path]() -> core::Result<CodeFileBytes> {
                       auto bytes = ReadDiskFile(repo, workdir, repo_path);
                       if (!bytes.ok()) return bytes.error();
                       return CodeFileBytes{std::move(bytes).value(), {}};
                     }});
  return core::OkStatus();
}

// The symlink `rel` as Git stores it: a blob of its target (read, never followed).
core::Status HashSymlink(const DiskWalk& w, const std::string& rel, TreeItem& item) {
  const std::string repo_path = RepoPath(w, rel);
  const size_t slash = repo_path.rfind('/');
  const std::string parent = slash == std::string::npos ? "" : repo_path.substr(0, slash);
  Opened dir = OpenInside(w.workdir, parent, true);
  if (dir.failure != OpenFailure::kNone) return OpenError(dir);
  std::array<char, 4096> target{};
  const ssize_t n =
      ::readlinkat(dir.fd.get(), repo_path.substr(slash + 1).c_str(), target.data(), target.size());
  if (n < 0 || static_cast<size_t>(n) == target.size()) {
    return core::Error::Transient("cannot read the symlink " + ShownPath(repo_path));
  }
  item.mode = 0120000;
  git_odb_hash(&item.id, target.data(), static_cast<size_t>(n), GIT_OBJECT_BLOB);
  return core::OkStatus();
}

// The nested repository `rel` as Git stores it: a gitlink to its checked-out commit. Its .git
// must be a folder, or a file naming a folder inside the working tree (a checked-out
// submodule's): nothing outside the repository is opened.
core::Status HashGitlink(const DiskWalk& w, const std::string& rel, TreeItem& item) {
  const std::string repo_path = RepoPath(w, rel);
  const std::string shown = ShownPath(repo_path);
  Opened dir = OpenInside(w.workdir, repo_path, true);
  if (dir.failure != OpenFailure::kNone) return OpenError(dir);
  struct stat st {};
  if (::fstatat(dir.fd.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
    return core::Error::InvalidInput(shown + "/.git is neither a folder nor a file");
  }
  if (S_ISREG(st.st_mode)) {
    auto text = ReadDiskFile(nullptr, w.workdir, repo_path + "/.git");
    if (!text.ok()) return text.error();
    std::string gitdir = text->starts_with("gitdir: ") ? text->substr(8) : std::string();
    while (!gitdir.empty() && (gitdir.back() == '\n' || gitdir.back() == '\r')) gitdir.pop_back();
    const fs::path resolved = (fs::path(w.workdir) / repo_path / gitdir).lexically_normal();
    const std::string relative = resolved.lexically_relative(w.workdir).string();
    if (gitdir.empty() || fs::path(gitdir).is_absolute() || relative.empty() ||
        relative.starts_with("..")) {
      return core::Error::InvalidInput(shown + "/.git names a repository outside the working tree");
    }
  }
  git_repository* raw = nullptr;
  if (const int rc = git_repository_open(&raw, (w.workdir + repo_path).c_str()); rc != 0) {
    std::optional<std::string> foreign = git::ForeignOwnerProblem(rc, w.workdir + repo_path);
    git_error_clear();
    if (foreign) return core::Error::InvalidInput(shown + ": " + *foreign);
    return core::Error::InvalidInput(shown + " holds a .git but is no repository");
  }
  const git::Repository nested(raw);
  if (git_reference_name_to_id(&item.id, nested.get(), "HEAD") != 0) {
    git_error_clear();
    return core::Error::InvalidInput(shown + " is a repository without a commit checked out");
  }
  item.mode = 0160000;
  return core::OkStatus();
}

// The tree id of the folder `rel` whose entries are `nodes`, or nullopt when Git would stage
// nothing in it; its archived files into the walk.
core::Result<std::optional<git_oid>> HashFolder(DiskWalk& w, const std::string& rel,
                                                const std::vector<DiskNode>& nodes) {
  const std::string prefix = rel.empty() ? rel : rel + "/";
  std::vector<TreeItem> items;
  for (const DiskNode& node : nodes) {
    const std::string path = prefix + node.name;
    TreeItem item;
    item.name = node.name;
    core::Status hashed;
    switch (node.kind) {
      case DiskNode::Kind::kFolder: {
        auto sub = HashFolder(w, path, node.children);
        if (!sub.ok()) return sub.error();
        if (!*sub) continue;  // nothing Git would stage: no tree entry
        item.mode = 040000;
        item.id = **sub;
        break;
      }
      case DiskNode::Kind::kFile:
        hashed = HashFile(w, path, node, item);
        break;
      case DiskNode::Kind::kSymlink:
        hashed = HashSymlink(w, path, item);
        break;
      case DiskNode::Kind::kRepository:
        hashed = HashGitlink(w, path, item);
        break;
    }
    if (!hashed.ok()) return hashed.error();
    if (w.staged != nullptr && item.mode != 040000) {
      w.staged->emplace(path, std::make_pair(item.mode, item.id));
    }
    items.push_back(std::move(item));
  }
  if (items.empty()) return std::optional<git_oid>();
  return std::optional<git_oid>(HashTree(std::move(items)));
}

// The folder itself, from the working tree's root down: every component a folder (never a
// link), the rule files along the way no link either, and the folder no repository of its own.
core::Status CheckDiskFolder(const DiskWalk& w) {
  const std::string shown = w.folder.empty() ? "the working tree" : w.folder;
  std::string at;
  for (size_t begin = 0;;) {
    Opened dir = OpenInside(w.workdir, at, true);
    if (dir.failure == OpenFailure::kSymlink) return LinkOnPath(dir.at, w.folder);
    if (dir.failure == OpenFailure::kMissing) {
      return core::Error::InvalidInput(shown + " does not exist in the working tree");
    }
    if (dir.failure == OpenFailure::kNotFolder) {
      return core::Error::InvalidInput(dir.at == w.folder ? shown + " is a file, not a folder"
                                                          : shown +
                                                                " does not exist in the working "
                                                                "tree (" +
                                                                dir.at + " is a file)");
    }
    if (dir.failure != OpenFailure::kNone) return OpenError(dir);
    if (at == w.folder) {
      struct stat st {};
      if (!w.folder.empty() && ::fstatat(dir.fd.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) {
        return core::Error::InvalidInput(shown + " is a submodule, not a folder");
      }
      return core::OkStatus();
    }
    if (auto checked = CheckRuleFiles(dir.fd.get(), at.empty() ? at : at + "/"); !checked.ok()) {
      return checked;
    }
    const size_t end = std::min(w.folder.find('/', begin), w.folder.size());
    at = w.folder.substr(0, end);
    begin = end + 1;
  }
}

// The folder's tree id and its archived files, as DiskWalk describes; every entry Git would
// stage into `staged` when given. A folder whose files add up to more than `max_bytes` is
// refused before any of them is read.
core::Result<std::pair<std::string, std::vector<CodeFile>>> ListDiskFolder(
    git_repository* repo, const std::string& workdir, std::string_view folder, uint64_t max_bytes,
    std::map<std::string, std::pair<uint32_t, git_oid>>* staged = nullptr) {
  git::EnsureLibraryInitialised();
  if (auto checked = CheckFolderName(folder); !checked.ok()) return checked.error();
  DiskWalk w;
  w.repo = repo;
  w.workdir = workdir.empty() || workdir.back() == '/' ? workdir : workdir + "/";
  w.folder = std::string(folder);
  w.staged = staged;
  if (auto checked = CheckDiskFolder(w); !checked.ok()) return checked.error();
  git_index* index = nullptr;
  if (repo != nullptr && git_repository_index(&index, repo) != 0) index = nullptr;
  const git::Owned<git_index, git_index_free> owned_index(index);
  w.index = index;
  auto nodes = ScanFolder(w, "", true, 0);
  if (!nodes.ok()) return nodes.error();
  if (w.listed.empty()) {
    return core::Error::InvalidInput(
        (w.folder.empty() ? std::string("the working tree") : w.folder) +
        " holds no files once ignored and export-ignored files are left out");
  }
  if (w.listed_bytes > max_bytes) {
    return FolderTooLarge(w.folder, w.listed_bytes, max_bytes, Largest(std::move(w.listed)));
  }
  auto tree = HashFolder(w, "", *nodes);
  if (!tree.ok()) return tree.error();
  return std::make_pair(git::OidHex(**tree), std::move(w.files));
}

}  // namespace

core::Result<CodeFolderInfo> InspectCodeFolderOnDisk(git_repository* repo,
                                                     const std::string& workdir,
                                                     std::string_view folder, uint64_t max_bytes) {
  auto listed = ListDiskFolder(repo, workdir, folder, max_bytes);
  if (!listed.ok()) return listed.error();
  return Summarise(listed->first, listed->second);
}

core::Result<std::string> BuildCodeZipFromDisk(git_repository* repo, const std::string& workdir,
                                               std::string_view folder) {
  auto listed = ListDiskFolder(repo, workdir, folder, static_cast<uint64_t>(core::kMaxCodeBytes));
  if (!listed.ok()) return listed.error();
  auto zip = WriteCodeZip(std::move(listed->second));
  if (!zip.ok()) return zip.error();
  return ReadZipFile(*zip);
}

core::Result<uint64_t> CodeZipSizeFromDisk(git_repository* repo, const std::string& workdir,
                                           std::string_view folder, uint64_t max_bytes) {
  auto listed = ListDiskFolder(repo, workdir, folder, max_bytes);
  if (!listed.ok()) return listed.error();
  auto zip = WriteCodeZip(std::move(listed->second));
  if (!zip.ok()) return zip.error();
  return zip->size;
}

std::optional<std::string> ReadCodeFileOnDisk(const std::string& workdir, std::string_view folder,
                                              const std::string& path, uint64_t max_bytes) {
  const std::string repo_path = folder.empty() ? path : std::string(folder) + "/" + path;
  Opened file = OpenInside(workdir, repo_path, false);
  struct stat st {};
  if (file.failure != OpenFailure::kNone || ::fstat(file.fd.get(), &st) != 0) return std::nullopt;
  const uint64_t size = std::min(static_cast<uint64_t>(st.st_size), max_bytes + 1);
  std::string bytes(size, '\0');
  size_t used = 0;
  while (used < bytes.size()) {
    const ssize_t n = ::read(file.fd.get(), bytes.data() + used, bytes.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  bytes.resize(used);
  return bytes;
}

core::Error FolderTooLarge(std::string_view folder, uint64_t bytes, uint64_t limit,
                           const std::vector<std::pair<std::string, uint64_t>>& largest) {
  const std::string shown = folder.empty() ? std::string("the code folder") : std::string(folder);
  const std::string prefix = folder.empty() ? std::string() : std::string(folder) + "/";
  std::string message = shown + " holds " + core::HumanBytes(bytes) +
                        " of files, over the limit of " + core::HumanBytes(limit) +
                        " (code_max_bytes in the cluster file bounds the files and their zip; "
                        "Ray's dashboard takes at most 100 MiB); its largest files: ";
  for (size_t i = 0; i < largest.size(); ++i) {
    if (i > 0) message += ", ";
    message.append(ShownPath(prefix + largest[i].first));
    message.append(" (").append(core::HumanBytes(largest[i].second)).append(")");
  }
  message +=
      ". Keep data and checkpoints out of the code folder (shared_root, or export-ignore in its "
      ".gitattributes)";
  return core::Error::InvalidInput(std::move(message));
}

core::Result<std::vector<std::string>> CodeChangesOnDisk(git_repository* repo,
                                                         std::string_view from_tree_id,
                                                         const std::string& workdir,
                                                         std::string_view folder,
                                                         uint64_t max_bytes) {
  const auto from = ParseTreeId(from_tree_id);
  if (!from.ok()) return from.error();
  git_tree* raw = nullptr;
  if (git_tree_lookup(&raw, repo, &*from) != 0) {
    git_error_clear();
    return core::Error::NotFound("code tree " + std::string(from_tree_id) +
                                 " is not in the local copy");
  }
  const git::Tree tree(raw);
  std::map<std::string, std::pair<uint32_t, git_oid>> before;
  const auto collect = [](const char* root, const git_tree_entry* entry, void* payload) {
    if (git_tree_entry_type(entry) == GIT_OBJECT_TREE) return 0;
    auto& out = *static_cast<std::map<std::string, std::pair<uint32_t, git_oid>>*>(payload);
    out.emplace(std::string(root) + git_tree_entry_name(entry),
                std::pair<uint32_t, git_oid>{static_cast<uint32_t>(git_tree_entry_filemode(entry)),
                                             *git_tree_entry_id(entry)});
    return 0;
  };
  if (int rc = git_tree_walk(tree.get(), GIT_TREEWALK_PRE, collect, &before); rc != 0) {
    return git::LastError(rc, "cannot read code tree " + std::string(from_tree_id));
  }
  std::map<std::string, std::pair<uint32_t, git_oid>> after;
  auto listed = ListDiskFolder(repo, workdir, folder, max_bytes, &after);
  if (!listed.ok()) return listed.error();
  std::vector<std::string> changed;
  auto b = before.begin();
  auto a = after.begin();
  while (b != before.end() || a != after.end()) {
    if (a == after.end() || (b != before.end() && b->first < a->first)) {
      changed.push_back((b++)->first);
    } else if (b == before.end() || a->first < b->first) {
      changed.push_back((a++)->first);
    } else {
      if (a->second.first != b->second.first ||
          git_oid_cmp(&a->second.second, &b->second.second) != 0) {
        changed.push_back(a->first);
      }
      ++a;
      ++b;
    }
  }
  return changed;
}

}  // namespace rg::adapters
