#include "reconciler/adapters/code_package.h"

#include <sys/stat.h>
#include <zip.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <system_error>

#include "reconciler/adapters/git_common.h"
#include "reconciler/core/code_package.h"

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

// One file of a code folder, ready for the zip.
struct CodeFile {
  std::string path;  // relative to the folder
  bool executable = false;
  uint64_t size = 0;
  std::function<core::Result<std::string>()> read;  // its bytes, exactly `size` of them
};

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
  const size_t keep = std::min<size_t>(5, sizes.size());
  std::partial_sort(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(keep), sizes.end(),
                    [](const auto& a, const auto& b) {
                      return a.second != b.second ? a.second > b.second : a.first < b.first;
                    });
  sizes.resize(keep);
  info.largest = std::move(sizes);
  return info;
}

// ---- The zip writer, shared by both sources ----

// The state of one entry's libzip source: the file, its bytes while libzip reads them, and
// what went wrong.
struct EntrySource {
  const CodeFile* file = nullptr;
  std::string data;
  size_t offset = 0;
  zip_error_t error{};
  std::optional<core::Error> failure;
};

// Opens the entry: reads its bytes, which must be as many as were counted.
zip_int64_t OpenEntry(EntrySource& s) {
  auto bytes = s.file->read();
  if (!bytes.ok()) {
    s.failure = bytes.error();
  } else if (bytes->size() != s.file->size) {
    s.failure = core::Error::Transient(s.file->path + " changed while it was being packed");
  } else {
    s.data = std::move(bytes).value();
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
      // Swapped out, not assigned: assigning an empty string keeps the buffer, and the zip
      // would then hold every file's bytes until it is closed.
      std::string().swap(s.data);
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

// The archive as libzip writes it, straight into one string: libzip's own buffer source would
// keep the zip in fragments of its own, to be copied out into a string after zip_close (the zip
// held twice at the end). Writes land where libzip puts them, and the archive's size is the
// furthest byte written, as in libzip's buffer; the written string becomes the archive's bytes
// on commit.
struct ZipSink {
  std::string bytes;    // the archive committed (empty until zip_close commits)
  std::string writing;  // between BEGIN_WRITE and COMMIT_WRITE
  zip_uint64_t write_offset = 0;
  zip_uint64_t read_offset = 0;
  size_t expected = 0;  // reserved when writing begins: the zip's size bound
  zip_error_t error{};
};

// libzip's SEEK and SEEK_WRITE: `offset` moved as `data` asks, within `size` bytes.
zip_int64_t Seek(zip_uint64_t& offset, size_t size, void* data, zip_uint64_t len,
                 zip_error_t& error) {
  const zip_int64_t at = zip_source_seek_compute_offset(offset, size, data, len, &error);
  if (at < 0) return -1;
  offset = static_cast<zip_uint64_t>(at);
  return 0;
}

// The reading half of the archive's source: libzip reads back what it wrote (and the
// archive's earlier state, which is empty here).
zip_int64_t SinkRead(ZipSink& s, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
  switch (cmd) {
    case ZIP_SOURCE_OPEN:
      s.read_offset = 0;
      return 0;
    case ZIP_SOURCE_READ: {
      const size_t n = std::min<zip_uint64_t>(len, s.bytes.size() - s.read_offset);
      std::memcpy(data, s.bytes.data() + s.read_offset, n);
      s.read_offset += n;
      return static_cast<zip_int64_t>(n);
    }
    case ZIP_SOURCE_STAT: {
      auto* st = static_cast<zip_stat_t*>(data);
      zip_stat_init(st);
      st->valid = ZIP_STAT_SIZE;
      st->size = s.bytes.size();
      return sizeof(zip_stat_t);
    }
    case ZIP_SOURCE_SEEK:
      return Seek(s.read_offset, s.bytes.size(), data, len, s.error);
    case ZIP_SOURCE_TELL:
      return static_cast<zip_int64_t>(s.read_offset);
    default:  // ZIP_SOURCE_CLOSE
      return 0;
  }
}

// The writing half: the archive written into `writing`, which becomes `bytes` on commit.
zip_int64_t SinkWrite(ZipSink& s, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
  switch (cmd) {
    case ZIP_SOURCE_BEGIN_WRITE:
      // Reserved to the zip's bound, so the string never grows by copying itself; the pages
      // past the zip's end are never written.
      std::string().swap(s.writing);
      s.writing.reserve(s.expected);
      s.write_offset = 0;
      return 0;
    case ZIP_SOURCE_WRITE:
      if (s.write_offset + len > s.writing.size()) s.writing.resize(s.write_offset + len);
      std::memcpy(s.writing.data() + s.write_offset, data, len);
      s.write_offset += len;
      return static_cast<zip_int64_t>(len);
    case ZIP_SOURCE_SEEK_WRITE:
      return Seek(s.write_offset, s.writing.size(), data, len, s.error);
    case ZIP_SOURCE_TELL_WRITE:
      return static_cast<zip_int64_t>(s.write_offset);
    case ZIP_SOURCE_COMMIT_WRITE:
      std::string().swap(s.bytes);
      s.bytes.swap(s.writing);
      return 0;
    case ZIP_SOURCE_ROLLBACK_WRITE:
      std::string().swap(s.writing);
      return 0;
    default:  // ZIP_SOURCE_REMOVE
      std::string().swap(s.bytes);
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

// The deterministic zip of `files` (sorted here by path, bytewise), in memory.
core::Result<std::string> WriteCodeZip(std::vector<CodeFile> files) {
  if (files.empty()) return core::Error::InvalidInput("no files to pack");
  std::sort(files.begin(), files.end(),
            [](const CodeFile& a, const CodeFile& b) { return a.path < b.path; });
  CodeFolderInfo sizes;
  std::vector<EntrySource> sources(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    sources[i].file = &files[i];
    zip_error_init(&sources[i].error);
    ++sizes.files;
    sizes.bytes += files[i].size;
    sizes.path_bytes += files[i].path.size();
  }
  ZipSink sink;
  sink.expected = static_cast<size_t>(ZipSizeUpperBound(sizes));
  zip_error_init(&sink.error);
  zip_error_t error;
  zip_error_init(&error);
  core::Result<std::string> bytes = std::string();
  zip_source_t* archive = zip_source_function_create(SinkCallback, &sink, &error);
  zip_t* za = archive == nullptr ? nullptr : zip_open_from_source(archive, ZIP_TRUNCATE, &error);
  if (archive == nullptr) {
    bytes = ZipError("zip buffer", &error);
  } else if (za == nullptr) {
    zip_source_free(archive);  // still ours: zip_open_from_source failed
    bytes = ZipError("zip open", &error);
  } else if (core::Status written = WriteEntries(za, sources); !written.ok()) {
    bytes = written.error();
  } else if (sink.bytes.empty()) {
    bytes = core::Error::Fatal("zip: the archive was not written");
  } else {
    bytes = std::move(sink.bytes);  // its buffer, not a copy
  }
  for (EntrySource& source : sources) zip_error_fini(&source.error);
  zip_error_fini(&sink.error);
  zip_error_fini(&error);
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

core::Status WalkTree(TreeWalk& w, const git_tree* tree, const std::string& dir);

// The .gitattributes of `tree` (the folder `dir`) into the matcher, before its entries.
void ReadTreeAttributes(TreeWalk& w, const git_tree* tree, const std::string& dir) {
  const git_tree_entry* attributes = git_tree_entry_byname(tree, ".gitattributes");
  if (attributes == nullptr || git_tree_entry_type(attributes) != GIT_OBJECT_BLOB) return;
  if (auto text = git::ReadBlob(w.repo, *git_tree_entry_id(attributes))) {
    w.matcher.AddAttributesFile(dir.empty() ? dir : dir.substr(0, dir.size() - 1), *text);
  }
}

// One entry of a tree at `path` (relative to the walked tree).
core::Status WalkEntry(TreeWalk& w, const git_tree_entry* entry, const std::string& path) {
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
      return WalkTree(w, subtree.get(), path + "/");
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
                         [repo, oid, shown]() -> core::Result<std::string> {
                           if (auto bytes = git::ReadBlob(repo, oid)) return std::move(*bytes);
                           return core::Error::NotFound("cannot read " + shown);
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

// Every entry of `tree`, the folder `dir` ("" or "a/b/") of the walked tree.
core::Status WalkTree(TreeWalk& w, const git_tree* tree, const std::string& dir) {
  ReadTreeAttributes(w, tree, dir);
  const size_t count = git_tree_entrycount(tree);
  for (size_t i = 0; i < count; ++i) {
    const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
    if (auto walked = WalkEntry(w, entry, dir + git_tree_entry_name(entry)); !walked.ok()) {
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
  if (auto walked = WalkTree(w, tree.get(), ""); !walked.ok()) return walked.error();
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
  const git::Tree root(raw_tree);
  git_tree_entry* raw_entry = nullptr;
  if (git_tree_entry_bypath(&raw_entry, root.get(), folder.c_str()) != 0) {
    return core::Error::InvalidInput(folder + " does not exist at commit " +
                                     std::string(commit_id.substr(0, 12)));
  }
  const git::TreeEntry entry(raw_entry);
  switch (git_tree_entry_filemode(entry.get())) {
    case GIT_FILEMODE_TREE:
      return *git_tree_entry_id(entry.get());
    case GIT_FILEMODE_LINK:
      return core::Error::InvalidInput(folder + " is a symlink, not a folder");
    case GIT_FILEMODE_COMMIT:
      return core::Error::InvalidInput(folder + " is a submodule, not a folder");
    default:
      return core::Error::InvalidInput(folder + " is a file, not a folder");
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
  return WriteCodeZip(std::move(files).value());
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

// ---- Folders in a working tree ----

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

// A walk over a folder on disk as `git add -A` would stage it.
struct DiskWalk {
  git_repository* repo = nullptr;  // null: no checkout, no ignore rules, no filters
  git_index* index = nullptr;      // the checkout's index, for files tracked though ignored
  std::string workdir;             // with a trailing '/'
  std::string folder;              // repository-relative, "" for the whole working tree
  core::ExportIgnoreMatcher matcher;
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

// The bytes `git add` would store for the file: its contents through the repository's filters.
core::Result<std::string> ReadFiltered(git_repository* repo, const std::string& full,
                                       const std::string& repo_path) {
  git_filter_list* filters = nullptr;
  if (repo != nullptr) {
    if (const int rc = git_filter_list_load(&filters, repo, nullptr, repo_path.c_str(),
                                            GIT_FILTER_TO_ODB, GIT_FILTER_DEFAULT);
        rc != 0) {
      return git::LastError(rc, "filters of " + repo_path);
    }
  }
  if (filters == nullptr) {
    std::ifstream in(full, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (!in) return core::Error::Transient("cannot read " + repo_path);
    return bytes.str();
  }
  git_buf buf{};
  const int rc = git_filter_list_apply_to_file(&buf, filters, repo, full.c_str());
  git_filter_list_free(filters);
  if (rc != 0) return git::LastError(rc, "filter " + repo_path);
  std::string out(buf.ptr, buf.size);
  git_buf_dispose(&buf);
  return out;
}

// Whether the repository has filters for the path (its blob may differ from the file).
bool HasFilters(git_repository* repo, const std::string& repo_path) {
  if (repo == nullptr) return false;
  git_filter_list* filters = nullptr;
  if (git_filter_list_load(&filters, repo, nullptr, repo_path.c_str(), GIT_FILTER_TO_ODB,
                           GIT_FILTER_DEFAULT) != 0) {
    return true;
  }
  const bool any = filters != nullptr;
  git_filter_list_free(filters);
  return any;
}

// The regular file `rel`: its blob id into `item`, and into the walk's files when archived.
core::Status HashFile(DiskWalk& w, const std::string& rel, bool archived, TreeItem& item) {
  const std::string full = w.workdir + RepoPath(w, rel);
  const std::string repo_path = RepoPath(w, rel);
  struct stat st {};
  if (::stat(full.c_str(), &st) != 0) return core::Error::Transient("cannot read " + repo_path);
  const bool executable = (st.st_mode & S_IXUSR) != 0;
  item.mode = executable ? kModeExecutable : kModeRegular;
  const int rc = w.repo != nullptr ? git_repository_hashfile(&item.id, w.repo, full.c_str(),
                                                             GIT_OBJECT_BLOB, repo_path.c_str())
                                   : git_odb_hashfile(&item.id, full.c_str(), GIT_OBJECT_BLOB);
  if (rc != 0) return git::LastError(rc, "hash " + repo_path);
  if (!archived) return core::OkStatus();
  auto size = static_cast<uint64_t>(st.st_size);
  if (HasFilters(w.repo, repo_path)) {
    auto bytes = ReadFiltered(w.repo, full, repo_path);
    if (!bytes.ok()) return bytes.error();
    size = bytes->size();
  }
  git_repository* repo = w.repo;
  w.files.push_back({rel, executable, size,
                     [repo, full, repo_path] { return ReadFiltered(repo, full, repo_path); }});
  return core::OkStatus();
}

// The symlink `rel` as Git stores it: a blob of its target.
core::Status HashSymlink(const DiskWalk& w, const std::string& rel, TreeItem& item) {
  std::error_code ec;
  const std::string target = fs::read_symlink(w.workdir + RepoPath(w, rel), ec).string();
  if (ec) return core::Error::Transient("cannot read the symlink " + RepoPath(w, rel));
  item.mode = 0120000;
  git_odb_hash(&item.id, target.data(), target.size(), GIT_OBJECT_BLOB);
  return core::OkStatus();
}

// The nested repository `rel` as Git stores it: a gitlink to its checked-out commit.
core::Status HashGitlink(const DiskWalk& w, const std::string& rel, TreeItem& item) {
  const std::string shown = RepoPath(w, rel);
  git_repository* raw = nullptr;
  if (git_repository_open(&raw, (w.workdir + shown).c_str()) != 0) {
    return core::Error::InvalidInput(shown + " holds a .git but is no repository");
  }
  const git::Repository nested(raw);
  if (git_reference_name_to_id(&item.id, nested.get(), "HEAD") != 0) {
    return core::Error::InvalidInput(shown + " is a repository without a commit checked out");
  }
  item.mode = 0160000;
  return core::OkStatus();
}

core::Result<std::optional<git_oid>> HashFolder(DiskWalk& w, const std::string& rel, bool archived);

// One entry `rel` of a folder on disk, of type `type`, into `items` when Git would stage it.
core::Status HashEntry(DiskWalk& w, const std::string& rel, fs::file_type type, bool archived,
                       std::vector<TreeItem>& items) {
  const std::string shown = RepoPath(w, rel);
  std::error_code ec;
  const bool nested =
      type == fs::file_type::directory &&
      fs::symlink_status(w.workdir + shown + "/.git", ec).type() != fs::file_type::not_found;
  const bool folder_like = type == fs::file_type::directory;
  if (LeftOut(w, shown, folder_like)) return core::OkStatus();
  archived = archived && !w.matcher.IsExportIgnored(rel, folder_like);
  TreeItem item;
  item.name = rel.substr(rel.rfind('/') + 1);
  if (nested || type == fs::file_type::symlink) {
    if (archived) {
      return core::Error::InvalidInput(shown + (nested ? " is a submodule" : " is a symlink") +
                                       std::string(kFilesOnly));
    }
    if (auto hashed = nested ? HashGitlink(w, rel, item) : HashSymlink(w, rel, item);
        !hashed.ok()) {
      return hashed;
    }
  } else if (type == fs::file_type::directory) {
    auto sub = HashFolder(w, rel, archived);
    if (!sub.ok()) return sub.error();
    if (!*sub) return core::OkStatus();  // nothing Git would stage: no tree entry
    item.mode = 040000;
    item.id = **sub;
  } else if (type == fs::file_type::regular) {
    if (auto hashed = HashFile(w, rel, archived, item); !hashed.ok()) return hashed;
  } else {
    return core::Error::InvalidInput(shown + " is not a regular file" + std::string(kFilesOnly));
  }
  if (w.staged != nullptr && item.mode != 040000) {
    w.staged->emplace(rel, std::make_pair(item.mode, item.id));
  }
  items.push_back(std::move(item));
  return core::OkStatus();
}

// The names and types in folder `rel`, without ".git".
core::Result<std::vector<std::pair<std::string, fs::file_type>>> ListFolder(
    const DiskWalk& w, const std::string& rel) {
  std::vector<std::pair<std::string, fs::file_type>> names;
  std::error_code ec;
  for (fs::directory_iterator it(w.workdir + RepoPath(w, rel), ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name == ".git") continue;
    names.emplace_back(std::move(name), it->symlink_status(ec).type());
  }
  if (ec) return core::Error::Transient("cannot list " + RepoPath(w, rel) + ": " + ec.message());
  return names;
}

// The tree id of folder `rel` (relative to the walked folder), or nullopt when Git would stage
// nothing in it; its archived files (when `archived`) into the walk.
core::Result<std::optional<git_oid>> HashFolder(DiskWalk& w, const std::string& rel,
                                                bool archived) {
  auto names = ListFolder(w, rel);
  if (!names.ok()) return names.error();
  const std::string prefix = rel.empty() ? rel : rel + "/";
  for (const auto& [name, type] : *names) {
    if (name != ".gitattributes" || type != fs::file_type::regular) continue;
    if (LeftOut(w, RepoPath(w, prefix + name), false)) continue;
    std::ifstream in(w.workdir + RepoPath(w, prefix + name), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    w.matcher.AddAttributesFile(rel, text.str());
  }
  std::vector<TreeItem> items;
  for (const auto& [name, type] : *names) {
    if (auto hashed = HashEntry(w, prefix + name, type, archived, items); !hashed.ok()) {
      return hashed.error();
    }
  }
  if (items.empty()) return std::optional<git_oid>();
  return std::optional<git_oid>(HashTree(std::move(items)));
}

// The folder itself: it must be a folder, and no repository of its own.
core::Status CheckDiskFolder(const DiskWalk& w) {
  const std::string shown = w.folder.empty() ? "the working tree" : w.folder;
  std::error_code ec;
  const auto type = fs::symlink_status(w.workdir + w.folder, ec).type();
  if (type == fs::file_type::not_found) {
    return core::Error::InvalidInput(shown + " does not exist in the working tree");
  }
  if (type == fs::file_type::symlink) {
    return core::Error::InvalidInput(shown + " is a symlink, not a folder");
  }
  if (type != fs::file_type::directory) {
    return core::Error::InvalidInput(shown + " is a file, not a folder");
  }
  if (!w.folder.empty() &&
      fs::symlink_status(w.workdir + w.folder + "/.git", ec).type() != fs::file_type::not_found) {
    return core::Error::InvalidInput(shown + " is a submodule, not a folder");
  }
  return core::OkStatus();
}

// The folder's tree id and its archived files, as DiskWalk describes; every entry Git would
// stage into `staged` when given.
core::Result<std::pair<std::string, std::vector<CodeFile>>> ListDiskFolder(
    git_repository* repo, const std::string& workdir, std::string_view folder,
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
  auto tree = HashFolder(w, "", true);
  if (!tree.ok()) return tree.error();
  if (w.files.empty()) {
    return core::Error::InvalidInput(
        (w.folder.empty() ? std::string("the working tree") : w.folder) +
        " holds no files once ignored and export-ignored files are left out");
  }
  return std::make_pair(git::OidHex(**tree), std::move(w.files));
}

}  // namespace

core::Result<CodeFolderInfo> InspectCodeFolderOnDisk(git_repository* repo,
                                                     const std::string& workdir,
                                                     std::string_view folder) {
  auto listed = ListDiskFolder(repo, workdir, folder);
  if (!listed.ok()) return listed.error();
  return Summarise(listed->first, listed->second);
}

core::Result<std::string> BuildCodeZipFromDisk(git_repository* repo, const std::string& workdir,
                                               std::string_view folder) {
  auto listed = ListDiskFolder(repo, workdir, folder);
  if (!listed.ok()) return listed.error();
  return WriteCodeZip(std::move(listed->second));
}

core::Result<std::vector<std::string>> CodeChangesOnDisk(git_repository* repo,
                                                         std::string_view from_tree_id,
                                                         const std::string& workdir,
                                                         std::string_view folder) {
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
  auto listed = ListDiskFolder(repo, workdir, folder, &after);
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
